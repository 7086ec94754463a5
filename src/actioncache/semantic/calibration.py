"""Thresholds: one calibrated per embedder, and one learned per entry from feedback.

**Per embedder.** A cosine similarity means different things for different models, so each known
embedder has its own default threshold, chosen on the tuning half of bench/data/semantic_eval.json
(with the contrast checks on) by ``bench/bench_semantic.py``. An embedder not listed here gets
:data:`FALLBACK_THRESHOLD` and one warning asking for an explicit ``threshold=``.

**Per entry** (in the spirit of vCache, Schroeder et al. 2025): each entry remembers the
similarities at which it was served by a vector hit and whether the feedback said the plan was
right. Its threshold is the smallest ``t >= base`` such that, among those observations with
similarity ``>= t``, the estimated wrong-hit rate stays within the user's ``error_bound``::

    (wrong(>= t) + PRIOR_WRONG) / (observed(>= t) + PRIOR_COUNT) <= error_bound

with a prior worth :data:`PRIOR_COUNT` observations at a wrong rate of ``error_bound / 2``. One wrong
hit at similarity 0.82 lifts that entry's threshold just above 0.82; enough right hits below it
bring it back down. Exact hits are not observations (the exact path never guesses).
"""

from __future__ import annotations

import logging
from typing import Iterable

log = logging.getLogger("actioncache.semantic")

# Embedder name -> default cosine threshold (tuning half, contrast checks on).
CALIBRATED = {
    "st:all-MiniLM-L6-v2": 0.70,
    "onnx:all-MiniLM-L6-v2": 0.70,  # the same model and weights through ONNX Runtime
    # OnnxEmbedder(precision="int8"), the default: signed int8 weights on 7 bits. With 8 bits ("onnx-qint8") its
    # tuning-half sweep (contrast checks on) matched the float model's: no trap served from 0.55 to 0.85; served
    # 89.5% at 0.65, 86.0% at 0.70 (float: 89.2%, 86.9%); 0.70 keeps the float model's headroom. On 7 bits, with
    # 2026-11-29's checks, against 8 bits on the same machine: no trap served from 0.55 to 0.85 either way;
    # 92.4% / 92.4% at 0.65, 89.5% / 90.4% at 0.70 (docs/semantic.md, "Choosing the threshold").
    "onnx-qint7:all-MiniLM-L6-v2": 0.70,
}
# With the cross-encoder as the last gate (the default with the packaged model): the cosine only chooses
# the candidate it reads, so it can reach lower. Swept on the tuning sets (bench_semantic.py --stages):
# from 0.70 to 0.55 the should-hits served rose 4-7 points with traps wrong within 0.2 of a point;
# below 0.55 little more is served (docs/semantic.md, "Choosing the threshold").
CALIBRATED_UNDER_CROSS = dict.fromkeys(CALIBRATED, 0.55)
# Feature hashing knows spelling, not meaning: on the tuning half no threshold serves paraphrases
# without serving traps, so without a model only exact matches are served (threshold above 1).
EXACT_ONLY = 1.01
FALLBACK_THRESHOLD = 0.80
DEFAULT_ERROR_BOUND = 0.05
PRIOR_COUNT = 10.0
MAX_OBSERVATIONS = 64
_warned: set[str] = set()


def default_threshold(embedder_name: str, *, cross: bool = False) -> float:
    """The embedder's calibrated threshold; ``cross``: the one calibrated with the cross-encoder judging after it."""
    if cross and embedder_name in CALIBRATED_UNDER_CROSS:
        return CALIBRATED_UNDER_CROSS[embedder_name]
    if embedder_name in CALIBRATED:
        return CALIBRATED[embedder_name]
    if embedder_name.startswith("hashing-"):
        return EXACT_ONLY
    if embedder_name not in _warned:
        _warned.add(embedder_name)
        log.warning(
            "no calibrated threshold for embedder %s; using %.2f. Pass threshold= after measuring it "
            "(docs/semantic.md, 'Choosing the threshold')", embedder_name, FALLBACK_THRESHOLD,
        )
    return FALLBACK_THRESHOLD


def learned_threshold(base: float, observations: Iterable[tuple[float, bool]], error_bound: float) -> float:
    """The entry's threshold from its ``(similarity, was_right)`` feedback (see the module doc)."""
    seen = sorted(((float(s), bool(ok)) for s, ok in observations), reverse=True)
    if not seen or all(ok for _, ok in seen):
        return base
    prior_wrong = PRIOR_COUNT * error_bound / 2
    # Candidates: the base, and just above each observed similarity; keep the lowest that is safe.
    candidates = sorted({base} | {s + 1e-6 for s, _ in seen if s + 1e-6 > base})
    for t in candidates:
        above = [ok for s, ok in seen if s >= t]
        wrong = sum(1 for ok in above if not ok)
        if (wrong + prior_wrong) / (len(above) + PRIOR_COUNT) <= error_bound:
            return t
    return candidates[-1]
