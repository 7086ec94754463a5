"""The real browser for the replay tests: Debian's Chromium driven by Playwright (no stand-in).

Missing Playwright or Chromium skips locally and FAILS with CI=true (tests/services.py rules).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from services import require_module, require_program

from actioncache.replay.browser import chromium_launch_options


def require_chromium() -> str:
    require_module("playwright", "browser")
    return require_program("chromium", "scripts/install.d/70-chromium.sh (Debian's chromium package)")


@contextmanager
def sync_chromium() -> Iterator[object]:
    """A headless Chromium through Playwright's sync API."""
    path = require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(**chromium_launch_options(path))
        try:
            yield browser
        finally:
            browser.close()
