#!/usr/bin/env python3
"""Validate blind_chatter_v1.jsonl. Prints a report; exit code 1 on any error."""
import json
import os
import re
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "blind_chatter_v1.jsonl")

LABELS = {
    "chatty_trap_shared": "trap",
    "chatty_trap_oneside": "trap",
    "chatty_trap_detail_in_chatter": "trap",
    "chatty_should_hit_both": "should_hit",
    "chatty_should_hit_oneside": "should_hit",
    "conversation_chatty_should_hit": "should_hit",
    "conversation_chatty_trap": "trap",
}
MINIMUM = {
    "chatty_trap_shared": 120,
    "chatty_trap_oneside": 60,
    "chatty_trap_detail_in_chatter": 40,
    "chatty_should_hit_both": 100,
    "chatty_should_hit_oneside": 80,
    "conversation_chatty_should_hit": 40,
    "conversation_chatty_trap": 40,
}
CONV = {"conversation_chatty_should_hit", "conversation_chatty_trap"}
MAX_LEN = 220
TOTAL_MIN = 480

errors = []
warnings = []


def err(msg):
    errors.append(msg)


def norm_text(s):
    return re.sub(r"\s+", " ", s.strip().casefold())


def canon(side):
    """Exact canonical form of a side."""
    return json.dumps(side, ensure_ascii=False, sort_keys=True)


def norm_side(side):
    """Normalised form (case/whitespace-insensitive) of a side."""
    if isinstance(side, str):
        return norm_text(side)
    return json.dumps([[m["role"], norm_text(m["content"])] for m in side], ensure_ascii=False)


def check_text(rid, where, s):
    if not isinstance(s, str):
        err("%s %s: not a string" % (rid, where))
        return
    if not s.strip():
        err("%s %s: empty" % (rid, where))
    if s != s.strip():
        err("%s %s: leading/trailing whitespace" % (rid, where))
    if len(s) >= MAX_LEN:
        err("%s %s: length %d >= %d" % (rid, where, len(s), MAX_LEN))


def check_conv(rid, where, side):
    if not isinstance(side, list):
        err("%s %s: conversation side is not a list" % (rid, where))
        return False
    if not 3 <= len(side) <= 5:
        err("%s %s: %d messages (need 3-5)" % (rid, where, len(side)))
    ok = True
    for i, m in enumerate(side):
        if not isinstance(m, dict) or set(m.keys()) != {"role", "content"}:
            err("%s %s[%d]: message must have exactly role, content" % (rid, where, i))
            ok = False
            continue
        if m["role"] not in ("user", "assistant"):
            err("%s %s[%d]: bad role %r" % (rid, where, i, m["role"]))
        check_text(rid, "%s[%d].content" % (where, i), m["content"])
        expected = "user" if i % 2 == 0 else "assistant"
        if m["role"] != expected:
            err("%s %s[%d]: roles must alternate starting with user" % (rid, where, i))
    if ok and side and side[-1].get("role") != "user":
        err("%s %s: must end with a user message" % (rid, where))
    return ok


def common_affix_ratio(x, y):
    """(common prefix + common suffix) / len(shorter), on characters."""
    p = 0
    while p < min(len(x), len(y)) and x[p] == y[p]:
        p += 1
    s = 0
    while s < min(len(x), len(y)) - p and x[-1 - s] == y[-1 - s]:
        s += 1
    return (p + s) / max(1, min(len(x), len(y)))


