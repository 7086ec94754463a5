"""Outcome checks: a replayed step must lead where the recorded step led.

Once a replayed element action has settled, its outcome is compared with the recorded step's
(:class:`~actioncache.replay.effects.StepEffects`); the first difference stops the replay, which
reports ``finished=False`` with the reason, and the plan loses trust:

* ``captcha_required``: the page shows a captcha the recording did not meet;
* ``outcome_changed``: a request the step sent was answered with another status class (a ``403``
  where the recording got a ``303``), a request the recorded step sent was not sent, the page loaded a
  document with another status class (or none where the recording loaded one, or one where it did
  not), it is on another URL pattern (a re-decided click is expected where its own link points), or it
  shows what the recorded step's page did not: a box asking for a password or one-time code (a second
  factor at the same URL), a JavaScript dialog, a modal dialog, or an alert with text (a declined
  payment).

A server that now refuses the login or the payment is thereby never reported as a finished replay.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .effects import TARGET, SentRequest, StepEffects, navigation_pattern
from .urls import url_pattern
from .validation import FallbackReason, ReplayFallback


@dataclass
class ObservedOutcome:
    """What a replayed step led to: the page's URL, whether it shows a captcha, the status class of
    the last document it loaded in the step, and each admitted request with its recorded twin."""

    url: str
    captcha: bool = False
    status: str | None = None
    answered: list[tuple[SentRequest, SentRequest]] = field(default_factory=list)
    prompt: bool = False
    dialogs: int = 0
    alert: bool = False
    js_dialogs: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def _pattern(url: str) -> str:
    try:
        return url_pattern(url)
    except ValueError:
        return url


def check_outcome(recorded: StepEffects, observed: ObservedOutcome, *, step: int,
                  target: str | None = None) -> ReplayFallback | None:
    """The fallback for the first way ``observed`` differs from ``recorded``, else ``None``."""
    where = f"action {step}"
    if observed.captcha and not recorded.captcha:
        return ReplayFallback(FallbackReason.CAPTCHA_REQUIRED,
                              f"{where}: the page now asks for a captcha (at {_pattern(observed.url)}), "
                              f"which the recording did not meet")
    for sent, twin in observed.answered:
        if sent.status and twin.status and sent.status != twin.status:
            return ReplayFallback(FallbackReason.OUTCOME_CHANGED,
                                  f"{where}: {sent.describe()} was answered {sent.status}, the recording's "
                                  f"{twin.status}")
    if observed.missing:
        return ReplayFallback(FallbackReason.OUTCOME_CHANGED,
                              f"{where}: the recorded step sent {observed.missing[0]}, this one did not")
    if observed.status != recorded.status and (observed.status or recorded.status):
        return ReplayFallback(FallbackReason.OUTCOME_CHANGED,
                              f"{where}: the page loaded {'a document with status ' + observed.status if observed.status else 'no document'}, "
                              f"the recording's {'a document with status ' + recorded.status if recorded.status else 'none'}")
    if observed.js_dialogs and len(observed.js_dialogs) > recorded.js_dialogs:
        return ReplayFallback(FallbackReason.OUTCOME_CHANGED,
                              f"{where}: the page opened a {observed.js_dialogs[0]} dialog the recording did not meet "
                              f"(dismissed)")
    if observed.dialogs > recorded.dialogs:
        return ReplayFallback(FallbackReason.OUTCOME_CHANGED,
                              f"{where}: the page shows a dialog the recording's did not")
    if observed.prompt and not recorded.prompt:
        return ReplayFallback(FallbackReason.OUTCOME_CHANGED,
                              f"{where}: the page now asks for a password or a one-time code (at "
                              f"{_pattern(observed.url)}), which the recording's did not")
    if observed.alert and not recorded.alert:
        return ReplayFallback(FallbackReason.OUTCOME_CHANGED,
                              f"{where}: the page shows an alert the recording's did not")
    if recorded.url is not None:
        if recorded.url == TARGET:
            # Where the link pointed, by origin and path (the guard held its query to the recorded one).
            expected = target.split("?", 1)[0] if target else target
            now = navigation_pattern(observed.url).split("?", 1)[0]
        else:
            expected, now = recorded.url, _pattern(observed.url)
        if expected != now:
            return ReplayFallback(FallbackReason.OUTCOME_CHANGED,
                                  f"{where}: the page is at {now}, where the recording was at "
                                  f"{expected or 'the link of the element it clicked'}")
    return None


def _names(identity: str, name: str) -> bool:
    """Whether a page identity says ``name`` (an element's accessible name), case and spacing aside."""
    wanted = " ".join(name.split()).casefold()
    return bool(wanted) and wanted in " ".join(identity.split()).casefold()


def check_landing(recorded: StepEffects, url: str, identity: str, *, step: int,
                  decided: tuple[str | None, str, str] | None = None) -> ReplayFallback | None:
    """The fallback when a step landed on another page than the recorded step did, else ``None``.

    The landing URL is compared exactly (``/product/123`` is not ``/product/456``) and so is the page's
    identity (title and main heading). A click the intent resolver re-decided for this run's input
    (``decided``: the chosen element's own link, exactly, its accessible name and the recorded element's)
    must land where its own link points instead, and on a page that names the chosen item wherever the
    recorded page named the recorded one.
    """
    where = f"action {step}"
    if decided is not None:
        target, name, recorded_name = decided
        if target is not None and url != target:
            return ReplayFallback(FallbackReason.LANDING_CHANGED,
                                  f"{where}: the re-decided click landed at {url}, not where its link points ({target})")
        if recorded.identity is not None and _names(recorded.identity, recorded_name) and not _names(identity, name):
            return ReplayFallback(FallbackReason.LANDING_CHANGED,
                                  f"{where}: the re-decided click on {name!r} landed on a page that says {identity!r}, "
                                  f"which does not name it (the recording's page named what it clicked)")
        return None
    if recorded.landing is not None and url != recorded.landing:
        return ReplayFallback(FallbackReason.LANDING_CHANGED,
                              f"{where}: the step landed at {url}, where the recording landed at {recorded.landing}")
    if recorded.identity is not None and identity != recorded.identity:
        return ReplayFallback(FallbackReason.LANDING_CHANGED,
                              f"{where}: the step landed on a page that says {identity!r}, where the recording's "
                              f"said {recorded.identity!r}")
    return None


def check_before(before: dict[str, str] | None, url: str, identity: str, *, step: int) -> ReplayFallback | None:
    """The fallback when the page the replay starts on is not the one the recorded step acted on."""
    if not before:
        return None
    if before.get("landing") is not None and url != before["landing"]:
        return ReplayFallback(FallbackReason.START_PAGE_CHANGED,
                              f"{_at(step)}: the replay starts at {url}, where the recording's step acted at "
                              f"{before['landing']}; nothing was done")
    if before.get("identity") is not None and identity != before["identity"]:
        return ReplayFallback(FallbackReason.START_PAGE_CHANGED,
                              f"{_at(step)}: the replay starts on a page that says {identity!r}, where the "
                              f"recording's said {before['identity']!r}; nothing was done")
    return None


def _at(step: int) -> str:
    return f"action {step}"
