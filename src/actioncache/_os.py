"""``os`` for the hit paths, without importing ``os`` until something needs more than its core.

``python -S`` (the ``actioncache`` command) starts without ``os``; importing it costs an
``actioncache exec`` hit about 6 M instructions (15% of ``python -c pass``), most of it
``_collections_abc``, whose abstract classes ``os.environ`` is built on. A hit uses the system
calls, ``environ`` and a few ``os.path`` functions, all of which are here: the system calls are
``posix``'s own functions (``os`` re-exports the same objects), ``environ`` a dict decoded from
``posix.environ`` as ``os`` decodes it, the path functions ``posixpath``'s algorithms on ``str``.

Once the real ``os`` is imported (the full command, any library, the tests), ``environ`` is its
``os.environ`` (so a change made through it is seen) and the path functions are ``posixpath``'s;
any name not defined here is looked up in the real ``os`` (importing it then). Modules write
``if TYPE_CHECKING: import os`` (the type checker sees the real one) ``else: from .._os import os``.
``tests/runs/test_lean_os.py`` checks the answers against ``os``'s in a process without ``os``.
"""

import posix
import sys
from _stat import S_ISDIR, S_ISLNK, S_ISREG  # builtin: no file is read to import it

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hit ~10 ms
if TYPE_CHECKING:
    from typing import Any

_ENCODING = sys.getfilesystemencoding()
_ERRORS = sys.getfilesystemencodeerrors()


def _real(name: str) -> "Any":
    import os

    return getattr(os, name)


def _loaded() -> "Any":
    return sys.modules.get("posixpath")


def join(a: str, *p: str) -> str:
    real = _loaded()
    if real is not None or type(a) is not str:
        return str((real or _real("path")).join(a, *p))
    path = a
    for b in p:
        if type(b) is not str:
            return str(_real("path").join(a, *p))
        if b.startswith("/"):
            path = b
        elif not path or path.endswith("/"):
            path += b
        else:
            path += "/" + b
    return path


def dirname(p: str) -> str:
    real = _loaded()
    if real is not None or type(p) is not str:
        return str((real or _real("path")).dirname(p))
    head = p[:p.rfind("/") + 1]
    if head and head != "/" * len(head):
        head = head.rstrip("/")
    return head


def basename(p: str) -> str:
    real = _loaded()
    if real is not None or type(p) is not str:
        return str((real or _real("path")).basename(p))
    return p[p.rfind("/") + 1:]


def isabs(p: str) -> bool:
    return p.startswith("/") if type(p) is str else bool(_real("path").isabs(p))


def exists(p: str) -> bool:
    try:
        posix.stat(p)
    except (OSError, ValueError):
        return False
    return True


def isfile(p: str) -> bool:
    try:
        return S_ISREG(posix.stat(p).st_mode)
    except (OSError, ValueError):
        return False


def isdir(p: str) -> bool:
    try:
        return S_ISDIR(posix.stat(p).st_mode)
    except (OSError, ValueError):
        return False


def normpath(p: str) -> str:
    real = _loaded()
    if real is not None or type(p) is not str:
        return str((real or _real("path")).normpath(p))
    if not p:
        return "."
    initial = 2 if p.startswith("//") and not p.startswith("///") else 1 if p.startswith("/") else 0
    parts: list[str] = []
    for part in p.split("/"):
        if part in ("", "."):
            continue
        if part != ".." or (not initial and not parts) or (parts and parts[-1] == ".."):
            parts.append(part)
        elif parts:
            parts.pop()
    return "/" * initial + "/".join(parts) or "."


def abspath(p: str) -> str:
    real = _loaded()
    if real is not None or type(p) is not str:
        return str((real or _real("path")).abspath(p))
    if not p.startswith("/"):
        p = join(posix.getcwd(), p)
    return normpath(p)


def realpath(filename: str) -> str:
    """``posixpath.realpath(filename)`` (not strict): symbolic links resolved as far as they
    exist; a loop or a missing part leaves the rest as it is."""
    real = _loaded()
    if real is not None or type(filename) is not str:
        return str((real or _real("path")).realpath(filename))
    path, _ = _join_real("", filename, {})
    return abspath(path)


