"""Train the semantic cache's cross-encoder verifier offline and export it to int8 ONNX.

A cross-encoder reads both requests in one input (``[CLS] stored [SEP] request [SEP]``), so every
word piece of one side attends to every word piece of the other from the first layer: it sees that
"except Jake" has no counterpart, that two names traded places, that "getUserId" is not
"getUserID", where a head over each side's own token states (``train_semantic_verifier.py``) sees
only two summaries that were computed apart. It starts from the packaged all-MiniLM-L6-v2 (its
first ``--layers`` layers; mean of the last layer's token states, then one linear unit) and is
fine-tuned as a binary classifier: does one plan answer both requests?

Data: the same sets as the token-state head (``train_semantic_verifier.gather``: the request
families' training split, the evaluation set's tuning half, the earlier held-out set and negatives,
GPTCache's paraphrases with each origin's nearest other origin as a negative, v3a, and rewordings
made by rule, of which ``--rule-pairs`` are drawn), plus the outside writers' new pairs in
``bench/data/semantic_train_v4/*.jsonl`` (same format as v3a) when present. Conversations are
given as the cache gives them to its verifiers: each side's key text (its user turns that say
something, then the request). Each pair is shown in either order. v3b is never trained on.

The operating point is chosen on the development split (the families' dev split, the evaluation
set's reporting half, a fifth of GPTCache's pairs): the probability that keeps ``--keep`` of its
should-hit pairs.

Reproducible: ``python bench/train_semantic_crossencoder.py`` (seeded; about 20 to 40 minutes on two
shared cores). Writes src/actioncache/semantic/data/verifier_cross.onnx (fused, int8 weights) and
its metadata beside it (verifier_cross.json: ``--out``'s name with ``.json``; never the default
verifier's verifier.json).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import train_semantic_verifier as head  # noqa: E402 - after the path insert

from actioncache.semantic import embedders_onnx  # noqa: E402
from actioncache.semantic.embedder_contract import local_model_path  # noqa: E402

OUT = ROOT / "src/actioncache/semantic/data"
V4 = Path(os.environ.get("ACTIONCACHE_V4") or ROOT / "bench/data/semantic_train_v4")
SEED = 30
MAX_TOKENS = 128  # both sides together; the cache's requests are short (v3a: 99% under 84 word pieces)
V3A_REPEAT = 2
V4_REPEAT = 1
# Chatter for the wrapped copies (``chatter_wrapped``): openers and closers people put around a
# request. Written for training only; the sets that measure it were written apart, by others.
_OPENERS = ("hey quick favor, ", "ok so ", "sorry to bother you again but ", "hi there! ", "yo, ",
            "morning! ", "real quick - ", "when you get a sec, ", "hey hey, can you ", "um so basically ",
            "hello! hope you're well. ", "ugh ok, ", "need a hand: ", "alright, next thing: ",
            "hiya, mind helping? ", "so I was wondering, could you ", "heyyy ", "good evening. ")
_CLOSERS = (" thanks a ton!", " thx!!", " ty", " appreciate it", " lol", " if that's ok", " no rush.",
            ". cheers", " please and thank you", " :)", "... thanks in advance", ", you're the best",
            " asap pls", ". much obliged!", " (sorry, long day)", ", thank you so much")


def v4_rows() -> list[tuple[str, str, int, str]]:
    rows: list[tuple[str, str, int, str]] = []
    for path in sorted(V4.glob("*.jsonl")) if V4.is_dir() else []:
        for p in head.jsonl(path):
            rows.append((head.key(p["a"]), head.key(p["b"]), int(p["label"] == "should_hit"), f"v4:{p['category']}"))
    return rows


def _wrapped(text: str, opener: str, closer: str) -> str:
    body = text.rstrip("?.! ")
    if opener and body[:1].isupper() and not body[:2].isupper():
        body = body[0].lower() + body[1:]
    return f"{opener}{body}{closer}"


def chatter_wrapped(rows: list[tuple[str, str, int, str]], rng: random.Random, count: int) -> list[tuple[str, str, int, str]]:
    """Copies of single-request pairs wrapped in chatter: a trap with the same chatter on both sides
    (shared small talk must not make two requests one), or on one side only; a should-hit with
    different chatter on each side, or on one. Without them the model learned that chatter belongs
    to should-hits (the rule-made rewordings wrap only those): "hey quick favor, ..." on both sides
    of a swapped-amounts trap moved its score from 0.005 to 0.98."""
    singles = [r for r in rows if "\n" not in r[0] and "\n" not in r[1]]
    out: list[tuple[str, str, int, str]] = []
    for a, b, label, source in rng.sample(singles, min(count, len(singles))):
        opener, closer = rng.choice(_OPENERS), rng.choice(_CLOSERS)
        if rng.random() < 0.3:
            opener, closer = (opener, "") if rng.random() < 0.5 else ("", closer)
        if label == 0 and rng.random() < 0.5:
            out.append((_wrapped(a, opener, closer), _wrapped(b, opener, closer), 0, f"chatter-shared:{source}"))
        elif label == 0 or rng.random() < 0.5:
            out.append((a, _wrapped(b, opener, closer), label, f"chatter-one:{source}"))
        else:
            other = (rng.choice(_OPENERS), rng.choice(_CLOSERS))
            out.append((_wrapped(a, opener, closer), _wrapped(b, *other), label, f"chatter-both:{source}"))
    return out


def training_rows(rng: random.Random, rule_pairs: int, chatter_pairs: int = 0) -> tuple[list, list, dict]:
    splits = head.gather(rng)
    gpt = splits.pop("gptcache_origins", [])
    splits.pop("v3b", None)  # never trained on, nor used to choose anything here
    train: list[tuple[str, str, int, str]] = []
    ruled = [r for r in splits["train"] if r[3].startswith("rule:")]
    seen_v3a: set[tuple[str, str]] = set()
    for r in splits["train"]:
        if r[3].startswith("rule:"):
            continue
        if r[3].startswith("v3a:"):  # gather repeats v3a; here it is repeated V3A_REPEAT times
            if (r[0], r[1]) in seen_v3a:
                continue
            seen_v3a.add((r[0], r[1]))
            train += [r] * V3A_REPEAT
            continue
        train.append(r)
    train += rng.sample(ruled, min(rule_pairs, len(ruled)))
    for r in v4_rows():
        train += [r] * V4_REPEAT
    train += chatter_wrapped(train, rng, chatter_pairs)
    dev = list(splits["dev"])
    if gpt:  # each GPTCache origin's nearest other origin (by the default embedder): a negative
        from actioncache.semantic.embedders_onnx import OnnxEmbedder

        origins = sorted({a for a, _, _, _ in gpt})
        vectors = OnnxEmbedder(precision="int8", threads=1).embed(origins)
        sims = vectors @ vectors.T
        np.fill_diagonal(sims, -1)
        for i, origin in enumerate(origins):
            row = (origin, origins[int(sims[i].argmax())], 0, "gptcache:nearest")
            (dev if i % 5 == 0 else train).append(row)
    counts = {"train": len(train), "dev": len(dev), "holdout": len(splits["holdout"]),
              "v4": sum(1 for r in train if r[3].startswith("v4:")) // V4_REPEAT,
              "v3a": len(seen_v3a), "chatter": sum(1 for r in train if r[3].startswith("chatter-"))}
    return train, dev, {"holdout": splits["holdout"], "counts": counts}


def build(torch, layers: int):
    from transformers import AutoModel

    class Cross(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = AutoModel.from_pretrained(local_model_path(), attn_implementation="eager")
            self.encoder.encoder.layer = self.encoder.encoder.layer[:layers]
            self.encoder.config.num_hidden_layers = layers
            self.out = torch.nn.Linear(self.encoder.config.hidden_size, 1)

        def forward(self, input_ids, attention_mask, token_type_ids):
            states = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                  token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(states.dtype)
            pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            return self.out(pooled).squeeze(-1)

    return Cross()


def tokenizer():
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(local_model_path()) / "tokenizer.json"))
    tok.enable_truncation(MAX_TOKENS, strategy="longest_first")
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


def batches(rows, tok, rng: random.Random, size: int, shuffle: bool):
    import torch

    order = list(range(len(rows)))
    if shuffle:
        rng.shuffle(order)
    for start in range(0, len(order), size):
        chunk = [rows[i] for i in order[start:start + size]]
        if shuffle:  # either order: the stored side may be either one
            chunk = [(b, a, y, s) if rng.random() < 0.5 else (a, b, y, s) for a, b, y, s in chunk]
        enc = tok.encode_batch([(a, b) for a, b, _, _ in chunk])
        ids = torch.tensor([e.ids for e in enc])
        mask = torch.tensor([e.attention_mask for e in enc])
        types = torch.tensor([e.type_ids for e in enc])
        yield ids, mask, types, torch.tensor([float(r[2]) for r in chunk])


def predict(model, rows, tok) -> np.ndarray:
    import torch

    model.eval()
    out = []
    with torch.no_grad():
        for ids, mask, types, _ in batches(rows, tok, random.Random(0), 64, shuffle=False):
            out.append(torch.sigmoid(model(ids, mask, types)).numpy())
    return np.concatenate(out) if out else np.zeros(0)


def export(model, target: Path) -> None:
    """The model as ONNX (probability out), fused by ONNX Runtime's transformer optimizer, int8 weights."""
    import torch

    class Probability(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return torch.sigmoid(self.model(input_ids, attention_mask, token_type_ids))

    model.eval()
    sample = torch.tensor([[101, 7592, 102, 7592, 102]])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with tempfile.TemporaryDirectory() as tmp:
        raw, fused = Path(tmp) / "raw.onnx", Path(tmp) / "fused.onnx"
        with torch.no_grad():
            torch.onnx.export(Probability(), (sample, torch.ones_like(sample), torch.tensor([[0, 0, 0, 1, 1]])), str(raw),
                              input_names=names, output_names=["probability"], opset_version=17, dynamo=False,
                              dynamic_axes={**{n: {0: "batch", 1: "tokens"} for n in names}, "probability": {0: "batch"}})
        fuse(raw, fused)
        quantize(fused, target)


def fuse(source: Path, target: Path) -> None:
    """ONNX Runtime's transformer fusions (as the embedder's), but the embedding lookup kept apart
    from its layer normalization, so that the word-piece table stays a Gather that int8 can shrink."""
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    options = FusionOptions("bert")
    options.enable_embed_layer_norm = False
    with embedders_onnx._quiet_root_logger():
        optimize_model(str(source), model_type="bert", num_heads=12, hidden_size=384,
                       optimization_options=options).save_model_to_file(str(target))


def quantize(source: Path, target: Path) -> None:
    """int8 weights for the products and attention (as the embedder, on 7 bits: the same scores on
    every x86 CPU, bench/requantize_7bit.py) and for the word-piece table (the Gather: 30,522 x 384
    floats would be most of the file)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(source, target, per_channel=True, reduce_range=True, weight_type=QuantType.QInt8,
                     op_types_to_quantize=["MatMul", "Attention", "Gather"],
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=6, help="how many of the model's 6 layers to keep")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--rule-pairs", type=int, default=4000, help="how many of the rewordings made by rule to train on")
    parser.add_argument("--chatter-pairs", type=int, default=5000,
                        help="how many training pairs to copy wrapped in chatter (chatter_wrapped); 0 for none")
    parser.add_argument("--keep", type=float, default=0.95,
                        help="the share of the development split's should-hit pairs the operating point keeps")
    parser.add_argument("--checkpoint", default=None, help="save (or, with --export-only, load) the torch weights here")
    parser.add_argument("--export-only", action="store_true")
    parser.add_argument("--out", default=str(OUT / "verifier_cross.onnx"))
    args = parser.parse_args()

    import torch

    torch.manual_seed(SEED)
    torch.set_num_threads(2)
    rng = random.Random(SEED)
    train, dev, extra = training_rows(rng, args.rule_pairs, args.chatter_pairs)
    print(f"pairs: train {len(train)}, dev {len(dev)}; {extra['counts']}", flush=True)
    tok = tokenizer()
    model = build(torch, args.layers)
    if args.export_only:
        model.load_state_dict(torch.load(args.checkpoint))
    else:
        positives = sum(y for _, _, y, _ in train)
        loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor((len(train) - positives) / max(positives, 1)))
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
        steps = args.epochs * math.ceil(len(train) / args.batch)
        schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=steps, pct_start=0.1,
                                                       anneal_strategy="linear")
        started = time.perf_counter()
        step = 0
        for epoch in range(args.epochs):
            model.train()
            total = 0.0
            for ids, mask, types, y in batches(train, tok, rng, args.batch, shuffle=True):
                optimizer.zero_grad()
                loss = loss_fn(model(ids, mask, types), y)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                schedule.step()
                total += float(loss.detach()) * len(y)
                step += 1
                if step % 50 == 0:
                    print(f"  step {step}/{steps} loss {float(loss):.4f} ({time.perf_counter() - started:.0f} s)", flush=True)
            scores = predict(model, dev, tok)
            labels = np.array([y for _, _, y, _ in dev])
            print(f"epoch {epoch + 1}: loss {total / len(train):.4f}, dev AUC {head.auc(scores, labels):.4f} "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
        if args.checkpoint:
            torch.save(model.state_dict(), args.checkpoint)
    report = {}
    dev_scores = predict(model, dev, tok)
    dev_labels = np.array([y for _, _, y, _ in dev])
    threshold = head.operating_point(dev_scores, dev_labels, args.keep)
    for name, rows in (("dev", dev), ("holdout", extra["holdout"])):
        scores = predict(model, rows, tok)
        labels = np.array([y for _, _, y, _ in rows])
        report[name] = {"pairs": len(rows), "auc": round(head.auc(scores, labels), 4),
                        "should_hit_refused": int(((scores < threshold) & (labels == 1)).sum()),
                        "should_hits": int((labels == 1).sum()),
                        "traps_refused": int(((scores < threshold) & (labels == 0)).sum()),
                        "traps": int((labels == 0).sum())}
        print(name, report[name], flush=True)
    target = Path(args.out)
    export(model, target)
    meta = {
        "kind": "cross-encoder", "id": hashlib.sha256(target.read_bytes()).hexdigest()[:16], "file": target.name,
        "min_score": round(threshold, 4), "max_tokens": MAX_TOKENS, "base": "all-MiniLM-L6-v2", "layers": args.layers,
        "seed": SEED, "epochs": args.epochs, "batch": args.batch, "lr": args.lr, "rule_pairs": args.rule_pairs,
        "chatter_pairs": args.chatter_pairs,
        "parameters": sum(p.numel() for p in model.parameters()), "bytes": target.stat().st_size,
        "trained_on": extra["counts"], "report": report,
    }
    target.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")
    print(json.dumps(meta, indent=2))


if __name__ == "__main__":
    main()
