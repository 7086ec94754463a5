"""Plan replay: what replaying a recorded plan saves over planning it afresh, and what validation costs.

    python bench/bench_replay.py            # 5 rounds, and the 40 changed site versions (~6 minutes)
    python bench/bench_replay.py --quick    # 2 rounds
    python bench/bench_replay.py --llm-s 1.5
    python bench/bench_replay.py --variants-only   # only part 3: the decisions on the changed versions

Part 1, in a real browser (Debian's chromium through Playwright, a form served on loopback): one
task of 10 steps (9 text fields and a checkbox... then Submit: 10 element actions, plus complete).

* ``fresh``: an agent loop with a stand-in planner. No LLM runs here, so the planner is a rule
  (the next empty field gets its value; then the checkbox; then Submit) that first sleeps
  ``--llm-s`` seconds (default 0.8 s), the latency of one short chat-completion call, once per
  step, as a browser agent calls its model once per step: observe (DOM snapshot), plan (sleep +
  rule), act (Playwright).
* ``replay``: ``replay_plan`` of the plan recorded from a fresh run: per action a DOM snapshot,
  validation by fingerprint, rebinding, then the Playwright action.
* ``floor``: the same 10 actions done directly with Playwright locators, no snapshot, no
  validation: the cost of the browser work itself.
* ``record``: the same run through ``PageRecorder`` without the planner's sleeps: a snapshot and a
  fingerprint per action, then the step left to settle (its navigation loaded, no request in flight
  for 0.15 s) and its effects kept (the requests it sent, where it led).
* ``fallback``: ``replay_plan`` on a version of the form whose fields are gone: the time until it
  gives up (``element_missing``) with the defaults (look for 2 s at most, stop once the page has been
  still for 0.5 s), beside the former fixed 5 s wait (``wait_s=5, quiet_s=5``).

Part 2, validation at scale: a generated page of 10,000 interactive elements (links, buttons,
labelled inputs in lists and tables) and a 10-step plan over elements spread through it.

* ``page_from_html``: parse (Lexbor) and read the page model; beside it the standard library's
  ``html.parser`` tokenizing the same text with no handlers (the floor of the former reader).
* ``lookup, new page``: ``PlanCache.lookup`` of the 10-step plan on a fresh Page (one SQLite read,
  the fingerprint index built over 10,000 elements, 10 lookups); ``lookup, indexed``: again on the
  same Page (the index is cached); ``fingerprint 10k``: hashing every element alone (the index's cost).
* ``snapshot 10k (chromium)``: ``snapshot_page`` of the same page loaded in Chromium, and ``one
  browser step``: snapshot + index + validation of one action, what ``replay_plan`` pays per action.

Part 3, decisions: tests/replay/shop_sites.py's three local sites (login, search to cart, two-step
checkout), each recorded once, replayed on 40 changed versions; each decision judged from the
server's log: right, harmful, silent or missed (a version that should replay fell back). The
versions were written with the rules they test: tuning data, not a held-out measure.

Rounds are interleaved and medians reported (minimum beside); the machine is shared, so ratios in one
run matter, absolute numbers less. Writes bench/results/replay.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "replay"))  # shop_sites: the three local sites and their versions

from actioncache import open_store  # noqa: E402
from actioncache.replay import Action, Page, PlanCache, element_fingerprint, page_from_html  # noqa: E402

FIELDS = ["first_name", "last_name", "email", "phone", "street", "city", "postcode", "country"]
#: The run's declared inputs: what the stand-in agent types (stored in clear; anything else typed is a placeholder).
INPUTS = {name: f"value of {name}" for name in FIELDS}
GOAL = "fill in the delivery form and submit it"


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def form_page() -> str:
    rows = "\n".join(f'<p><label for="f-{name}">{name.replace("_", " ").title()}</label>'
                     f'<input id="f-{name}" name="{name}"></p>' for name in FIELDS)
    return f"""<!doctype html><title>Delivery</title><form method="post" action="/done">{rows}
