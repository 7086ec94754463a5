# Not a command: the body of the `actioncache` command (bin/actioncache), which imports it from
# this directory. A module rather than the script itself because Python keeps a module's compiled
# bytecode (__pycache__ beside it) and parses a script on every start, which cost a hit of
# `actioncache exec` about 2.4 M instructions.
"""Find the installed package the way `site` would, without `site` (the command runs python -S)."""

import posix  # not os: importing os costs a hit ~6 M instructions (python -S starts without it)
import sys
from _stat import S_ISDIR, S_ISREG


def _join(path: str, *names: str) -> str:
    """os.path.join."""
    for name in names:
        path = name if name.startswith("/") else path + name if not path or path.endswith("/") else f"{path}/{name}"
    return path


def _dirname(path: str) -> str:
    """os.path.dirname."""
    head = path[:path.rfind("/") + 1]
    return head.rstrip("/") or head


def _isdir(path: str) -> bool:
    try:
        return S_ISDIR(posix.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _isfile(path: str) -> bool:
    try:
        return S_ISREG(posix.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _find_package() -> None:
    """Put the installed package on sys.path the way site would: site-packages and the plain path
    lines of its .pth files (an editable install's source directory). A .pth file's `import` lines
    are left to site, which runs when the full command takes over; if the package is still not
    found, site runs now."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    bases = [sys.prefix, sys.exec_prefix]
    here = _dirname(sys.executable)
    for venv in (here, _dirname(here)):  # a virtual environment: what site.venv() would find
        try:
            with open(_join(venv, "pyvenv.cfg"), encoding="utf-8") as handle:
                system = any(line.split("=")[0].strip().lower() == "include-system-site-packages"
                             and line.split("=", 1)[-1].strip().lower() == "true" for line in handle)
        except OSError:
            continue
        bases = [venv, *(bases if system else [])]
        break
    for base in dict.fromkeys(bases):
        directory = _join(base, "lib", version, "site-packages")
        try:
            names = _pth_files(posix.listdir(directory))
        except OSError:
            continue
        if directory not in sys.path:
            sys.path.append(directory)
        for name in names:
            try:
                with open(_join(directory, name), encoding="utf-8") as handle:
                    for line in handle:
                        line = line.strip()
                        if line and not line.startswith(("#", "import ", "import\t")) and _isdir(line) \
                                and line not in sys.path:
                            sys.path.append(line)
            except OSError:
                pass


def _pth_files(names: list[str]) -> list[str]:
    """The .pth files among ``names`` whose name holds "actioncache", sorted as site reads them.
    Searched in one string by str.find (C) rather than name by name in Python: a full
    site-packages holds hundreds of names, and a loop over them cost a hit ~0.7 M instructions."""
    text = "/".join(names)  # "/" never occurs in a file name
    found = []
    start = 0
    while True:
        at = text.find("actioncache", start)
        if at < 0:
            return sorted(found)
        first = text.rfind("/", 0, at) + 1
        end = text.find("/", at)
        end = len(text) if end < 0 else end
        if text.endswith(".pth", first, end):
            found.append(text[first:end])
        start = end


def run(namespace: dict[str, object]) -> None:
    """The command's Python part, run by bin/actioncache from here: Python parses a script's text on
    every start and keeps a module's bytecode, and these steps written there cost a hit ~0.45 M
    instructions. The verdict name the sh part passes (``DIRECT``, in the script's namespace, where
    ``runs.direct`` reads it), the variables it set for Python alone removed, then the package's
    command. bin/actioncache keeps the same steps as text, compiled only when this module is not
    beside it."""
    namespace["DIRECT"] = posix.environ.get(b"_ACTIONCACHE_DIRECT", b"").decode("utf-8", "surrogateescape")
    for name in posix.environ.get(b"_ACTIONCACHE_UNSET", b"").split():
        posix.environ.pop(name, None)
        posix.unsetenv(name)
    sys.exit(entry().main())


def entry() -> object:
    """The package's `__main__` module (its main() is the command), found first."""
    if sys.flags.no_site:
        _find_package()
        try:
            found = _import_main()
        except ImportError:
            import site

            site.main()
            import actioncache.__main__ as found
    else:
        import actioncache.__main__ as found
    return found


def _import_main() -> object:
    """``import actioncache.__main__``, from the directory that import would find it in, but searched
    first: the import system lists every directory it searches (an environment's site-packages
    holds hundreds of names, ~0.8 M instructions), and once the package is loaded its modules are
    found through the package alone. sys.path is left as it was."""
    for directory in sys.path:
        if _isfile(_join(directory, "actioncache", "__init__.py")):
            break
    else:
        import actioncache.__main__ as found  # not as a plain directory (a zip, a namespace): the usual search

        return found
    sys.path.insert(0, directory)
    try:
        import actioncache.__main__ as found
    finally:
        del sys.path[0]
    return found
