"""Secrets (issues 14 and 29): text typed into password or sensitive fields never reaches the store."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actioncache import Entry, open_store
from actioncache.replay import Action, FallbackReason, PlanCache, page_from_html
from actioncache.replay.secrets import redact, secret_name

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


# --- issue 29: secrets by history, by look, and nowhere else in the plan -----------------------------

def _typed_into(html: str, text: str = "typed-value-1234") -> Action:
    return Action.for_element("input_text", page_from_html(html).elements[0], text=text)


@pytest.mark.parametrize("html", [
    "<input name=pin inputmode=numeric maxlength=4>",
    "<label for=p>PIN</label><input id=p name=code2 type=tel>",
    "<input name=card_pin pattern='\\d{4}'>",
    "<input name=otp>",
    "<input name=cardCvc>",
    "<input name=cvv2>",
    "<label for=c>Security code</label><input id=c name=sc>",
    "<input aria-label='One-time code' name=x>",
    "<input placeholder='Verification code' name=v>",
    "<input name=pass_code>",
    "<input name=c autocomplete='section-pay cc-csc'>",
    "<input name=w autocomplete='username webauthn'>",
    "<input name=otp1 maxlength=1>",  # one box of six
    "<input name=card_number>",
    "<label for=n>Credit card</label><input id=n name=n>",
    "<input name=ccnum>",
])
def test_fields_that_look_like_codes_are_secret(html):
    assert secret_name(_typed_into(html)) is not None


@pytest.mark.parametrize("html", [
    "<label for=z>Postal code</label><input id=z name=zip inputmode=numeric>",
    "<input name=pincode>",  # an Indian postal code, one word
    "<label for=p>Pin your favourite</label><input id=p name=fav>",  # "pin" without digits
    "<input name=phone type=tel>",
    "<input name=q type=search>",
    "<label for=c>Coupon code</label><input id=c name=coupon>",
])
def test_fields_that_do_not_look_like_codes_are_not(html):
    assert secret_name(_typed_into(html)) is None


def test_a_field_that_was_a_password_is_secret_after_show_password():
    """The tester's case: "Show password" turned the field into type=text before the password was typed."""
    element = page_from_html("<input name=shown type=text>").elements[0].to_dict()
    assert secret_name(Action.for_element("input_text", element, text="x")) is None
    element["was_password"] = True
    action = Action.for_element("input_text", element, text="Pw-shown-secret")
    assert secret_name(action) == "shown"
    assert redact(action).text is None and redact(action).secret == "shown"


def test_a_secret_echoed_elsewhere_in_the_page_is_not_stored(tmp_path):
    """A page that repeats the typed code in a label, an item text or a link cannot carry it into the store."""
    page = page_from_html("""<label for=pin>PIN</label><input id=pin name=pin inputmode=numeric>
        <ul><li>Your new PIN 90817 is set <a href="/confirm?pin=90817">Confirm 90817</a></li></ul>""")
    pin_box, confirm = page.elements
    plans = PlanCache(open_store(f"sqlite:///{tmp_path}/plans.db"), shared_metrics=True)
    assert plans.record(SIG, [Action.for_element("input_text", pin_box, text="90817"),
                              Action.for_element("click", confirm), Action("complete")], completed=True)
    plans.store.close()
    blob = stored_bytes(tmp_path)
    assert b"Confirm" in blob
    assert_absent(blob, "90817")
