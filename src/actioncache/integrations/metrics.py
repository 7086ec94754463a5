"""Cache metrics for OpenTelemetry and Prometheus, fed by the cache's observer seam.

    from actioncache.integrations.metrics import CacheMetrics

    metrics = CacheMetrics(prometheus=True, prices={"gpt-4o-mini": (0.15, 0.60)})
    metrics.attach(cache)                 # any Cache: wrap, @cached, the SDK adapters, mcp-proxy
    print(metrics.exposition())           # Prometheus text; or prometheus_client.start_http_server(9464, registry=metrics.registry)

What is measured, per ``action`` and ``model`` (the model a hit's stored response reported; empty
when unknown, as on a miss):

========================================  =========================================================
OpenTelemetry (meter ``actioncache``)     Prometheus
========================================  =========================================================
``actioncache.cache.hits``                ``actioncache_cache_hits_total``
``actioncache.cache.misses``              ``actioncache_cache_misses_total``
``actioncache.cache.errors``              ``actioncache_cache_errors_total``
``actioncache.cache.stores``              ``actioncache_cache_stores_total``
``actioncache.cache.lookup.duration`` s   ``actioncache_cache_lookup_duration_seconds`` (histogram)
``actioncache.cache.time_saved`` s        ``actioncache_cache_time_saved_seconds_total``
``actioncache.cache.tokens_saved``        ``actioncache_cache_tokens_saved_total`` (+ ``direction``)
``actioncache.cache.cost_saved`` USD      ``actioncache_cache_cost_saved_usd_total``
========================================  =========================================================

Tokens saved come from the usage the provider reported in the stored response (the SDK adapters
record it); cost saved from ``prices`` (USD per million input and output tokens, by model) or a
cost stored with the entry (``llm_cost_usd``). Labels never hold a key: keys can hold user data.
OpenTelemetry is used when ``opentelemetry-api`` is installed (through the global meter provider
unless one is given); Prometheus only when asked. ``pip install 'actioncache[metrics]'``.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ..cache import Cache
from ..events import CacheEvent

_COUNTED = {"hits": "hits", "misses": "misses", "errors": "errors", "stores": "stores"}
_DESCRIPTIONS = {
    "hits": "cache lookups answered from the store",
    "misses": "cache lookups that found nothing live",
    "errors": "store failures (the action ran anyway)",
    "stores": "results written to the store",
}


class CacheMetrics:
    """An observer turning cache events into OpenTelemetry and/or Prometheus metrics."""

    def __init__(self, *, meter_provider: Any = None, opentelemetry: bool = True, prometheus: bool | Any = False,
                 prices: Mapping[str, tuple[float, float]] | None = None) -> None:
        self.prices = dict(prices or {})
        for model, price in self.prices.items():
            if not (isinstance(price, (tuple, list)) and len(price) == 2 and all(isinstance(p, (int, float)) for p in price)):
                raise ValueError(f"prices[{model!r}] must be (USD per 1M input tokens, USD per 1M output tokens), not {price!r}")
        self._otel = _OtelInstruments(meter_provider) if opentelemetry and _otel_available(meter_provider) else None
        self.registry = None
        self._prom = None
        if prometheus is not False and prometheus is not None:
            try:
                import prometheus_client
            except ImportError as exc:
                raise ImportError("Prometheus metrics need prometheus_client: pip install 'actioncache[metrics]'") from exc
            self.registry = prometheus_client.CollectorRegistry() if prometheus is True else prometheus
            self._prom = _PromInstruments(self.registry)

    def attach(self, cache: Cache) -> Callable[[], None]:
        """Observe ``cache`` from now on; returns the function that stops it."""
        return cache.add_observer(self)

    def exposition(self) -> str:
        """The Prometheus text exposition of this registry (needs ``prometheus=True``)."""
        if self.registry is None:
            raise ValueError("no Prometheus registry: create CacheMetrics(prometheus=True)")
        from prometheus_client import generate_latest

        return generate_latest(self.registry).decode("utf-8")

    def __call__(self, event: CacheEvent) -> None:
        action = event.action or ""
        meta = event.metadata or {}
        stated = meta.get("llm_model")
        model = stated if isinstance(stated, str) else ""
        if event.kind == "lookup":
            self._record("lookup", action, model, event.value)
            return
        counter = _COUNTED.get(event.kind)
        if counter is None:
            return
        self._record(counter, action, model, event.value)
        if event.kind != "hits":
            return
        saved_ms = _number(meta.get("llm_duration_ms")) or _number(meta.get("_cache_duration_ms"))
        if saved_ms:
            self._record("time_saved", action, model, saved_ms / 1000.0)
        tokens_in, tokens_out = _number(meta.get("llm_input_tokens")), _number(meta.get("llm_output_tokens"))
        for direction, tokens in (("input", tokens_in), ("output", tokens_out)):
            if tokens:
                self._record("tokens_saved", action, model, tokens, direction=direction)
        cost = _number(meta.get("llm_cost_usd"))
        if not cost and model in self.prices:
            price_in, price_out = self.prices[model]
            cost = (tokens_in * price_in + tokens_out * price_out) / 1_000_000
        if cost:
            self._record("cost_saved", action, model, cost)

    def _record(self, name: str, action: str, model: str, value: float, **extra: str) -> None:
        for sink in (self._otel, self._prom):
            if sink is not None:
                sink.record(name, value, {"action": action, "model": model, **extra})


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0.0


def _otel_available(meter_provider: Any) -> bool:
    if meter_provider is not None:
        return True
    import importlib.util

    return importlib.util.find_spec("opentelemetry") is not None


class _OtelInstruments:
    def __init__(self, meter_provider: Any) -> None:
        from opentelemetry import metrics

        meter = (meter_provider or metrics.get_meter_provider()).get_meter("actioncache")
        self.instruments: dict[str, Any] = {
            name: meter.create_counter(f"actioncache.cache.{name}", unit="1", description=_DESCRIPTIONS[name])
            for name in _COUNTED.values()
        }
        self.instruments["lookup"] = meter.create_histogram(
            "actioncache.cache.lookup.duration", unit="s", description="time to read the store on a lookup")
        self.instruments["time_saved"] = meter.create_counter(
            "actioncache.cache.time_saved", unit="s", description="run time of the original calls that hits replaced")
        self.instruments["tokens_saved"] = meter.create_counter(
            "actioncache.cache.tokens_saved", unit="{token}", description="LLM tokens hits did not spend")
        self.instruments["cost_saved"] = meter.create_counter(
            "actioncache.cache.cost_saved", unit="USD", description="LLM cost hits did not spend")

    def record(self, name: str, value: float, labels: dict[str, str]) -> None:
        instrument = self.instruments[name]
        (instrument.record if name == "lookup" else instrument.add)(value, labels)


class _PromInstruments:
    def __init__(self, registry: Any) -> None:
        from prometheus_client import Counter, Histogram

        labels = ("action", "model")
        self.instruments: dict[str, Any] = {
            name: Counter(f"actioncache_cache_{name}", _DESCRIPTIONS[name], labels, registry=registry)
            for name in _COUNTED.values()
        }
        self.instruments["lookup"] = Histogram(
            "actioncache_cache_lookup_duration_seconds", "time to read the store on a lookup", labels, registry=registry,
            buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0))
        self.instruments["time_saved"] = Counter(
            "actioncache_cache_time_saved_seconds", "run time of the original calls that hits replaced", labels,
            registry=registry)
        self.instruments["tokens_saved"] = Counter(
            "actioncache_cache_tokens_saved", "LLM tokens hits did not spend", (*labels, "direction"), registry=registry)
        self.instruments["cost_saved"] = Counter(
            "actioncache_cache_cost_saved_usd", "LLM cost in USD hits did not spend", labels, registry=registry)

    def record(self, name: str, value: float, labels: dict[str, str]) -> None:
        instrument = self.instruments[name].labels(**labels)
        (instrument.observe if name == "lookup" else instrument.inc)(value)
