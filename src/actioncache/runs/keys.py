"""The primary key of one command run: what finds the candidate entries for a lookup.

Keys come from inputs, never from the iteration. A command's primary key covers

* the tool: its name, and the resolved executable's path, size and mtime (an upgraded tool misses);
* its argv, as given, and the working directory (a bare ``ls`` in another directory is another key);
* the content hash of every ``--input`` (a tree hash for a directory), the value of every
  ``--env NAME`` and, with ``--stdin``, the bytes fed to the tool;
* ``read`` scope: each named path's absolute path, mtime and size (a ``touch`` misses);
* ``llm_ro`` scope (with ``check_git_sha``): the git HEAD commit of the working directory.

When the run is traced, the recorded read-set (``readset``) covers every file the command really
read, so named files need no hashing here. Without a tracer the key falls back to hashing every
argument that names an existing file (``--opt=PATH`` too) and every directory argument's tree: the
``fallback`` flag in the key keeps the two kinds of entries apart.

Tree hashes skip version-control and tool-cache directories (``SKIP_DIRS``): they change on every
commit or run without changing what a linter sees.

Imports stay light (no ``json``, ``hashlib`` or ``subprocess`` at import time): the hit path uses this.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hit ~10 ms
if TYPE_CHECKING:
    from typing import Any, Iterable, Mapping, Sequence

from .lean import dumps, file_sha256, sha256, which  # noqa: E402 - after the TYPE_CHECKING block

KEY_VERSION = 2
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"})


def file_digest(path: str) -> str:
    return file_sha256(path)


def tree_digest(root: str) -> str:
    """SHA-256 over a directory's sorted entries: relative path, kind, exec bit and content."""
    digest = sha256()
    for directory, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        rel_dir = os.path.relpath(directory, root)
        digest.update(f"d\0{rel_dir}\0".encode("utf-8", "surrogateescape"))
        for name in sorted(files):
            full = os.path.join(directory, name)
            rel = os.path.join(rel_dir, name)
            try:
                info = os.lstat(full)
                if stat.S_ISLNK(info.st_mode):
                    entry = f"l\0{rel}\0{os.readlink(full)}"
                elif stat.S_ISREG(info.st_mode):
                    entry = f"f\0{rel}\0{info.st_mode & 0o111:o}\0{file_digest(full)}"
                else:
                    entry = f"o\0{rel}"
            except OSError as exc:  # vanished or unreadable: it still changes the key
                entry = f"e\0{rel}\0{type(exc).__name__}"
            digest.update(entry.encode("utf-8", "surrogateescape") + b"\n")
    return digest.hexdigest()


def path_digest(path: str) -> list[Any] | None:
    """``["f"|"d", sha256]`` for an existing file or directory, else None."""
    try:
        if os.path.isdir(path):
            return ["d", tree_digest(path)]
        if os.path.isfile(path):
            return ["f", file_digest(path)]
    except OSError as exc:
        return ["e", type(exc).__name__]
    return None


def path_candidates(arg: str) -> Iterable[str]:
    """The paths one argument may name: itself, and the value of ``--opt=value``."""
    if arg:
        yield arg
    if arg.startswith("-") and "=" in arg:
        value = arg.split("=", 1)[1]
        if value:
            yield value


def tool_identity(tool: str) -> dict[str, Any]:
    resolved = which(tool)
    if resolved is None:
        return {"name": tool}
    try:
        info = os.stat(resolved)
        return {"name": tool, "path": resolved, "size": info.st_size, "mtime_ns": info.st_mtime_ns}
    except OSError:
        return {"name": tool, "path": resolved}


def git_head(cwd: str | None = None) -> str | None:
    """The HEAD commit ``git rev-parse HEAD`` prints in ``cwd``: read from the repository's files
    when that reading is certain (``lean.git_head``, also what the hit path uses), else from git."""
    from .lean import git_head as read_head

    sure, head = read_head(cwd or os.getcwd())
    if sure:
        return head
    import subprocess

    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.decode().strip() or None if out.returncode == 0 else None


def key_parts(
    argv: Sequence[str],
    *,
    scope: str,
    inputs: Sequence[str] = (),
    env_names: Sequence[str] = (),
    stdin_data: bytes | None = None,
    check_git_sha: bool = True,
    environ: Mapping[str, str] | None = None,
    traced: bool = True,
    cwd: str | None = None,
) -> dict[str, Any]:
    """Everything that identifies this run, as a JSON-able dict (``--explain`` prints it).

    ``traced=False``: no read-set will be recorded, so every argument naming a file is hashed too.
    """
    environ = os.environ if environ is None else environ
    files: list[list[Any]] = []
    stats: list[list[Any]] = []
    named: list[tuple[str, str]] = [] if traced else [(f"arg{i}", c) for i, a in enumerate(argv[1:], 1)
                                                       for c in path_candidates(a)]
    named += [("input", p) for p in inputs]
    for label, path in named:
        found = path_digest(path)
        if found is None:
            if label == "input":
                files.append([label, path, "missing"])
            continue
        files.append([label, path, *found])
    if scope == "read":
        for arg in argv[1:]:
            for path in path_candidates(arg):
                try:
                    info = os.stat(path)
                except OSError:
                    continue
                stats.append([os.path.abspath(path), info.st_mtime_ns, info.st_size])
    parts: dict[str, Any] = {"v": KEY_VERSION, "scope": scope, "argv": list(argv), "tool": tool_identity(argv[0]),
                             "cwd": cwd or os.getcwd(), "files": files}
    if not traced:
        parts["fallback"] = True
    if stats:
        parts["stat"] = stats
    if env_names:
        parts["env"] = {name: environ.get(name) for name in sorted(set(env_names))}
    if stdin_data is not None:
        parts["stdin"] = sha256(stdin_data).hexdigest()
    if scope == "llm_ro" and check_git_sha:
        parts["git_head"] = git_head()
    return parts


def run_key(tool: str, parts: Mapping[str, Any]) -> str:
    """``exec:{tool}:{sha256}``; stored as ``cache:exec:{tool}:{sha256}``."""
    return f"exec:{tool}:{sha256(dumps(parts).encode('utf-8')).hexdigest()}"
