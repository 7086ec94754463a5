"""Build src/actioncache/semantic/data/lexicon.json.gz from the WordNet 3.0 database files.

The semantic cache's contrast checks need four facts about English words, all taken from
WordNet (Princeton University, WordNet 3.0 licence: free use and redistribution with the notice
kept, see the ``licence`` field of the output):

* ``pos``: every single-word lemma and its parts of speech (``n v a r``) -- the vocabulary;
  a word outside it (and not a function word) is treated as a name or identifier;
* ``proper``: lemmas that WordNet only ever spells capitalized (Paris, Monday, Netflix-like names);
* ``antonyms``: pairs of opposite words -- WordNet's antonym pointers, widened to every lemma of
  the two synsets, to the satellite adjectives of a head adjective ("cheap" under "inexpensive"),
  and for verbs one hop to the neighbours of one side: its verb-group synsets, and for a pointer
  that names a multi-word verb, the other small synsets holding that verb ("add" opposes
  "take_away", which "remove, take, withdraw" share);
* ``synsets``: groups of single-word lemmas that share a meaning (a synonym is no contrast);
* ``base``: irregular inflections to their base forms (WordNet's ``*.exc`` files).

A second file, ``data/kinds.json.gz`` (:func:`kinds`), groups words by WordNet's lexicographer files
(its own semantic classes), for the check that tells a stated condition from an aside:

* ``feeling``: adjectives that name a feeling (one of their first senses is, or its head adjective
  is, derived from a noun of feelings or a verb of emotion: "nervous", "worried", "terrified") and
  verbs whose first senses are of emotion ("stress", "scare", "excite": their participles are feelings);
* ``mental``: verbs whose first sense thinks, perceives, says or feels ("think", "wonder", "hope");
* ``happening``: nouns whose first sense is an act, an event or a time ("project", "trip",
  "deadline"): what one does or has to do, not what one is or owns;
* ``message``: nouns whose first sense is a communication ("question", "interview", "file", "account");
* ``holding``: verbs one of whose first senses uses or is ("use", "live", "run" as a program
  runs): their progressive states what one has ("i'm using python 2"), not what one does;
* ``person``: nouns whose first sense is a person ("tenant", "landlord", "manager", "intern"): a
  relation to the speaker ("my tenant" / "my landlord") names who plays which part;
* ``person_kinds``: for each such noun, the classes above its first two senses (a hypernym and
  its depth, up to three hops) that few person nouns share (at most ``NARROW_KIND``): two nouns
  sharing one are the same kind of person said twice ("boss" / "manager": a leader two or three
  hops up), not the two parties of a relation ("tenant" / "landlord" share none); with its own senses
  that are persons (``<offset>@0``) and every class above them (``<offset>@*``), so that a noun said for one
  of its kinds is the same person ("my kid" / "my daughter").

Run once when WordNet changes (the output is committed; nothing reads WordNet at run time):
    apt-get install wordnet-base      # Debian's package of the WordNet 3.0 database
    python scripts/build_wordnet_lexicon.py [/usr/share/wordnet]
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import defaultdict
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src/actioncache/semantic/data/lexicon.json.gz"
KINDS_OUT = OUT.with_name("kinds.json.gz")
# WordNet's lexicographer files, in the order of their numbers (lexnames(5WN)).
LEXNAMES = ["adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact", "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling", "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object", "noun.person", "noun.phenomenon", "noun.plant", "noun.possession", "noun.process", "noun.quantity", "noun.relation", "noun.shape", "noun.state", "noun.substance", "noun.time", "verb.body", "verb.change", "verb.cognition", "verb.communication", "verb.competition", "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion", "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather", "adj.ppl"]
POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
LICENCE = (
    "WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved. Permission to use, copy, "
    "modify and distribute this software and database and its documentation for any purpose and without "
    "fee or royalty is hereby granted, provided that you agree to comply with the following copyright notice "
    "and statements, including the disclaimer, and that the same appear on ALL copies of the software, "
    "database and documentation, including modifications that you make for internal use or for distribution. "
    "THIS SOFTWARE AND DATABASE IS PROVIDED \"AS IS\" AND PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS OR "
    "WARRANTIES, EXPRESS OR IMPLIED. The name of Princeton University or Princeton may not be used in "
    "advertising or publicity pertaining to distribution of the software and/or database."
)


def parse(root: Path):
    synsets: dict[tuple[str, int], dict] = {}
    for pos, name in POS_FILES.items():
        for line in (root / f"data.{name}").read_text(encoding="latin-1").splitlines():
            if line.startswith("  "):
                continue  # the licence header
            fields = line.split(" | ")[0].split()
            offset, lexfile, ss_type = int(fields[0]), int(fields[1]), fields[2]
            count = int(fields[3], 16)
            words = [fields[4 + 2 * i] for i in range(count)]
            i = 4 + 2 * count
            n_ptr = int(fields[i])
            pointers = []
            for j in range(n_ptr):
                symbol, target, tpos, st = fields[i + 1 + 4 * j: i + 5 + 4 * j]
                pointers.append((symbol, int(target), "a" if tpos == "s" else tpos, int(st[:2], 16), int(st[2:], 16)))
            synsets[(pos, offset)] = {"type": ss_type, "words": words, "pointers": pointers, "lex": LEXNAMES[lexfile]}
    return synsets


def clean(word: str) -> str:
    # Adjective markers like "(a)" or "(p)" follow some adjectives.
    return word.split("(")[0]


def main(root: Path) -> None:
    synsets = parse(root)
    pos_of: dict[str, set[str]] = defaultdict(set)
    spellings: dict[str, set[bool]] = defaultdict(set)
    for (pos, _), syn in synsets.items():
        for word in syn["words"]:
            word = clean(word)
            if "_" in word or "-" in word and len(word) > 20:
                continue
            pos_of[word.lower()].add(pos)
            spellings[word.lower()].add(word[:1].isupper())
    proper = sorted(w for w, caps in spellings.items() if caps == {True} and w.isalpha())

    def single(words: list[str]) -> list[str]:
        return [clean(w).lower() for w in words if "_" not in w]

    antonyms: set[tuple[str, str]] = set()
    holders: dict[str, list[tuple[str, int]]] = defaultdict(list)  # a multi-word verb -> its synsets
    for key, syn in synsets.items():
        if key[0] == "v":
            for word in syn["words"]:
                if "_" in word:
                    holders[word.lower()].append(key)

    def verb_neighbours(key: tuple[str, int], named: str) -> set[str]:
        """Single words of the small synsets a verb synset leads to by a verb-group pointer ($), and,
        when the antonym pointer names a multi-word verb, of the small synsets that also hold that
        verb ("add" opposes "take_away"; "remove, take, take_away, withdraw" holds it)."""
        near = [(tpos, target) for symbol, target, tpos, _, _ in synsets[key]["pointers"]
                if symbol == "$" and tpos == "v"]
        if "_" in named:
            near += holders.get(named.lower(), [])
        out: set[str] = set()
        for other in near:
            words = single(synsets[other]["words"])
            if other != key and len(words) <= 4:
                out |= set(words)
        return out

    heads_of_satellites: dict[tuple[str, int], list[tuple[str, int]]] = defaultdict(list)
    for key, syn in synsets.items():
        if key[0] == "a" and syn["type"] == "s":
            for symbol, target, tpos, _, _ in syn["pointers"]:
                if symbol == "&":
                    heads_of_satellites[(tpos, target)].append(key)
    for key, syn in synsets.items():
        for symbol, target, tpos, source_n, target_n in syn["pointers"]:
            if symbol != "!":
                continue
            other = (tpos, target)
            own_words, other_words = single(syn["words"]), single(synsets[other]["words"])
            # The two words the pointer joins, then their small synsets' other lemmas.
            left = {own_words[source_n - 1]} if source_n and source_n <= len(own_words) and "_" not in syn["words"][source_n - 1] else set()
            right = {other_words[target_n - 1]} if target_n and target_n <= len(other_words) and "_" not in synsets[other]["words"][target_n - 1] else set()
            if len(own_words) <= 4:
                left |= set(own_words)
            if len(other_words) <= 4:
                right |= set(other_words)
            pairs = [(a, b) for a in left for b in right]
            if key[0] == "a":  # a satellite opposes the other head, never the other head's satellites
                for sat in heads_of_satellites.get(key, []):
                    pairs += [(a, b) for a in single(synsets[sat]["words"]) for b in right]
            if key[0] == "v":  # a verb's close neighbours oppose what it opposes (one hop, one side)
                named = syn["words"][source_n - 1] if 0 < source_n <= len(syn["words"]) else ""
                other_named = synsets[other]["words"][target_n - 1] if 0 < target_n <= len(synsets[other]["words"]) else ""
                pairs += [(a, b) for a in verb_neighbours(key, named) for b in right]
                pairs += [(a, b) for a in verb_neighbours(other, other_named) for b in left]
            for a, b in pairs:
                if a != b and a.isalpha() and b.isalpha():
                    antonyms.add(tuple(sorted((a, b))))
    # A pair that is also a synonym pair somewhere (one synset holds both) is no contrast.
    together: set[tuple[str, str]] = set()
    for syn in synsets.values():
        words = sorted(set(single(syn["words"])))
        for i, a in enumerate(words):
            for b in words[i + 1:]:
                together.add((a, b))
    antonyms -= together

    base: dict[str, list[str]] = defaultdict(list)
    for name in POS_FILES.values():
        for line in (root / f"{name}.exc").read_text(encoding="latin-1").splitlines():
            parts = line.split()
            if len(parts) >= 2 and "_" not in parts[0]:
                for b in parts[1:]:
                    if b not in base[parts[0]]:
                        base[parts[0]].append(b)
    synonyms = sorted({tuple(sorted(set(single(syn["words"])))) for syn in synsets.values()
                       if len(set(single(syn["words"]))) >= 2})
    lexicon = {
        "source": "WordNet 3.0 (Princeton University), built by scripts/build_wordnet_lexicon.py",
        "licence": LICENCE,
        "pos": {w: "".join(sorted(p)) for w, p in sorted(pos_of.items())},
        "proper": proper,
        "antonyms": sorted(antonyms),
        "base": dict(sorted(base.items())),
        "synsets": [list(group) for group in synonyms],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(OUT, "wt", encoding="utf-8", compresslevel=9) as fh:
        json.dump(lexicon, fh, separators=(",", ":"))
    print(f"{OUT}: {len(pos_of)} words, {len(proper)} proper, {len(antonyms)} antonym pairs, {len(base)} inflections")


def senses(root: Path) -> dict[tuple[str, str], list[tuple[str, int]]]:
    """(word, pos) -> its synsets, most frequent sense first (WordNet's ``index.*`` files)."""
    out: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for pos, name in POS_FILES.items():
        for line in (root / f"index.{name}").read_text(encoding="latin-1").splitlines():
            if line.startswith("  "):
                continue
            fields = line.split()
            n_ptr = int(fields[3])
            out[(fields[0], pos)] = [(pos, int(o)) for o in fields[4 + n_ptr + 2:]]
    return out


NARROW_KIND = 300  # a class above more person nouns than this ("person", "worker") says nothing of which kind
FIRST_SENSES = 3  # a word's kind is that of its commonest senses, not of a rare one
FEELINGS = ("noun.feeling", "verb.emotion")


def kinds(root: Path, synsets: dict[tuple[str, int], dict] | None = None) -> dict[str, list[str]]:
    synsets = synsets or parse(root)
    index = senses(root)

    def lex(key: tuple[str, int]) -> str:
        return str(synsets[key]["lex"])

    def feels(key: tuple[str, int], depth: int = 0) -> bool:
        """The adjective synset is derived from (or names the attribute of) a feeling or an emotion,
        or its head adjective is."""
        for symbol, target, tpos, _, _ in synsets[key]["pointers"]:
            other = (tpos, target)
            if symbol in ("+", "=", "\\", "<") and lex(other) in FEELINGS:
                return True
            if symbol == "&" and depth == 0 and feels(other, 1):
                return True
        return False

    feeling, mental, happening, message, holding, person = set(), set(), set(), set(), set(), set()
    for (word, pos), keys in index.items():
        if "_" in word or not word.isalpha():
            continue
        first = keys[:FIRST_SENSES]
        if pos == "a" and any(feels(k) for k in first) or pos == "v" and any(lex(k) == "verb.emotion" for k in first):
            feeling.add(word)
        if pos == "v" and lex(keys[0]) in ("verb.cognition", "verb.perception", "verb.communication", "verb.emotion"):
            mental.add(word)
        if pos == "n" and lex(keys[0]) in ("noun.act", "noun.event", "noun.time"):
            happening.add(word)
        if pos == "n" and lex(keys[0]) == "noun.communication":
            message.add(word)
        if pos == "n" and lex(keys[0]) == "noun.person":
            person.add(word)
        if pos == "v" and any(lex(k) in ("verb.consumption", "verb.stative") for k in first):
            holding.add(word)
    def above(key: tuple[str, int]) -> set[str]:
        out, frontier = set(), [key]
        for depth in range(1, 4):
            frontier = [(tpos, target) for k in frontier for symbol, target, tpos, _, _ in synsets[k]["pointers"]
                        if symbol in ("@", "@i")]
            out |= {f"{target}@{depth}" for _, target in frontier}
        return out

    classes = {w: set().union(*(above(k) for k in index[(w, "n")][:2])) for w in person}
    count: dict[str, int] = defaultdict(int)
    for found in classes.values():
        for c in found:
            count[c] += 1
    # Its own senses that are persons at depth 0, and every class above its first two as "<offset>@*" (for a noun said for one of
    # its kinds: "my kid" / "my daughter", "my dad" / "my father").
    person_kinds = {w: sorted({c for c in found if count[c] <= NARROW_KIND}
                              | {f"{k[1]}@0" for k in index[(w, "n")] if lex(k) == "noun.person"}
                              | {c.split("@")[0] + "@*" for c in found})
                    for w, found in sorted(classes.items())}
    return {"feeling": sorted(feeling), "mental": sorted(mental), "happening": sorted(happening), "message": sorted(message),
            "holding": sorted(holding), "person": sorted(person),
            "person_kinds": {w: c for w, c in person_kinds.items() if c}}


def write_kinds(root: Path, synsets: dict[tuple[str, int], dict] | None = None) -> None:
    table = {"source": "WordNet 3.0 (Princeton University), built by scripts/build_wordnet_lexicon.py",
             "licence": LICENCE, **kinds(root, synsets)}
    with gzip.GzipFile(KINDS_OUT, "wb", compresslevel=9, mtime=0) as fh:
        fh.write(json.dumps(table, separators=(",", ":")).encode("utf-8"))
    print(f"{KINDS_OUT}: " + ", ".join(f"{len(table[k])} {k}" for k in ("feeling", "mental", "happening", "message", "holding", "person")))


if __name__ == "__main__":
    wordnet = Path(sys.argv[1] if len(sys.argv) > 1 else "/usr/share/wordnet")
    main(wordnet)
    write_kinds(wordnet)
