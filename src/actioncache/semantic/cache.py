"""SemanticCache: remember which tool-call sequence answered a request, find it again for a similar one.

The agent memory cache (prompt -> action plan) on top of the project's one store:

* ``store(prompt, actions) -> entry_id`` keeps the plan under ``semantic:{namespace}:{entry_id}``
  with JSON value ``{"prompt", "actions", "embedding", "embedder"}`` and flat metadata
  (``_cache_type: semantic_plan``, ``namespace``, ``score``, ``prompt_hash`` ...).
* ``lookup(prompt) -> (entry_id, actions) | None``: first the exact-match path (SHA-256 of the
  normalized prompt; no embedding at all), then the top-k nearest entries by cosine similarity.
  A candidate hits when ``similarity >=`` the entry's own threshold (the embedder's calibrated
  one, raised by wrong-hit feedback: ``calibration.py``), its ``score >= floor``, the contrast
  checks find no contradicting difference (``guard.py``), no other trusted candidate with a
  different plan is within ``ambiguity_margin`` of it, and (for a borderline similarity) the
  verifier agrees (``verifiers.py``).
* ``update_reward(entry_id, success)``: ``score = alpha * success + (1 - alpha) * score``; an
  entry whose score falls below ``floor`` is deleted, so the next lookup misses and the agent re-plans.

``prompt`` may be a conversation (a list of ``{role, content}`` messages): its last message is
embedded and compared, the messages before it must be identical (``conversation.py``).

Store failures never fail the caller: ``lookup`` misses, ``store`` returns ``None`` and
``update_reward`` returns ``False``, each with a logged warning and an ``errors`` count.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from .._time import face_ttl, iso_utc
from ..codec import make_codec
from ..errors import ActionCacheError
from ..records import DEFAULT_EMA_ALPHA, DEFAULT_TRUST_FLOOR, Records, Tally, ema
from ..stores.base import CacheStore, Entry, escape_glob, open_store
from . import calibration, cross, learned
from .conversation import Request, as_request, normalize_prompt
from .cross import CrossEncoderVerifier
from .embedders import Embedder, EmbedderError, default_embedder
from .guard import DEFAULT_RULES, VERIFIER, Gate, Pair, Pipeline, literal_guard
from .guard.adapters import GuardGate, VerifierGate
from .guard.code import exact_alike
from .guard.context import key_text
from .guard.text import side
from .index import NumpyIndex, VectorIndex
from .learned import LearnedVerifier
from .numpy_required import np

log = logging.getLogger("actioncache.semantic")

CACHE_TYPE = "semantic_plan"
KEY_PREFIX = "semantic:"
GENERATION_PREFIX = "semantic-gen:"  # a store counter per namespace, bumped on every change
LOCK_PREFIX = "semantic-lock:"  # a store lease per entry, held for a reward update
# The vectors of entries another embedder wrote, as this one re-embedded them (SemanticCache._ours).
_VECTOR_PREFIX = "semantic-vector:"
_VECTOR_TYPE = "semantic_vector"
# Metadata of an entry's feedback (SemanticCache._observations): each observation with the tag of the
# embedder that measured it, and a marker that this version wrote the entry or its feedback.
_SCALED = "scaled_observations"
_TAGGED = "observations_tagged"
# The default model's calibrated threshold (every embedder has its own: calibration.CALIBRATED),
# chosen on the tuning half of bench/data/semantic_eval.json (docs/semantic.md, "Choosing the threshold").
DEFAULT_THRESHOLD = calibration.CALIBRATED["st:all-MiniLM-L6-v2"]
DEFAULT_TOP_K = 3
DEFAULT_ALPHA = DEFAULT_EMA_ALPHA  # the reward rule plan replay uses too (records)
DEFAULT_FLOOR = DEFAULT_TRUST_FLOOR
DEFAULT_VERIFY_MARGIN = 0.05
# Two different plans within this much similarity of each other: the request is ambiguous, so miss.
DEFAULT_AMBIGUITY_MARGIN = 0.02
_ID_LENGTH = 32  # uuid4().hex
_REJECTION = "rejection:"  # counter name prefix of one contrast check's rejections

Verifier = Callable[[str, "SemanticHit"], bool]
Guard = Callable[[str, str], bool]
Prompt = str | Sequence[dict[str, str]]
_SERVED_MEMORY = 4096  # entries whose recent vector hits are remembered for update_reward's similarity
_SERVED_PER_ENTRY = 4096  # an entry's vector hits since its last feedback, kept for update_reward
_RECENT_VECTORS = 1024  # texts whose embedding is kept for reuse


# Local models read a few hundred tokens and drop the rest (all-MiniLM-L6-v2: 256 word pieces),
# so two long prompts that share a preamble would embed alike whatever their endings ask. A long
# prompt is embedded as its beginning and its end, which fit the window together.
_WINDOW_WORDS = 70  # words kept from each end; a word is one to three word pieces


def embedding_window(text: str) -> str:
    """The text the embedder sees: ``text`` itself, or for a long one its first and last words."""
    words = text.split()
    if len(words) <= 2 * _WINDOW_WORDS:
        return text
    return " ".join(words[:_WINDOW_WORDS] + ["..."] + words[-_WINDOW_WORDS:])


@dataclass(frozen=True, slots=True)
class SemanticHit:
    """A lookup's answer with the evidence behind it."""

    entry_id: str
    actions: Any
    similarity: float
    score: float
    prompt: str
    exact: bool
    turns: tuple[tuple[str, str], ...] = ()  # the stored conversation's messages before its request


