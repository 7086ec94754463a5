"""The request guard's rules and the outcome checks, without a browser (issue 29, items 1 and 2).

What a request is (method, URL pattern, body kind, field names), when a replayed request is the
recorded one, and when a step's outcome differs. tests/replay/test_replay_safety.py and
test_replay_variants.py run the same rules in Chromium against a server that logs what it receives.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actioncache.replay import FallbackReason
from actioncache.replay.effects import (
    TARGET,
    SentRequest,
    StepEffects,
    body_fields,
    describe_request,
    navigation_pattern,
    status_class,
)
from actioncache.replay.guard import AllowedRequest, RequestGuard
from actioncache.replay.outcomes import ObservedOutcome, check_outcome

FORM = "application/x-www-form-urlencoded"
names = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12)


def post(url: str, **form: str) -> SentRequest:
    sent = describe_request("POST", url, navigation=False, content_type=FORM, body=urlencode(form).encode())
    assert sent is not None
    return sent


def test_reads_are_not_guarded_and_navigations_are():
    assert describe_request("GET", "https://shop.example/api/search?q=lamp", navigation=False) is None
    assert describe_request("HEAD", "https://shop.example/", navigation=False) is None
    nav = describe_request("GET", "http://shop.example/search?q=lamp&sid=42", navigation=True)
    assert nav == SentRequest("GET", "https://shop.example/search?q=lamp&sid={id}", navigation=True)
    typed = describe_request("GET", "http://shop.example/search?q=desk+lamp", navigation=True, typed={0: "desk lamp"})
    assert typed == SentRequest("GET", "https://shop.example/search?q={typed}", navigation=True)


def test_a_request_is_kept_as_its_shape_never_its_values():
    sent = post("https://bank.example/login?next=/home", user="alice", password="hunter2-secret", remember="")
    assert sent.fields == ("password", "remember", "user") and sent.empty == ("remember",)
    stored = json.dumps(sent.to_dict())
    assert "hunter2" not in stored and "alice" not in stored
    assert SentRequest.from_dict(json.loads(stored)) == sent
    assert "hunter2" not in sent.describe()


@given(st.dictionaries(names, st.text(max_size=8), max_size=6))
def test_form_field_names_are_read_back_from_any_form(form):
    shape = body_fields(FORM, urlencode(form).encode())
    assert shape.fields == tuple(sorted(form)) and shape.empty == tuple(sorted(k for k, v in form.items() if v == ""))


@given(st.dictionaries(names, st.one_of(st.none(), st.integers(), st.text(max_size=5)), max_size=6))
def test_json_keys_are_field_names(data):
    shape = body_fields("application/json; charset=utf-8", json.dumps(data).encode())
    assert shape.kind == "json" and shape.fields == tuple(sorted(data))


def test_other_bodies():
    multipart = (b'--x\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nhi\r\n'
                 b'--x\r\nContent-Disposition: form-data; name="note"\r\n\r\nyo\r\n--x--\r\n')
    assert body_fields("multipart/form-data; boundary=x", multipart).fields == ("file", "note")
    assert body_fields("text/plain", b"a=1\r\nb=2").fields == ("a", "b")
    assert body_fields(None, None).kind == "unknown" and body_fields(FORM, b"").kind == "none"
    assert body_fields("application/octet-stream", b"\x00\x01").kind == "other"


@given(st.builds(SentRequest, method=st.sampled_from(["GET", "POST", "PUT", "DELETE"]), url=st.text(max_size=20),
                 navigation=st.booleans(), body=st.sampled_from(["none", "form", "json"]),
                 fields=st.lists(names, max_size=3).map(lambda f: tuple(sorted(set(f)))),
                 status=st.sampled_from([None, "2xx", "4xx"]), target=st.booleans()))
def test_sent_requests_round_trip(sent):
    assert SentRequest.from_dict(json.loads(json.dumps(sent.to_dict()))) == sent


def test_the_guard_admits_only_what_the_step_or_the_one_before_sent():
    login = post("https://shop.example/login", user="a", password="b")
    guard = RequestGuard()
    assert not guard.admit(post("https://shop.example/account/delete"), "POST", "x").allowed  # default deny: nothing expected yet
    guard.expect(StepEffects(sent=[login]))
    assert guard.admit(None, "GET", "https://shop.example/logo.png").allowed
    assert guard.admit(post("https://shop.example/login", user="b", password="c"), "POST", "u").matched == login
    refused = guard.admit(post("https://shop.example/account/delete", user="a"), "POST", "u")
    assert not refused.allowed and "account/delete" in refused.reason
    assert not guard.admit(post("https://shop.example/login", user="a"), "POST", "u").allowed  # a field left out
    assert not guard.admit(post("https://shop.example/login", user="a", password="b", admin="1"), "POST", "u").allowed
    put = describe_request("PUT", "https://shop.example/login", navigation=False, content_type=FORM, body=b"user=a&password=b")
    assert not guard.admit(put, "PUT", "u").allowed
    guard.expect(StepEffects(), previous=StepEffects(sent=[login]))  # a late request of the step before
    assert guard.admit(post("https://shop.example/login", user="x", password="y"), "POST", "u").allowed


def test_a_field_sent_empty_may_be_left_out_never_one_with_a_value():
    recorded = post("https://shop.example/checkout/address", contact="a@b", company="", city="Leeds")
    guard = RequestGuard()
    guard.expect(StepEffects(sent=[recorded]))
    assert guard.admit(post("https://shop.example/checkout/address", contact="c@d", city="London"), "POST", "u").allowed
    assert not guard.admit(post("https://shop.example/checkout/address", contact="c@d"), "POST", "u").allowed


def test_query_values_of_a_post_count():
    recorded = post("https://shop.example/account?action=view")
    guard = RequestGuard()
    guard.expect(StepEffects(sent=[recorded]))
    assert not guard.admit(post("https://shop.example/account?action=delete"), "POST", "u").allowed
    assert guard.admit(post("https://shop.example/account?action=view"), "POST", "u").allowed


def test_navigations_to_another_path_or_origin_are_refused_unless_the_link_led_there():
    search = SentRequest("GET", navigation_pattern("https://shop.example/search?q=lamp", {0: "lamp"}), navigation=True)
    product = SentRequest("GET", "https://shop.example/product/clip-on-lamp", navigation=True, target=True)
    account = SentRequest("GET", navigation_pattern("https://shop.example/account"), navigation=True)
    guard = RequestGuard()
    guard.expect(StepEffects(sent=[search, account]))
    nav = lambda url: describe_request("GET", url, navigation=True, typed={0: "oak floor lamp"})  # noqa: E731
    assert guard.admit(nav("https://shop.example/search?q=oak+floor+lamp"), "GET", "u").allowed
    assert not guard.admit(nav("https://shop.example/search?q=oak+floor+lamp&action=delete"), "GET", "u").allowed
    assert guard.admit(nav("https://shop.example/account"), "GET", "u").allowed
    assert not guard.admit(nav("https://shop.example/account?action=delete"), "GET", "u").allowed  # F21
    assert not guard.admit(nav("https://shop.example/account/delete"), "GET", "u").allowed
    assert not guard.admit(nav("https://evil.example/search?q=x"), "GET", "u").allowed
    guard.expect(StepEffects(sent=[product]), target="https://shop.example/product/oak-floor-lamp")
    assert guard.admit(nav("https://shop.example/product/oak-floor-lamp"), "GET", "u").allowed
    assert not guard.admit(nav("https://shop.example/product/clip-on-lamp"), "GET", "u").allowed


def test_allowed_requests():
    guard = RequestGuard.with_allowed(["POST https://stats.example/collect*", "https://beacon.example/*"])
    guard.expect(StepEffects())
    assert guard.admit(post("https://stats.example/collect?v=2"), "POST", "https://stats.example/collect?v=2").allowed
    assert not guard.admit(post("https://stats.example/other"), "POST", "https://stats.example/other").allowed
    assert guard.admit(post("https://beacon.example/x"), "PUT", "https://beacon.example/x").allowed
    with pytest.raises(TypeError, match="list"):
        RequestGuard.with_allowed("POST https://x/*")
    with pytest.raises(ValueError, match="METHOD url-glob"):
        AllowedRequest.parse("  ")


def test_status_classes():
    assert [status_class(s) for s in (200, 303, 404, 503, None, 42)] == ["2xx", "3xx", "4xx", "5xx", None, None]


def test_outcome_checks():
    login = post("https://shop.example/login", user="a", password="b")
    recorded = StepEffects(sent=[SentRequest(**{**login.__dict__, "status": "3xx"})], status="2xx",
                           url="https://shop.example/account")
    ok = ObservedOutcome(url="http://shop.example/account", status="2xx")
    assert check_outcome(recorded, ok, step=3) is None
    captcha = check_outcome(recorded, ObservedOutcome(url="http://shop.example/login", captcha=True), step=3)
    assert captcha.reason == FallbackReason.CAPTCHA_REQUIRED
    refused = check_outcome(recorded, ObservedOutcome(url="http://shop.example/login", status="4xx",
                                                      answered=[(SentRequest(**{**login.__dict__, "status": "4xx"}),
                                                                 recorded.sent[0])]), step=3)
    assert refused.reason == FallbackReason.OUTCOME_CHANGED and "4xx" in refused.message and "3xx" in refused.message
    elsewhere = check_outcome(recorded, ObservedOutcome(url="http://shop.example/login/verify", status="2xx"), step=3)
    assert elsewhere.reason == FallbackReason.OUTCOME_CHANGED and "/login/verify" in elsewhere.message
    to_link = StepEffects(url=TARGET)
    assert check_outcome(to_link, ObservedOutcome(url="https://shop.example/p/oak?ref=1"), step=1,
                         target="https://shop.example/p/oak") is None
    assert check_outcome(to_link, ObservedOutcome(url="https://shop.example/p/clip"), step=1,
                         target="https://shop.example/p/oak").reason == FallbackReason.OUTCOME_CHANGED


def test_a_message_names_the_scheme_the_page_used_not_the_patterns():
    from actioncache.replay.effects import describe_request as describe

    sent = describe("POST", "http://127.0.0.1:18731/login", navigation=True,
                    content_type="application/x-www-form-urlencoded", body=b"user=a")
    verdict = RequestGuard().admit(sent, "POST", "http://127.0.0.1:18731/login")
    assert not verdict.allowed
    assert "POST http://127.0.0.1:18731/login" in verdict.reason and "https://" not in verdict.reason


def test_a_state_changing_request_on_another_object_id_is_refused_unless_a_choice_of_the_replay_explains_it():
    from actioncache.replay.effects import StepEffects
    from actioncache.replay.effects import describe_request as describe

    form = "application/x-www-form-urlencoded"
    recorded = describe("POST", "http://s.test/sessions/1001/revoke?list=7", navigation=True, content_type=form,
                        body=b"sid=1001")
    stored = StepEffects.from_dict({"sent": [recorded.to_dict()], "url": None})
    guard = RequestGuard()
    guard.expect(stored)
    same = describe("POST", "http://s.test/sessions/1001/revoke?list=7", navigation=True, content_type=form,
                    body=b"sid=1001")
    assert guard.admit(same, "POST", "").allowed
    for url in ("http://s.test/sessions/2002/revoke?list=7", "http://s.test/sessions/1001/revoke?list=8"):
        other = describe("POST", url, navigation=True, content_type=form, body=b"sid=2002")
        verdict = guard.admit(other, "POST", url)
        assert not verdict.allowed and "another object" in verdict.reason
    guard.remap = {"1001": "2002"}  # a re-decided click landed on 2002 where the recording's landed on 1001
    moved = describe("POST", "http://s.test/sessions/2002/revoke?list=7", navigation=True, content_type=form,
                     body=b"sid=2002")
    assert guard.admit(moved, "POST", "").allowed
    # A plan recorded before ids were kept compares patterns only, as it did.
    old = StepEffects.from_dict({"sent": [{k: v for k, v in recorded.to_dict().items() if k != "ids"}], "url": None})
    guard = RequestGuard()
    guard.expect(old)
    assert guard.admit(describe("POST", "http://s.test/sessions/2002/revoke?list=7", navigation=True,
                                content_type=form, body=b"sid=2002"), "POST", "").allowed
