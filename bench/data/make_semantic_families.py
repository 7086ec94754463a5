"""Expand the hand-written request families (semantic_families/*.txt) into pair sets.

Writes ``semantic_families_{train,dev,holdout}.jsonl`` beside this file, in the pair format of
``bench/semantic_pairs.py`` (``{"id", "category", "label", "a", "b", "family"}``), split by family:
every fifth family from the third is ``dev``, every fifth from the fifth ``holdout`` (only among the
files written before the holdout was frozen: ``FIRST_FILES``), the rest ``train``. Reproducible: ``python bench/data/make_semantic_families.py`` (no randomness).

From each family: the request and each rewording, both ways round, and every two rewordings
(should-hit, in the rewording's category); the request and every trap, both ways round, and the
first two rewordings with every trap (traps). Conversation families give conversation pairs.
"""

from __future__ import annotations

import hashlib
import json
from itertools import combinations
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
SOURCES = HERE / "semantic_families"
KINDS = {"p": "paraphrase", "c": "chatty", "r": "reorder"}


def parse_request(text: str) -> Any:
    if "||" not in text and not text.startswith("[user]"):
        return text
    messages = []
    for part in text.split("||"):
        part = part.strip()
        role, _, content = part.partition("]")
        messages.append({"role": role.lstrip("[").strip(), "content": content.strip()})
    return messages


# The files in the order they were written: a new file goes last, so that no family already split
# changes its split (the holdout's hash in semantic_families/README.md holds it).
FIRST_FILES = ("conversations.txt", "dev_ops.txt", "life.txt", "office.txt")


def _files() -> list[Path]:
    rest = sorted(p.name for p in SOURCES.glob("*.txt") if p.name not in FIRST_FILES)
    return [SOURCES / name for name in (*FIRST_FILES, *rest)]


def families() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in _files():
        current: dict[str, Any] | None = None
        for line in path.read_text(encoding="utf-8").splitlines() + [""]:
            line = line.strip()
            if line.startswith("#"):
                continue
            if not line:
                if current is not None:
                    out.append(current)
                current = None
                continue
            tag, _, text = line.partition(" ")
            if tag == "=":
                current = {"source": path.name, "base": parse_request(text), "same": [], "traps": [],
                           "first": path.name in FIRST_FILES}
            elif current is None:
                raise ValueError(f"{path.name}: a line before the family's '=' line: {line!r}")
            elif tag in KINDS:
                current["same"].append((KINDS[tag], parse_request(text)))
            elif tag.startswith("t."):
                current["traps"].append((tag[2:], parse_request(text)))
            else:
                raise ValueError(f"{path.name}: unknown tag {tag!r} in {line!r}")
    return out


def split_of(index: int, first: bool = True) -> str:
    """Families written after the holdout was frozen (files after FIRST_FILES) go to train and dev only."""
    if index % 5 == 2:
        return "dev"
    return "holdout" if index % 5 == 4 and first else "train"


def pairs_of(family: dict[str, Any]) -> list[dict[str, Any]]:
    base, same, traps = family["base"], family["same"], family["traps"]
    conversation = isinstance(base, list)
    out = []

    def hit_category(kind: str) -> str:
        return "conversation_should_hit" if conversation else kind

    for kind, text in same:
        out.append((hit_category(kind), "should_hit", base, text))
        out.append((hit_category(kind), "should_hit", text, base))
    for (kind_a, a), (kind_b, b) in combinations(same, 2):
        out.append((hit_category(kind_b if kind_a == "paraphrase" else kind_a), "should_hit", a, b))
    for category, trap in traps:
        out.append((category, "trap", base, trap))
        out.append((category, "trap", trap, base))
        for _, text in same[:2]:
            out.append((category, "trap", text, trap))
    return [{"category": c, "label": lab, "a": a, "b": b} for c, lab, a, b in out]


def main() -> None:
    sets: dict[str, list[dict[str, Any]]] = {"train": [], "dev": [], "holdout": []}
    for index, family in enumerate(families()):
        split = split_of(index, family["first"])
        for pair in pairs_of(family):
            pair["family"] = index
            pair["id"] = f"{split}-{len(sets[split])}"
            sets[split].append(pair)
    for split, pairs in sets.items():
        path = HERE / f"semantic_families_{split}.jsonl"
        path.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs), encoding="utf-8")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        print(f"{path.name}: {len(pairs)} pairs, sha256 {digest}")


if __name__ == "__main__":
    main()