def prompt_hash(prompt: str) -> str:
    return hashlib.sha256(normalize_prompt(prompt).encode("utf-8")).hexdigest()


def _request_hash(request: Request) -> str:
    """The exact-match key: the prompt's hash, joined with the context's for a conversation."""
    digest = prompt_hash(request.text)
    if not request.context_hash:
        return digest
    return hashlib.sha256(f"{request.context_hash}:{digest}".encode("ascii")).hexdigest()


def _encoded(vector: np.ndarray) -> str:
    """A vector as stored: float32 bytes in base64."""
    return base64.b64encode(np.asarray(vector, dtype=np.float32).tobytes()).decode("ascii")


def _scale_tag(embedder_name: str) -> str:
    """A short name for one embedder's scale of similarity, stored with each feedback observation."""
    return hashlib.sha256(embedder_name.encode("utf-8")).hexdigest()[:8]


def _tagged_observations(metadata: Mapping[str, Any]) -> list[tuple[float, bool, str]]:
    """An entry's observations as ``(similarity, was_right, scale)``.

    ``scaled_observations`` holds them with their scale. ``observations`` is what earlier versions
    read and write, pairs without a scale: in an entry this version never touched, they are on the
    scale of the embedder that wrote it; in one it did, this version keeps there only each wrong
    answer at 1.0 (what an earlier version reads: cautious, and never a value it cannot unpack), and
    any other pair was appended by an earlier version (a rolling upgrade): an unknown scale ("?").
    Unreadable observations are left out."""
    touched = bool(metadata.get(_TAGGED))
    writer = _scale_tag(str(metadata.get("embedder", "")))
    out = [(s, right, str(rest[0])) for s, right, rest in _readable(metadata.get(_SCALED)) if rest]
    for s, right, _ in _readable(metadata.get("observations")):
        if not touched:
            out.append((s, right, writer))
        elif not (s >= 1.0 and not right):  # (1.0, wrong): this version's cautious copy for earlier ones
            out.append((s, right, "?"))
    return out


def _readable(field: Any) -> list[tuple[float, bool, list[Any]]]:
    """``[similarity, was_right, ...]`` items of a JSON field, the unreadable ones left out."""
    try:
        raw = json.loads(field or "[]")
    except (TypeError, ValueError):
        return []
    out = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, list) or len(item) < 2 or isinstance(item[0], bool) or not isinstance(item[1], bool):
            continue
        try:
            similarity = float(item[0])
        except (TypeError, ValueError):
            continue
        if similarity == similarity:  # not NaN
            out.append((similarity, item[1], item[2:]))
    return out


def _observations_field(observed: Sequence[tuple[float, bool, str]]) -> dict[str, str]:
    """The metadata that stores ``observed``, and for earlier versions, which cannot read a scale, each
    wrong answer at 1.0 (JSON strings: store metadata stays flat)."""
    return {_SCALED: json.dumps([list(item) for item in observed]),
            "observations": json.dumps([[1.0, False] for _, right, _ in observed if not right]), _TAGGED: "1"}


def _is_default_model(embedder: Any) -> bool:
    """The packaged model with int8 weights on ONNX Runtime: the learned verifier reads its token states."""
    return getattr(embedder, "name", "") == learned.ENCODER and hasattr(embedder, "embed_with_states")


def _reads_with_cross(gates: Sequence[str | Gate] | None, verifier: Verifier | str | None) -> bool:
    """The cross-encoder is among this cache's gates (by name or as a gate object)."""
    chosen = list(gates) if gates is not None and not isinstance(gates, str) else [verifier]
    return any(g == "cross" or isinstance(g, CrossEncoderVerifier) for g in chosen)


