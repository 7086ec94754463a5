"""The rules a recorded plan must pass before it is replayed on the current page.

Each rule either passes or raises :class:`ReplayFallback` with one of the :class:`FallbackReason`
codes; :class:`~actioncache.replay.PlanCache` turns that into an empty plan (the agent plans
afresh), logs the reason and counts it. Order, as in the seed (Skyvern's action cache):

1. resume after the actions already executed;
2. every remaining action must be of a supported type, and only ``input_text`` may carry an
   ``intention`` (checked on the whole remainder before anything is replayed);
3. each action's element fingerprint must match exactly one element of the current page: the
   element id is rebound to it. The first action that matches none or several stops the
   replay there; the actions before it are still served (a plan spanning several pages is
   replayed one page at a time, resuming with ``executed=``). An element that is there but
   whose link or form target changed fails with ``destination_changed``: never rebound;
4. ``select_option`` actions lose their recorded option (the choice is made afresh);
5. the personalization hook rewrites what it must (the text to type for *this* user).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import ActionCacheError
from .fingerprints import DESTINATION_ATTRIBUTES, element_fingerprint
from .models import Action, ActionType, Page, PlanSignature

log = logging.getLogger("actioncache.replay")


class FallbackReason:
    """Why a replay served nothing (or stopped early). Counted in ``PlanCache.stats()``."""

    NO_PLAN = "no_plan"                                  # nothing recorded for this signature
    PLAN_NOT_COMPLETED = "plan_not_completed"            # runs were seen, none completed
    PLAN_EXHAUSTED = "plan_exhausted"                    # every action was already executed
    EXECUTED_MISMATCH = "executed_mismatch"              # the executed actions are not the plan's
    UNSUPPORTED_ACTION_TYPE = "unsupported_action_type"
    INTENTION_NOT_ALLOWED = "intention_not_allowed"      # an intention on a non-input action
    ELEMENT_MISSING = "element_missing"                  # no element with the fingerprint
    ELEMENT_AMBIGUOUS = "element_ambiguous"              # several elements with the fingerprint
    DESTINATION_CHANGED = "destination_changed"          # the element is there but leads elsewhere
    NAME_CHANGED = "name_changed"                        # the element is there but its accessible name changed
    INTENT_UNRESOLVED = "intent_unresolved"              # a click chosen for the input could not be re-decided
    PERSONALIZATION_ERROR = "personalization_error"
    SECRET_REQUIRED = "secret_required"                  # a secret to type and no value for it
    OPTION_REQUIRED = "option_required"                  # a browser replay of select_option without a choice
    EXECUTION_ERROR = "execution_error"                  # the browser could not do a served action
    UNEXPECTED_REQUEST = "unexpected_request"            # (browser) a request the recording did not send: aborted
    OUTCOME_CHANGED = "outcome_changed"                  # (browser) a step got another status or led elsewhere
    LANDING_CHANGED = "landing_changed"                  # (browser) a step landed on another page than recorded
    START_PAGE_CHANGED = "start_page_changed"            # (browser) the replay starts on another page than recorded
    CAPTCHA_REQUIRED = "captcha_required"                # (browser) the page now asks for a captcha
    STATE_CHANGED = "state_changed"                      # (browser) a toggle is in neither of its recorded states
    UNGUARDED_PAGE = "unguarded_page"                    # (browser) a service worker hides requests from the guard
    CORRUPT_PLAN = "corrupt_plan"                        # a stored plan that cannot be decoded
    STORE_ERROR = "store_error"
    INTERNAL_ERROR = "internal_error"


class ReplayFallback(ActionCacheError):
    """A rule failed: replay falls back to fresh planning for the reason given."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


@dataclass
class ReplayContext:
    """What a personalization hook gets besides the action."""

    signature: PlanSignature
    page: Page
    plan_id: str
    #: The caller's data for this run (``retrieve(..., context={...})``): the user's name, email...
    data: Mapping[str, Any] = field(default_factory=dict)


#: ``hook(action, context)`` returns the action to replay (changed or not), a list of actions
#: (``[]`` drops it), or ``None`` to keep the action as it is.
PersonalizeHook = Callable[[Action, ReplayContext], "Action | list[Action] | None"]


