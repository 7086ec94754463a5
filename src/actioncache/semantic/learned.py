"""The learned verifier: a small pair classifier over the default model's token states, on ONNX Runtime.

After the rules, a candidate the embedding found and no rule refused is shown to a model trained
for this question (``bench/train_semantic_verifier.py``, offline, seeded): does one plan answer
both requests? It reads what the embedding already computed, the last layer of all-MiniLM-L6-v2
for every word piece of both requests (the default embedder's int8 model), so it costs no second
run of the language model:

* ``verifier_project.onnx`` turns each side's token states into small per-token features; a stored
  entry keeps its own (``store`` saves them beside the embedding), so a lookup projects only the
  new request;
* ``verifier_pair.onnx`` aligns the two sides' tokens softly, compares each token with what it
  aligns to, pools, adds the two embeddings' cosine, and answers a probability.

Both files and ``verifier.json`` (the operating point ``min_score`` chosen on the development
split, sizes, what it was trained on and how it scored) ship in ``actioncache/semantic/data``. A
probability below ``min_score`` refuses the candidate (reason ``learned``); a failure to load or
run refuses too (the pipeline's rule for a broken gate), never serves.

Ask for it with ``verifier="learned"``; ``verifier="auto"`` takes it only where the cross-encoder's
files are missing. With the default ``OnnxEmbedder`` (int8) the token states come from the same run
that embeds the request (about 0.6 ms a pair, against the cross-encoder's second model run); with
another embedder it runs the int8 model itself for the states.
"""

from __future__ import annotations

import base64
import json
import threading
from collections import OrderedDict
from importlib import resources
from typing import Any

from .embedder_contract import DEFAULT_LOCAL_MODEL
from .embedders_onnx import QUANTIZED_NAME
from .guard.context import key_text
from .guard.number import spelt
from .guard.registry import VERIFIER, Pair
from .numpy_required import np

_MEMORY = 4096  # texts whose features are kept
#: The embedder whose token states the head reads (``verifier.json``'s "embedder"): the default int8 model.
ENCODER = f"{QUANTIZED_NAME}:{DEFAULT_LOCAL_MODEL}"


def _data(name: str) -> bytes:
    return resources.files("actioncache.semantic").joinpath(f"data/{name}").read_bytes()


_SESSIONS: tuple[Any, Any] | None = None
_SESSIONS_LOCK = threading.Lock()


def _sessions() -> tuple[Any, Any]:
    """The two ONNX Runtime sessions, made once per process (every cache shares them)."""
    global _SESSIONS
    if _SESSIONS is None:
        with _SESSIONS_LOCK:
            if _SESSIONS is None:
                import onnxruntime

                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = 1
                options.inter_op_num_threads = 1
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                made = tuple(onnxruntime.InferenceSession(_data(name), options, providers=["CPUExecutionProvider"])
                             for name in ("verifier_project.onnx", "verifier_pair.onnx"))
                _SESSIONS = (made[0], made[1])
    return _SESSIONS


