"""Train the semantic cache's learned verifier offline and export it to ONNX.

The verifier is a small pair classifier over the packaged model's token states (all-MiniLM-L6-v2,
the default embedder's int8 ONNX export: the very states a lookup computes for its embedding):

* ``project``: each side's token states (tokens x 384) -> features (tokens x D), a linear layer and a
  GELU; a stored entry keeps its features, so a lookup projects only the new request;
* ``pair``: soft alignment of the two sides' tokens (decomposable attention, Parikh et al. 2016),
  a comparison of each token with what it aligns to (their difference and product only, so that
  it judges differences rather than learning the training requests), mean and max pooling,
  symmetric in the two sides, and the cosine of the two embeddings -> the probability that one
  plan answers both.

Data (all of it the project's own or public, never the blind set): the hand-written request
families (bench/data/semantic_families_train.jsonl; the dev split chooses the operating point, the
holdout split is only reported), bench/data/semantic_eval.json (tuning half for training, reporting
half for development), semantic_heldout.json and semantic_negatives.json, GPTCache's paraphrase
pairs (shared/data/semantic/, when found beside the checkout or above a worktree) with each
origin's nearest other origin as a negative, and rewordings of the training requests made by rule
(chatter, politeness, a typo, a moved phrase: same; a question about a command, a negation,
another name, number, quantifier, action or object: traps).

The outside writers' tuning set v3a (bench/data/semantic_dev_v3/v3a, 740 pairs, free rewordings,
chatter, reorders, conversations and traps) joins the training data, repeated 4 times; v3b beside it
is reported (aggregates), never trained on. Gaussian noise on the token states while training
(``--noise``, 0.1 of their spread) keeps the head from depending on the last digits of ONNX
Runtime's int8 kernels, which differ by CPU.

Reproducible: ``python bench/train_semantic_verifier.py --epochs 4`` (seeded; five to twenty
minutes on two shared cores). The shipped model was trained before v3a, without noise and without
GPTCache's pairs (not found from its worktree): ``ACTIONCACHE_PARAPHRASES=/nonexistent
ACTIONCACHE_V3A=/nonexistent python bench/train_semantic_verifier.py --epochs 4 --noise 0``
reproduces it. A model trained with v3a, GPTCache and noise (the default now) was measured on v3b and
not shipped: at the same traps wrong it served no more (docs/semantic.md, "The learned verifier"). Writes src/actioncache/semantic/data/verifier_project.onnx and verifier_pair.onnx, and
verifier_head.json (dimensions, the operating point, what it was trained on and how it scored).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from actioncache.semantic import learned  # noqa: E402
from actioncache.semantic.conversation import as_request  # noqa: E402 - after the path insert

DATA = ROOT / "bench/data"
PARAPHRASES = Path(os.environ.get("ACTIONCACHE_PARAPHRASES") or next(
    (p for p in (d / "shared/data/semantic/paraphrase_pairs.json" for d in ROOT.parents) if p.is_file()),
    ROOT.parent / "shared/data/semantic/paraphrase_pairs.json"))  # beside the checkout, or above a worktree
OUT = ROOT / "src/actioncache/semantic/data"
V3A = Path(os.environ.get("ACTIONCACHE_V3A") or DATA / "semantic_dev_v3/v3a/dev_v3a.jsonl")
V3B = DATA / "semantic_dev_v3/v3b/dev_v3b.jsonl"
V3A_REPEAT = 4
SEED = 30
D = 32  # feature width per token
NOISE = 0.1


def key(request) -> str:
    return as_request(request).key_text


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --- data ------------------------------------------------------------------------------------------

_QUESTIONS = ("how do I {}", "how can I {}?", "can I {}?", "should I {}?", "what are the steps to {}",
              "is it safe to {}?", "do I need to {}?")
_CHATTER = (("hi! ", " thanks!"), ("hey, could you ", " please?"), ("good morning, ", ""), ("", ", thx"),
            ("hello there, can you ", " for me? much appreciated"), ("quick one: ", " pls"))


def _imperative(text: str) -> bool:
    from actioncache.semantic.guard.speech_act import act
    from actioncache.semantic.guard.text import side

    return act(side(text)) == "act"


_POLITE = ("can you {}?", "please {}", "could you {} for me?", "I'd like you to {}", "would you {}?", "{}, please")
_SWAPS = {"all": "some", "every": "one", "first": "last", "last": "first", "some": "all", "only": "all", "any": "every",
          "more": "less", "less": "more", "before": "after", "after": "before", "on": "off", "off": "on", "in": "out",
          "up": "down", "down": "up", "with": "without", "open": "closed", "closed": "open", "new": "old"}


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word) - 2)
    return word[:i] + word[i + 1] + word[i] + word[i + 2:]


def made_by_rule(texts: list[str], rng: random.Random) -> list[tuple[str, str, int, str]]:
    """Rewordings of single requests made by rule: chatter, politeness, a typo, a phrase moved to the
    front (same); a question about a command, a negation, another name, number, quantifier or
    particle, another action or object (traps)."""
    from actioncache.semantic.guard.entity import entities
    from actioncache.semantic.guard.text import side

    words = [w for t in texts for w in t.split()]
    verbs = sorted({t.split()[0].lower() for t in texts if _imperative(t)})
    names = sorted({e for t in texts for e in entities(side(t)) if e.isalpha()})
    nouns = sorted({w.lower().strip("?.!,") for w in words if w.isalpha() and len(w) > 3})
    out = []
    for text in texts:
        base = text.rstrip("?.! ")
        lowered = base[0].lower() + base[1:] if base else base
        toks = base.split()
        before, after = rng.choice(_CHATTER)
        out.append((text, f"{before}{base}{after}", 1, "rule:chatter"))
        out.append((text, rng.choice(_POLITE).format(lowered), 1, "rule:polite"))
        long_words = [i for i, w in enumerate(toks) if w.isalpha() and len(w) >= 6]
        if long_words:
            i = rng.choice(long_words)
            out.append((text, " ".join(toks[:i] + [_typo(toks[i], rng)] + toks[i + 1:]), 1, "rule:typo"))
        for prep in (" in ", " on ", " at ", " for ", " tomorrow", " today"):
            if prep in base and base.index(prep) > 3:
                head, tail = base.rsplit(prep, 1)
                if tail and len(tail.split()) <= 4:
                    out.append((text, f"{prep.strip()} {tail}, {head}", 1, "rule:reorder"))
                break
        if _imperative(base) and not lowered.startswith(("please", "could", "can")):
            out.append((text, rng.choice(_QUESTIONS).format(lowered), 0, "rule:speech_act"))
            out.append((text, f"don't {lowered}", 0, "rule:negation"))
            out.append((text, " ".join([rng.choice(verbs)] + toks[1:]), 0, "rule:other_action"))
        lows = [t.lower() for t in toks]
        for i, tok in enumerate(lows):
            if tok in _SWAPS:
                out.append((text, " ".join(toks[:i] + [_SWAPS[tok]] + toks[i + 1:]), 0, "rule:scope"))
                break
        found = [i for i, t in enumerate(lows) if t.strip("?.!,") in names]
        if found:
            i = rng.choice(found)
            out.append((text, " ".join(toks[:i] + [rng.choice(names)] + toks[i + 1:]), 0, "rule:entity"))
        if len(found) >= 2:
            i, j = found[0], found[-1]
            swapped = list(toks)
            swapped[i], swapped[j] = toks[j], toks[i]
            out.append((text, " ".join(swapped), 0, "rule:role"))
        digits = [i for i, t in enumerate(toks) if t.isdigit()]
        if digits:
            i = rng.choice(digits)
            out.append((text, " ".join(toks[:i] + [str(int(toks[i]) * 2 + 1)] + toks[i + 1:]), 0, "rule:number"))
        if len(toks) >= 3 and toks[-1].isalpha() and toks[-1].lower() not in ("please", "it", "them"):
            out.append((text, " ".join(toks[:-1] + [rng.choice(nouns)]), 0, "rule:object"))
    return [(a, b, y, src) for a, b, y, src in out if a != b]


def gather(rng: random.Random) -> dict[str, list[tuple[str, str, int, str]]]:
    """split -> [(text a, text b, label, source)]; label 1: one plan answers both."""
    splits: dict[str, list[tuple[str, str, int, str]]] = {"train": [], "dev": [], "holdout": []}
    fam_train = jsonl(DATA / "semantic_families_train.jsonl")
    for split, rows in list(splits.items()):
        for p in jsonl(DATA / f"semantic_families_{split}.jsonl"):
            rows.append((key(p["a"]), key(p["b"]), int(p["label"] == "should_hit"), f"families:{p['category']}"))
    pool = {p[k] for p in fam_train for k in ("a", "b") if isinstance(p[k], str)}
    eval_pairs = json.loads((DATA / "semantic_eval.json").read_text())["pairs"]
    pool |= {p[k] for p in eval_pairs if p["split"] == "tune" for k in ("stored", "lookup")}
    pool |= {p[k] for p in json.loads((DATA / "semantic_heldout.json").read_text())["pairs"] for k in ("stored", "lookup")}
    splits["train"] += [(key(a), key(b), y, s) for a, b, y, s in made_by_rule(sorted(pool), rng)]
    for p in eval_pairs:
        split = "train" if p["split"] == "tune" else "dev"
        splits[split].append((key(p["stored"]), key(p["lookup"]), int(p["label"] == "hit"), f"eval:{p['category']}"))
    for p in json.loads((DATA / "semantic_heldout.json").read_text())["pairs"]:
        splits["train"].append((key(p["stored"]), key(p["lookup"]), int(p["label"] == "hit"), f"heldout:{p['category']}"))
    for p in json.loads((DATA / "semantic_negatives.json").read_text())["pairs"]:
        splits["train"].append((key(p["origin"]), key(p["lookup"]), 0, f"negatives:{p['kind']}"))
    # The outside writers' tuning set (free rewordings and traps, singles and conversations), the
    # distribution the verifier must serve: repeated so that it weighs as much as the rest.
    for p in jsonl(V3A) if V3A.is_file() else []:
        row = (key(p["a"]), key(p["b"]), int(p["label"] == "should_hit"), f"v3a:{p['category']}")
        splits["train"] += [row] * V3A_REPEAT
    if V3B.is_file():  # the development measure: reported (aggregates), never trained on
        splits["v3b"] = [(key(p["a"]), key(p["b"]), int(p["label"] == "should_hit"), f"v3b:{p['category']}")
                         for p in jsonl(V3B)]
    if PARAPHRASES.is_file():
        gpt = json.loads(PARAPHRASES.read_text())
        for i, p in enumerate(gpt):
            splits["dev" if i % 5 == 0 else "train"].append((key(p["origin"]), key(p["similar"]), 1, "gptcache"))
        splits["gptcache_origins"] = [(key(p["origin"]), key(p["similar"]), 1, "gptcache") for p in gpt]  # type: ignore[assignment]
    return splits


# --- features --------------------------------------------------------------------------------------


def token_states(texts: list[str], cache_file: Path) -> dict[str, np.ndarray]:
    """Every text's token states from the default embedder's int8 model (kept in a file between runs)."""
    from actioncache.semantic.embedders_onnx import OnnxEmbedder

    known: dict[str, np.ndarray] = {}
    if cache_file.is_file():
        saved = np.load(cache_file, allow_pickle=True)
        known = dict(saved["states"].item())
    missing = [t for t in texts if t not in known]
    if missing:
        model = OnnxEmbedder(precision="int8", threads=1)
        started = time.perf_counter()
        for i, text in enumerate(missing):
            known[text] = model.token_states(text).astype(np.float16)
            if i % 1000 == 999:
                print(f"  states {i + 1}/{len(missing)} ({time.perf_counter() - started:.0f} s)", flush=True)
        np.savez(cache_file, states=np.array(known, dtype=object))
    return known


def pooled(states: np.ndarray) -> np.ndarray:
    v = states.astype(np.float32).mean(axis=0)
    return v / max(float(np.linalg.norm(v)), 1e-9)


# --- model -----------------------------------------------------------------------------------------


def build(torch, dim: int):
    nn = torch.nn

    class Head(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = nn.Sequential(nn.Linear(dim, D), nn.GELU())
            self.compare = nn.Sequential(nn.Linear(2 * D, D), nn.GELU())
            self.drop = nn.Dropout(0.25)
            self.out = nn.Sequential(nn.Linear(4 * D + 3, D), nn.GELU(), nn.Dropout(0.1), nn.Linear(D, 1))

        def project(self, states):
            return self.proj(states)

        def pair(self, fa, fb, ma, mb, cos):
            scores = fa @ fb.transpose(1, 2) / math.sqrt(D)  # B x n x m
            neg = torch.finfo(scores.dtype).min / 2
            to_b = torch.softmax(scores.masked_fill(mb[:, None, :] < 0.5, neg), dim=2) @ fb
            to_a = torch.softmax(scores.masked_fill(ma[:, :, None] < 0.5, neg), dim=1).transpose(1, 2) @ fa
            # Only how each token differs from what it aligns to: the head judges differences, it
            # cannot learn the requests themselves (which would not carry over to new ones).
            va = self.compare(torch.cat([(fa - to_b).abs(), fa * to_b], dim=-1))
            vb = self.compare(torch.cat([(fb - to_a).abs(), fb * to_a], dim=-1))
            mean_a = (va * ma[..., None]).sum(1) / ma.sum(1, keepdim=True)
            mean_b = (vb * mb[..., None]).sum(1) / mb.sum(1, keepdim=True)
            max_a = va.masked_fill(ma[..., None] < 0.5, neg).max(1).values
            max_b = vb.masked_fill(mb[..., None] < 0.5, neg).max(1).values
            na, nb = ma.sum(1, keepdim=True), mb.sum(1, keepdim=True)
            lengths = (na - nb).abs() / (na + nb)
            x = torch.cat([mean_a + mean_b, (mean_a - mean_b).abs(), torch.minimum(max_a, max_b),
                           (max_a - max_b).abs(), cos, cos * cos, lengths], dim=-1)
            return self.out(self.drop(x)).squeeze(-1)

    return Head()


def batches(pairs, states, rng: random.Random, size: int, shuffle: bool):
    import torch

    order = list(range(len(pairs)))
    if shuffle:
        rng.shuffle(order)
    for start in range(0, len(order), size):
        chunk = [pairs[i] for i in order[start:start + size]]
        if shuffle:  # either order: the head is symmetric, the data need not be
            chunk = [(b, a, y, s) if rng.random() < 0.5 else (a, b, y, s) for a, b, y, s in chunk]
        n = max(len(states[a]) for a, _, _, _ in chunk)
        m = max(len(states[b]) for _, b, _, _ in chunk)
        dim = states[chunk[0][0]].shape[1]
        xa = np.zeros((len(chunk), n, dim), np.float32)
        xb = np.zeros((len(chunk), m, dim), np.float32)
        ma = np.zeros((len(chunk), n), np.float32)
        mb = np.zeros((len(chunk), m), np.float32)
        cos = np.zeros((len(chunk), 1), np.float32)
        for i, (a, b, _, _) in enumerate(chunk):
            sa, sb = states[a], states[b]
            xa[i, :len(sa)], xb[i, :len(sb)] = sa, sb
            ma[i, :len(sa)], mb[i, :len(sb)] = 1, 1
            cos[i, 0] = float(pooled(sa) @ pooled(sb))
        y = np.array([p[2] for p in chunk], np.float32)
        yield (torch.from_numpy(xa), torch.from_numpy(xb), torch.from_numpy(ma), torch.from_numpy(mb),
               torch.from_numpy(cos), torch.from_numpy(y))


def predict(model, pairs, states) -> np.ndarray:
    import torch

    model.eval()
    out = []
    with torch.no_grad():
        for xa, xb, ma, mb, cos, _ in batches(pairs, states, random.Random(0), 256, shuffle=False):
            out.append(torch.sigmoid(model.pair(model.project(xa), model.project(xb), ma, mb, cos)).numpy())
    return np.concatenate(out) if out else np.zeros(0)


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    pos, neg = scores[labels == 1], scores[labels == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    ranks = np.argsort(np.argsort(np.concatenate([pos, neg])))
    return float((ranks[:len(pos)].sum() - len(pos) * (len(pos) - 1) / 2) / (len(pos) * len(neg)))


def export(model, dim: int, directory: Path) -> None:
    import torch

    model.eval()

    class Project(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.head = model

        def forward(self, states):
            return self.head.project(states)

    class PairOnly(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.head = model

        def forward(self, fa, fb, cos):
            ma = torch.ones(fa.shape[:2], dtype=fa.dtype)
            mb = torch.ones(fb.shape[:2], dtype=fb.dtype)
            return torch.sigmoid(self.head.pair(fa, fb, ma, mb, cos))

    with torch.no_grad():
        torch.onnx.export(Project(), (torch.zeros(1, 5, dim),), str(directory / "verifier_project.onnx"),
                          input_names=["states"], output_names=["features"], opset_version=17, dynamo=False,
                          dynamic_axes={"states": {1: "tokens"}, "features": {1: "tokens"}})
        torch.onnx.export(PairOnly(), (torch.zeros(1, 5, D), torch.zeros(1, 7, D), torch.zeros(1, 1)),
                          str(directory / "verifier_pair.onnx"), input_names=["request", "candidate", "cosine"],
                          output_names=["probability"], opset_version=17, dynamo=False,
                          dynamic_axes={"request": {1: "n"}, "candidate": {1: "m"}})


def residual(rows: list[tuple[str, str, int, str]], states: dict[str, np.ndarray], threshold: float) -> np.ndarray:
    """Which pairs reach the verifier: the embeddings at least ``threshold`` alike and no rule refusing."""
    from actioncache.semantic.guard import contrast

    return np.array([float(pooled(states[a]) @ pooled(states[b])) >= threshold and contrast(b, a) is None
                     for a, b, _, _ in rows])


def operating_point(scores: np.ndarray, labels: np.ndarray, keep: float) -> float:
    """The probability below which the verifier refuses, chosen so that it keeps ``keep`` of the
    should-hit pairs that reach it: it refuses only what it is surest of."""
    hits = np.sort(scores[labels == 1])
    if not len(hits):
        return 0.5
    return float(hits[math.floor((1 - keep) * len(hits))])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--states", default=str(Path(os.environ.get("TMPDIR", "/tmp")) / "actioncache-verifier-states.npz"),
                        help="a file that keeps the token states between runs")
    parser.add_argument("--keep", type=float, default=0.95,
                        help="the share of the development split's should-hit pairs that reach the verifier (past the "
                             "threshold and the rules) it must keep")
    parser.add_argument("--threshold", type=float, default=0.70, help="the similarity threshold of the cache")
    parser.add_argument("--min-score", type=float, default=None,
                        help="the operating point, chosen beforehand (bench_semantic.py --stages sweeps it with the "
                             "threshold on the development sets); default: from --keep")
    parser.add_argument("--noise", type=float, default=NOISE,
                        help="Gaussian noise on the token states while training, as a share of their spread: int8 "
                             "kernels differ by CPU, and the verifier must not depend on the last digits")
    parser.add_argument("--no-export", action="store_true")
    args = parser.parse_args()

    import torch

    torch.manual_seed(SEED)
    torch.set_num_threads(2)
    rng = random.Random(SEED)
    splits = gather(rng)
    gpt = splits.pop("gptcache_origins", [])
    texts = sorted({t for rows in splits.values() for a, b, _, _ in rows for t in (a, b)} | {a for a, _, _, _ in gpt})
    print(f"{len(texts)} texts; pairs: " + ", ".join(f"{k} {len(v)}" for k, v in splits.items()), flush=True)
    states = token_states(texts, Path(args.states))
    # GPTCache's origins are distinct documentation statements: each one's nearest other origin is a negative.
    if gpt:
        origins = sorted({a for a, _, _, _ in gpt})
        vectors = np.stack([pooled(states[o]) for o in origins])
        sims = vectors @ vectors.T
        np.fill_diagonal(sims, -1)
        for i, origin in enumerate(origins):
            j = int(sims[i].argmax())
            splits["dev" if i % 5 == 0 else "train"].append((origin, origins[j], 0, "gptcache:nearest"))
    dim = next(iter(states.values())).shape[1]
    spread = float(np.std(np.concatenate([states[t].astype(np.float32) for t in texts[::50]])))
    model = build(torch, dim)
    train = splits["train"]
    positives = sum(y for _, _, y, _ in train)
    weight = torch.tensor((len(train) - positives) / max(positives, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=5e-2)
    steps = args.epochs * math.ceil(len(train) / 64)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-3, total_steps=steps)
    loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=weight)
    started = time.perf_counter()
    for epoch in range(args.epochs):
        model.train()
        total = 0.0
        for xa, xb, ma, mb, cos, y in batches(train, states, rng, 64, shuffle=True):
            if args.noise:
                xa = xa + torch.randn_like(xa) * spread * args.noise * ma[..., None]
                xb = xb + torch.randn_like(xb) * spread * args.noise * mb[..., None]
            optimizer.zero_grad()
            loss = loss_fn(model.pair(model.project(xa), model.project(xb), ma, mb, cos), y)
            loss.backward()
            optimizer.step()
            schedule.step()
            total += float(loss) * len(y)
        dev = splits["dev"]
        scores = predict(model, dev, states)
        labels = np.array([y for _, _, y, _ in dev])
        print(f"epoch {epoch + 1}: loss {total / len(train):.4f}, dev AUC {auc(scores, labels):.4f} "
              f"({time.perf_counter() - started:.0f} s)", flush=True)
    report: dict[str, dict] = {}
    dev = splits["dev"]
    dev_scores = predict(model, dev, states)
    dev_labels = np.array([y for _, _, y, _ in dev])
    reaching = residual(dev, states, args.threshold)
    threshold = operating_point(dev_scores[reaching], dev_labels[reaching], args.keep)
    if args.min_score is not None:
        threshold = args.min_score
    for name in [n for n in ("train", "dev", "holdout", "v3b") if n in splits]:
        rows = splits[name]
        scores = predict(model, rows, states)
        labels = np.array([y for _, _, y, _ in rows])
        reach = residual(rows, states, args.threshold)
        refused = (scores < threshold) & reach
        report[name] = {
            "pairs": len(rows), "auc": round(auc(scores, labels), 4),
            "auc_past_the_rules": round(auc(scores[reach], labels[reach]), 4),
            "should_hit_past_the_rules": int((reach & (labels == 1)).sum()),
            "should_hit_refused": int((refused & (labels == 1)).sum()),
            "traps_past_the_rules": int((reach & (labels == 0)).sum()),
            "traps_refused": int((refused & (labels == 0)).sum()),
        }
        print(name, report[name], flush=True)
    if args.no_export:
        return
    OUT.mkdir(parents=True, exist_ok=True)
    export(model, dim, OUT)
    digest = hashlib.sha256((OUT / "verifier_project.onnx").read_bytes() + (OUT / "verifier_pair.onnx").read_bytes())
    meta = {
        "id": digest.hexdigest()[:16], "features": D, "states": dim, "min_score": round(threshold, 4),
        "embedder": learned.ENCODER, "seed": SEED, "epochs": args.epochs, "noise": args.noise,
        "parameters": sum(p.numel() for p in model.parameters()), "trained_on": {k: len(v) for k, v in splits.items()},
        "report": report,
    }
    (OUT / "verifier_head.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(json.dumps(meta, indent=2))


if __name__ == "__main__":
    main()
