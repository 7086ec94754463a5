"""CacheMetrics: read back through the OpenTelemetry SDK's in-memory reader and the Prometheus exposition.

LLM calls go through the real OpenAI SDK to the local protocol stand-in (no LLM runs here), which
reports token usage the way the API does.
"""

from __future__ import annotations

import openai
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from prometheus_client.parser import text_string_to_metric_families

from actioncache import Cache
from actioncache.integrations.metrics import CacheMetrics
from actioncache.integrations.openai import cached

MESSAGES = [{"role": "user", "content": "secret words of the user"}]


def _otel_points(reader: InMemoryMetricReader) -> dict[str, list]:
    points: dict[str, list] = {}
    for resource in reader.get_metrics_data().resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                points.setdefault(metric.name, []).extend(metric.data.data_points)
    return points


def _prom_samples(text: str) -> dict[tuple[str, frozenset], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


@pytest.fixture
def setup(standin, mem_cache):
    reader = InMemoryMetricReader()
    metrics = CacheMetrics(meter_provider=MeterProvider(metric_readers=[reader]), prometheus=True,
                           prices={"gpt-a": (1.0, 2.0)})
    metrics.attach(mem_cache)
    client = cached(openai.OpenAI(base_url=standin.url + "/v1", api_key="t", max_retries=0), cache=mem_cache)
    return metrics, reader, client


def test_hits_misses_latency_time_tokens_and_cost(setup) -> None:
    metrics, reader, client = setup
    for _ in range(3):  # one miss, two hits
        answer = client.chat.completions.create(model="gpt-a", messages=MESSAGES, temperature=0)
    tokens_in, tokens_out = answer.usage.prompt_tokens, answer.usage.completion_tokens

    prom = _prom_samples(metrics.exposition())
    hit_labels = frozenset({"action": "openai.chat", "model": "gpt-a"}.items())
    miss_labels = frozenset({"action": "openai.chat", "model": ""}.items())
    assert prom[("actioncache_cache_hits_total", hit_labels)] == 2
    assert prom[("actioncache_cache_misses_total", miss_labels)] == 1
    assert prom[("actioncache_cache_stores_total", miss_labels)] == 1
    # a lookup is timed before anyone knows the model: labelled by action only
    assert prom[("actioncache_cache_lookup_duration_seconds_count", miss_labels)] == 3
    assert prom[("actioncache_cache_time_saved_seconds_total", hit_labels)] > 0
    assert prom[("actioncache_cache_tokens_saved_total", hit_labels | {("direction", "input")})] == 2 * tokens_in
    assert prom[("actioncache_cache_tokens_saved_total", hit_labels | {("direction", "output")})] == 2 * tokens_out
    assert prom[("actioncache_cache_cost_saved_usd_total", hit_labels)] == pytest.approx(
        2 * (tokens_in * 1.0 + tokens_out * 2.0) / 1e6)

    otel = _otel_points(reader)
    hits = {p.attributes["model"]: p.value for p in otel["actioncache.cache.hits"]}
    assert hits == {"gpt-a": 2}
    assert sum(p.value for p in otel["actioncache.cache.misses"]) == 1
    assert sum(p.count for p in otel["actioncache.cache.lookup.duration"]) == 3
    saved = {p.attributes["direction"]: p.value for p in otel["actioncache.cache.tokens_saved"]}
    assert saved == {"input": 2 * tokens_in, "output": 2 * tokens_out}
    assert sum(p.value for p in otel["actioncache.cache.cost_saved"]) == pytest.approx(2 * (tokens_in + 2 * tokens_out) / 1e6)
    assert sum(p.value for p in otel["actioncache.cache.time_saved"]) > 0


def test_labels_never_hold_key_or_request_text(setup, mem_cache) -> None:
    metrics, reader, client = setup
    client.chat.completions.create(model="gpt-a", messages=MESSAGES, temperature=0)
    r = mem_cache.wrap("plain", lambda text: text, {"text": "another secret"})
    exposition = metrics.exposition()
    assert r["_cache_key"] not in exposition and r["_cache_key"].split(":")[-1] not in exposition
    assert "secret" not in exposition
    for points in _otel_points(reader).values():
        for point in points:
            assert set(point.attributes) <= {"action", "model", "direction"}


def test_errors_are_counted_and_a_failing_store_never_fails_the_call(tmp_path) -> None:
    from actioncache.stores.memory import MemoryStore

    class BrokenStore(MemoryStore):
        def get(self, key):
            raise ConnectionError("store down")

    cache = Cache(store=BrokenStore(), cleanup_probability=0.0)
    metrics = CacheMetrics(opentelemetry=False, prometheus=True)
    metrics.attach(cache)
    assert cache.wrap("act", lambda: 5, {})["result"] == 5
    prom = _prom_samples(metrics.exposition())
    assert prom[("actioncache_cache_errors_total", frozenset({"action": "act", "model": ""}.items()))] == 1


def test_bad_prices_and_missing_registry_name_the_fix() -> None:
    with pytest.raises(ValueError, match="USD per 1M input tokens"):
        CacheMetrics(opentelemetry=False, prices={"m": 3})
    with pytest.raises(ValueError, match="prometheus=True"):
        CacheMetrics(opentelemetry=False).exposition()
