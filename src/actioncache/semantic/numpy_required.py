"""NumPy, which every semantic module needs: ``from .numpy_required import np``.

Without it, importing any of them fails at once with the extra to install, not a bare
``No module named 'numpy'``.
"""

from __future__ import annotations

from ..extras import missing

try:
    import numpy as np
except ModuleNotFoundError as exc:
    raise missing("actioncache.semantic", "semantic", exc) from exc

__all__ = ["np"]
