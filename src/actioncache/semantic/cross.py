"""The cross-encoder verifier (the default with the packaged model; ``verifier="cross"``): reads both requests in one input, on ONNX Runtime.

After the rules, the candidate about to be served is shown to a pair classifier fine-tuned for
this question (``bench/train_semantic_crossencoder.py``, offline, seeded): does one plan answer
both requests? Both key texts go into one input, ``[CLS] stored [SEP] request [SEP]``, so every
word piece of one side attends to every word piece of the other: "except Jake" with no
counterpart, two names that traded places, "getUserId" against "getUserID". A free rewording
shares meaning with little wording; a trap shares wording with a small change of meaning: the
embedding alone ranks the second above the first, a model that reads both sides together does not.

The model is all-MiniLM-L6-v2 (the packaged embedder's model) fine-tuned as a binary classifier,
exported with ONNX Runtime's transformer fusions and int8 weights: ``verifier_cross.onnx`` in
``actioncache/semantic/data``, beside ``verifier_cross.json`` (the operating point ``min_score`` chosen
on the development split, what it was trained on and how it scored). Its word pieces are the
packaged model's tokenizer's (``tokenizer.json``, shipped beside it). A probability below
``min_score`` refuses the candidate (reason ``cross``); a model that fails to load or run
refuses too (the pipeline's rule for a broken gate), never serves.

It runs once per lookup at most, on the one candidate about to be served, after every cheaper gate
let it through; it reads only the two texts, so it works with any embedder. While a core is spare
it starts on the lookup's first candidate before the rules have read it (``prepare``, on one worker
thread): the lookup waits for the longer of the two instead of their sum, and decides the same. It is the default
(``verifier="auto"``) with the packaged model, whose threshold was calibrated under it (0.55,
``calibration.CALIBRATED_UNDER_CROSS``): on the tuning and blind sets it serves more and answers
fewer traps wrongly than the token-state head (``learned.py``), for a second language-model run per
new candidate (about 3 ms on one core) and 23 MB of weights. docs/semantic.md compares the two.
"""

from __future__ import annotations

import json
import os
import threading
import time
import weakref
from collections import OrderedDict, deque
from concurrent.futures import Future, ThreadPoolExecutor
from importlib import resources
from typing import Any

from .guard.context import key_text
from .guard.registry import VERIFIER, Pair
from .numpy_required import np
from .spare_core import SpareCore

_MEMORY = 4096  # pairs whose probability is kept: an agent repeats its requests
# Sure enough to settle a doubt (a rule's Doubt, or a candidate below the embedder's own calibrated
# threshold): on the tuning sets no trap that only a doubt refused scored this high (docs/semantic.md, "Doubts").
SETTLES_DOUBTS_AT = 0.9
FILES = ("verifier_cross.json", "verifier_cross.onnx", "tokenizer.json")
# How long a lookup waits for a read started ahead (``prepare``) before it runs the model itself:
# far above a model run (~2-3 ms), there only so that a lost worker can never stall a lookup.
_AHEAD_PATIENCE = 1.0
# A hand-over to the worker comes back in 0.1-0.3 ms where the scheduler runs the two threads on two
# cores; where it wakes the caller on the worker's core, only after the model run (~2 ms). Past this
# median of the last nine, the read ahead stays off for a minute, then is tried again.
_SLOW_HANDOVER = 0.001
_AHEAD_OFF_FOR = 60.0


def _data(name: str) -> bytes:
    return resources.files("actioncache.semantic").joinpath(f"data/{name}").read_bytes()


_LOADED: dict[str, tuple[Any, Any]] = {}
_LOCK = threading.Lock()


def _loaded(name: str, max_tokens: int) -> tuple[Any, Any]:
    """The ONNX Runtime session (one thread) and the tokenizer, made once per process."""
    with _LOCK:
        if name not in _LOADED:
            import onnxruntime
            from tokenizers import Tokenizer

            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = onnxruntime.InferenceSession(_data(name), options, providers=["CPUExecutionProvider"])
            tokenizer = Tokenizer.from_str(_data("tokenizer.json").decode("utf-8"))
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_tokens, strategy="longest_first")
            _LOADED[name] = (session, tokenizer)
        return _LOADED[name]


