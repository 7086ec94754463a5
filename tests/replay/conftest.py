"""Shared fixtures for the replay tests: real stores and real HTML pages parsed by page_from_html."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actioncache import open_store
from actioncache.replay import Action, Element, Page, page_from_html

FIXTURES = Path(__file__).parent / "fixtures"
SEARCH_URL = "https://shop.example/search?q=lamp&sid=77a1"
GOAL = "Search for a desk lamp, cheapest first, in stock"


def load_page(name: str, url: str = SEARCH_URL) -> Page:
    return page_from_html((FIXTURES / name).read_text(encoding="utf-8"), url=url)


def find(page: Page, tag: str | None = None, text: str | None = None, **attributes: str) -> Element:
    """The one element matching tag/text/attributes (attribute names use _ for -)."""
    wanted = {k.replace("_", "-"): v for k, v in attributes.items()}
    hits = [e for e in page.elements
            if (tag is None or e.tag == tag) and (text is None or e.text == text)
            and all(e.attributes.get(k) == v for k, v in wanted.items())]
    assert len(hits) == 1, f"expected one element for {tag} {text} {wanted}, got {hits}"
    return hits[0]


def search_plan(page: Page, **options: Any) -> list[Action]:
    """The plan a completed run made on search_v1.html: type, sort, tick, submit, complete."""
    return [
        Action.for_element("input_text", find(page, "input", name="q"), text="desk lamp",
                           intention="what the user wants to buy", **options),
        Action.for_element("select_option", find(page, "select", name="sort"),
                           option={"value": "price_asc", "label": "Price: low to high"}, **options),
        Action.for_element("click", find(page, "input", name="in_stock"), **options),
        Action.for_element("click", find(page, "button", type="submit"), **options),
        Action("complete", reasoning="results are shown"),
    ]


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    """Every PlanCache test runs on the in-process store and on a real SQLite file."""
    s = open_store("memory://") if request.param == "memory" else open_store(f"sqlite:///{tmp_path}/plans.db")
    yield s
    s.close()


@pytest.fixture
def v1() -> Page:
    return load_page("search_v1.html")
