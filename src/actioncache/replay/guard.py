"""The request guard: a replay never sends a state-changing request the recording did not.

While a browser replay runs, every request of the browser context is put to
:meth:`RequestGuard.admit` before it leaves the browser (Playwright's request routing on the page and
on its context, so frames, workers, beacons, popups and every other page of the context are
covered; WebSocket opens through WebSocket routing; the target of a redirect before the browser
follows it; see :mod:`actioncache.replay.browser`). Reads pass: ``GET`` and ``HEAD`` requests that
are not navigations (images, scripts, a search's ``fetch``). Everything else must be one of the
requests the recorded step sent, naming the same objects in its URL (the path segments and query
values the URL pattern writes ``{id}`` are equal to the recorded ones, unless a click of this replay
was re-decided and landed on another id: then that recorded id stands for the new one) (:class:`~actioncache.replay.effects.SentRequest`): a request with
another method, URL pattern, body kind or set of field names (it may leave out a field the
recording sent empty, as a form whose unused optional field was removed does, never add one), with
a field that does not carry what this replay typed where the recording's carried what it typed, or
a navigation of the page or a frame to another origin or path pattern, is aborted and the replay
stops with ``unexpected_request``. The guard denies by default: before the first step, when nothing
is expected, every state-changing request is refused.

A step may send what its own recorded step sent or what the step before it sent (a request the page
fires a moment late lands in the next step's window, in the recording as in the replay). A
navigation that went where the clicked link pointed is expected where the *replayed* element's link
points, so a click re-decided for another query may open its own product page. ``allow=`` lists
requests the guard always lets through (an analytics beacon), as ``"METHOD url-glob"`` or
``"url-glob"``.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace
from typing import Iterable

from .effects import SentRequest, StepEffects


@dataclass(frozen=True)
class AllowedRequest:
    """One ``allow=`` entry: a method (``None``: any) and a glob over the full URL."""

    method: str | None
    url_glob: str

    @classmethod
    def parse(cls, text: str) -> AllowedRequest:
        if not isinstance(text, str) or not text.strip():
            raise ValueError("an allowed request is 'METHOD url-glob' or 'url-glob', "
                             "e.g. 'POST https://stats.example/collect*'")
        parts = text.split(None, 1)
        if len(parts) == 2 and parts[0].isalpha() and parts[0].isupper():
            return cls(parts[0], parts[1].strip())
        return cls(None, text.strip())

    def matches(self, method: str, url: str) -> bool:
        return (self.method is None or self.method == method.upper()) and fnmatch.fnmatchcase(url, self.url_glob)


@dataclass
class Verdict:
    """What the guard decided on one request: let through (``allowed``), and the recorded request it is."""

    allowed: bool
    matched: SentRequest | None = None
    reason: str = ""


@dataclass
class RequestGuard:
    """Admits or refuses requests for the step being replayed (see the module docstring)."""

    allow: tuple[AllowedRequest, ...] = ()
    expected: list[SentRequest] = field(default_factory=list)
    target: str | None = None
    #: Recorded object id -> the id a re-decided click of this replay landed on instead.
    remap: dict[str, str] = field(default_factory=dict)

    @classmethod
    def with_allowed(cls, allow: Iterable[str] = ()) -> RequestGuard:
        if isinstance(allow, str):
            raise TypeError("allow_requests is a list of 'METHOD url-glob' texts, not one string")
        return cls(allow=tuple(AllowedRequest.parse(a) for a in allow))

    def expect(self, current: StepEffects | None, previous: StepEffects | None = None,
               target: str | None = None) -> None:
        """Arm the guard for a step: what it and the step before it sent, and where its link points."""
        self.expected = [*(current.sent if current else ()), *(previous.sent if previous else ())]
        self.target = target

    def admit(self, request: SentRequest | None, method: str, url: str) -> Verdict:
        """May ``request`` (its description; ``None`` for a read) leave the browser now?"""
        if request is None:
            return Verdict(True)
        if any(rule.matches(method, url) for rule in self.allow):
            return Verdict(True)
        for recorded in self.expected:
            if recorded.admits(request, self.target, self.remap):
                return Verdict(True, recorded)
        for recorded in self.expected:
            if recorded.ids is not None and replace(recorded, ids=None).admits(request, self.target):
                return Verdict(False, reason=f"{request.describe()} acts on another object than the recording's "
                                             f"(the ids in its URL differ, and no choice of this replay explains it)")
        return Verdict(False, reason=f"the recording did not send {request.describe()} here")