_WORKER: ThreadPoolExecutor | None = None
_IN_FLIGHT = threading.Lock()  # held from a read ahead's hand-over to its end: one at a time per process


def _worker() -> ThreadPoolExecutor:
    """One thread that runs the model ahead of the rules (``CrossEncoderVerifier.prepare``)."""
    global _WORKER
    with _LOCK:
        if _WORKER is None:
            _WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="actioncache-cross")
        return _WORKER


_VERIFIERS: weakref.WeakSet[CrossEncoderVerifier] = weakref.WeakSet()


def _renew_in_child() -> None:
    """In a forked child: only the forking thread lives on, so the worker, its unfinished reads and
    any lock another thread held at the fork are gone; each is made anew (a lock copied held would
    stall the child's first lookup forever)."""
    global _WORKER, _LOCK, _IN_FLIGHT
    _WORKER = None  # the child makes its own on its first read ahead
    _LOCK = threading.Lock()
    _IN_FLIGHT = threading.Lock()
    for verifier in list(_VERIFIERS):
        verifier._lock = threading.Lock()
        verifier._ahead = {}


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_in_child)


def available() -> bool:
    """The model files ship with the package and onnxruntime and tokenizers are installed."""
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        return False
    try:
        return all(resources.files("actioncache.semantic").joinpath(f"data/{name}").is_file() for name in FILES)
    except (ModuleNotFoundError, OSError):
        return False


def _texts(pair: Pair) -> tuple[str, str]:
    """The stored key text and the request's, as the model was trained to read them (a conversation: its story)."""
    mine, theirs = pair.story or (key_text((), pair.request), key_text((), pair.candidate))
    return theirs, mine


def _alike(pair: Pair) -> bool:
    a, b = pair.story_sides
    return a.tokens == b.tokens


