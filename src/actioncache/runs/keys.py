"""The key of one command run: tool, argv and the content of everything it names.

Seed 001: keys come from inputs, never from the iteration. A command's key covers

* the tool: its name, and the resolved executable's path, size and mtime (an upgraded tool misses);
* its argv, as given;
* the content hash of every argument that names an existing file (``--opt=PATH`` too), a tree
  hash for a directory, and of every ``--input``;
* ``read`` scope: also each such path's absolute path, mtime and size (a ``touch`` misses);
* ``llm_ro`` scope (with ``check_git_sha``): the git HEAD commit of the working directory;
* any ``--env NAME`` values and, with ``--stdin``, the bytes fed to the tool.

Tree hashes skip version-control and tool-cache directories (``SKIP_DIRS``): they change on every
commit or run without changing what a linter sees.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from typing import Any, Iterable, Mapping, Sequence

from ..keys import canonical_json

KEY_VERSION = 1
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"})


def file_digest(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def tree_digest(root: str) -> str:
    """SHA-256 over a directory's sorted entries: relative path, kind, exec bit and content."""
    digest = hashlib.sha256()
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
    resolved = shutil.which(tool)
    if resolved is None:
        return {"name": tool}
    try:
        info = os.stat(resolved)
        return {"name": tool, "path": resolved, "size": info.st_size, "mtime_ns": info.st_mtime_ns}
    except OSError:
        return {"name": tool, "path": resolved}


def git_head(cwd: str | None = None) -> str | None:
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
) -> dict[str, Any]:
    """Everything that identifies this run, as a JSON-able dict (``--explain`` prints it)."""
    environ = os.environ if environ is None else environ
    files: list[list[Any]] = []
    stats: list[list[Any]] = []
    named: list[tuple[str, str]] = [(f"arg{i}", c) for i, a in enumerate(argv[1:], 1) for c in path_candidates(a)]
    named += [("input", p) for p in inputs]
    for label, path in named:
        found = path_digest(path)
        if found is None:
            if label == "input":
                files.append([label, path, "missing"])
            continue
        files.append([label, path, *found])
        if scope == "read":
            try:
                info = os.stat(path)
                stats.append([os.path.abspath(path), info.st_mtime_ns, info.st_size])
            except OSError:
                pass
    parts: dict[str, Any] = {"v": KEY_VERSION, "scope": scope, "argv": list(argv), "tool": tool_identity(argv[0]),
                             "files": files}
    if stats:
        parts["stat"] = stats
    if env_names:
        parts["env"] = {name: environ.get(name) for name in sorted(set(env_names))}
    if stdin_data is not None:
        parts["stdin"] = hashlib.sha256(stdin_data).hexdigest()
    if scope == "llm_ro" and check_git_sha:
        parts["git_head"] = git_head()
    return parts


def run_key(tool: str, parts: Mapping[str, Any]) -> str:
    """``exec:{tool}:{sha256}``; the core stores it as ``cache:exec:{tool}:{sha256}``."""
    return f"exec:{tool}:{hashlib.sha256(canonical_json(parts).encode('utf-8')).hexdigest()}"
