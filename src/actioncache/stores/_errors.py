"""One translator from a driver's exceptions to :class:`~actioncache.errors.StoreError`.

Every backend builds one :class:`StoreErrors` (where the store is, which driver exceptions to
catch, the hint that names the fix) and wraps each call to its driver in ``with errors(op):``.
The message always reads ``{where}: {op} failed: {driver's message} ({hint})`` (no hint when the
driver's message is all there is to say), with the URL's secrets scrubbed, so every store fails
the same readable way and the cache core (which catches ``StoreError``) turns it into a fresh run. A ``StoreError`` raised inside passes through as is.

The guard for an operation is made once and reused: entering it costs one attribute read, so
it sits on the hit path too.
"""

from __future__ import annotations

from contextlib import contextmanager
from types import TracebackType
from typing import Callable, Iterator, Sequence

from ..errors import StoreError
from .breaker import CircuitBreaker
from .redaction import redact_secrets

__all__ = ["StoreErrors"]


class StoreErrors:
    """Maps ``catch`` exceptions raised under ``with errors(op):`` to :class:`StoreError`.

    ``hint(exc)`` says how to fix what went wrong (None: no hint); ``secrets`` are scrubbed from
    the driver's text (libpq and redis-py may quote a password); ``one_line`` folds the driver's
    multi-line messages into one line.
    """

    __slots__ = ("where", "catch", "hint", "secrets", "one_line", "breaker", "down", "clean", "_guards")

    def __init__(self, where: str, catch: type[BaseException] | tuple[type[BaseException], ...],
                 hint: Callable[[BaseException], str | None], *, secrets: Sequence[str] = (),
                 one_line: bool = False, breaker: CircuitBreaker | None = None,
                 down: Callable[[BaseException], bool] | None = None,
                 clean: Callable[[str], str] | None = None) -> None:
        self.where = where
        self.catch = catch if isinstance(catch, tuple) else (catch,)
        self.hint = hint
        self.secrets = list(secrets)
        self.one_line = one_line
        # A networked store's breaker (stores/breaker.py): checked on entering every guard; ``down``
        # says which caught errors mean the server is unreachable or hung (counted as failures);
        # others (the server answered with an error) count as the server being there.
        self.breaker = breaker
        self.down = down
        self.clean = clean  # trims what a driver's message holds that helps nobody (a client's repr)
        self._guards: dict[str, _Guard] = {}

    def __call__(self, op: str) -> _Guard:
        guard = self._guards.get(op)
        if guard is None:
            guard = self._guards[op] = _Guard(self, op)
        return guard

    def failed(self, op: str, exc: BaseException) -> StoreError:
        """The StoreError for ``exc`` raised by ``op``, counted by the breaker (a driver call that
        bypasses the guard on the hit path reports its outcome here and in :meth:`answered`)."""
        error = self.error(op, exc)
        breaker = self.breaker
        if breaker is not None:
            if self.down is None or self.down(exc):
                breaker.failure(exc, str(error))
            else:
                breaker.success()
        return error

    def answered(self) -> None:
        """A driver call that bypasses the guard succeeded (the breaker's streak ends)."""
        breaker = self.breaker
        if breaker is not None:
            breaker.success()

    def error(self, op: str, exc: BaseException) -> StoreError:
        """The StoreError for ``exc`` raised by ``op``."""
        text = str(exc).strip() or type(exc).__name__  # a driver error without a message still names itself
        if self.clean is not None:
            text = self.clean(text) or type(exc).__name__
        if self.one_line:
            text = " ".join(text.split())
        if self.secrets:
            text = redact_secrets(text, self.secrets)
        hint = self.hint(exc)
        return StoreError(f"{self.where}: {op} failed: {text}" + (f" ({hint})" if hint else ""))

    @contextmanager
    def opening(self, what: str, also: tuple[type[BaseException], ...] = ()) -> Iterator[None]:
        """Around opening ``what`` (e.g. "SQLite store at /path"): driver errors (and ``also``) as
        "open failed", an OSError (a directory that cannot be made) as "cannot open {what}"."""
        try:
            yield
        except StoreError:
            raise
        except (*self.catch, *also) as exc:
            raise self.error("open", exc) from exc
        except OSError as exc:
            raise StoreError(f"cannot open {what}: {exc}") from exc


class _Guard:
    __slots__ = ("errors", "op")

    def __init__(self, errors: StoreErrors, op: str) -> None:
        self.errors = errors
        self.op = op

    def __enter__(self) -> None:
        breaker = self.errors.breaker
        if breaker is not None:
            breaker.before()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        # Never swallows an exception (returns None): mypy then knows a `with` body that raises ends the function.
        errors = self.errors
        if exc is None:
            if errors.breaker is not None:
                errors.answered()
            return
        if isinstance(exc, errors.catch) and not isinstance(exc, StoreError):
            raise errors.failed(self.op, exc) from exc
        if errors.breaker is not None:
            errors.breaker.abandon()
