"""Pair sets in one format, measured one pair at a time: the blind set and the project's own sets.

A pair set is a JSON-lines file, one object a line: ``{"id", "category", "label", "a", "b"}``,
``label`` ``"should_hit"`` or ``"trap"``, ``a`` and ``b`` each a request: a string, or a list of
``{"role", "content"}`` messages ending with a user message. Protocol: a fresh cache stores ``a``,
looks up ``b``; a should-hit pair served is right, a trap served is a wrong answer.

A *blind* set is measured only after its SHA-256 matches the ``SHA256SUMS`` file beside it, and
only aggregates are ever printed or written (served % of should-hit pairs, wrong % of traps, per
category, conversations apart): its pairs are never shown, so they cannot be tuned on.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHOULD_HIT, TRAP = "should_hit", "trap"


class BlindSetError(RuntimeError):
    """The blind set cannot be measured: no SHA256SUMS beside it, or its hash does not match."""


def load_pairs(path: Path) -> list[dict[str, Any]]:
    """A pair set: JSON lines in this format, or one of the project's JSON sets converted to it
    (``semantic_eval.json``/``semantic_heldout.json``: stored/lookup, label hit/miss; the public
    paraphrase pairs: origin/similar, positives only)."""
    if path.suffix == ".json":
        return _converted(path, json.loads(path.read_text(encoding="utf-8")))
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        pair = json.loads(line)
        if pair.get("label") not in (SHOULD_HIT, TRAP) or "a" not in pair or "b" not in pair:
            raise ValueError(f"{path}:{number}: a pair needs 'a', 'b' and a label 'should_hit' or 'trap'")
        pairs.append(pair)
    return pairs


def _converted(path: Path, data: Any) -> list[dict[str, Any]]:
    rows = data["pairs"] if isinstance(data, dict) else data
    pairs = []
    for i, row in enumerate(rows):
        if "origin" in row and "similar" in row:
            pairs.append({"id": i, "category": "public_paraphrase", "label": SHOULD_HIT, "a": row["origin"], "b": row["similar"]})
        elif "stored" in row and "lookup" in row:
            label = SHOULD_HIT if row["label"] == "hit" else TRAP
            pairs.append({"id": row.get("id", i), "category": row["category"], "label": label, "a": row["stored"],
                          "b": row["lookup"], "split": row.get("split")})
        else:
            raise ValueError(f"{path}: pair {i} has neither origin/similar nor stored/lookup; not a pair set")
    return pairs


def check_frozen(path: Path) -> str:
    """The file's SHA-256, after checking it against ``SHA256SUMS`` in the same folder."""
    sums = path.parent / "SHA256SUMS"
    if not sums.is_file():
        raise BlindSetError(f"no {sums}: a blind set is measured only once it is frozen (wait for its SHA256SUMS)")
    expected = None
    for line in sums.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("*") == path.name:
            expected = parts[0].lower()
    if expected is None:
        raise BlindSetError(f"{sums} lists no hash for {path.name}")
    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    if actual != expected:
        raise BlindSetError(f"{path.name} has SHA-256 {actual}, SHA256SUMS says {expected}: the set changed; not measured")
    return actual


def is_conversation(pair: dict[str, Any]) -> bool:
    return isinstance(pair["a"], list) or isinstance(pair["b"], list)


