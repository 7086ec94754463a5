"""Plan replay in a real browser: record a run from a Playwright page, replay a plan into one.

Install the extra: ``pip install 'actioncache[browser]'`` (the ``playwright`` package). Any
Chromium works; where Playwright cannot download its own build, point it at the system one:

    from playwright.sync_api import sync_playwright
    from actioncache.replay import PlanCache
    from actioncache.replay.browser import PageRecorder, chromium_launch_options, replay_plan

    plans = PlanCache("sqlite:////abs/plans.db")
    with sync_playwright() as p:
        browser = p.chromium.launch(**chromium_launch_options())      # /usr/bin/chromium, headless
        page = browser.new_page(); page.goto("https://shop.example/login")
        rec = PageRecorder(page)
        rec.fill("#user", "alice"); rec.fill("#password", "s3cret"); rec.click("button[type=submit]")
        rec.complete(); rec.save(plans, "log in")                      # the password is not stored
        ...
        outcome = replay_plan(plans, page, "log in", secrets={"password": "s3cret"})
        outcome.finished, outcome.reason                              # (True, None) or why it stopped

Every page is read by the rule of :func:`~actioncache.replay.page_from_html`, so fingerprints from
HTML text and from a live DOM agree. The async API has ``AsyncPageRecorder``, ``areplay_plan`` and
``asnapshot_page``. Nothing here imports Playwright: it works on the page objects you pass.
"""

from __future__ import annotations

import shutil
from typing import Any

from .async_api import AsyncPageRecorder, areplay_plan, asnapshot_page
from .snapshot import SNAPSHOT_JS, page_from_snapshot
from .steps import ReplayOutcome
from .sync_api import PageRecorder, replay_plan, snapshot_page

#: Flags for a headless Chromium that talks to nothing but the pages it is sent to.
CHROMIUM_ARGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-default-apps",
)
CHROMIUM_PATHS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """The path of a Chromium or Chrome on ``PATH`` (Debian's ``chromium`` first), or ``None``."""
    for name in CHROMIUM_PATHS:
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium_launch_options(executable_path: str | None = None, **options: Any) -> dict[str, Any]:
    """Keywords for ``playwright.chromium.launch(...)``: the system Chromium and :data:`CHROMIUM_ARGS`.

    ``executable_path`` defaults to :func:`find_chromium`; ``options`` are passed through (extra
    ``args`` are added to the defaults).
    """
    path = executable_path or find_chromium()
    if path is None:
        raise FileNotFoundError("no Chromium found on PATH; install one (Debian: apt-get install chromium) "
                                "or pass executable_path=")
    extra = list(options.pop("args", ()))
    return {"executable_path": path, "headless": True, "args": [*CHROMIUM_ARGS, *extra], **options}


__all__ = [
    "AsyncPageRecorder",
    "CHROMIUM_ARGS",
    "PageRecorder",
    "ReplayOutcome",
    "SNAPSHOT_JS",
    "areplay_plan",
    "asnapshot_page",
    "chromium_launch_options",
    "find_chromium",
    "page_from_snapshot",
    "replay_plan",
    "snapshot_page",
]
