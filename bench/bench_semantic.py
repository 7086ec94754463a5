"""Semantic cache benchmark: answer quality per category, and lookup latency beside ChromaDB.

Quality, with the library defaults (default embedder, its calibrated threshold, contrast checks):

* bench/data/semantic_eval.json (bench/data/make_semantic_eval.py): labelled pairs in 11
  categories, split by template into a tuning half (the threshold was chosen there) and a
  reporting half (only measured). Per-pair protocol: a fresh cache stores one side, looks up the
  other. A "hit" pair served is right; a "miss" pair (a trap) served is a wrong answer.
* ../shared/data/semantic/paraphrase_pairs.json (GPTCache's 999 paraphrase pairs): per pair, and
  GPTCache's own protocol (store every origin, look up every paraphrase: correct, wrong, miss).
* bench/data/semantic_negatives.json (160 earlier negatives), per pair.
* bench/data/semantic_heldout.json: 166 hand-written pairs in another style (tool requests, lower
  case, typos), frozen before their first measurement and never tuned on; reported apart.

Latency: (1) end to end: a lookup of a request never seen before (embedding included) in a
cache of 10,000 entries, for each local embedder, and the same request again (its embedding is
reused); (2) search alone over N vectors (dim 384) made from the evaluation prompts' embeddings
(clustered, as a cache's entries are) and over N random unit vectors: exact NumPy, the index's
sign-bit prefilter, usearch HNSW and ChromaDB's in-process HNSW on the same vectors and queries,
with recall@3 against the exact search. Rounds are interleaved and medians reported: the machine is shared and loaded.

Run:  python bench/bench_semantic.py --no-latency       quality -> bench/results/semantic.md
      python bench/bench_semantic.py --latency-only     latency -> bench/results/semantic_latency.md
      python bench/bench_semantic.py                    both
      python bench/bench_semantic.py --blind PATH       a frozen blind set: aggregates only -> bench/results/semantic_blind.md
      python bench/bench_semantic.py --pairs PATH [--errors]   one of the project's own pair sets
      ... --pairs PATH --verifier cross                  the same with the opt-in cross-encoder (also with --blind)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from actioncache.semantic import SemanticCache  # noqa: E402
from actioncache.semantic.calibration import default_threshold  # noqa: E402
from actioncache.semantic.index import NumpyIndex  # noqa: E402
from actioncache.stores.memory import MemoryStore  # noqa: E402

EVAL = ROOT / "bench/data/semantic_eval.json"
POSITIVES = Path(os.environ.get("ACTIONCACHE_PARAPHRASES") or next(
    (p for p in (d / "shared/data/semantic/paraphrase_pairs.json" for d in ROOT.parents) if p.is_file()),
    ROOT.parent / "shared/data/semantic/paraphrase_pairs.json"))  # beside the checkout, or above a worktree
NEGATIVES = ROOT / "bench/data/semantic_negatives.json"
HELDOUT = ROOT / "bench/data/semantic_heldout.json"
RESULTS = ROOT / "bench/results/semantic.md"
LATENCY_RESULTS = ROOT / "bench/results/semantic_latency.md"
BLIND_RESULTS = ROOT / "bench/results/semantic_blind.md"
# The held-out set's first measurement (before the contrast-check changes it was written to test),
# kept as measured; every later run is compared with it.
HELDOUT_FIRST = ("First measurement (the checks as they were when the set was written): served 64.3%, "
                 "traps wrong 11.5% (worst category: direction 40.0%).")
SWEEP = [0.55, 0.60, 0.65, 0.70, 0.75, 0.80, 0.85]
HIT_CATEGORIES = ("paraphrase", "near_repeat", "agent_tool")
HNSW_EF = (128, 512, 2048)  # graph search breadth: 128 is about ChromaDB's default (100); 512 is HnswIndex's


class TableEmbedder:
    """Vectors computed beforehand in one batch, served by text; anything else goes to ``fallback``."""

    def __init__(self, name: str, table: dict[str, np.ndarray], dim: int, fallback=None) -> None:
        self.name, self.dim, self._table, self._fallback = name, dim, table, fallback

    def __getattr__(self, name: str):
        if name in ("token_states", "embed_with_states") and self._fallback is not None:
            return getattr(self._fallback, name)
        raise AttributeError(name)

    def embed(self, texts):
        missing = [t for t in texts if t not in self._table]
        if missing:
            self._table.update(zip(missing, self._fallback.embed(missing)))
        return np.stack([self._table[t] for t in texts])


# --- quality -------------------------------------------------------------------------------------


def embed_all(model, texts: list[str], keep: str | None) -> dict[str, np.ndarray]:
    """Every text's vector; with ``keep``, reused from (and saved to) that file for the same model."""
    known: dict[str, np.ndarray] = {}
    if keep and Path(keep).exists():
        saved = np.load(keep, allow_pickle=False)
        if str(saved["model"]) == model.name:
            known = dict(zip(saved["texts"].tolist(), saved["vectors"]))
    missing = [t for t in texts if t not in known]
    if missing:
        known.update(zip(missing, model.embed(missing)))
        if keep:
            names = sorted(known)
            np.savez(keep, model=model.name, texts=np.array(names), vectors=np.stack([known[t] for t in names]))
    return {t: known[t] for t in texts}