def main():
    records = []
    try:
        with open(PATH, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError as e:
        print("ERROR cannot read %s: %s" % (PATH, e))
        return 1
    if lines and lines[-1] == "":
        lines = lines[:-1]
    for ln, line in enumerate(lines, 1):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            err("line %d: invalid JSON: %s" % (ln, e))
            continue
        if not isinstance(rec, dict):
            err("line %d: not an object" % ln)
            continue
        if set(rec.keys()) != {"id", "category", "label", "a", "b"}:
            err("line %d: fields %s != id,category,label,a,b" % (ln, sorted(rec.keys())))
            continue
        records.append(rec)

    # ids
    ids = [r["id"] for r in records]
    for i, rid in enumerate(ids):
        if not isinstance(rid, str) or not re.fullmatch(r"bc1-[1-9][0-9]*", rid):
            err("bad id %r" % (rid,))
    dup_ids = [k for k, v in Counter(ids).items() if v > 1]
    if dup_ids:
        err("duplicate ids: %s" % dup_ids[:10])
    if ids != ["bc1-%d" % (i + 1) for i in range(len(ids))]:
        warnings.append("ids are not sequential bc1-1..bc1-%d" % len(ids))

    counts = Counter()
    label_counts = Counter()
    side_owner = {}
    norm_side_owner = {}
    pair_seen = {}
    affix_low = []
    conv_trap_diffs = Counter()
    conv_hit_same_last_len = 0

    for r in records:
        rid, cat, lab, a, b = r["id"], r["category"], r["label"], r["a"], r["b"]
        if cat not in LABELS:
            err("%s: unknown category %r" % (rid, cat))
            continue
        if lab != LABELS[cat]:
            err("%s: label %r does not match category %s (%s)" % (rid, lab, cat, LABELS[cat]))
        counts[cat] += 1
        label_counts[lab] += 1

        if cat in CONV:
            okay = check_conv(rid, "a", a) and check_conv(rid, "b", b)
            if okay and cat == "conversation_chatty_trap":
                if len(a) != len(b):
                    warnings.append("%s: trap conversations have different lengths" % rid)
                else:
                    nd = sum(1 for x, y in zip(a, b) if x != y)
                    conv_trap_diffs[nd] += 1
                    if nd != 1:
                        warnings.append("%s: %d messages differ (expected 1)" % (rid, nd))
        else:
            check_text(rid, "a", a)
            check_text(rid, "b", b)
            if isinstance(a, str) and isinstance(b, str) and cat == "chatty_trap_detail_in_chatter":
                ratio = common_affix_ratio(a, b)
                if ratio < 0.6:
                    affix_low.append((rid, round(ratio, 2)))

        if canon(a) == canon(b):
            err("%s: a and b are identical" % rid)
        elif norm_side(a) == norm_side(b):
            err("%s: a and b identical up to case/whitespace" % rid)

        for where, side in (("a", a), ("b", b)):
            c = canon(side)
            if c in side_owner:
                err("%s.%s: side reused (also %s)" % (rid, where, side_owner[c]))
            else:
                side_owner[c] = "%s.%s" % (rid, where)
            n = norm_side(side)
            if n in norm_side_owner:
                err("%s.%s: side reused up to case/whitespace (also %s)" % (rid, where, norm_side_owner[n]))
            else:
                norm_side_owner[n] = "%s.%s" % (rid, where)

        key = tuple(sorted([norm_side(a), norm_side(b)]))
        if key in pair_seen:
            err("%s: duplicate pair (also %s)" % (rid, pair_seen[key]))
        else:
            pair_seen[key] = rid

    for cat, m in MINIMUM.items():
        if counts[cat] < m:
            err("category %s has %d pairs, minimum %d" % (cat, counts[cat], m))
    if len(records) < TOTAL_MIN:
        err("total %d pairs < %d" % (len(records), TOTAL_MIN))
    for rid, ratio in affix_low:
        warnings.append("%s: detail_in_chatter sides share little text (affix ratio %.2f)" % (rid, ratio))

    # longest strings, for information
    longest = 0
    for r in records:
        for side in (r["a"], r["b"]):
            if isinstance(side, str):
                longest = max(longest, len(side))
            elif isinstance(side, list):
                for m in side:
                    if isinstance(m, dict) and isinstance(m.get("content"), str):
                        longest = max(longest, len(m["content"]))

    print("file: %s" % PATH)
    print("records: %d" % len(records))
    print()
    print("%-32s %-10s %6s %6s" % ("category", "label", "count", "min"))
    for cat in MINIMUM:
        print("%-32s %-10s %6d %6d" % (cat, LABELS[cat], counts[cat], MINIMUM[cat]))
    print()
    for lab in ("should_hit", "trap"):
        print("label %-10s %d" % (lab, label_counts[lab]))
    print()
    print("longest string/message: %d chars (limit < %d)" % (longest, MAX_LEN))
    print("distinct sides: %d (of %d)" % (len(side_owner), 2 * len(records)))
    print("conversation_chatty_trap: messages differing per pair: %s" % dict(sorted(conv_trap_diffs.items())))
    print()
    print("checks: JSON parses; exact fields; ids unique and well-formed; labels match categories;")
    print("        minimum counts; lengths < %d; conversation shape (3-5 msgs, alternating, ends user);" % MAX_LEN)
    print("        a != b (exact and case/space-normalised); no duplicate pair; no side reused (exact and normalised)")
    print()
    for w in warnings:
        print("WARNING " + w)
    for e in errors:
        print("ERROR " + e)
    print()
    print("RESULT: %s (%d errors, %d warnings)" % ("PASS" if not errors else "FAIL", len(errors), len(warnings)))
    return 0 if not errors else 1


if __name__ == "__main__":
    sys.exit(main())
