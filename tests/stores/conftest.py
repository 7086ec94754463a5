from __future__ import annotations

import pytest

from .backends import BACKENDS


@pytest.fixture(params=sorted(BACKENDS))
def backend(request) -> str:
    return request.param


@pytest.fixture
def store(backend, tmp_path):
    s = BACKENDS[backend](tmp_path)
    yield s
    s.close()
