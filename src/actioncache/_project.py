"""Which project a function belongs to: part of ``@cached``'s identity, so two projects whose
functions share a module and qualified name (``helpers.summarize`` in two repositories) never
answer each other's calls on a shared store (the default one, or a team's Redis).

The rule, from the function's source file:

1. Code of an installed distribution (a file under ``site-packages`` / ``dist-packages``): the
   distribution's name and version (``dist:requests==2.32.3``). Every checkout, machine and venv
   with that release shares; an upgrade is a new identity.
2. Code of a project with a ``pyproject.toml`` that names it (``[project] name`` or
   ``[tool.poetry] name``), found by walking up from the file: that name (``project:myapp``).
   Every checkout of the project shares, on any machine.
3. Anything else: the real path of the nearest directory holding ``pyproject.toml``, ``setup.py``,
   ``setup.cfg`` or ``.git``, else of the file's own directory (``path:/home/me/scripts``). Safe,
   but another checkout does not share: name the project, or pass ``name=`` to share on purpose.

Each directory is looked at once per process.
"""

from __future__ import annotations

import functools
import os

__all__ = ["project_of"]

_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_PACKAGE_DIRS = ("site-packages", "dist-packages")


def project_of(source_file: str | None) -> str | None:
    """The project identity of code in ``source_file`` (None when there is no file: the REPL)."""
    if not source_file or source_file.startswith("<"):
        return None
    path = os.path.realpath(source_file)
    parts = path.split(os.sep)
    for marker in _PACKAGE_DIRS:
        if marker in parts:
            end = len(parts) - parts[::-1].index(marker)  # the last site-packages in the path
            top = parts[end] if len(parts) > end else ""
            dist = _distribution_of(os.sep.join(parts[:end]), top.removesuffix(".py"))
            if dist is not None:
                return f"dist:{dist}"
    return _project_dir_identity(os.path.dirname(path))


@functools.lru_cache(maxsize=256)
def _project_dir_identity(directory: str) -> str:
    candidate = directory
    while True:
        name = _pyproject_name(candidate)
        if name:
            return f"project:{name}"
        if any(os.path.exists(os.path.join(candidate, marker)) for marker in _MARKERS):
            return f"path:{candidate}"
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return f"path:{directory}"
        candidate = parent


@functools.lru_cache(maxsize=256)
def _pyproject_name(directory: str) -> str | None:
    try:
        with open(os.path.join(directory, "pyproject.toml"), encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError):
        return None
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    for table in (data.get("project"), data.get("tool", {}).get("poetry")):
        if isinstance(table, dict) and isinstance(table.get("name"), str) and table["name"].strip():
            return str(table["name"]).strip()
    return None


def _distribution_of(site: str, top_level: str) -> str | None:
    """``name==version`` of the distribution in ``site`` that installed the module ``top_level``."""
    return _site_modules(site).get(top_level) if top_level else None


@functools.lru_cache(maxsize=16)
def _site_modules(site: str) -> dict[str, str]:
    """Every top-level module of ``site`` -> ``name==version`` of its distribution (read once per
    process: decorating code of an installed package is rare, and this reads every RECORD)."""
    from importlib.metadata import distributions

    modules: dict[str, str] = {}
    for dist in distributions(path=[site]):
        label = f"{dist.metadata['Name']}=={dist.version}"
        for file in dist.files or ():
            if file.parts and not file.parts[0].endswith((".dist-info", ".data")) and file.parts[0] != "..":
                modules.setdefault(file.parts[0].removesuffix(".py"), label)
    return modules
