"""Which directories' config files may choose a store or turn caching on (``actioncache trust``).

A config file found by walking up from the working directory belongs to whatever repository the
command runs in, and a repository is not always the user's own. Like ``direnv allow`` and
``mise trust``, such a file may set keys, scopes and tools, but its ``store`` and ``mode`` (where
output goes, and whether caching is on) are honoured only for a directory the user trusted:

    actioncache trust [DIR]          # DIR defaults to the working directory; its subdirectories too
    actioncache trust --list
    actioncache trust --remove DIR

The list is one absolute path per line in ``$XDG_CONFIG_HOME/actioncache/trusted`` (default
``~/.config/actioncache/trusted``). A file named explicitly (``$ACTIONCACHE_CONFIG``) needs no trust.
Only ``os`` is imported: the exec hit path checks trust.
"""

from __future__ import annotations

import os

TRUST_FILE_ENV = "ACTIONCACHE_TRUST_FILE"


def trust_file() -> str:
    explicit = os.environ.get(TRUST_FILE_ENV, "").strip()
    if explicit:
        return explicit
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "actioncache", "trusted")


def trusted_dirs() -> list[str]:
    try:
        with open(trust_file(), encoding="utf-8") as handle:
            return [line.strip() for line in handle if line.strip().startswith("/")]
    except OSError:
        return []


def is_trusted(directory: str | os.PathLike[str]) -> bool:
    """True when ``directory`` (resolved) is a trusted directory or lies inside one."""
    here = os.path.realpath(directory)
    return any(here == root or here.startswith(root.rstrip("/") + "/") for root in trusted_dirs())


def _write(dirs: list[str]) -> None:
    path = trust_file()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write("".join(d + "\n" for d in dirs))
    os.replace(tmp, path)  # readers never see half a list


def trust(directory: str | os.PathLike[str]) -> str:
    here = os.path.realpath(directory)
    if not os.path.isdir(here):
        raise ValueError(f"{directory} is not a directory; give the directory that holds the config file")
    dirs = trusted_dirs()
    if here not in dirs:
        _write([*dirs, here])
    return here


def untrust(directory: str | os.PathLike[str]) -> bool:
    here = os.path.realpath(directory)
    dirs = trusted_dirs()
    if here not in dirs:
        return False
    _write([d for d in dirs if d != here])
    return True


def main(argv: list[str] | None = None) -> int:
    """``actioncache trust [DIR] | --list | --remove DIR``."""
    import sys

    from ._usage import HelpfulParser

    parser = HelpfulParser(prog="actioncache trust", description=__doc__.split("\n\n")[1])
    parser.add_argument("dir", nargs="?", default=".", help="the directory to trust (default: here)")
    parser.add_argument("--list", action="store_true", help="list the trusted directories")
    parser.add_argument("--remove", action="store_true", help="stop trusting DIR")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.list:
        for d in trusted_dirs():
            print(d)
        return 0
    if args.remove:
        removed = untrust(args.dir)
        print(f"{'no longer trusted' if removed else 'was not trusted'}: {os.path.realpath(args.dir)}")
        return 0
    try:
        here = trust(args.dir)
    except ValueError as exc:
        print(f"actioncache trust: error: {exc}", file=sys.stderr)
        return 2
    print(f"trusted: {here} (its config files may now choose the store and the mode; recorded in {trust_file()})")
    return 0