def resume(actions: Sequence[Action], executed: int | Iterable[Action | Mapping[str, Any]]) -> list[Action]:
    """The actions after the ``executed`` ones (a count, or the executed actions themselves).

    Given actions, each must be the plan's action at that position (same type and, where both
    have one, same fingerprint): otherwise the agent went its own way and the plan does not apply.
    """
    if isinstance(executed, bool):
        raise TypeError("executed must be a count or a list of the actions already executed")
    if isinstance(executed, int):
        if executed < 0:
            raise ValueError(f"executed must be >= 0, not {executed}")
        done = executed
    else:
        done_actions = [Action.from_dict(a) for a in executed]
        done = len(done_actions)
        for i, (ran, planned) in enumerate(zip(done_actions, actions)):
            same_type = ran.action_type.lower() == planned.action_type.lower()
            same_target = ran.fingerprint is None or planned.fingerprint is None or ran.fingerprint == planned.fingerprint
            if not (same_type and same_target):
                raise ReplayFallback(FallbackReason.EXECUTED_MISMATCH,
                                     f"executed action {i} ({ran.action_type}) is not the plan's ({planned.action_type})")
    if done > len(actions):
        raise ReplayFallback(FallbackReason.EXECUTED_MISMATCH,
                             f"{done} actions were executed but the plan has only {len(actions)}")
    if done == len(actions):
        raise ReplayFallback(FallbackReason.PLAN_EXHAUSTED, f"all {done} actions of the plan were already executed")
    return [a.copy() for a in actions[done:]]


def check_supported(actions: Iterable[Action]) -> None:
    """Raise unless every action is of a supported type and only input actions carry an intention."""
    for i, action in enumerate(actions):
        kind = action.action_type.lower()
        if kind not in ActionType.SUPPORTED:
            raise ReplayFallback(FallbackReason.UNSUPPORTED_ACTION_TYPE,
                                 f"action {i} has type {action.action_type!r}, which is not replayed "
                                 f"(supported: {', '.join(sorted(ActionType.SUPPORTED))})")
        if action.intention and kind not in ActionType.WITH_INTENTION and not _chosen_click(action):
            raise ReplayFallback(FallbackReason.INTENTION_NOT_ALLOWED,
                                 f"action {i} ({action.action_type}) carries an intention; only "
                                 f"{', '.join(sorted(ActionType.WITH_INTENTION))} may, and a click with a "
                                 f"choice (choose={{'rule': ...}}), which is re-decided on replay")


def _chosen_click(action: Action) -> bool:
    return (action.action_type.lower() == ActionType.CLICK and isinstance(action.choose, Mapping)
            and isinstance(action.choose.get("rule"), str))


def rebind(actions: Sequence[Action], page: Page, ignore: Iterable[str] = (),
           start: int = 0) -> tuple[list[Action], ReplayFallback | None]:
    """Rebind each action to the one element of ``page`` with its fingerprint.

    Returns the actions that validated (a prefix) and the fallback that stopped validation, if any.
    ``start`` is the position of ``actions[0]`` in the plan, for the messages.
    """
    ignore = tuple(ignore)
    out: list[Action] = []
    for i, action in enumerate(actions, start=start):
        action = action.copy()
        kind = action.action_type.lower()
        if action.fingerprint:
            ids = page.ids_for(action.fingerprint, ignore)
            if not ids and _still_there(action, page, ignore, DESTINATION_ATTRIBUTES):
                return out, ReplayFallback(FallbackReason.DESTINATION_CHANGED,
                                           f"action {i} ({kind}): the element is on the page but its link or form "
                                           f"target changed (recorded: {_destination(action.element)})")
            if not ids:
                renamed = _renamed(action, page, ignore)
                if renamed is not None:
                    if renamed[0] != renamed[1]:
                        what = f"its accessible name changed: recorded {renamed[0]!r}, now {renamed[1]!r}"
                    else:  # the name is the same; an attribute that can name it changed (a placeholder added)
                        what = f"an attribute that can name it changed ({renamed[2]}); its accessible name is still {renamed[1]!r}"
                    return out, ReplayFallback(FallbackReason.NAME_CHANGED,
                                               f"action {i} ({kind}): the element is on the page but {what}")
                unread = getattr(page, "unread_frames", 0)
                note = (f"; {unread} iframe(s) of the page could not be read (another origin), their elements "
                        f"are not replayed") if unread else ""
                return out, ReplayFallback(FallbackReason.ELEMENT_MISSING,
                                           f"action {i} ({kind}): no element on the page has fingerprint "
                                           f"{action.fingerprint[:12]}{note}")
            if len(ids) > 1:
                return out, ReplayFallback(FallbackReason.ELEMENT_AMBIGUOUS,
                                           f"action {i} ({kind}): {len(ids)} elements have fingerprint "
                                           f"{action.fingerprint[:12]} ({', '.join(ids[:5])})")
            element = page.element(ids[0])
            action.element_id = ids[0]
            action.element = element.to_dict() if element is not None else None
        elif kind in ActionType.TARGETED:
            return out, ReplayFallback(FallbackReason.ELEMENT_MISSING,
                                       f"action {i} ({kind}) targets an element but was recorded without a fingerprint")
        if kind == ActionType.SELECT_OPTION:
            action.option = None  # the recorded choice was for another run; choose afresh
        out.append(action)
    return out, None


def _destination(element: Mapping[str, Any] | None) -> str:
    attrs = (element or {}).get("attributes") or {}
    return ", ".join(f"{name}={attrs[name]!r}" for name in DESTINATION_ATTRIBUTES if name in attrs) or "none"