def _join_real(path: str, rest: str, seen: dict[str, str | None]) -> tuple[str, bool]:
    if rest.startswith("/"):
        rest = rest[1:]
        path = "/"
    while rest:
        name, _, rest = rest.partition("/")
        if not name or name == ".":
            continue
        if name == "..":
            if path:
                path, name = dirname(path), basename(path)
                if name == "..":
                    path = join(path, "..", "..")
            else:
                path = ".."
            continue
        newpath = join(path, name)
        try:
            is_link = S_ISLNK(posix.lstat(newpath).st_mode)
        except OSError:
            is_link = False
        if not is_link:
            path = newpath
            continue
        if newpath in seen:  # already seen: resolved, or a loop
            found = seen[newpath]
            if found is not None:
                path = found
                continue
            return join(newpath, rest), False
        seen[newpath] = None
        path, ok = _join_real(path, posix.readlink(newpath), seen)
        if not ok:
            return join(path, rest), False
        seen[newpath] = path
    return path, True


def expanduser(path: str) -> str:
    real = _loaded()
    if real is None and type(path) is str and not path.startswith("~"):
        return path
    if real is not None or type(path) is not str or not (path == "~" or path.startswith("~/")) \
            or "HOME" not in environ():
        return str((real or _real("path")).expanduser(path))
    home = environ()["HOME"].rstrip("/")
    return (home + path[1:]) or "/"


def _path_getattr(name: str) -> "Any":
    return getattr(_real("path"), name)


# os.path (posixpath) for str paths: join, dirname, basename, isabs, exists, isfile, isdir, normpath,
# abspath, realpath and expanduser of ~; anything else, or bytes, from the real posixpath. Modules,
# not classes: making a class cost a hit ~0.2 M instructions.
path: "Any" = type(sys)("actioncache._os.path")
path.__dict__.update({name: globals()[name] for name in (
    "join", "dirname", "basename", "isabs", "exists", "isfile", "isdir", "normpath", "abspath", "realpath",
    "expanduser")})
path.__getattr__ = _path_getattr
_ENVIRON: list[dict[str, str]] = []


def environ() -> "Any":
    """``os.environ`` when ``os`` is loaded, else the same variables as a dict (``os`` decodes
    ``posix.environ`` the same way; nothing changes the environment before ``os`` is loaded)."""
    real = sys.modules.get("os")
    if real is not None:
        return real.environ
    if not _ENVIRON:
        _ENVIRON.append({key.decode(_ENCODING, "surrogateescape"): value.decode(_ENCODING, "surrogateescape")
                         for key, value in posix.environ.items()})  # as os._createenviron decodes them
    return _ENVIRON[0]


def fsencode(filename: str) -> bytes:
    if type(filename) is str:
        return filename.encode(_ENCODING, _ERRORS)
    return bytes(_real("fsencode")(filename))


SEEK_SET, SEEK_CUR, SEEK_END = 0, 1, 2
sep, pathsep, defpath, curdir, pardir = "/", ":", "/bin:/usr/bin", ".", ".."


_OWN: "dict[str, Any]" = {"path": path, "fsencode": fsencode, "SEEK_SET": SEEK_SET, "SEEK_CUR": SEEK_CUR,
                        "SEEK_END": SEEK_END, "sep": sep, "pathsep": pathsep, "defpath": defpath, "curdir": curdir,
                        "pardir": pardir}


def _os_getattr(name: str) -> "Any":
    """What ``os`` is: posix's functions and constants, the ones above (both put in place at once,
    below), and the real ``os`` for the rest (imported then); each kept once asked (the same object
    ``os`` has), but ``environ``."""
    if name == "environ":
        return environ()
    value = getattr(posix, name, None) if name[:1] != "_" or name == "_exit" else None
    if value is None:
        value = _OWN.get(name)
    if value is None:
        value = _real(name)
    os.__dict__[name] = value
    return value


os: "Any" = type(sys)("actioncache._os.os")
os.__getattr__ = _os_getattr
# posix's names (``os`` re-exports the same objects) and the ones above, in place at once rather
# than on first use: each first use of a name the module lacks raises and clears an AttributeError
# and calls ``__getattr__``, which cost a hit ~0.2 M instructions for its ~60 names. Copied in C
# (``update``), then the module's own attributes put back: a loop over posix's ~330 names in Python
# cost as much as it saved. Not ``environ`` (posix's is bytes: ``environ()`` decodes it) and not the
# private names ``os`` does not have.
_MINE = dict(os.__dict__)  # its name, spec, __getattr__...
os.__dict__.update(posix.__dict__)
os.__dict__.update(_OWN)
os.__dict__.update(_MINE)
for _name in ("environ", "_path_normpath", "_have_functions"):
    os.__dict__.pop(_name, None)