def _turns(value: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple((str(role), str(text)) for role, text in value.get("turns") or ())


def _check_unit_range(name: str, value: float, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ValueError(f"{name} must be a number in [{low}, {high}], got {value!r}")
    return float(value)


class SemanticCache:
    """Prompt -> action-sequence cache with similarity lookup and reward-driven eviction.

    ``store`` is a :class:`CacheStore`, a store URL or a :class:`~actioncache.Cache` (its store is
    used); it is kept as ``self.backend`` because ``store()`` is the method that saves a plan. ``embedder=None`` takes the best local embedder installed. ``threshold`` is a cosine
    similarity in ``[-1, 1]`` (0 is valid; above 1 serves exact matches only); ``None`` takes the
    embedder's calibrated one (lower when the cross-encoder judges after it: ``calibration.py``), and exact
    matches only for the hashing fallback. ``error_bound`` is the
    wrong-hit rate each entry's learned threshold keeps to (``calibration.py``). ``index`` is ``"auto"`` (pgvector when the store is
    PostgreSQL, else NumPy in process), ``"numpy"`` (exact), ``"hnsw"`` (usearch's approximate graph,
    for large namespaces), ``"pgvector"`` or a :class:`VectorIndex`.
    ``guard`` (default :func:`literal_guard`) vetoes vector hits whose numbers, dates, negation
    or names differ; ``None`` turns it off. ``verifier="auto"`` (the default) is the cross-encoder with the
    packaged model (the token-state head where its files are missing, none with an embedder of yours);
    ``"cross"``, ``"learned"`` or ``None`` choose; ``verifier(prompt, hit) -> bool`` is asked about hits
    with ``similarity < threshold + verify_margin``. When the two best trusted candidates hold
    different plans and are within ``ambiguity_margin`` of each other, the lookup misses rather
    than guess between them (0 turns that off).
    """

    def __init__(
        self,
        store: CacheStore | str | Any | None = None,
        embedder: Embedder | None = None,
        namespace: str = "default",
        threshold: float | None = None,
        top_k: int = DEFAULT_TOP_K,
        alpha: float = DEFAULT_ALPHA,
        floor: float = DEFAULT_FLOOR,
        verifier: Verifier | str | None = "auto",
        *,
        verify_margin: float = DEFAULT_VERIFY_MARGIN,
        ambiguity_margin: float = DEFAULT_AMBIGUITY_MARGIN,
        guard: Guard | None = literal_guard,
        index: str | VectorIndex = "auto",
        pgvector_url: str | None = None,
        ttl: float | timedelta | None = None,
        ttl_seconds: float | None = None,
        error_bound: float = calibration.DEFAULT_ERROR_BOUND,
        gates: Sequence[str | Gate] | None = None,
    ) -> None:
        if not isinstance(namespace, str) or not namespace or ":" in namespace:
            raise ValueError(f"namespace must be a non-empty string without ':', got {namespace!r}")
        self.embedder: Embedder = embedder if embedder is not None else default_embedder()
        if verifier == "auto" and gates is None:
            verifier = self._auto_verifier()
        if threshold is None:
            # With the cross-encoder judging every candidate, the cosine only picks what it reads:
            # its own calibrated threshold, lower than the one that must keep traps out alone.
            threshold = calibration.default_threshold(self.embedder.name, cross=_reads_with_cross(gates, verifier))
        self.threshold = _check_unit_range("threshold", threshold, -1.0, calibration.EXACT_ONLY)
        # Where the embedding alone would serve from: a candidate below it is a doubt a verifier
        # must be sure about (the cross-encoder reads it so; see cross.py).
        self._sure_above = calibration.default_threshold(self.embedder.name)
        self.error_bound = _check_unit_range("error_bound", error_bound, 0.0, 1.0)
        self.alpha = _check_unit_range("alpha", alpha, 0.0, 1.0)
        self.floor = _check_unit_range("floor", floor, 0.0, 1.0)
        self.verify_margin = _check_unit_range("verify_margin", verify_margin, 0.0, 2.0)
        self.ambiguity_margin = _check_unit_range("ambiguity_margin", ambiguity_margin, 0.0, 2.0)
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
        # None (the default): entries never expire; else the core's one TTL check.
        lifetime = face_ttl(ttl, ttl_seconds, "SemanticCache",
                            "for entries that never expire leave it out (ttl=None, the default)")
        if store is not None and not isinstance(store, str) and hasattr(store, "store") and hasattr(store, "wrap"):
            store = store.store  # a Cache: share its store
        self.backend: CacheStore = open_store(store)
        self.namespace = namespace
        self.top_k = top_k
        self.verifier = verifier
        self.guard = guard
        self.pipeline = self._make_pipeline(gates, guard, verifier)
        self._learned: LearnedVerifier | None = next(
            (g for g in self.pipeline.gates if isinstance(g, LearnedVerifier)), None)
        # Conversations' histories compared by meaning (the context gate), else character for character.
        self._contexts_by_meaning = "context" in self.pipeline.names
        self.ttl_seconds = lifetime
        self._codec = make_codec()
        self._records = Records(self.backend, self._codec)
        self._prefix = f"{KEY_PREFIX}{namespace}:"
        # Fixed-length ids keep namespace "a" from matching keys of a namespace "a:b" (':' is refused anyway).
        self._pattern = escape_glob(self._prefix) + "?" * _ID_LENGTH
        self._generation_name = f"{GENERATION_PREFIX}{namespace}"
        self._seen_generation: float | None = None
        self._lock = threading.RLock()
        # This object's counters; a contrast check's rejections count as "rejection:{check}".
        self._tally = Tally(self.backend, names=(
            "lookups", "hits", "exact_hits", "misses", "stores", "evictions", "guard_rejections",
            "ambiguous", "verifier_rejections", "learned_threshold_rejections", "long_prompt_rejections", "errors"))
        self._served: dict[str, list[float]] = {}  # entry id -> similarities of its vector hits since its feedback
        self._recent_vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        # The row length every vector must have: the embedder's dim when the cache was made (the index's too).
        self._dim = int(self.embedder.dim)
        self.index: VectorIndex = self._make_index(index, pgvector_url)

    # --- public API -----------------------------------------------------------------------------

    def lookup(self, prompt: Prompt) -> tuple[str, Any] | None:
        """``(entry_id, actions)`` of the best trusted similar entry, or ``None`` (a miss).

        ``prompt`` is a string or a conversation (list of ``{"role", "content"}`` messages)."""
        hit = self.lookup_hit(prompt)
        return None if hit is None else (hit.entry_id, hit.actions)

    def lookup_hit(self, prompt: Prompt) -> SemanticHit | None:
        """Like :meth:`lookup`, with the similarity, score and stored prompt of the hit."""
        request = as_request(prompt)
        self._count("lookups")
        try:
            hit = self._lookup(request)
        except (ActionCacheError, OSError) as exc:
            self._count("errors")
            log.warning("semantic lookup failed, treating it as a miss: %s", exc)
            hit = None
        self._count("misses" if hit is None else "hits")
        return hit

    def store(self, prompt: Prompt, actions: Any) -> str | None:
        """Remember ``actions`` for ``prompt`` with score 1.0; returns the new entry id.

        Storing a prompt whose normalized form is already cached replaces that entry (one plan
        per request per namespace). ``None`` when the store or the embedder failed.
        """
        request = as_request(prompt)
        try:
            self._codec.encode(actions)
        except ActionCacheError as exc:
            raise TypeError(f"actions must be JSON-encodable (lists, dicts, strings, numbers): {exc}") from exc
        try:
            return self._store(request, actions)
        except (ActionCacheError, OSError) as exc:
            self._count("errors")
            log.warning("semantic store failed; the plan was not cached: %s", exc)
            return None

    def update_reward(self, entry_id: str | uuid.UUID, success: bool, similarity: float | None = None) -> bool:
        """EMA update of the entry's score; evicts it below ``floor``. ``False`` if not found or on error.

        Feedback on a vector hit also teaches the entry its own threshold: ``similarity`` is the
        hit's (default: the entry's vector hits in this process since its last feedback: a wrong answer
        at the highest of them, a right one only after a single hit; exact hits teach nothing).
        ``success`` must be a bool and ``similarity`` a number in [-1, 1] or ``None``: anything else
        raises ``TypeError`` (a wrong type) or ``ValueError`` (out of range)."""
        if not isinstance(success, (bool, np.bool_)):
            raise TypeError(f"success must be a bool (True: the plan worked, False: it did not), got {success!r}")
        if similarity is not None:
            if isinstance(similarity, (bool, np.bool_)) or not isinstance(similarity, (int, float, np.floating, np.integer)):
                raise TypeError(f"similarity must be a number in [-1, 1] (the hit's cosine similarity) or None, "
                                f"got {similarity!r}")
            if not -1.0 <= float(similarity) <= 1.0:  # NaN fails this too
                raise ValueError(f"similarity must be a number in [-1, 1] (the hit's cosine similarity) or None, "
                                 f"got {similarity!r}")
            similarity = float(similarity)
        key = self._key(entry_id)
        if key is None:
            return False
        if similarity is None:
            with self._lock:
                pending = self._served.pop(key[len(self._prefix):], [])
            # Which of several hits since the last feedback it answers is unknown: a wrong answer is
            # taken at the highest of them (the cautious reading: the threshold rises above each), a
            # right one is recorded only when there was a single hit (it vouches for nothing else).
            if not success and pending:
                similarity = max(pending)
            elif len(pending) == 1:
                similarity = pending[0]
        try:
            return self._update_reward(key, bool(success), similarity)
        except (ActionCacheError, OSError) as exc:
            self._count("errors")
            log.warning("semantic reward update failed: %s", exc)
            return False

    def get(self, entry_id: str | uuid.UUID) -> dict[str, Any] | None:
        """The stored entry as ``{"entry_id", "prompt", "actions", "score", "metadata"}``, or ``None``."""
        key = self._key(entry_id)
        loaded = self._read(key) if key else None
        if key is None or loaded is None:
            return None
        entry, value = loaded
        return {"entry_id": key[len(self._prefix):], "prompt": value["prompt"], "actions": value["actions"],
                "score": float(entry.metadata.get("score", 0.0)), "metadata": dict(entry.metadata)}

    def delete(self, entry_id: str | uuid.UUID) -> bool:
        key = self._key(entry_id)
        if key is None:
            return False
        deleted = self.backend.delete(key)
        self.index.remove(key)
        self._bump_generation()
        return deleted

    def entry_ids(self) -> list[str]:
        return [key[len(self._prefix):] for key in self.backend.find(self._pattern)]

    def __len__(self) -> int:
        return len(self.backend.find(self._pattern))

    def stats(self) -> dict[str, Any]:
        """Counters; ``rejections`` counts contrast-check rejections by check name."""
        counts = self._tally.local()
        rejections = {name[len(_REJECTION):]: counts.pop(name) for name in list(counts) if name.startswith(_REJECTION)}
        return counts | {"rejections": rejections}

    def rebuild_index(self) -> int:
        """Load every entry of this namespace from the store into the index; returns how many."""
        self._refresh(force=True)
        return len(self.index)

    # --- internals --------------------------------------------------------------------------------

    def _make_index(self, index: str | VectorIndex, pgvector_url: str | None) -> VectorIndex:
        if not isinstance(index, str):
            return index
        if index not in ("auto", "numpy", "hnsw", "pgvector"):
            raise ValueError(f"index must be 'auto', 'numpy', 'hnsw', 'pgvector' or a VectorIndex, got {index!r}")
        if index == "hnsw":
            from .index_hnsw import HnswIndex

            return HnswIndex(self._dim)
        shown_url = getattr(self.backend, "url", "") or ""
        on_postgres = shown_url.split("://")[0] in ("postgresql", "postgres")
        if index == "pgvector" or (index == "auto" and on_postgres):
            # PostgresStore shows a redacted URL; its conninfo still holds the credentials.
            conninfo = pgvector_url or (getattr(self.backend, "conninfo", None) if on_postgres else None)
            if not conninfo:
                raise ValueError("index='pgvector' needs a PostgreSQL store or pgvector_url='postgresql://...'")
            from .index_pgvector import PgVectorIndex

            return PgVectorIndex(conninfo, dim=self._dim, namespace=self.namespace, embedder=self.embedder.name)
        return NumpyIndex(self._dim)

    def _make_pipeline(self, gates: Sequence[str | Gate] | None, guard: Guard | None,
                       verifier: Verifier | str | None) -> Pipeline:
        """One list of gates: ``gates`` as given, or the default rules (``guard=``) and ``verifier=`` as gates."""
        if gates is not None:
            if isinstance(gates, str) or not isinstance(gates, Sequence):
                raise TypeError(f"gates must be a list of gate names or gates, got {gates!r}")
            if guard is not literal_guard or verifier not in (None, "auto"):
                raise ValueError("pass either gates=[...] or guard=/verifier=, not both: list the guard and the "
                                 "verifier among the gates (guard.adapters.GuardGate / VerifierGate)")
            # The learned verifier by name is this cache's own: it reads this embedder's token states.
            return Pipeline([self._learned_verifier() if g == "learned" else self._cross_verifier() if g == "cross" else g
                             for g in gates])
        chosen: list[str | Gate] = []
        if guard is literal_guard:
            chosen += [*DEFAULT_RULES, "context"]
        elif guard is not None:
            chosen.append(GuardGate(guard))
        if verifier == "learned":
            chosen.append(self._learned_verifier())
        elif verifier == "cross":
            chosen.append(self._cross_verifier())
        elif isinstance(verifier, (LearnedVerifier, CrossEncoderVerifier)):
            chosen.append(verifier)
        elif isinstance(verifier, str):
            raise ValueError(f"verifier must be a callable, 'auto', 'learned', 'cross' or None, got {verifier!r}")
        elif verifier is not None:
            chosen.append(VerifierGate(verifier, threshold=self.threshold, margin=self.verify_margin))
        return Pipeline(chosen)

    def _auto_verifier(self) -> str | None:
        """What ``verifier="auto"`` means here: the cross-encoder with the packaged model, else the learned head.

        Only for the packaged model, whose threshold was calibrated with it (docs/semantic.md, "The
        learned verifier"); the token-state head where the cross-encoder's files or ``tokenizers`` are
        missing (it reads the int8 embedder's own run); no verifier for an embedder of yours."""
        if not _is_default_model(self.embedder):
            return None
        if cross.available():
            return "cross"
        return "learned" if learned.available() else None

    def _learned_verifier(self) -> LearnedVerifier:
        if not learned.available():
            raise ValueError("the learned verifier needs onnxruntime and its model files: pip install 'actioncache[semantic]'")
        return LearnedVerifier(encoder=self.embedder if _is_default_model(self.embedder) else None)

    @staticmethod
    def _cross_verifier() -> CrossEncoderVerifier:
        if not cross.available():
            raise ValueError("the cross-encoder verifier needs onnxruntime, tokenizers and its model files: "
                             "pip install 'actioncache[semantic]'")
        return CrossEncoderVerifier()

    def _count(self, name: str, n: int = 1) -> None:
        self._tally.add({name: n})

    def _key(self, entry_id: str | uuid.UUID) -> str | None:
        text = entry_id.hex if isinstance(entry_id, uuid.UUID) else str(entry_id)
        if len(text) != _ID_LENGTH or any(c not in "0123456789abcdef" for c in text):
            return None
        return self._prefix + text

    def _generation(self) -> float:
        return float(self.backend.counters(self._generation_name).get(self._generation_name, 0.0))

    def _bump_generation(self) -> None:
        """Tell other processes' in-memory indexes that this namespace changed."""
        self.backend.add_counters({self._generation_name: 1})
        with self._lock:
            if self._seen_generation is not None:
                # Our own write; a foreign write in between leaves the counter ahead of this and forces a refresh.
                self._seen_generation += 1

    def _refresh(self, force: bool = False) -> None:
        """Bring the in-process index in line with the store when the namespace's generation moved."""
        if self.index.shared and not force:
            return
        generation = self._generation()  # read before listing: a write after this forces the next refresh
        with self._lock:
            if not force and generation == self._seen_generation:
                return
            live = set(self.backend.find(self._pattern))
            known = self.index.keys()
            for key in known - live:
                self.index.remove(key)
            for key in live - known:
                loaded = self._read(key)
                if loaded is None:
                    continue
                entry, value = loaded
                vector = self._vector_of(entry, value)
                if vector is not None:
                    self.index.add(key, vector, str(entry.metadata.get("prompt_hash", "")))
            self._seen_generation = generation

    def _vector_of(self, entry: Entry, value: dict[str, Any]) -> np.ndarray | None:
        """The entry's vector on this embedder's scale: the stored one, or, for an entry another
        embedder wrote (vectors of two models are not comparable), ours (:meth:`_ours`)."""
        if value.get("embedder") != self.embedder.name:
            return self._ours(entry, value)
        return self._decoded(value["embedding"])

    def _decoded(self, embedding: str) -> np.ndarray | None:
        """A stored vector (float32 bytes in base64), or ``None`` if it is not of this cache's dimension."""
        vector = np.frombuffer(base64.b64decode(embedding), dtype=np.float32)
        return vector if vector.shape[0] == self._dim else None

    def _observations(self, metadata: Mapping[str, Any]) -> list[tuple[float, bool]]:
        """The entry's feedback, ``(similarity, was_right)``, on this embedder's scale of similarity.

        A similarity is one embedder's: another's for the same two requests differs (the int8 recipe
        on 8 and on 7 bits by up to 0.06), so a threshold learned on one scale would let another
        serve a plan the user rejected. Read on another scale, a wrong answer counts as wrong at
        similarity 1.0, the most cautious reading (the entry serves by vector again once enough right
        answers on this scale outweigh it), and a right one is dropped (it vouches for nothing)."""
        mine = _scale_tag(self.embedder.name)
        out = []
        for similarity, right, scale in _tagged_observations(metadata):
            if scale == mine:
                out.append((similarity, right))
            elif not right:
                out.append((1.0, False))
        return out

    def _ours(self, entry: Entry, value: dict[str, Any]) -> np.ndarray | None:
        """This embedder's vector of an entry another embedder wrote (another model, or an earlier
        recipe of the default's int8 weights): the one kept beside the entry by the first process
        that re-embedded it, else embedded now and kept there, so that an upgrade re-embeds a store
        once, not at every process start.

        Kept under a key of its own (``semantic-vector:``), never in the entry: a write can then never
        bring back an entry another process deleted or replaced meanwhile, and it serves only the
        entry it was made of (the entry's key, creation time and prompt hash are in it). It expires
        with the entry; a store that fails or refuses it only leaves the work to the next load."""
        side = f"{_VECTOR_PREFIX}{self.namespace}:{_scale_tag(self.embedder.name)}:{entry.key[len(self._prefix):]}"
        made_of = {"created_at": entry.created_at, "prompt_hash": str(entry.metadata.get("prompt_hash", ""))}
        try:
            kept = self._records.get(side)
            if kept is not None and isinstance(kept.value, dict) and all(kept.value.get(k) == v for k, v in made_of.items()):
                found = self._decoded(kept.value["embedding"])
                if found is not None:
                    return found
        except Exception as exc:  # noqa: BLE001 - a kept vector is an optimisation: never fail a load for it
            log.debug("could not read the kept vector %s: %s: %s", side, type(exc).__name__, exc)
        vector = self._embed_uncached(key_text(_turns(value), value["prompt"]))
        ttl = None if entry.expires_at is None else entry.expires_at - time.time()
        if ttl is None or ttl > 0:
            try:
                self._records.put(side, {**made_of, "embedding": _encoded(vector)}, kind=_VECTOR_TYPE, action="semantic",
                                  ttl_s=ttl)
            except Exception as exc:  # noqa: BLE001 - see above
                log.debug("could not keep the re-embedded vector %s: %s: %s", side, type(exc).__name__, exc)
        return vector

    def _read(self, key: str) -> tuple[Entry, dict[str, Any]] | None:
        found = self._records.get(key)  # expired: None; corrupt: None, and removed
        if found is None:
            return None
        value, entry = found
        if not isinstance(value, dict) or "prompt" not in value or entry.metadata.get("namespace") != self.namespace:
            return None
        return entry, value

    def _candidate(self, key: str, similarity: float, exact: bool, request: Request) -> SemanticHit | None:
        loaded = self._read(key)
        if loaded is None:
            self.index.remove(key)  # deleted or expired elsewhere
            return None
        entry, value = loaded
        score = float(entry.metadata.get("score", 0.0))
        if score < self.floor:
            return None
        if value.get("context", "") != request.context and not (self._contexts_by_meaning and "turns" in value):
            return None  # without the context gate (or for an entry stored before it), histories must be identical
        if not exact:
            observed = self._observations(entry.metadata)
            if similarity < calibration.learned_threshold(self.threshold, observed, self.error_bound):
                self._count("learned_threshold_rejections")
                return None
            if not self._agrees_beyond_window(request.text, value["prompt"]):
                self._count("long_prompt_rejections")
                return None
        if self._learned is not None and not exact:
            features = self._learned.decode(value.get("verifier"))
            if features is not None:
                self._learned.remember(key_text(_turns(value), value["prompt"]), features)
        return SemanticHit(key[len(self._prefix):], value["actions"], similarity, score, value["prompt"], exact,
                           _turns(value))

    def _agrees_beyond_window(self, text: str, stored: str) -> bool:
        """Two prompts of which one is longer than the embedding window: what follows the words
        they share at the start must agree by meaning too, or a long shared preamble would make
        any two endings look alike."""
        if embedding_window(text) == text and embedding_window(stored) == stored:
            return True
        mine, theirs = text.split(), stored.split()
        shared = 0
        while shared < min(len(mine), len(theirs)) and mine[shared].casefold() == theirs[shared].casefold():
            shared += 1
        rest_mine, rest_theirs = " ".join(mine[shared:]), " ".join(theirs[shared:])
        if not rest_mine or not rest_theirs:
            return rest_mine == rest_theirs
        return float(self._embed(rest_mine) @ self._embed(rest_theirs)) >= self.threshold

    def _lookup(self, request: Request) -> SemanticHit | None:
        self._refresh()
        exact_key = self.index.exact(_request_hash(request))
        if exact_key is not None:
            hit = self._candidate(exact_key, 1.0, exact=True, request=request)
            # The same exact-match form, and the code checks find no difference either: a guard, so
            # that the form can never fold what a check reads.
            if hit is not None and normalize_prompt(hit.prompt) == normalize_prompt(request.text) \
                    and exact_alike(request.text, hit.prompt):
                self._count("exact_hits")
                return hit
        if self.threshold > 1.0:
            return None  # exact matches only
        if not side(request.text).tokens:
            # Nothing a rule or a model can read ("👍" / "👎", "🔥🔥🔥", "hi"): every such request
            # embeds alike and reads alike, so only its exact form may answer it.
            return None
        vector = self._embed_request(request.key_text)
        trusted: list[SemanticHit] = []
        # Entries of other conversations share the index: look further when a context must match.
        k = self.top_k * 4 if request.turns else self.top_k
        # Only candidates at or above the threshold can be served: an index that can skip the rest does.
        search_above = getattr(self.index, "search_above", None)
        found = search_above(vector, k, self.threshold) if search_above is not None else self.index.search(vector, k)
        read_ahead = False
        for key, similarity in found:
            if similarity < self.threshold:
                break  # results come best first
            if trusted and trusted[0].similarity - similarity >= self.ambiguity_margin:
                # Too far below the best to make the lookup ambiguous: reading and checking it changes nothing.
                break
            hit = self._candidate(key, similarity, exact=False, request=request)
            # The first candidate read is the likeliest to be served: its verifier may start now (one
            # read ahead per lookup: for a candidate the rules refuse it only costs an idle core).
            prepare = hit is not None and not read_ahead
            read_ahead = read_ahead or prepare
            if hit is None or not self._gates_allow(request, hit, verify=False, prepare=prepare):
                continue
            trusted.append(hit)
            if len(trusted) == self.top_k:
                break
        if not trusted:
            return None
        best = trusted[0]
        if any(best.similarity - other.similarity < self.ambiguity_margin and other.actions != best.actions
               for other in trusted[1:]):
            self._count("ambiguous")
            return None
        if not self._gates_allow(request, best, verify=True):
            return None
        with self._lock:
            self._served.setdefault(best.entry_id, []).append(best.similarity)
            del self._served[best.entry_id][:-_SERVED_PER_ENTRY]
            if len(self._served) > _SERVED_MEMORY:
                self._served.pop(next(iter(self._served)))
        return best

    def _gates_allow(self, request: Request, hit: SemanticHit, *, verify: bool, prepare: bool = False) -> bool:
        """Screen a candidate (``verify=False``: every gate but the verifiers) or verify the one to be
        served (``verify=True``: the verifiers alone); count a refusal under its gate's kind and reason."""
        # A conversation's request is judged with what its history makes it mean ("next friday" after
        # "a flight to paris"): the rules of sentence structure read both stories, the context gate the histories.
        story = None if not (request.turns or hit.turns) else (request.key_text, key_text(hit.turns, hit.prompt))
        pair = Pair(request.text, hit.prompt, hit.similarity, request.turns, hit.turns, hit=hit,
                    extras={"similar": self._similar, "cosine": hit.similarity, "sure_above": self._sure_above},
                    story=story)
        if prepare:
            self.pipeline.prepare(pair)
        refused = self.pipeline.verify(pair) if verify else self.pipeline.check(pair, verify=False)
        if refused is None:
            return True
        reason, gate = refused
        kind = "verifier_rejections" if gate.kind == VERIFIER else "guard_rejections"
        self._tally.add({kind: 1, _REJECTION + reason: 1})
        return False

    def _similar(self, a: str, b: str, slack: float = 0.0) -> bool:
        """Two texts (two conversations' histories) at least as similar as the threshold asks, less ``slack``."""
        return float(self._embed(a) @ self._embed(b)) >= self.threshold - slack

    def _embed_request(self, text: str) -> np.ndarray:
        """``text``'s vector; with the learned verifier on the default model, its token features from the same run."""
        verifier = self._learned
        if verifier is None or verifier.encoder is not self.embedder:
            return self._embed(text)
        with self._lock:
            vector = self._recent_vectors.get(text)
        if vector is not None and verifier.known(text):
            return self._embed(text)
        try:
            vector, states = self.embedder.embed_with_states(embedding_window(text))
        except Exception as exc:
            raise EmbedderError(f"{self.embedder.name} failed to embed: {type(exc).__name__}: {exc}") from exc
        vector = self._checked(np.asarray(vector, dtype=np.float32).reshape(1, -1))
        verifier.remember_states(text, states)
        with self._lock:
            self._recent_vectors[text] = vector
            if len(self._recent_vectors) > _RECENT_VECTORS:
                self._recent_vectors.popitem(last=False)
        return vector

    def _embed(self, prompt: str) -> np.ndarray:
        # Agents repeat themselves: a recent text's vector is reused instead of running the model again.
        with self._lock:
            vector = self._recent_vectors.get(prompt)
            if vector is not None:
                self._recent_vectors.move_to_end(prompt)
                return vector
        vector = self._embed_uncached(prompt)
        with self._lock:
            self._recent_vectors[prompt] = vector
            if len(self._recent_vectors) > _RECENT_VECTORS:
                self._recent_vectors.popitem(last=False)
        return vector

    def _embed_uncached(self, prompt: str) -> np.ndarray:
        try:
            rows = np.asarray(self.embedder.embed([embedding_window(prompt)]), dtype=np.float32)
        except EmbedderError:
            raise
        except Exception as exc:
            raise EmbedderError(f"{self.embedder.name} failed to embed: {type(exc).__name__}: {exc}") from exc
        return self._checked(rows)

    def _checked(self, rows: np.ndarray) -> np.ndarray:
        dim = self._dim
        if rows.shape != (1, dim):
            # The index holds rows of the embedder's declared dim: any other shape must never reach it.
            raise EmbedderError(f"{self.embedder.name} returned an array of shape {rows.shape} for one text; "
                                f"expected (1, {dim}): one row of its dim={dim} (embed(texts) returns a "
                                "(len(texts), dim) array)")
        vector = rows[0]
        if not np.isfinite(vector).all():
            # A NaN similarity passes no comparison, not even "below the threshold": it must never reach the index.
            raise EmbedderError(f"{self.embedder.name} returned a vector with NaN or infinite values; "
                                "check the embedder (a model file damaged or an endpoint's reply cut short)")
        return vector  # type: ignore[no-any-return]  # a row of the float32 array the embedder returned

    def _store(self, request: Request, actions: Any) -> str:
        prompt = request.text
        digest = _request_hash(request)
        vector = self._embed_request(request.key_text)
        entry_id = uuid.uuid4().hex
        key = self._prefix + entry_id
        now = time.time()
        value = {
            "prompt": prompt,
            "context": request.context,
            "turns": [list(turn) for turn in request.turns],
            "actions": actions,
            "embedder": self.embedder.name,
            "embedding": _encoded(vector),
        }
        if self._learned is not None:
            # The verifier's features of this request, so that a lookup never re-reads it with the model.
            value["verifier"] = self._learned.encode(self._learned.features(request.key_text))
        metadata = {
            "namespace": self.namespace,
            "score": 1.0,
            "prompt_hash": digest,
            "context_hash": request.context_hash,
            "prompt_raw": prompt[:300],
            "embedder": self.embedder.name,
            "created_at_iso": iso_utc(now),
            "updated_at_iso": iso_utc(now),
            _TAGGED: "1",  # feedback an earlier version appends here is on a scale of its own
        }
        self._refresh()
        replaced = self.index.exact(digest)
        self._records.put(key, value, kind=CACHE_TYPE, action="semantic", ttl_s=self.ttl_seconds, metadata=metadata,
                          now=now)
        self.index.add(key, vector, digest)
        if replaced is not None and replaced != key:
            self.backend.delete(replaced)
            self.index.remove(replaced)
        self._bump_generation()
        self._count("stores")
        return entry_id

    def _update_reward(self, key: str, success: bool, similarity: float | None) -> bool:
        with self._records.lease(f"{LOCK_PREFIX}{key}", 5.0, wait_s=2.0, max_delay_s=0.05) as held:
            if not held:
                log.warning("could not lock %s for a reward update; updating without the lock", key)
            entry = self.backend.get(key)
            if entry is None:
                return False
            old = float(entry.metadata.get("score", 1.0))
            new = ema(old, float(success), self.alpha) if self.alpha > 0 else old
            if new < self.floor:
                self.backend.delete(key)
                self.index.remove(key)
                self._bump_generation()
                self._count("evictions")
                return True
            metadata = dict(entry.metadata)
            metadata["score"] = new
            if similarity is not None and similarity < 1.0:
                # A JSON string: store metadata stays flat.
                observed = _tagged_observations(metadata)
                observed.append((round(float(similarity), 6), bool(success), _scale_tag(self.embedder.name)))
                metadata.update(_observations_field(observed[-calibration.MAX_OBSERVATIONS:]))
            metadata["updated_at_iso"] = iso_utc(time.time())
            self._records.rewrite(entry, metadata=metadata)
            return True


__all__: Sequence[str] = (
    "DEFAULT_THRESHOLD",
    "SemanticCache",
    "SemanticHit",
    "normalize_prompt",
    "prompt_hash",
)