def _same_but(action: Action, page: Page, ignore: tuple[str, ...], parts: Iterable[str]) -> list[str]:
    """Ids of the elements that are the action's element but for ``parts``.

    Only said of a plan fingerprinted under the current rule (an older plan simply misses).
    """
    if not action.element:
        return []
    try:
        if element_fingerprint(action.element, ignore) != action.fingerprint:
            return []
        blind = tuple(sorted(set(ignore) | set(parts)))
        return page.ids_for(element_fingerprint(action.element, blind), blind)
    except (TypeError, ValueError):
        return []  # a malformed stored element: report it as missing


def _still_there(action: Action, page: Page, ignore: tuple[str, ...], parts: Iterable[str]) -> bool:
    return bool(_same_but(action, page, ignore, parts))


#: What an element's accessible name is made of: without them the element is "the same, renamed".
_NAME_PARTS = ("accessible_name", "label", "aria-label", "title", "placeholder")


def _renamed(action: Action, page: Page, ignore: tuple[str, ...]) -> tuple[str, str, str] | None:
    """``(recorded name, current name, the name parts that differ)`` when the element is on the page with
    only its name (or an attribute that can name it) changed."""
    found = _same_but(action, page, ignore, _NAME_PARTS)
    if len(found) != 1:
        return None
    now = page.element(found[0])
    before = (action.element or {}).get("attributes") or {}
    after = now.attributes if now is not None else {}
    parts = [f"{p}: {before.get(p)!r} -> {after.get(p)!r}" for p in _NAME_PARTS[1:] if before.get(p) != after.get(p)]
    return (str((action.element or {}).get("name", "")), now.name if now is not None else "",
            ", ".join(parts) or "accessible_name")


def personalize_actions(actions: Sequence[Action], hook: PersonalizeHook | None, context: ReplayContext,
                        start: int = 0) -> list[Action]:
    """Run the hook over each action; any exception or bad return is a personalization fallback."""
    if hook is None:
        return list(actions)
    out: list[Action] = []
    for i, action in enumerate(actions, start=start):
        try:
            result = hook(action.copy(), context)
        except Exception as exc:
            raise ReplayFallback(FallbackReason.PERSONALIZATION_ERROR,
                                 f"the personalization hook failed on action {i} ({action.action_type}): "
                                 f"{type(exc).__name__}: {exc}") from exc
        if result is None:
            out.append(action)
        elif isinstance(result, Action):
            out.append(result)
        elif isinstance(result, list) and all(isinstance(a, Action) for a in result):
            out.extend(result)
        else:
            raise ReplayFallback(FallbackReason.PERSONALIZATION_ERROR,
                                 f"the personalization hook returned a {type(result).__name__} for action {i}; "
                                 f"return an Action, a list of Actions or None")
    check_supported(out)
    return out


# --- an LLM as the personalization hook ---------------------------------------------------------

LLM_SYSTEM_PROMPT = (
    "You fill one field of a web form for a browser agent. You get the field, what the agent "
    "meant to type there (its intention), the task goal and the user's data. Reply with the exact "
    "text to type and nothing else. If the data does not say, reply with the previous text unchanged."
)


def llm_personalizer(call: Callable[..., Any], **options: Any) -> PersonalizeHook:
    """A hook that asks an LLM what to type into each ``input_text`` action with an intention.

    ``call(messages=[...], **options)`` is any chat-completion callable: the YAML runtime's
    ``llm.call`` (bound to the state), or a thin wrapper around an SDK client. Its reply may be a
    string or a dict with ``content`` (also ``response``/``text``). Other actions pass unchanged.
    """

    def hook(action: Action, context: ReplayContext) -> Action:
        if action.action_type.lower() != ActionType.INPUT_TEXT or not action.intention:
            return action
        field_desc = action.element or {}
        user = (
            f"Goal: {context.signature.goal}\nPage: {context.signature.url_pattern}\n"
            f"Field: {field_desc.get('tag', '?')} {field_desc.get('attributes', {})}\n"
            f"Intention: {action.intention}\nPrevious text: {action.text or ''}\n"
            f"User data: {dict(context.data)}"
        )
        reply = call(messages=[{"role": "system", "content": LLM_SYSTEM_PROMPT},
                               {"role": "user", "content": user}], **options)
        action.text = reply_text(reply).strip()
        return action

    return hook


def reply_text(reply: Any) -> str:
    """The text of a chat model's reply: a string, or a dict with ``content`` (``response``, ``text``)."""
    if isinstance(reply, str):
        return reply
    if isinstance(reply, Mapping):
        if reply.get("success") is False:
            raise RuntimeError(f"the LLM call failed: {reply.get('error', 'no error message')}")
        for name in ("content", "response", "text"):
            text = reply.get(name)
            if isinstance(text, str):
                return text
    raise TypeError(f"cannot read text from the LLM reply ({type(reply).__name__}); "
                    f"return a string or a dict with 'content'")