<p><label><input type="checkbox" name="terms" value="yes"> I accept the terms</label></p>
<button type="submit">Place order</button></form>"""


def big_page(n: int = 10_000) -> str:
    """n interactive elements in lists, tables and forms, every one with a distinct fingerprint."""
    parts = ["<!doctype html><title>Big</title><nav><ul>"]
    i = 0
    while i < n:
        block = i // 4
        parts.append(f'<li><a href="/item/{block}?ref=x">Item {block}</a></li>'
                     f'<li><button type="button" data-testid="b{block}">Add {block}</button></li></ul>'
                     f'<table><tr><td><label for="q{block}">Qty {block}</label><input id="q{block}" name="qty{block}">'
                     f'<td><div role="button" tabindex="0">More {block}</div></table><ul>')
        i += 4
    parts.append("</ul></nav>")
    return "".join(parts)


class _Server:
    def __init__(self, pages: dict[str, str]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, body: str) -> None:
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except ConnectionError:  # the browser moved on (a new goto) before reading the page
                    pass

            def do_GET(self):
                self._send(pages.get(self.path, "<h1>not found</h1>"))

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._send("<!doctype html><h1>Thank you</h1>")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"


def median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:,.1f}"


def min_ms(values: list[float]) -> str:
    return f"{min(values) * 1000:,.1f}"


# --- part 1: in the browser ---------------------------------------------------------------------

def fresh_run(page, base: str, llm_s: float, recorder=None) -> None:
    """The stand-in agent loop: observe, 'call the LLM' (sleep), act by rule; one step per call."""
    from actioncache.replay.browser import PageRecorder, snapshot_page

    page.goto(base + "/form")
    act = recorder or PageRecorder(page, inputs=INPUTS)
    for _ in range(len(FIELDS) + 2):
        current = snapshot_page(page)
        time.sleep(llm_s)  # the planner's model call
        empty = [e for e in current.elements if e.tag == "input" and e.attributes.get("name") in FIELDS
                 and not page.input_value(f"input[name={e.attributes['name']}]")]
        if empty:
            name = empty[0].attributes["name"]
            act.fill(f"input[name={name}]", f"value of {name}")
        elif not page.is_checked("input[name=terms]"):
            act.click("input[name=terms]")
        else:
            act.click("button[type=submit]")
    if recorder is not None:
        recorder.complete()
    else:
        act.close()


def missing_page() -> str:
    """The form after a redesign: none of the recorded fields is there any more."""
    return "<!doctype html><title>Delivery</title><p>We moved: <a href='/new-form'>the new form</a></p>"


def floor_run(page, base: str) -> None:
    page.goto(base + "/form")
    for name in FIELDS:
        page.locator(f"input[name={name}]").fill(f"value of {name}")
    page.locator("input[name=terms]").click()
    page.locator("button[type=submit]").click()
    page.wait_for_load_state("load")


def bench_browser(rounds: int, llm_s: float, big_html: str) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    from playwright.sync_api import sync_playwright

    from actioncache.replay.browser import PageRecorder, chromium_launch_options, replay_plan, snapshot_page

    server = _Server({"/form": form_page(), "/big": big_html, "/gone": missing_page()})
    times: dict[str, list[float]] = {"fresh": [], "replay": [], "floor": [], "record": [], "fallback": [],
                                     "fallback_5s": []}
    big: dict[str, list[float]] = {"snapshot": [], "step": []}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(**chromium_launch_options())
        page = browser.new_page(service_workers="block")
        plans = PlanCache(open_store(f"sqlite:///{tmp}/plans.db"))
        progress("recording the plan from one fresh run")
        recorder = PageRecorder(page, inputs=INPUTS)
        fresh_run(page, server.url, 0.0, recorder)
        assert "Thank you" in page.inner_text("body")
        recorder.save(plans, GOAL)
        assert len(recorder.actions) == 11
        for r in range(rounds):
            progress(f"browser round {r + 1}/{rounds}")
            started = time.perf_counter()
            fresh_run(page, server.url, llm_s)
            times["fresh"].append(time.perf_counter() - started)

            page.goto(server.url + "/form")
            started = time.perf_counter()
            outcome = replay_plan(plans, page, GOAL)
            times["replay"].append(time.perf_counter() - started)
            assert outcome.finished and "Thank you" in page.inner_text("body"), outcome.to_dict()

            started = time.perf_counter()
            floor_run(page, server.url)
            times["floor"].append(time.perf_counter() - started)

            recording = PageRecorder(page, inputs=INPUTS)
            started = time.perf_counter()
            fresh_run(page, server.url, 0.0, recording)
            times["record"].append(time.perf_counter() - started)
            recording.close()

            for key, options in (("fallback", {}), ("fallback_5s", {"wait_s": 5.0, "quiet_s": 5.0})):
                # Each fallback lowers the plan's trust: measure on a fresh copy, so the plan is never dropped.
                fallback_plans = PlanCache(open_store("memory://"))
                fallback_plans.record((server.url + "/form", GOAL), recorder.actions, completed=True)
                page.goto(server.url + "/gone")
                started = time.perf_counter()
                outcome = replay_plan(fallback_plans, page, GOAL, url=server.url + "/form", **options)
                times[key].append(time.perf_counter() - started)
                assert outcome.reason == "element_missing" and outcome.served == 0, outcome.to_dict()

        page.goto(server.url + "/big")
        fingerprint = element_fingerprint(page_from_html(big_html).elements[7777])
        for _ in range(max(3, rounds)):
            started = time.perf_counter()
            snap = snapshot_page(page)
            big["snapshot"].append(time.perf_counter() - started)
            started = time.perf_counter()
            ids = snapshot_page(page).ids_for(fingerprint)
            big["step"].append(time.perf_counter() - started)
            assert len(ids) == 1 and len(snap) == 10_000
        browser.close()
    server.httpd.shutdown()
    return times, big


# --- part 3: decisions on changed versions of three sites ---------------------------------------

def bench_variants() -> list:
    from playwright.sync_api import sync_playwright
    from shop_sites import VARIANTS, Shop, record_all, replay_variant

    from actioncache.replay.browser import chromium_launch_options

    decisions = []
    with tempfile.TemporaryDirectory() as tmp, Shop() as shop, sync_playwright() as p:
        browser = p.chromium.launch(**chromium_launch_options())
        databases = record_all(browser, shop, Path(tmp))
        for i, variant in enumerate(VARIANTS, 1):
            progress(f"version {i}/{len(VARIANTS)}: {variant.site} {variant.name}")
            decisions.append(replay_variant(browser, shop, databases[variant.site], Path(tmp), variant))
        browser.close()
    return decisions


def variant_lines(decisions: list) -> list[str]:
    from shop_sites import tally

    counts = tally(decisions)
    lines = [f"## Decisions on {len(decisions)} changed versions of three local sites", "",
             "Recorded once per site on the original, replayed on each version in a fresh context; judged from "
             "the server's log. " + ", ".join(f"**{k}: {v}**" for k, v in counts.items()) + f" of {len(decisions)}.",
             "", "| site | version | change | expected | decision | verdict |", "|---|---|---|---|---|---|"]
    for d in decisions:
        decision = "finished" if d.finished else f"fell back: `{d.reason}`"
        lines.append(f"| {d.variant.site} | {d.variant.name} | {d.variant.change} | {d.variant.expect} | "
                     f"{decision} | {d.verdict}{' (' + d.harm + ')' if d.harm else ''} |")
    return lines + [""]


# --- part 2: validation at scale ----------------------------------------------------------------

class _Tokenizer(HTMLParser):
    pass


def bench_validation(rounds: int, big_html: str) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"parse": [], "stdlib": [], "lookup_new": [], "lookup_indexed": [],
                                     "fingerprint": []}
    page = page_from_html(big_html, url="https://big.example/")
    assert len(page) == 10_000
    step = len(page) // 10
    chosen = [page.elements[i * step + 3] for i in range(10)]
    plan = [Action.for_element("click", e) for e in chosen] + [Action("complete")]
    with tempfile.TemporaryDirectory() as tmp:
        plans = PlanCache(open_store(f"sqlite:///{tmp}/plans.db"))
        plans.record(("https://big.example/", GOAL), plan, completed=True)
        for r in range(rounds):
            progress(f"validation round {r + 1}/{rounds}")
            started = time.perf_counter()
            parsed = page_from_html(big_html, url="https://big.example/")
            times["parse"].append(time.perf_counter() - started)

            started = time.perf_counter()
            tokenizer = _Tokenizer()
            tokenizer.feed(big_html)
            tokenizer.close()
            times["stdlib"].append(time.perf_counter() - started)

            fresh = Page(parsed.elements, url=parsed.url)
            started = time.perf_counter()
            result = plans.lookup(("https://big.example/", GOAL), fresh)
            times["lookup_new"].append(time.perf_counter() - started)
            assert result.reason is None and len(result.actions) == 11, result.to_dict()

            started = time.perf_counter()
            plans.lookup(("https://big.example/", GOAL), fresh)
            times["lookup_indexed"].append(time.perf_counter() - started)

            started = time.perf_counter()
            for element in parsed.elements:
                element_fingerprint(element)
            times["fingerprint"].append(time.perf_counter() - started)
        plans.store.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--llm-s", type=float, default=0.8, help="the stand-in planner's sleep per step (seconds)")
    parser.add_argument("--no-browser", action="store_true", help="part 2 only (no Chromium needed)")
    parser.add_argument("--no-variants", action="store_true", help="skip part 3 (the changed site versions)")
    parser.add_argument("--variants-only", action="store_true", help="part 3 only")
    args = parser.parse_args()
    rounds = 2 if args.quick else args.rounds
    big_html = big_page()
    load = f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the start"

    if args.variants_only:
        lines = ["# Plan replay: decisions on changed sites", "", f"`python bench/bench_replay.py --variants-only` "
                 f"({load}).", "", *variant_lines(bench_variants())]
        print("\n".join(lines))
        return
    validation = bench_validation(rounds, big_html)
    browser, big = ({}, {}) if args.no_browser else bench_browser(rounds, args.llm_s, big_html)
    decisions = [] if args.no_browser or args.no_variants else bench_variants()

    lines = ["# Plan replay benchmark", "",
             f"`python bench/bench_replay.py{' --quick' if args.quick else ''}` ({rounds} rounds, interleaved; "
             f"Python {platform.python_version()}, {platform.machine()}; {load}; the machine was shared, so "
             "compare the ratios within this run).", ""]
    if browser:
        fresh, replay, floor = (statistics.median(browser[k]) for k in ("fresh", "replay", "floor"))
        lines += ["## A 10-step task in Chromium: replay vs planning afresh", "",
                  f"Stand-in planner: a rule that sleeps {args.llm_s} s per step (one short LLM call per step; "
                  "no model runs here). 10 element actions + complete.", "",
                  "| case | median ms | min ms | vs replay |", "|---|---:|---:|---:|",
                  f"| fresh planning (10 x {args.llm_s} s stand-in + act) | {median_ms(browser['fresh'])} | "
                  f"{min_ms(browser['fresh'])} | {fresh / replay:.1f}x |",
                  f"| **replay_plan** (snapshot + validate + act, per action) | {median_ms(browser['replay'])} | "
                  f"{min_ms(browser['replay'])} | 1.0x |",
                  f"| floor: the 10 actions with Playwright, unvalidated | {median_ms(browser['floor'])} | "
                  f"{min_ms(browser['floor'])} | {floor / replay:.2f}x |",
                  f"| recording with PageRecorder (no planner: snapshot + fingerprint + settle + effects) | "
                  f"{median_ms(browser['record'])} | {min_ms(browser['record'])} | "
                  f"{statistics.median(browser['record']) / replay:.2f}x |", "",
                  f"Replay takes {replay / fresh:.1%} of a fresh run's time, "
                  f"{replay / statistics.median(browser['record']):.2f}x the recording's and {replay / floor:.1f}x "
                  f"the bare browser work; the planner's sleeps alone are {10 * args.llm_s * 1000:,.0f} ms.", "",
                  "## Falling back when the element is gone", "",
                  "| case | median ms | min ms |", "|---|---:|---:|",
                  f"| **replay_plan, defaults** (wait at most 2 s; give up once the page is still for 0.5 s) | "
                  f"{median_ms(browser['fallback'])} | {min_ms(browser['fallback'])} |",
                  f"| the former fixed wait (wait_s=5, quiet_s=5) | {median_ms(browser['fallback_5s'])} | "
                  f"{min_ms(browser['fallback_5s'])} |", "",
                  f"The fallback takes {statistics.median(browser['fallback']) / statistics.median(browser['fallback_5s']):.1%} "
                  "of the former wait.", ""]
    parse, stdlib = statistics.median(validation["parse"]), statistics.median(validation["stdlib"])
    lookup_new = statistics.median(validation["lookup_new"])
    lines += ["## Validating a 10-step plan against a 10,000-element page", "",
              "| case | median ms | min ms |", "|---|---:|---:|",
              f"| page_from_html (Lexbor parse + page model) | {median_ms(validation['parse'])} | "
              f"{min_ms(validation['parse'])} |",
              f"| floor: stdlib html.parser, tokenize only | {median_ms(validation['stdlib'])} | "
              f"{min_ms(validation['stdlib'])} |",
              f"| **lookup, new page** (store read + index of 10k fingerprints + 10 lookups) | "
              f"{median_ms(validation['lookup_new'])} | {min_ms(validation['lookup_new'])} |",
              f"| lookup, page already indexed | {median_ms(validation['lookup_indexed'])} | "
              f"{min_ms(validation['lookup_indexed'])} |",
              f"| floor: fingerprint 10k elements | {median_ms(validation['fingerprint'])} | "
              f"{min_ms(validation['fingerprint'])} |"]
    if big:
        lines += [f"| snapshot_page of the page in Chromium (10k elements) | {median_ms(big['snapshot'])} | "
                  f"{min_ms(big['snapshot'])} |",
                  f"| one browser step: snapshot + index + find one element | {median_ms(big['step'])} | "
                  f"{min_ms(big['step'])} |"]
    lines += ["", f"page_from_html is {parse / stdlib:.1f}x the stdlib tokenizer's time (which builds no tree); "
              f"validation on a new page is {lookup_new / statistics.median(validation['fingerprint']):.2f}x "
              "the cost of hashing its elements.", ""]
    if decisions:
        lines += ["", *variant_lines(decisions)]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "replay.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