class CrossEncoderVerifier:
    """The verifier gate ``cross``: refuses a candidate the cross-encoder gives less than ``min_score``.

    ``min_score=None`` takes the shipped operating point."""

    kind = VERIFIER
    name = "cross"

    def __init__(self, *, min_score: float | None = None) -> None:
        self.meta: dict[str, Any] = json.loads(_data("verifier_cross.json"))
        self.id: str = self.meta["id"]
        self.min_score = float(self.meta["min_score"] if min_score is None else min_score)
        if not 0.0 <= self.min_score <= 1.0:
            raise ValueError(f"min_score must be a probability in [0, 1], got {min_score!r}")
        self._scores: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._ahead: dict[tuple[str, str], Future[float]] = {}
        self._spare_core = SpareCore()
        self._handovers: deque[float] = deque(maxlen=9)
        self._ahead_off_until = float("-inf")
        self._lock = threading.Lock()
        _VERIFIERS.add(self)

    def _feeds(self, stored: str, request: str) -> dict[str, Any]:
        _, tokenizer = _loaded(self.meta["file"], int(self.meta["max_tokens"]))
        encoded = tokenizer.encode(stored, request)
        return {"input_ids": np.array([encoded.ids], np.int64),
                "attention_mask": np.array([encoded.attention_mask], np.int64),
                "token_type_ids": np.array([encoded.type_ids], np.int64)}

    def _run(self, feeds: dict[str, Any]) -> float:
        session, _ = _loaded(self.meta["file"], int(self.meta["max_tokens"]))
        score = float(np.asarray(session.run(None, feeds)[0]).reshape(-1)[0])
        if not 0.0 <= score <= 1.0:  # NaN or out of range: a damaged model, which never serves
            raise ValueError(f"the cross-encoder answered {score!r}, not a probability")
        return score

    def probability(self, stored: str, request: str) -> float:
        """The model's probability that one plan answers both key texts."""
        return self._run(self._feeds(stored, request))

    def score(self, stored: str, request: str) -> float:
        """``probability``, remembered for the last few thousand pairs (a repeated request costs no model run)."""
        key = (stored, request)
        with self._lock:
            known = self._scores.get(key)
            if known is not None:
                self._scores.move_to_end(key)
                return known
            ahead = self._ahead.get(key)
        if ahead is not None:
            try:
                return ahead.result(timeout=_AHEAD_PATIENCE)
            except Exception:  # noqa: BLE001 - late or failed on the worker: run it here, where a failure is the caller's
                pass
        score = self.probability(stored, request)
        self._remember(key, score)
        return score

    def _remember(self, key: tuple[str, str], score: float) -> None:
        with self._lock:
            self._scores[key] = score
            if len(self._scores) > _MEMORY:
                self._scores.popitem(last=False)

    def prepare(self, pair: Pair) -> None:
        """Start the model on ``pair`` on a second core while the rules read it (a lookup calls this
        for its first candidate): the lookup then waits for the longer of the two, not their sum.

        Only while a core is spare (:class:`~actioncache.semantic.spare_core.SpareCore`), only when
        no other read ahead of this process is still running (one in flight: lookups from many
        threads never queue behind reads whose candidates the rules refused), and only while the
        hand-over comes back at once (``_note_handover``). It decides nothing: ``score`` takes the
        result, or runs the model itself if the read ahead failed; a candidate the rules refuse
        leaves its score remembered, unread."""
        if not self._spare_core() or time.monotonic() < self._ahead_off_until:
            return
        # (Not asked whether the two read alike, which needs both sides read: the rules read them
        # next. Such a pair, rare past the exact match, only costs the worker a run it did not need.)
        key = _texts(pair)
        with self._lock:
            if key in self._scores or key in self._ahead:
                return
        feeds = self._feeds(*key)  # the tokenizer holds the GIL: here, before the hand-over
        busy = _IN_FLIGHT
        if not busy.acquire(blocking=False):
            return  # the worker is still on an earlier read: this lookup runs its model itself
        started = threading.Event()

        def run() -> float:
            started.set()
            return self._run(feeds)  # ONNX Runtime lets go of the GIL while it computes

        def finished(future: Future[float]) -> None:
            busy.release()
            with self._lock:
                self._ahead.pop(key, None)
            if not future.cancelled() and future.exception() is None:
                self._remember(key, future.result())

        handed = time.perf_counter()
        try:
            future = _worker().submit(run)
        except RuntimeError:  # the interpreter is shutting down: no new threads, and nothing to say
            busy.release()
            return
        with self._lock:
            self._ahead[key] = future
        future.add_done_callback(finished)
        # Wait (without the GIL) until the worker is inside the model: otherwise it would wait for
        # the GIL until the rules are done, Python's switch interval being longer than they take.
        started.wait(0.005)
        self._note_handover(time.perf_counter() - handed)

    def _note_handover(self, seconds: float) -> None:
        """Turn the read ahead off for a while where the hand-over does not come back at once: on some
        machines the scheduler wakes this thread on the worker's core, after the model run, so the
        rules start late and a lookup they refuse takes the model's time for nothing."""
        with self._lock:
            self._handovers.append(seconds)
            if len(self._handovers) == self._handovers.maxlen and \
                    sorted(self._handovers)[len(self._handovers) // 2] > _SLOW_HANDOVER:
                self._ahead_off_until = time.monotonic() + _AHEAD_OFF_FOR
                self._handovers.clear()

    def __call__(self, pair: Pair) -> str | None:
        if _alike(pair):
            return None  # the same words once normalised ("to-do" / "todo", "whats" / "what's"): nothing to judge
        score = self.score(*_texts(pair))
        pair.extras["learned_score"] = score
        if score < self.min_score:
            return self.name
        # Below the similarity the embedding alone would serve from (the embedder's own calibrated
        # threshold), the candidate is itself a doubt: only a sure reading serves it.
        unsure_below = pair.extras.get("sure_above")
        if unsure_below is not None and pair.similarity < unsure_below and score < SETTLES_DOUBTS_AT:
            return self.name
        return None

    def settles(self, pair: Pair) -> bool:
        """Sure that one plan answers both requests, enough to overrule a rule's doubt about a detail."""
        return self.score(*_texts(pair)) >= SETTLES_DOUBTS_AT

    def __repr__(self) -> str:
        return f"CrossEncoderVerifier(id={self.id!r}, min_score={self.min_score})"