def served(table: TableEmbedder, stored: str, asked: str, **options) -> bool:
    sc = SemanticCache(MemoryStore(), embedder=table, namespace="q", **options)
    sc.store(stored, [stored])
    return sc.lookup(asked) is not None


def per_category(table: TableEmbedder, pairs: list[dict], split: str | None, **options) -> dict[tuple[str, str], list[int]]:
    out: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for pair in pairs:
        if split is not None and pair["split"] != split:
            continue
        slot = out[(pair["category"], pair["label"])]
        slot[0] += served(table, pair["stored"], pair["lookup"], **options)
        slot[1] += 1
    return dict(out)


def totals(rows: dict[tuple[str, str], list[int]]) -> tuple[float, float, float, str]:
    hit = [v for (c, lab), v in rows.items() if lab == "hit"]
    trap = {c: v for (c, lab), v in rows.items() if lab == "miss"}
    served_rate = sum(v[0] for v in hit) / max(1, sum(v[1] for v in hit))
    wrong = sum(v[0] for v in trap.values()) / max(1, sum(v[1] for v in trap.values()))
    worst_cat, worst = max(((c, v[0] / v[1]) for c, v in trap.items()), key=lambda cv: cv[1])
    return served_rate, wrong, worst, worst_cat


def category_table(rows: dict[tuple[str, str], list[int]]) -> list[str]:
    out = ["| category | label | pairs | served | rate | meaning |", "|---|---|---|---|---|---|"]
    for (cat, lab), (k, n) in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        out.append(f"| {cat} | {lab} | {n} | {k} | {k / n:.1%} | {'served (right)' if lab == 'hit' else 'wrong answers'} |")
    return out


def gptcache_protocol(table: TableEmbedder, positives: list[dict]) -> tuple[int, int, int]:
    sc = SemanticCache(MemoryStore(), embedder=table, namespace="gpt")
    for pair in positives:
        sc.store(pair["origin"], [pair["origin"]])
    correct = wrong = miss = 0
    for pair in positives:
        hit = sc.lookup(pair["similar"])
        if hit is None:
            miss += 1
        elif hit[1] == [pair["origin"]]:
            correct += 1
        else:
            wrong += 1
    return correct, wrong, miss


# --- latency -------------------------------------------------------------------------------------


