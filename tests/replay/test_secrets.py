"""Secrets (issue 14): text typed into password or sensitive fields never reaches the store."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actioncache import Entry, open_store
from actioncache.replay import Action, FallbackReason, PlanCache, page_from_html

LOGIN = """<form method=post action=/login>
<label for=user>User name</label><input id=user name=user autocomplete=username>
<label for=pw>Password</label><input id=pw name=password type=password value="prefilled-secret">
<label for=otp>Code</label><input id=otp name=otp autocomplete="one-time-code">
<label for=pin>PIN</label><input id=pin name=pin>
<button type=submit>Log in</button></form>"""
SIG = ("https://bank.example/login", "log in")


def login_plan(page, password: str, code: str = "123456", pin: str = "0000") -> list[Action]:
    user, pw, otp, pin_box, button = page.elements
    return [Action.for_element("input_text", user, text="alice"),
            Action.for_element("input_text", pw, text=password, reasoning="type the password"),
            Action.for_element("input_text", otp, text=code),
            Action.for_element("input_text", pin_box, text=pin),
            Action.for_element("click", button), Action("complete")]


def stored_bytes(tmp_path: Path) -> bytes:
    """Every byte the SQLite store wrote: the database, its WAL and shared memory files."""
    return b"".join(p.read_bytes() for p in sorted(tmp_path.glob("plans.db*")))


def assert_absent(blob: bytes, secret: str) -> None:
    for form in (secret.encode("utf-8"), secret.encode("utf-16-le"), base64.b64encode(secret.encode("utf-8")),
                 secret.encode("unicode_escape"), secret.encode("ascii", "xmlcharrefreplace")):
        if len(form) >= 4:
            assert form not in blob, f"the secret reached the store as {form[:12]!r}..."


def test_no_password_reaches_the_store(tmp_path):
    page = page_from_html(LOGIN)
    password = "Tr0ub4dor&3-horse-battery"
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"), sensitive=("pin",), shared_metrics=True)
    plan_id = plans.record(SIG, login_plan(page, password, code="981273", pin="4417"), completed=True)
    assert plan_id
    plans.lookup(SIG, page, secrets={"password": password})
    plans.report(SIG, success=True)
    plans.store.close()
    blob = stored_bytes(tmp_path)
    assert b"alice" in blob  # the scan sees what was stored
    for secret in (password, "981273", "4417", "prefilled-secret"):
        assert_absent(blob, secret)


def test_the_plan_keeps_a_placeholder_and_replay_needs_the_value(tmp_path):
    page = page_from_html(LOGIN)
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"), sensitive=("pin",))
    plans.record(SIG, login_plan(page, "hunter2!x"), completed=True)
    (key,) = plans.store.find(pattern="plan:*:p:*")
    stored = plans.store.get(key).value.decode("utf-8")
    assert '"secret":"password"' in stored and '"secret":"otp"' in stored and '"secret":"pin"' in stored

    without = plans.lookup(SIG, page)
    assert [a.text for a in without.actions] == ["alice"]
    assert without.reason == FallbackReason.SECRET_REQUIRED and without.stopped_at == 1
    assert "secrets={'password': ...}" in without.message

    full = plans.lookup(SIG, page, secrets={"password": "hunter2!x", "otp": "112233", "pin": "9999"})
    assert full.reason is None
    assert [a.text for a in full.actions[:4]] == ["alice", "hunter2!x", "112233", "9999"]
    assert plans.metrics()["stop_reasons"] == {"secret_required": 1}


def test_the_personalization_hook_may_give_the_secret(store):
    page = page_from_html(LOGIN)
    plans = PlanCache(store)
    plans.record(SIG, login_plan(page, "s3cret")[:2] + [Action("complete")], completed=True)

    def from_vault(action, context):
        if action.secret:
            action.text = context.data["vault"][action.secret]
        return action

    served = plans.retrieve(SIG, page, personalize=from_vault, context={"vault": {"password": "fresh-pw"}})
    assert [a.text for a in served[:2]] == ["alice", "fresh-pw"]


def test_fields_marked_secret_by_the_caller(store):
    page = page_from_html("<input name=card><input name=note><button>Pay</button>")
    card, note, button = page.elements
    plans = PlanCache(store)
    plans.record(SIG, [Action.for_element("input_text", card, text="4111111111111111", secret="card"),
                       Action.for_element("input_text", note, text="gift", secret=True),
                       Action.for_element("click", button)], completed=True)
    (key,) = store.find(pattern="plan:*:p:*")
    raw = store.get(key).value
    assert b"4111111111111111" not in raw and b"gift" not in raw
    served = plans.retrieve(SIG, page, secrets={"card": "5500000000000004", "note": "thanks"})
    assert [a.text for a in served[:2]] == ["5500000000000004", "thanks"]


def test_a_replayed_secret_recorded_again_is_redacted_again(store):
    page = page_from_html(LOGIN)
    plans = PlanCache(store)
    plans.record(SIG, login_plan(page, "first-pw"), completed=True)
    served = plans.retrieve(SIG, page, secrets={"password": "second-pw", "otp": "1", "pin": "2"})
    plans.record(SIG, served, completed=True)
    for key in store.find(pattern="plan:*:p:*"):
        assert b"second-pw" not in store.get(key).value


def test_sensitive_must_be_names():
    with pytest.raises(TypeError, match="sensitive"):
        PlanCache(open_store("memory://"), sensitive="pin")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.text(st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_no_password_of_any_shape_reaches_the_store(tmp_path_factory, body):
    password = "\u00a7pw\u00a7" + body  # a marker, so the scan cannot match other stored text by chance
    folder = tmp_path_factory.mktemp("pw")
    page = page_from_html(LOGIN)
    plans = PlanCache(open_store(f"sqlite:///{folder}/plans.db"))
    plans.record(SIG, login_plan(page, password), completed=True)
    plans.store.close()
    blob = b"".join(p.read_bytes() for p in folder.glob("plans.db*"))
    assert password.encode("utf-8") not in blob
    assert password.encode("utf-8", "surrogatepass") not in blob


def test_a_planted_unnamed_secret_is_asked_for_by_its_default_name(store):
    """A plan written by something else with secret: true and no text: replay asks for 'secret'."""
    page = page_from_html("<input name=code><button>Go</button>")
    plans = PlanCache(store)
    box, button = page.elements
    plans.record(SIG, [Action.for_element("input_text", box), Action.for_element("click", button)], completed=True)
    (key,) = store.find(pattern="plan:*:p:*")
    entry = store.get(key)
    body = json.loads(entry.value[1:])
    body["actions"][0]["secret"] = True
    body["actions"][0].pop("text", None)
    store.put(Entry(key, b"j" + json.dumps(body).encode(), dict(entry.metadata), entry.created_at, entry.expires_at))
    assert "secrets={'secret': ...}" in plans.lookup(SIG, page).message
    assert plans.retrieve(SIG, page, secrets={"secret": "42"})[0].text == "42"
