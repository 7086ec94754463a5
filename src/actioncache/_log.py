"""The library's logger, without importing :mod:`logging` until something is worth logging.

Importing ``logging`` costs about as much as a quarter of ``python -c pass``; the core logs only
on failure paths. A debug message before anyone imported ``logging`` is dropped at once: nobody
could have configured a handler for it (``logging``'s last-resort handler shows warnings and
above only), which is what ``logging`` itself would do with it.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import logging

__all__ = ["LazyLogger", "log"]


class LazyLogger:
    """``logging.getLogger(name)``, made on first use; the same logger ``logging`` hands out."""

    __slots__ = ("_logger", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: logging.Logger | None = None

    def logger(self) -> logging.Logger:
        if self._logger is None:
            import logging

            self._logger = logging.getLogger(self.name)
        return self._logger

    def debug(self, message: str, *args: object) -> None:
        if self._logger is None and "logging" not in sys.modules:
            return
        self.logger().debug(message, *args)

    def info(self, message: str, *args: object) -> None:
        if self._logger is None and "logging" not in sys.modules:
            return
        self.logger().info(message, *args)

    def warning(self, message: str, *args: object) -> None:
        self.logger().warning(message, *args)

    def error(self, message: str, *args: object) -> None:
        self.logger().error(message, *args)


log = LazyLogger("actioncache")