def available() -> bool:
    """The model files ship with the package and onnxruntime is installed."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    try:
        return all(resources.files("actioncache.semantic").joinpath(f"data/{name}").is_file()
                   for name in ("verifier.json", "verifier_project.onnx", "verifier_pair.onnx"))
    except (ModuleNotFoundError, OSError):
        return False


def _alike(pair: Pair) -> bool:
    """The same words once normalised, numbers spelt one way ("five hundred dollars" / "$500"): the
    rules have read both, and the model, which sees word pieces, has nothing left to judge."""
    a, b = pair.story_sides
    return a.tokens == b.tokens or spelt(a) == spelt(b)


class LearnedVerifier:
    """The verifier gate ``learned``: refuses a candidate the model gives less than ``min_score``.

    ``encoder`` gives token states (an :class:`~actioncache.semantic.OnnxEmbedder` with int8
    weights); by default one is made on first need. ``min_score=None`` takes the shipped operating
    point."""

    kind = VERIFIER
    name = "learned"

    def __init__(self, *, min_score: float | None = None, encoder: Any = None) -> None:
        self.meta: dict[str, Any] = json.loads(_data("verifier.json"))
        self.id: str = self.meta["id"]
        self.min_score = float(self.meta["min_score"] if min_score is None else min_score)
        if not 0.0 <= self.min_score <= 1.0:
            raise ValueError(f"min_score must be a probability in [0, 1], got {min_score!r}")
        self._encoder = encoder
        self._features: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    # --- the model ------------------------------------------------------------------------------

    @property
    def _sessions(self) -> tuple[Any, Any]:
        return _sessions()

    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            from .embedders_onnx import OnnxEmbedder

            self._encoder = OnnxEmbedder(precision="int8")
        return self._encoder

    @property
    def _features_id(self) -> str:
        """What stored features are: this head's projection of its encoder's states. Both are named,
        the encoder by the name it gives itself, so that features projected from another encoder's
        states (an earlier recipe of the int8 model) are projected again, never compared with these."""
        return f"{self.id}/{getattr(self.encoder, 'name', type(self.encoder).__name__)}"

    def project(self, states: np.ndarray) -> np.ndarray:
        """Token states (tokens x 384) -> features (tokens x D)."""
        rows = np.asarray(states, dtype=np.float32)[None]
        out: np.ndarray = np.asarray(self._sessions[0].run(None, {"states": rows})[0][0], dtype=np.float32)
        return out

    def probability(self, request: np.ndarray, candidate: np.ndarray, cosine: float) -> float:
        """The model's probability that one plan answers both requests, from their features."""
        feeds = {"request": np.asarray(request, np.float32)[None], "candidate": np.asarray(candidate, np.float32)[None],
                 "cosine": np.array([[cosine]], np.float32)}
        return float(self._sessions[1].run(None, feeds)[0].reshape(-1)[0])

    # --- features of texts ------------------------------------------------------------------------

    def known(self, text: str) -> bool:
        with self._lock:
            return text in self._features

    def remember(self, text: str, features: np.ndarray) -> None:
        with self._lock:
            self._features[text] = features
            self._features.move_to_end(text)
            if len(self._features) > _MEMORY:
                self._features.popitem(last=False)

    def remember_states(self, text: str, states: np.ndarray) -> np.ndarray:
        features = self.project(states)
        self.remember(text, features)
        return features

    def features(self, text: str) -> np.ndarray:
        """The features of ``text`` (a request's key text): remembered, else from the encoder."""
        with self._lock:
            found = self._features.get(text)
            if found is not None:
                self._features.move_to_end(text)
                return found
        return self.remember_states(text, self.encoder.token_states(text))

    def encode(self, features: np.ndarray) -> dict[str, Any]:
        """Features as stored in an entry: this model's id and its encoder's name, the shape, float16 bytes in base64."""
        rows = np.asarray(features, np.float16)
        return {"id": self._features_id, "shape": list(rows.shape),
                "data": base64.b64encode(rows.tobytes()).decode("ascii")}

    def decode(self, stored: Any) -> np.ndarray | None:
        """Stored features, or ``None`` when they are another model's or another encoder's, or unreadable."""
        try:
            if stored.get("id") != self._features_id:
                return None
            rows = np.frombuffer(base64.b64decode(stored["data"]), dtype=np.float16).astype(np.float32)
            return rows.reshape(stored["shape"])
        except (AttributeError, KeyError, TypeError, ValueError):
            return None

    # --- the gate ---------------------------------------------------------------------------------

    def __call__(self, pair: Pair) -> str | None:
        if _alike(pair):
            return None  # the same words once normalised ("to-do" / "todo", "$500" / "500 dollars"): nothing to judge
        mine, theirs = pair.story or (key_text((), pair.request), key_text((), pair.candidate))
        cosine = float(pair.extras.get("cosine", pair.similarity))
        score = self.probability(self.features(mine), self.features(theirs), cosine)
        pair.extras["learned_score"] = score
        return None if score >= self.min_score else self.name

    def __repr__(self) -> str:
        return f"LearnedVerifier(id={self.id!r}, min_score={self.min_score})"
