# Not a command: the body of the `actioncache` command (bin/actioncache), which imports it from
# this directory. A module rather than the script itself because Python keeps a module's compiled
# bytecode (__pycache__ beside it) and parses a script on every start, which cost a hit of
# `actioncache exec` about 2.4 M instructions.
"""Find the installed package the way `site` would, without `site` (the command runs python -S)."""

import os
import sys


def _find_package() -> None:
    """Put the installed package on sys.path the way site would: site-packages and the plain path
    lines of its .pth files (an editable install's source directory). A .pth file's `import` lines
    are left to site, which runs when the full command takes over; if the package is still not
    found, site runs now."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    bases = [sys.prefix, sys.exec_prefix]
    here = os.path.dirname(sys.executable)
    for venv in (here, os.path.dirname(here)):  # a virtual environment: what site.venv() would find
        try:
            with open(os.path.join(venv, "pyvenv.cfg"), encoding="utf-8") as handle:
                system = any(line.split("=")[0].strip().lower() == "include-system-site-packages"
                             and line.split("=", 1)[-1].strip().lower() == "true" for line in handle)
        except OSError:
            continue
        bases = [venv, *(bases if system else [])]
        break
    for base in dict.fromkeys(bases):
        directory = os.path.join(base, "lib", version, "site-packages")
        try:
            # only the few names that matter are sorted (a full site-packages holds hundreds)
            names = sorted(name for name in os.listdir(directory) if name.endswith(".pth") and "actioncache" in name)
        except OSError:
            continue
        if directory not in sys.path:
            sys.path.append(directory)
        for name in names:
            try:
                with open(os.path.join(directory, name), encoding="utf-8") as handle:
                    for line in handle:
                        line = line.strip()
                        if line and not line.startswith(("#", "import ", "import\t")) and os.path.isdir(line) \
                                and line not in sys.path:
                            sys.path.append(line)
            except OSError:
                pass


def entry() -> object:
    """The package's `__main__` module (its main() is the command), found first."""
    if sys.flags.no_site:
        _find_package()
        try:
            import actioncache.__main__ as found
        except ImportError:
            import site

            site.main()
            import actioncache.__main__ as found
    else:
        import actioncache.__main__ as found
    return found
