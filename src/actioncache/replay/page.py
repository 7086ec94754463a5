"""The current page: its elements (see :mod:`.element` for the shape) and a fingerprint index."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from .element import Element
from .fingerprints import element_fingerprint


class Page:
    """The current page: its elements, and an index from fingerprint to element ids.

    The index is built once per ``ignore`` set, so validating a plan of *n* actions costs one pass
    over the page plus *n* dictionary lookups.
    """

    def __init__(self, elements: Iterable[Element | Mapping[str, Any]], url: str | None = None) -> None:
        self.url = url
        #: iframes on the page whose document the reader could not read (another origin; a ``src``
        #: in HTML text): their elements are not in ``elements``, and a replay says so when it misses.
        self.unread_frames = 0
        #: Milliseconds since the DOM last changed, when the reader knows (a browser snapshot).
        self.idle_ms: float | None = None
        self.elements = [Element.from_dict(e) for e in elements]
        self._by_id = {e.id: e for e in self.elements}
        self._indexes: dict[tuple[str, ...], dict[str, list[str]]] = {}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | Iterable[Any]) -> Page:
        if isinstance(data, Mapping):
            return cls(data.get("elements") or [], url=data.get("url"))
        items: Iterable[Any] = data
        return cls(list(items))

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "elements": [e.to_dict() for e in self.elements]}

    def element(self, element_id: str) -> Element | None:
        return self._by_id.get(element_id)

    def ids_for(self, fingerprint: str, ignore: Iterable[str] = ()) -> list[str]:
        """Ids of the elements whose fingerprint (under ``ignore``) equals ``fingerprint``."""
        ignore_key = tuple(sorted(set(ignore)))
        index = self._indexes.get(ignore_key)
        if index is None:
            index = {}
            for e in self.elements:
                index.setdefault(element_fingerprint(e, ignore=ignore_key), []).append(e.id)
            self._indexes[ignore_key] = index
        return list(index.get(fingerprint, ()))

    def __len__(self) -> int:
        return len(self.elements)

    def __repr__(self) -> str:
        return f"Page(url={self.url!r}, elements={len(self.elements)})"
