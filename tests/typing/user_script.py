"""A typed user's script: `mypy --strict tests/typing` (scripts/test.sh) checks what a user's type
checker sees of actioncache's public API. Never run by pytest; read by mypy and pyright."""

from __future__ import annotations

from collections.abc import Coroutine
from datetime import timedelta
from typing import Any, assert_type

from actioncache import Cache, CachedFunction, cached, open_store, storage_hash
from actioncache.types import CleanupResponse, GetResponse, InvalidateResponse, StatsReport, WrapResponse

cache = Cache("memory://")


@cached
def square(x: int) -> int:
    return x * x


@cached(ttl=timedelta(hours=1), ignore=["verbose"])
def translate(text: str, lang: str = "es", verbose: bool = False) -> str:
    return text


@cache.cached
def count_words(text: str) -> int:
    return len(text.split())


@cache.cached(ttl_seconds=60)
async def fetch(url: str) -> bytes:
    return url.encode()


typed_square: CachedFunction[[int], int] = square  # the function's own parameters and return type
assert_type(square(3), int)
assert_type(square.cache_key(3), str)
assert_type(square.invalidate(), InvalidateResponse)
assert_type(square.refresh(3), int)
assert_type(square.uncached(3), int)
assert_type(translate("hi", lang="fr"), str)
assert_type(count_words("a b"), int)
pending: Coroutine[Any, Any, bytes] = fetch("https://example.com")  # an async function keeps its result type
pending.close()

response = cache.wrap("extract", lambda file: {"words": 3}, {"file": "a.pdf"}, ttl_days=60)
assert_type(response, WrapResponse)
if response["success"]:
    print(response["_cache_hit"], response["_cache_key"])
assert_type(cache.get("cache:extract:abc"), GetResponse)
assert_type(cache.invalidate(pattern="cache:extract:*"), InvalidateResponse)
assert_type(cache.cleanup(), CleanupResponse)
assert_type(cache.stats(), StatsReport)
assert_type(storage_hash("README.md")["success"], bool)
store = open_store("memory://")
Cache(store=store, default_ttl=timedelta(days=2))


# A cached method: bound through an instance, its handles too; through the class, self comes first.
class Prices:
    def __init__(self, region: str) -> None:
        self.region = region

    @cache.cached(ttl=60)
    def price(self, item: str, currency: str = "EUR") -> float:
        return 1.0

    @cached
    async def aprice(self, item: str) -> float:
        return 1.0


shop = Prices("eu")
assert_type(shop.price("apple"), float)
assert_type(shop.price.invalidate("apple"), InvalidateResponse)
assert_type(shop.price.cache_key("apple", "USD"), str)
assert_type(Prices.price(shop, "apple"), float)
pending_price: Coroutine[Any, Any, float] = shop.aprice("apple")  # an async method keeps its result type
pending_price.close()
