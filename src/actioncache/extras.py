"""Optional dependencies: which extra provides what, and the error a missing one raises.

Every backend and face checks its optional dependency when it is first used (opening a store,
loading a face, hashing a remote URL) and fails at once with the ``pip install`` command of the
extra that provides it, instead of failing later, call by call, with a bare module name.
"""

from __future__ import annotations

import importlib.util

from .errors import MissingExtraError

# URL protocol (fsspec and blob-sqlite) -> the extra whose package reads it.
EXTRA_FOR_PROTOCOL = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "az": "azure",
    "abfs": "azure",
    "abfss": "azure",
}


def install_hint(extra: str) -> str:
    """The command that installs an extra, as every message prints it."""
    return f"pip install 'actioncache[{extra}]'"


def missing(feature: str, extra: str, cause: BaseException | str, error: type[MissingExtraError] = MissingExtraError) -> MissingExtraError:
    """The error for ``feature`` when ``cause`` (an ImportError or a module name) is missing."""
    if isinstance(cause, str):
        name = cause
    else:  # a driver module may re-raise the ImportError with its own words: take the module's name
        name = getattr(cause, "name", None) or getattr(cause.__cause__, "name", None) or str(cause)
    err = error(f"{feature} needs {name}, which is not installed; install it with: {install_hint(extra)}")
    err.extra = extra
    err.name = name
    return err


def is_installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it (its parents may be imported)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(feature: str, extra: str, *modules: str, error: type[MissingExtraError] = MissingExtraError) -> None:
    """Raise the missing-extra error for ``feature`` unless every one of ``modules`` is installed."""
    for module in modules:
        if not is_installed(module):
            raise missing(feature, extra, module, error)