@dataclass
class Tally:
    """Served counts per (group, category, label); group is "single" or "conversation"."""

    counts: dict[tuple[str, str, str], list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    errors: list[tuple[dict[str, Any], bool]] = field(default_factory=list)

    def add(self, pair: dict[str, Any], served: bool) -> None:
        group = "conversation" if is_conversation(pair) else "single"
        slot = self.counts[(group, pair["category"], pair["label"])]
        slot[0] += served
        slot[1] += 1
        if served != (pair["label"] == SHOULD_HIT):
            self.errors.append((pair, served))

    def rate(self, label: str, group: str | None = None, category: str | None = None) -> tuple[int, int]:
        k = n = 0
        for (g, c, lab), (served, total) in self.counts.items():
            if lab == label and (group is None or g == group) and (category is None or c == category):
                k += served
                n += total
        return k, n

    def categories(self, label: str) -> list[str]:
        return sorted({c for (_, c, lab) in self.counts if lab == label})

    def worst_trap(self) -> tuple[str, float]:
        rates = [(c, k / n) for c in self.categories(TRAP) for k, n in [self.rate(TRAP, category=c)] if n]
        return max(rates, key=lambda cr: cr[1]) if rates else ("-", 0.0)


def measure(pairs: list[dict[str, Any]], served: Callable[[Any, Any], bool]) -> Tally:
    tally = Tally()
    for pair in pairs:
        tally.add(pair, served(pair["a"], pair["b"]))
    return tally


def _pct(kn: tuple[int, int]) -> str:
    k, n = kn
    return f"{k / n:.1%} ({k}/{n})" if n else "-"


def summary(tally: Tally) -> list[str]:
    """Aggregates only: overall, singles and conversations apart, per category."""
    worst_cat, worst = tally.worst_trap()
    lines = [
        "| group | should-hit served | traps wrong |",
        "|---|---|---|",
        f"| all | {_pct(tally.rate(SHOULD_HIT))} | {_pct(tally.rate(TRAP))} |",
        f"| single requests | {_pct(tally.rate(SHOULD_HIT, 'single'))} | {_pct(tally.rate(TRAP, 'single'))} |",
        f"| conversations | {_pct(tally.rate(SHOULD_HIT, 'conversation'))} | {_pct(tally.rate(TRAP, 'conversation'))} |",
        "",
        "| category | label | rate | meaning |",
        "|---|---|---|---|",
    ]
    for label, meaning in ((SHOULD_HIT, "served (right)"), (TRAP, "wrong answers")):
        for category in tally.categories(label):
            lines.append(f"| {category} | {label} | {_pct(tally.rate(label, category=category))} | {meaning} |")
    lines += ["", f"Worst trap category: {worst_cat} {worst:.1%}."]
    return lines


def commit_id() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench/results"],
                               cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+uncommitted" if dirty else "")


def run_blind(path: Path, served: Callable[[Any, Any], bool], log: Path, note: str, settings: str) -> str:
    """Measure a frozen blind set and append its aggregates (with the commit) to ``log``."""
    digest = check_frozen(path)
    pairs = load_pairs(path)
    load = os.getloadavg()[0]
    started = time.perf_counter()
    tally = measure(pairs, served)
    seconds = time.perf_counter() - started
    entry = [
        f"## {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, commit {commit_id()}",
        "",
        f"{note}" if note else "",
        (f"Set: {path.name} (sha256 {digest[:16]}..., {len(pairs)} pairs). Settings: {settings}. "
         f"Load average {load:.1f} at the start; {seconds:.0f} s."),
        "",
        *summary(tally),
        "",
    ]
    text = "\n".join(line for line in entry if line is not None) + "\n"
    if not log.exists():
        log.write_text("# Blind set runs\n\nEach run of `python bench/bench_semantic.py --blind PATH`: aggregates only "
                       "(the pairs are never printed, so they cannot be tuned on), newest last.\n\n")
    with log.open("a", encoding="utf-8") as handle:
        handle.write(text)
    return text


def run_own(path: Path, served: Callable[[Any, Any], bool], show_errors: bool) -> str:
    """Measure one of the project's own sets; with ``show_errors`` its wrong answers and misses go to stderr."""
    pairs = load_pairs(path)
    tally = measure(pairs, served)
    if show_errors:
        for pair, was_served in tally.errors:
            what = "WRONG" if was_served else "miss"
            print(f"[{what}] {pair['category']} {pair.get('id', '')}: {json.dumps(pair['a'])} | {json.dumps(pair['b'])}",
                  file=sys.stderr)
    return "\n".join([f"# {path.name} ({len(pairs)} pairs)", "", *summary(tally)]) + "\n"


# --- where should-hits are lost: one stage per pair -------------------------------------------------


@dataclass(frozen=True)
class Probe:
    """What each stage of a lookup makes of one pair, measured once with every stage open.

    ``similarity``: the key texts' cosine; ``rules``: every default rule that refuses (in their
    order); ``context``: the context gate's reason (at the probe's threshold); ``learned``: the
    learned verifier's probability; ``exact``: the exact-match path answers (nothing else runs)."""

    similarity: float
    rules: tuple[str, ...] = ()
    context: str | None = None
    learned: float | None = None
    exact: bool = False
    doubts: tuple[str, ...] = ()  # the rules whose finding is a Doubt (a sure verifier may settle it)
    context_doubt: bool = False  # the context gate's finding is a Doubt


def stage(probe: Probe, threshold: float, min_score: float | None, skip_rules: frozenset[str] = frozenset()) -> str:
    """The first stage that refuses the pair at this operating point, or ``"served"``."""
    if probe.exact:
        return "served"
    if not probe.similarity >= threshold:
        return "threshold"
    from actioncache.semantic.calibration import CALIBRATED
    from actioncache.semantic.cross import SETTLES_DOUBTS_AT
    from actioncache.semantic.learned import ENCODER

    rules = [r for r in probe.rules if r not in skip_rules]
    # Doubts alone (Doubt findings) are settled by a sure verifier, as a lookup settles them.
    sure = min_score is not None and probe.learned is not None and probe.learned >= SETTLES_DOUBTS_AT
    if rules and not (sure and all(r in probe.doubts for r in rules)):
        return f"rule:{rules[0]}"
    if probe.context is not None and not (sure and probe.context_doubt):
        return "context"
    if min_score is not None and probe.learned is not None and probe.learned < min_score:
        return "learned"
    # Below the embedding's own calibrated threshold only a sure reading serves (cross.py).
    if min_score is not None and probe.learned is not None and not sure and probe.similarity < CALIBRATED[ENCODER]:
        return "learned"
    return "served"


def stage_table(pairs: list[dict[str, Any]], probes: list[Probe], threshold: float, min_score: float | None) -> list[str]:
    """Per category: how many pairs each stage stops first (should-hits: where they are lost)."""
    counts: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for pair, probe in zip(pairs, probes):
        group = "conv:" if is_conversation(pair) else ""
        counts[(pair["label"], group + pair["category"])][stage(probe, threshold, min_score)] += 1
    stages = sorted({s for c in counts.values() for s in c}, key=lambda s: (s != "served", s != "threshold", s))
    lines = [f"Stages at threshold {threshold:.2f}, verifier operating point {min_score}: the first stage that "
             "refuses each pair (should-hit: where it is lost; trap: served is a wrong answer).", "",
             "| label | category | pairs | " + " | ".join(stages) + " |", "|---|---|---|" + "---|" * len(stages)]
    for (label, category), row in sorted(counts.items()):
        n = sum(row.values())
        lines.append(f"| {label} | {category} | {n} | " + " | ".join(f"{row.get(s, 0)}" for s in stages) + " |")
    return lines


def sweep_table(pairs: list[dict[str, Any]], probes: list[Probe], thresholds: list[float],
                min_scores: list[float | None], skip_rules: frozenset[str] = frozenset()) -> list[str]:
    """Served and wrong (overall, worst trap category, conversations) for each threshold and operating point."""
    lines = ["| threshold | verifier | should-hit served | traps wrong | worst trap category | conversations served / wrong |",
             "|---|---|---|---|---|---|"]
    for threshold in thresholds:
        for min_score in min_scores:
            tally = Tally()
            for pair, probe in zip(pairs, probes):
                tally.add(pair, stage(probe, threshold, min_score, skip_rules) == "served")
            worst_cat, worst = tally.worst_trap()
            lines.append(f"| {threshold:.2f} | {min_score} | {_pct(tally.rate(SHOULD_HIT))} | {_pct(tally.rate(TRAP))} | "
                         f"{worst_cat} {worst:.1%} | {_pct(tally.rate(SHOULD_HIT, 'conversation'))} / "
                         f"{_pct(tally.rate(TRAP, 'conversation'))} |")
    return lines
