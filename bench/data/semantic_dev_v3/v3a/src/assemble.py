import json, random, os, sys
from collections import Counter
SRC = os.path.dirname(os.path.abspath(__file__))
SINGLE = {"paraphrase":"should_hit","chatty":"should_hit","reorder":"should_hit",
          "negation":"trap","entity_swap":"trap","role_swap":"trap","quantity_scope":"trap",
          "complementary":"trap","speech_act":"trap","code_exact":"trap"}
CONV = {"conversation_should_hit":("should_hit",["conv_hit1.txt","conv_hit2.txt","conv_hit3.txt"],90),
        "conversation_trap":("trap",["conv_trap1.txt","conv_trap2.txt","conv_trap3.txt"],90)}
recs = []
for cat, lab in SINGLE.items():
    for ln in open(os.path.join(SRC, cat + ".txt"), encoding="utf-8"):
        ln = ln.rstrip("\n")
        if not ln.strip(): continue
        a, b = ln.split(" ||| ")
        recs.append({"category": cat, "label": lab, "a": a.strip(), "b": b.strip()})
def to_msgs(lines):
    n = len(lines); out = []
    for i, t in enumerate(lines):
        role = "user" if (n - 1 - i) % 2 == 0 else "assistant"
        out.append({"role": role, "content": t})
    return out
for cat, (lab, files, want) in CONV.items():
    got = []
    for f in files:
        for block in open(os.path.join(SRC, f), encoding="utf-8").read().strip().split("\n\n"):
            A = [l[3:].strip() for l in block.splitlines() if l.startswith("a: ")]
            B = [l[3:].strip() for l in block.splitlines() if l.startswith("b: ")]
            assert len(A) + len(B) == len(block.splitlines()), block
            got.append({"category": cat, "label": lab, "a": to_msgs(A), "b": to_msgs(B)})
    recs.extend(got[:want])
random.Random(20261128).shuffle(recs)
out = []
for i, r in enumerate(recs, 1):
    out.append({"id": f"v3a-{i}", **r})
# validate
cats = {**SINGLE, **{k: v[0] for k, v in CONV.items()}}
ids, seen = set(), set()
for r in out:
    assert r["id"] not in ids; ids.add(r["id"])
    assert cats[r["category"]] == r["label"]
    if r["category"].startswith("conversation"):
        for side in (r["a"], r["b"]):
            assert 2 <= len(side) <= 6, r
            assert side[-1]["role"] == "user"
            for x, y in zip(side, side[1:]): assert x["role"] != y["role"]
            assert all(m["content"] for m in side)
        assert r["a"] != r["b"]
    else:
        assert isinstance(r["a"], str) and isinstance(r["b"], str) and r["a"] and r["b"]
        assert r["a"] != r["b"], r
    key = json.dumps(sorted([json.dumps(r["a"]), json.dumps(r["b"])]))
    assert key not in seen, r; seen.add(key)
p = os.path.join(os.path.dirname(SRC), "dev_v3a.jsonl")
with open(p, "w", encoding="utf-8") as f:
    for r in out: f.write(json.dumps(r, ensure_ascii=False) + "\n")
# re-parse
rows = [json.loads(l) for l in open(p, encoding="utf-8")]
c = Counter((r["category"], r["label"]) for r in rows)
for k, v in c.items(): print(k, v)
print("total", len(rows))
