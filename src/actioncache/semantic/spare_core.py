"""Whether this machine has a core to spare now: the 1-minute load average leaves one free.

A second thread halves an embedding or a search on an idle machine, but on a busy one it waits
milliseconds for a core that other work holds (seen here: a search's p50 0.5 ms idle, 11 ms with
the other core loaded). Parallel work is therefore used only while :class:`SpareCore` says a core
is free. The load average is read at most once a second (it moves slowly); without one (Windows)
the answer is no, which keeps the single-thread behaviour.
"""

from __future__ import annotations

import os
import time


class SpareCore:
    """``spare()`` is True while the machine has at least one core's worth of idle time."""

    __slots__ = ("_checked", "_spare")

    def __init__(self) -> None:
        self._checked = float("-inf")
        self._spare = False

    def __call__(self) -> bool:
        now = time.monotonic()
        if now - self._checked > 1.0:
            self._checked = now
            try:
                free = (os.cpu_count() or 1) - os.getloadavg()[0]
            except (AttributeError, OSError):  # no load average (Windows): stay predictable
                free = 0.0
            self._spare = free >= 0.5
        return self._spare
