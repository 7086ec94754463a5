"""``file.read`` / ``file.write``: local files (relative paths are relative to the working directory;
for an untrusted agent, to its root, and no path may leave the root). A failure carries
``error_type``: ``validation_error`` (a bad mode), ``file_error`` (the file could not be read or written)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from ...actions import ActionTable, Engine, bad_arg, failure


def register_actions(registry: ActionTable, engine: Engine) -> None:
    def local(path: Any, what: str) -> Path:
        trust = getattr(engine, "trust", None)
        return trust.local_path(path, what) if trust is not None else Path(path)

    def read(state: Mapping[str, Any], path: str, encoding: str = "utf-8") -> dict[str, Any]:
        problem = bad_arg("file.read path", path, "string", optional=False) or bad_arg(
            "file.read encoding", encoding, "string", optional=False)
        if problem:
            return failure("validation_error", problem, path=str(path))
        source = local(path, "file.read")
        try:
            data = source.read_bytes()
            content = data.decode(encoding)
        except (OSError, UnicodeDecodeError, LookupError) as exc:
            return failure("file_error", f"cannot read {path!r}: {exc}", path=str(path))
        return {"success": True, "path": str(path), "content": content, "size_bytes": len(data)}

    def write(state: Mapping[str, Any], path: str, content: Any, mode: str = "overwrite",
              encoding: str = "utf-8", create_dirs: bool = True) -> dict[str, Any]:
        problem = bad_arg("file.write path", path, "string", optional=False) or bad_arg(
            "file.write encoding", encoding, "string", optional=False)
        if problem:
            return failure("validation_error", problem, path=str(path))
        if mode not in ("overwrite", "append"):
            return failure("validation_error", f"mode must be 'overwrite' or 'append', not {mode!r}", path=str(path))
        try:
            text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, indent=2)
        except (TypeError, ValueError) as exc:
            return failure("validation_error", f"file.write content must be a string or JSON data: {exc}", path=str(path))
        target = local(path, "file.write")
        try:
            if create_dirs:
                target.parent.mkdir(parents=True, exist_ok=True)
            data = text.encode(encoding)
            with open(target, "ab" if mode == "append" else "wb") as handle:
                handle.write(data)
        except (OSError, LookupError) as exc:
            return failure("file_error", f"cannot write {path!r}: {exc}", path=str(path))
        return {"success": True, "path": str(path), "size_bytes": len(data)}

    registry["file.read"] = read
    registry["file.write"] = write