def _p50(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


def end_to_end(embedders: dict[str, object], n: int, pairs: list[dict], rounds: int,
               chroma_label: str | None = None) -> dict[str, tuple[float, float | None, float]]:
    """p50 of a lookup (new request: embedding + search + checks) and of a repeated one, per embedder,
    and the new request's CPU time (this process's, all threads: less sensitive to other jobs than wall time).

    Each cache holds ``n`` entries: the stored sides of ``pairs`` (embedded by its model, so most
    lookups find a candidate above the threshold and read it and check it, as a hit does) and
    random unit vectors for the rest. Every row looks up the same texts (each cache and its
    table embed them for the first time). ``chroma_label`` adds a row for ChromaDB's in-process
    collection over the same ``n`` vectors as the first embedder's cache, queried with that
    embedder's vector of the new request (the embedding is in its time too).
    """
    rng = np.random.default_rng(7)
    out: dict[str, tuple[float, float | None, float]] = {}
    caches = {}
    stored_texts = list(dict.fromkeys(p["stored"] for p in pairs))
    queries = list(dict.fromkeys(p["lookup"] for p in pairs if p["lookup"] not in stored_texts))
    first_vectors = None
    for label, model in embedders.items():
        vectors = rng.standard_normal((n - len(stored_texts), model.dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        stored = dict(zip(stored_texts, model.embed(stored_texts)))
        stored.update({f"stored request {i}": vectors[i] for i in range(len(vectors))})
        table = TableEmbedder(model.name, stored, model.dim, fallback=model)
        store = MemoryStore()
        # The random rows are stored without the verifier's features (they never reach it: no lookup
        # comes near them), the pairs' stored sides with them, as a cache with the defaults stores.
        filler = SemanticCache(store, embedder=table, namespace="e2e", verifier=None)
        for text in list(stored)[len(stored_texts):]:
            filler.store(text, ["plan", text])
        sc = SemanticCache(store, embedder=table, namespace="e2e")
        for text in stored_texts:
            sc.store(text, ["plan", text])
        caches[label] = (sc, table)
        verifiers = [g.name for g in sc.pipeline.gates if g.kind == "verifier"]
        if verifiers:
            # Its own table: a new request is embedded by each row, not read from the row before it.
            # Its threshold stays the default's, so the row differs by the verifier's run alone.
            own = TableEmbedder(model.name, dict(stored), model.dim, fallback=model)
            caches[f"{label}, verifier ({', '.join(verifiers)}) off"] = (
                SemanticCache(store, embedder=own, namespace="e2e", verifier=None, threshold=sc.threshold), own)
        if first_vectors is None:
            first_model, first_vectors = model, np.stack(list(stored.values()))
            if "cross" in verifiers and type(model).__name__ == "OnnxEmbedder":
                # The cheaper verifier beside the default, on its own store (it keeps features per entry).
                head_store, head_table = MemoryStore(), TableEmbedder(model.name, dict(stored), model.dim, fallback=model)
                head_filler = SemanticCache(head_store, embedder=head_table, namespace="e2e", verifier=None)
                for text in list(stored)[len(stored_texts):]:
                    head_filler.store(text, ["plan", text])
                head = SemanticCache(head_store, embedder=head_table, namespace="e2e", verifier="learned")
                for text in stored_texts:
                    head.store(text, ["plan", text])
                caches[f"{label}, verifier='learned' (the token-state head, threshold {head.threshold:.2f})"] = (head, head_table)
    runs = {label: (sc.lookup, sc.lookup) for label, (sc, _) in caches.items()}
    if chroma_label is not None:
        import chromadb

        client = chromadb.EphemeralClient()
        coll = client.create_collection(f"e2e_{os.getpid()}", metadata={"hnsw:space": "cosine"})
        keys = [f"k{i}" for i in range(len(first_vectors))]
        for start in range(0, len(keys), 5000):
            coll.add(ids=keys[start:start + 5000], embeddings=first_vectors[start:start + 5000])
        runs[chroma_label] = (lambda text: coll.query(query_embeddings=first_model.embed([text]), n_results=3), None)
    fresh: dict[str, list[float]] = defaultdict(list)
    fresh_cpu: dict[str, list[float]] = defaultdict(list)
    again: dict[str, list[float]] = defaultdict(list)
    per_round = max(1, len(queries) // rounds)
    for r in range(rounds):  # interleaved: each round runs every row on the same block of requests
        block = queries[r * per_round:(r + 1) * per_round]
        for label, (first, repeat) in runs.items():
            for text in block:
                forget_read_texts()  # a new request for every row, not one the row before it read
                c0, t0 = time.process_time(), time.perf_counter()
                first(text)
                fresh[label].append(time.perf_counter() - t0)
                fresh_cpu[label].append(time.process_time() - c0)
                if repeat is not None:
                    t0 = time.perf_counter()
                    repeat(text)
                    again[label].append(time.perf_counter() - t0)
    if chroma_label is not None:
        client.delete_collection(coll.name)
    for label in runs:
        out[label] = (_p50(fresh[label]), _p50(again[label]) if again[label] else None, _p50(fresh_cpu[label]))
    return out


def forget_read_texts() -> None:
    """Empty the rules' memories of texts and words (``functools`` caches in ``semantic.guard``), so
    that every row reads a request as new: the rows share the process, and the first row's reading
    would otherwise be the next rows' memory. WordNet's own lookups (``lexicon``) stay, as in any
    process that has served a while."""
    import sys as _sys

    for name, module in list(_sys.modules.items()):
        if name.startswith("actioncache.semantic.guard"):
            for value in vars(module).values():
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()


BOUNDS_LABEL = "int8 bounds, then float scores of the rows that can reach the threshold (what a lookup runs)"


def search_alone(vectors: np.ndarray, qv: np.ndarray, rounds: int, graph: bool = True,
                 floor: float = 0.70) -> dict[str, tuple[float, float | None, float]]:
    """p50 ms, recall@3 and recall above ``floor`` of a top-3 search: exact NumPy, the int8 bounds above
    ``floor`` (the default threshold), the sign prefilter, usearch HNSW, ChromaDB (same vectors).

    Recall above the floor: of the exact top 3 at or above ``floor`` (what a lookup may serve), the
    share found. The bounds engine only answers above the floor, so it has no plain recall@3."""
    from actioncache.semantic.index_hnsw import HnswIndex

    n, dim = vectors.shape
    queries = len(qv)
    keys = [f"k{i}" for i in range(n)]
    exact = NumpyIndex(dim, capacity=n, blas_threads=1, prefilter_from=None, bounds_from=None)
    bounded = NumpyIndex(dim, capacity=n, blas_threads=1, prefilter_from=None, bounds_from=0)
    signs = NumpyIndex(dim, capacity=n, blas_threads=1, prefilter_from=0)
    for key, vec in zip(keys, vectors):
        exact.add(key, vec, key)
        bounded.add(key, vec, key)
        signs.add(key, vec, key)
    engines = {"numpy exact (blas 1 thread)": lambda q: [k for k, _ in exact.search(q, 3)],
               BOUNDS_LABEL: lambda q: [k for k, _ in bounded.search_above(q, 3, floor)],
               f"sign prefilter + float rescore of {signs.rescore}": lambda q: [k for k, _ in signs.search(q, 3)]}
    build_s = {}
    if graph:
        hnsw = HnswIndex(dim, exact_below=0)  # the graph alone, whatever the size
        built = time.perf_counter()
        hnsw.add_many(keys, vectors, keys)
        build_s["usearch HNSW graph"] = time.perf_counter() - built
        for ef in HNSW_EF:
            engines[f"usearch HNSW graph, ef {ef}"] = lambda q, ef=ef: _graph_search(hnsw, q, ef)
    try:
        import chromadb

        client = chromadb.EphemeralClient()
        name = f"bench{n}_{os.getpid()}"
        built = time.perf_counter()
        coll = client.create_collection(name, metadata={"hnsw:space": "cosine"})
        for start in range(0, n, 5000):
            coll.add(ids=keys[start:start + 5000], embeddings=vectors[start:start + 5000])
        build_s["chromadb"] = time.perf_counter() - built
        engines["chromadb in-process (HNSW)"] = lambda q: coll.query(query_embeddings=[q], n_results=3)["ids"][0]
    except ImportError:
        coll = None
    truth = [set(engines["numpy exact (blas 1 thread)"](q)) for q in qv]
    above = [{k for k, s in exact.search(q, 3) if s >= floor} for q in qv]
    samples: dict[str, list[float]] = defaultdict(list)
    found: dict[str, int] = defaultdict(int)
    found_above: dict[str, int] = defaultdict(int)
    per_round = max(1, queries // rounds)
    for r in range(rounds):
        for label, search in engines.items():
            for i in range(r * per_round, min(queries, (r + 1) * per_round)):
                t0 = time.perf_counter()
                got = search(qv[i])
                samples[label].append(time.perf_counter() - t0)
                found[label] += len(truth[i] & set(got))
                found_above[label] += len(above[i] & set(got))
    if coll is not None:
        client.delete_collection(coll.name)
    counted = per_round * rounds
    reachable = sum(len(above[i]) for r in range(rounds) for i in range(r * per_round, min(queries, (r + 1) * per_round)))
    print(f"{n:,} entries: build seconds {build_s}", flush=True)
    return {label: (_p50(samples[label]), None if label == BOUNDS_LABEL else found[label] / (3 * counted),
                    found_above[label] / reachable if reachable else float("nan")) for label in engines}


def random_vectors(n: int, queries: int, dim: int = 384) -> tuple[np.ndarray, np.ndarray]:
    """``n`` random unit vectors and ``queries`` stored ones plus noise: the hardest case for a graph."""
    rng = np.random.default_rng(n)
    vectors = _unit(rng.standard_normal((n, dim)).astype(np.float32))
    qv = vectors[rng.integers(0, n, queries)] + rng.standard_normal((queries, dim)).astype(np.float32) * 0.02
    return vectors, _unit(qv)


def prompt_vectors(model) -> tuple[np.ndarray, np.ndarray]:
    """The embeddings of the stored and the asked sides of every pair (evaluation sets, paraphrases), kept on disk."""
    pairs = [(p.get("stored") or p["origin"], p["lookup"]) for f in (EVAL, HELDOUT, NEGATIVES) for p in json.loads(f.read_text())["pairs"]]
    if POSITIVES.is_file():
        pairs += [(p["origin"], p["similar"]) for p in json.loads(POSITIVES.read_text())]
    stored, asked = sorted({a for a, _ in pairs}), sorted({b for _, b in pairs} - {a for a, _ in pairs})
    digest = hashlib.sha256(json.dumps([model.name, stored, asked]).encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"actioncache-bench-prompts-{digest}.npz"
    if not path.is_file():
        np.savez(path, stored=model.embed(stored), asked=model.embed(asked))
    saved = np.load(path)
    return saved["stored"], saved["asked"]


def clustered_vectors(n: int, queries: int, prompts: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``n`` vectors made from real prompt embeddings, clustered like a cache's entries, and queries.

    Each entry is a stored prompt's embedding moved a little (cosine about 0.8 to 0.99 to it) or,
    one in three, a blend of two prompts; half the queries are paraphrases never stored (the asked
    sides), half are stored entries moved a little.
    """
    stored, asked = prompts
    rng = np.random.default_rng(n)
    dim = stored.shape[1]
    base = stored[rng.integers(0, len(stored), n)]
    blend = rng.random(n) < 1 / 3
    weight = rng.uniform(0.5, 0.9, (n, 1))
    base[blend] = weight[blend] * base[blend] + (1 - weight[blend]) * stored[rng.integers(0, len(stored), int(blend.sum()))]
    noise = rng.standard_normal((n, dim)).astype(np.float32) * rng.uniform(0.005, 0.04, (n, 1)).astype(np.float32)
    vectors = _unit(base + noise)
    half = queries // 2
    moved = vectors[rng.integers(0, n, queries - half)] + rng.standard_normal((queries - half, dim)).astype(np.float32) * 0.02
    qv = np.concatenate([asked[rng.integers(0, len(asked), half)], moved])
    return vectors, _unit(qv)


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _graph_search(hnsw, query: np.ndarray, ef: int) -> list[str]:
    hnsw.expansion_search = ef
    return [k for k, _ in hnsw.search(query, 3)]


# --- report --------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer latency queries, sizes 1k and 10k")
    parser.add_argument("--no-latency", action="store_true", help="quality tables only")
    parser.add_argument("--latency-only", action="store_true",
                        help="latency tables only, written to bench/results/semantic_latency.md")
    parser.add_argument("--show-errors", choices=("tune", "report", "heldout"), default=None,
                        help="print every pair of that set answered wrongly (stderr)")
    parser.add_argument("--vectors", default=None,
                        help="a .npz file that keeps the embeddings between runs (made on the first run)")
    parser.add_argument("--no-graph", action="store_true", help="leave the usearch graph out of the search tables (its build is the slowest step)")
    parser.add_argument("--sizes", default=None, help="search sizes, comma-separated (default 1000,10000,100000; 'none': end to end only)")
    parser.add_argument("--blind", metavar="PATH", type=Path, default=None,
                        help="measure a frozen blind set (JSON lines; its SHA256SUMS beside it is checked first); "
                             "prints aggregates only and appends them to bench/results/semantic_blind.md")
    parser.add_argument("--note", default="", help="with --blind: a line saying what changed since the last run")
    parser.add_argument("--pairs", metavar="PATH", type=Path, action="append", default=[],
                        help="measure one of the project's own pair sets (same format; repeatable)")
    parser.add_argument("--errors", action="store_true", help="with --pairs: print every wrong answer and miss (stderr)")
    parser.add_argument("--verifier", choices=("auto", "learned", "cross", "none"), default="auto",
                        help="with --pairs or --blind: the cache's verifier (default auto: the library's default; "
                             "cross: the opt-in cross-encoder; none: off). --stages always probes the cross-encoder")
    parser.add_argument("--stages", action="store_true",
                        help="with --pairs: where each pair is stopped (threshold, which rule, context, learned verifier), "
                             "per category, and a sweep of the threshold and the verifier's operating point")
    args = parser.parse_args()
    if args.blind or args.pairs:
        pair_sets(args)
        return
    if args.latency_only:
        latency_report(args)
        return

    from actioncache.semantic import default_embedder

    model = default_embedder()
    eval_pairs = json.loads(EVAL.read_text())["pairs"]
    positives = json.loads(POSITIVES.read_text())
    negatives = json.loads(NEGATIVES.read_text())["pairs"]
    heldout_pairs = json.loads(HELDOUT.read_text())["pairs"]
    texts = sorted({p[k] for p in eval_pairs + heldout_pairs for k in ("stored", "lookup")}
                   | {p[k] for p in positives for k in ("origin", "similar")}
                   | {p[k] for p in negatives for k in ("origin", "lookup")})
    t0 = time.perf_counter()
    table = TableEmbedder(model.name, embed_all(model, texts, args.vectors), model.dim, fallback=model)
    batch_ms = (time.perf_counter() - t0) / len(texts) * 1e3
    tau = default_threshold(model.name)

    report = per_category(table, eval_pairs, "report")
    tune = per_category(table, eval_pairs, "tune")
    r_served, r_wrong, r_worst, r_worst_cat = totals(report)
    t_served, t_wrong, t_worst, t_worst_cat = totals(tune)
    gpt_pair = sum(served(table, p["origin"], p["similar"]) for p in positives)
    gpt_correct, gpt_wrong, gpt_miss = gptcache_protocol(table, positives)
    old_neg = sum(served(table, p["origin"], p["lookup"]) for p in negatives)
    heldout = per_category(table, heldout_pairs, None)
    h_served, h_wrong, h_worst, h_worst_cat = totals(heldout)

    lines = [
        "# Semantic cache benchmark",
        "",
        f"Command: `python bench/bench_semantic.py{' --quick' if args.quick else ''}{' --no-latency' if args.no_latency else ''}{' --vectors FILE' if args.vectors else ''}`. Machine: {os.cpu_count()} cores, "
        f"shared with other engineers' jobs (load average {os.getloadavg()[0]:.1f} at the start): latencies are inflated "
        "and noisy, rounds are interleaved and medians reported; compare the ratios within a table.",
        f"Default embedder: {type(model).__name__} ({model.name}, dim {model.dim}); its calibrated threshold {tau:.2f}; "
        f"contrast checks on. "
        + (f"Vectors of the {len(texts)} texts reused from an earlier run of the same model." if args.vectors else
           f"Batch embedding of the {len(texts)} texts: {batch_ms:.2f} ms per text."),
        "",
        "## Own evaluation set, reporting half (per pair: store one side, look up the other)",
        "",
        f"bench/data/semantic_eval.json: {len(eval_pairs)} pairs generated by bench/data/make_semantic_eval.py, split by "
        "template; the threshold and the rules were tuned on the other half only.",
        "",
        *category_table(report),
        "",
        f"**Reporting half: should-hit pairs served {r_served:.1%}; traps given a wrong answer {r_wrong:.1%} "
        f"(worst category: {r_worst_cat} {r_worst:.1%}).** Tuning half, for comparison: served {t_served:.1%}, "
        f"wrong {t_wrong:.1%} (worst {t_worst_cat} {t_worst:.1%}).",
        "",
        "How the default threshold was chosen (tuning half only; served / wrong per threshold):",
        "",
        "| threshold | should-hit served | traps wrong | worst trap category |",
        "|---|---|---|---|",
    ]
    for t in SWEEP:
        s_, w_, worst_, cat_ = totals(per_category(table, [p for p in eval_pairs if p["split"] == "tune"], "tune", threshold=t))
        mark = " (default)" if abs(t - tau) < 1e-9 else ""
        lines.append(f"| {t:.2f}{mark} | {s_:.1%} | {w_:.1%} | {cat_} {worst_:.1%} |")
    lines += [
        "",
        "## Held-out set (hand-written, never tuned on; per pair, defaults)",
        "",
        f"bench/data/semantic_heldout.json: {len(heldout_pairs)} pairs written in another style (agent tool requests and "
        "shell commands, lower case, typos, dropped apostrophes and hyphens), frozen before their first measurement.",
        "",
        *category_table(heldout),
        "",
        f"**Held-out: should-hit pairs served {h_served:.1%}; traps given a wrong answer {h_wrong:.1%} "
        f"(worst category: {h_worst_cat} {h_worst:.1%}).** {HELDOUT_FIRST}",
    ]
    if args.show_errors:
        chosen = heldout_pairs if args.show_errors == "heldout" else [p for p in eval_pairs if p["split"] == args.show_errors]
        for p in chosen:
            if served(table, p["stored"], p["lookup"]) != (p["label"] == "hit"):
                print(f"[{args.show_errors}] {p['category']}/{p['label']}: {p['stored']!r} | {p['lookup']!r}", file=sys.stderr)
    lines += [
        "",
        "## Public paraphrases and earlier negatives (defaults)",
        "",
        f"- GPTCache's 999 paraphrase pairs, per pair: {gpt_pair} served ({gpt_pair / len(positives):.1%}).",
        f"- Same pairs in GPTCache's protocol (all origins stored, every paraphrase looked up): {gpt_correct} correct, "
        f"{gpt_wrong} wrong, {gpt_miss} misses. GPTCache's published figures: 0.95: 425/25/549, 0.90: 804/77/118, "
        "0.80: 904/92/3 (its own model and distance scale).",
        f"- bench/data/semantic_negatives.json ({len(negatives)} negatives written earlier), per pair: {old_neg} served "
        f"({old_neg / len(negatives):.1%} wrong).",
        "",
    ]
    lines += verifier_report(model)
    text = "\n".join(lines) + "\n"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)
    print(text)
    if not args.no_latency:
        latency_report(args)


FAMILIES = {split: ROOT / f"bench/data/semantic_families_{split}.jsonl" for split in ("dev", "holdout")}


def verifier_report(model) -> list[str]:
    """What the learned verifier adds: the project's pair sets with the defaults, the verifier off and on."""
    import semantic_pairs

    from actioncache.semantic import learned

    if not learned.available():
        return ["", "(the learned verifier's model files are missing: no verifier table)"]
    data = ROOT / "src/actioncache/semantic/data"
    meta = json.loads((data / "verifier.json").read_text())  # the default verifier's (the cross-encoder's: verifier_cross.json)
    size = sum((data / name).stat().st_size for name in ("verifier_project.onnx", "verifier_pair.onnx"))
    lines = ["", "## What the learned verifier adds (per pair, defaults; verifier off / on)", "",
             f"The verifier (`verifier=\"learned\"`, opt-in: the default is the cross-encoder): a head over the packaged "
             f"model's token states, {meta['parameters']:,} "
             f"parameters, {size / 1e6:.2f} MB of ONNX, operating point "
             f"{meta['min_score']:.3f} (chosen on the dev split); trained by bench/train_semantic_verifier.py "
             f"(seed {meta['seed']}, {meta['epochs']} epochs) on {meta['trained_on']['train']:,} pairs. The families' "
             "holdout split was written with the rest and frozen (its hash is in bench/data/semantic_families/README.md); "
             "neither the rules nor the verifier were tuned on it.", "",
             "| set | verifier | should-hit served | traps wrong | conversations served / wrong | worst trap category |",
             "|---|---|---|---|---|---|"]
    sets = {"families dev (tuning)": FAMILIES["dev"], "families holdout (held out)": FAMILIES["holdout"]}
    for name, path in sets.items():
        pairs = semantic_pairs.load_pairs(path)
        for label, option in (("off", None), ("on", "learned")):
            def served(a, b, option=option) -> bool:
                sc = SemanticCache(MemoryStore(), embedder=model, namespace="q", verifier=option)
                sc.store(a, ["plan"])
                return sc.lookup(b) is not None

            t = semantic_pairs.measure(pairs, served)
            k, n = t.rate("should_hit")
            w, m = t.rate("trap")
            ck, cn = t.rate("should_hit", "conversation")
            cw, cm = t.rate("trap", "conversation")
            cat, worst = t.worst_trap()
            lines.append(f"| {name} | {label} | {k / n:.1%} ({k}/{n}) | {w / m:.1%} ({w}/{m}) | "
                         f"{ck / max(cn, 1):.0%} / {cw / max(cm, 1):.0%} | {cat} {worst:.1%} |")
    return lines


def pair_sets(args: argparse.Namespace) -> None:
    """The blind set (aggregates only) and the project's own sets in the same format, with the defaults."""
    import semantic_pairs

    from actioncache.semantic import default_embedder

    model = default_embedder()
    verifier = None if args.verifier == "none" else args.verifier

    def served(a, b) -> bool:
        sc = SemanticCache(MemoryStore(), embedder=model, namespace="q", verifier=verifier)
        sc.store(a, ["plan"])
        return sc.lookup(b) is not None

    if args.stages:
        for path in args.pairs:
            print(stages_report(model, path, args.errors))
        return
    for path in args.pairs:
        print(semantic_pairs.run_own(path, served, args.errors), end="")
        print(f"(verifier={args.verifier!r})\n" if args.verifier != "auto" else "")
    if args.blind:
        probe = SemanticCache(MemoryStore(), embedder=model, namespace="q", verifier=verifier)
        gates = [g.name for g in probe.pipeline.gates if g.kind == "verifier"]
        settings = (f"defaults ({model.name}, threshold {probe.threshold:.2f}, "
                    f"verifier {', '.join(gates) or 'none'})")
        if args.verifier != "auto":
            settings += f", verifier={args.verifier!r}"
        print(semantic_pairs.run_blind(args.blind, served, BLIND_RESULTS, args.note, settings))


def probe_pairs(model, pairs: list[dict]) -> list:
    """Each pair's :class:`semantic_pairs.Probe`, through a real cache with every stage open: the
    threshold at -1 and a first rule gate that asks each default rule, the context gate (at the
    default threshold) and the learned verifier (operating point 0) about the very pair the cache built."""
    import semantic_pairs

    from actioncache.semantic import cross
    from actioncache.semantic.guard import DEFAULT_RULES, GATES, RULE
    from actioncache.semantic.guard.registry import Doubt

    tau = default_threshold(model.name, cross=cross.available())  # the default cache's
    verifier = cross.CrossEncoderVerifier(min_score=0.0) if cross.available() else None
    seen: list = []

    class ProbeGate:
        name, kind = "probe", RULE

        def __call__(self, pair):
            found = {n: GATES[n](pair) for n in DEFAULT_RULES}
            rules = tuple(n for n, reason in found.items() if reason is not None)
            doubts = tuple(n for n, reason in found.items() if isinstance(reason, Doubt))
            similar = pair.extras["similar"]
            pair.extras["similar"] = lambda a, b, slack=0.0: similar(a, b, slack - 1.0 - tau)  # the default threshold
            context = GATES["context"](pair)
            context_doubt = isinstance(context, Doubt)
            pair.extras["similar"] = similar
            score = None
            if verifier is not None:
                verifier(pair)
                score = pair.extras.get("learned_score", 1.0)
            seen.append(semantic_pairs.Probe(pair.similarity, rules, context, score, doubts=doubts,
                                             context_doubt=context_doubt))
            return None

    out = []
    for pair in pairs:
        sc = SemanticCache(MemoryStore(), embedder=model, namespace="q", threshold=-1.0, gates=[ProbeGate(), "context"])
        sc.store(pair["a"], ["plan"])
        seen.clear()
        hit = sc.lookup_hit(pair["b"])
        if seen:
            out.append(seen[-1])
        elif hit is not None and hit.exact:
            out.append(semantic_pairs.Probe(1.0, exact=True))
        else:  # refused before the gates (another context without the context gate): a miss at any threshold
            out.append(semantic_pairs.Probe(float("nan")))
    return out


def stages_report(model, path: Path, show_errors: bool = False) -> str:
    import semantic_pairs

    from actioncache.semantic import cross

    pairs = semantic_pairs.load_pairs(path)
    probes = probe_pairs(model, pairs)
    tau = default_threshold(model.name, cross=cross.available())  # the default cache's
    shipped = cross.CrossEncoderVerifier().min_score if cross.available() else None
    points = [None, shipped, 0.05, 0.1, 0.2, 0.3, 0.5]
    if show_errors:  # every should-hit lost and every trap served at the defaults, with the stage that decided
        for pair, probe in zip(pairs, probes):
            where = semantic_pairs.stage(probe, tau, shipped)
            if (where == "served") != (pair["label"] == "should_hit"):
                print(f"[{where}] {pair['category']} sim {probe.similarity:.2f} learned {probe.learned} rules "
                      f"{','.join(probe.rules) or '-'}: {json.dumps(pair['a'])} | {json.dumps(pair['b'])}", file=sys.stderr)
    lines = [f"# {path.name} ({len(pairs)} pairs): where pairs are stopped", "",
             *semantic_pairs.stage_table(pairs, probes, tau, shipped), "",
             "Sweep (the same probes; verifier None: off):", "",
             *semantic_pairs.sweep_table(pairs, probes, [0.50, 0.55, 0.60, 0.65, 0.70], points)]
    return "\n".join(lines) + "\n"


def latency_report(args: argparse.Namespace) -> None:
    from actioncache.semantic import SentenceTransformerEmbedder, default_embedder

    model = default_embedder()
    eval_pairs = json.loads(EVAL.read_text())["pairs"]
    lines = [
        "# Semantic cache latency",
        "",
        f"Command: `python bench/bench_semantic.py --latency-only{' --quick' if args.quick else ''}"
        f"{' --sizes ' + args.sizes if args.sizes else ''}{' --no-graph' if args.no_graph else ''}`. Machine: {os.cpu_count()} cores shared with other "
        f"engineers' jobs (load average {os.getloadavg()[0]:.1f} at the start): every figure is inflated and noisy; "
        "rounds are interleaved and medians reported, so compare the ratios within a table.",
        "",
    ]
    rounds = 5
    pairs = eval_pairs[: (60 if args.quick else 150)]
    embedders = {}
    chroma_label = None
    if type(model).__name__ == "OnnxEmbedder":
        from actioncache.semantic import OnnxEmbedder
        from actioncache.semantic.embedders_onnx import PRECISIONS

        default_label = f"onnx {model.precision}, threads={model.threads!r} (the default: 2 while a core is spare, else 1)"
        embedders[default_label] = model
        for fixed in (1, 2):
            embedders[f"onnx {model.precision}, {fixed} thread{'s' if fixed > 1 else ''} (threads={fixed})"] = OnnxEmbedder(
                precision=model.precision, threads=fixed)
        for other in PRECISIONS:
            if other != model.precision:
                embedders[f"onnx {other}, 1 thread (precision='{other}', threads=1)"] = OnnxEmbedder(precision=other, threads=1)
        try:
            import chromadb  # noqa: F401

            chroma_label = "chromadb in-process (HNSW) over the same vectors, the default's embedding of the request"
        except ImportError:
            lines.append("(chromadb unavailable: no ChromaDB row)")
    try:
        embedders["sentence-transformers (torch)"] = SentenceTransformerEmbedder()
    except Exception as exc:
        lines.append(f"(sentence-transformers unavailable: {exc})")
    e2e = end_to_end(embedders, 10_000, pairs, rounds, chroma_label)
    asked = list(dict.fromkeys(p["lookup"] for p in pairs if p["lookup"] not in {q["stored"] for q in pairs}))
    tokens = ""
    if type(model).__name__ == "OnnxEmbedder":
        tokens = f" (median {statistics.median(len(model._tokenizer.encode(t).ids) for t in asked):.0f} word pieces with [CLS] and [SEP])"
    lines += [
        "## End-to-end lookup, embedding included (10,000 entries, the default index: exact above the threshold)",
        "",
        f"{len(asked)} requests never embedded before{tokens}, the lookup sides of the evaluation set's first "
        f"{len(pairs)} pairs, then each again at once (its embedding reused). Each cache holds those pairs' stored "
        "sides (so most lookups read a candidate and run the contrast checks) and random vectors up to 10,000. "
        f"Every row looks up the same texts; {rounds} interleaved rounds.",
        "",
        "| embedder | new request p50 ms | new request CPU p50 ms | repeated request p50 ms |",
        "|---|---|---|---|",
    ]
    for label, (new, repeated, cpu) in e2e.items():
        lines.append(f"| {label} | {new:.2f} | {cpu:.2f} | {'-' if repeated is None else f'{repeated:.2f}'} |")
    if args.sizes == "none":
        sizes = []
    elif args.sizes:
        sizes = [int(x) for x in args.sizes.split(",")]
    else:
        sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    model_vectors = prompt_vectors(model) if sizes else None
    floor = default_threshold(model.name)  # what a lookup with the default embedder serves from
    for title, make in (
        ("prompt embeddings (clustered: each entry a real prompt's embedding moved a little, or a blend of two; "
         "queries: half paraphrases never stored, half stored entries moved a little)",
         lambda n, q: clustered_vectors(n, q, model_vectors)),
        ("random unit vectors (the hardest case for a graph; queries: stored vectors plus noise)", random_vectors),
    ) if sizes else ():
        lines += ["", f"## Search alone (top-3, dim 384): {title}", "",
                  f"| entries | engine | p50 ms | ratio vs chromadb | recall@3 vs exact | recall above {floor:.2f} vs exact |",
                  "|---|---|---|---|---|---|"]
        for n in sizes:
            vectors, qv = make(n, 300 if args.quick else 1000)
            res = search_alone(vectors, qv, rounds, graph=not args.no_graph, floor=floor)
            chroma = res.get("chromadb in-process (HNSW)")
            for label, (p50, recall, recall_above) in res.items():
                ratio = f"{p50 / chroma[0]:.2f}x" if chroma else "-"
                plain = "-" if recall is None else f"{recall:.3f}"
                lines.append(f"| {n:,} | {label} | {p50:.3f} | {ratio} | {plain} | {recall_above:.3f} |")
    lines += ["", f"Load average at the end: {os.getloadavg()[0]:.1f}."]
    text = "\n".join(lines) + "\n"
    LATENCY_RESULTS.write_text(text)
    print(text)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as _tmp:
        os.environ.setdefault("ACTIONCACHE_URL", f"sqlite:///{_tmp}/bench.db")
        main()
