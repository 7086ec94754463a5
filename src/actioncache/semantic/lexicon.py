"""English word facts for the contrast checks, from the WordNet-derived file ``data/lexicon.json.gz``.

Loaded once, on the first contrast check (about 0.3 s; ~6 MB in memory). Everything is keyed by
lower-case words, so no check depends on how the user capitalised a request. The file is built
by ``scripts/build_wordnet_lexicon.py`` from WordNet 3.0; see its docstring for what each part is.
Beside it, ``data/kinds.json.gz`` (the same script) holds a few of WordNet's semantic classes
(feelings, verbs of thinking, acts and events...): :func:`feeling`, :func:`mental`, :func:`happening`.
"""

from __future__ import annotations

import gzip
import json
import threading
from functools import lru_cache
from importlib import resources
from typing import Any

_LOCK = threading.Lock()
_DATA: dict[str, Any] | None = None

# Closed-class words: never names, never content. Written from English grammar, not from any data set.
FUNCTION_WORDS = frozenset(["a", "an", "the", "this", "that", "these", "those", "my", "your", "his", "her", "its", "our", "their", "me", "you", "him", "us", "them", "i", "we", "he", "she", "it", "they", "myself", "yourself", "itself", "ourselves", "mine", "yours", "hers", "ours", "theirs", "who", "whom", "whose", "which", "what", "where", "when", "why", "how", "is", "are", "am", "was", "were", "be", "been", "being", "do", "does", "did", "doing", "done", "have", "has", "had", "having", "will", "would", "shall", "should", "can", "could", "may", "might", "must", "ought", "need", "to", "of", "in", "on", "at", "by", "for", "from", "with", "about", "into", "onto", "over", "under", "up", "down", "out", "off", "than", "as", "via", "per", "between", "among", "against", "through", "during", "before", "after", "above", "below", "near", "around", "across", "along", "and", "or", "but", "nor", "so", "yet", "if", "then", "else", "also", "too", "very", "just", "really", "please", "kindly", "thanks", "thank", "hi", "hey", "hello", "ok", "okay", "some", "any", "all", "every", "each", "no", "not", "none", "both", "either", "neither", "few", "many", "much", "more", "most", "less", "least", "several", "only", "there", "here", "there's", "it's", "what's", "that's", "let's", "let", "me", "s", "t", "d", "ll", "ve", "re", "m", "o", "get", "give", "tell", "show", "find", "make", "put", "go", "set", "check", "look", "see", "know", "want", "like", "would'd"])
# Closed-class words WordNet (open classes only) does not list, so that no check reads them as a name:
# subordinating conjunctions, prepositions, reflexive and indefinite pronouns of English grammar.
FUNCTION_WORDS = FUNCTION_WORDS | frozenset([
    "since", "although", "because", "until", "till", "unless", "whether", "whereas", "whereby", "wherein", "lest",
    "albeit", "upon", "without", "within", "beside", "toward", "towards", "unto", "amongst", "amid", "amidst",
    "versus", "whenever", "wherever", "whichever", "whoever", "whatever", "himself", "herself", "themselves",
    "yourselves", "oneself", "something", "anything", "anybody", "anyone", "somebody", "someone", "everybody",
    "everyone", "everything", "nothing", "nobody"])


# Everyday words WordNet 3.0 (2006) never listed, so every check read them as names ("fyi", "repo",
# "app", "signup"): a chattier or newer wording then "named" something the other side did not. Their
# parts of speech as WordNet would give them; the abbreviations of chat as adverbs (they colour a
# request). Product and program names (nginx, postgres, kubectl) are not here: they stay names.
_NEWER_WORDS = {
    **dict.fromkeys((
        "app", "repo", "config", "timeout", "admin", "dev", "regex", "codebase", "namespace", "signup", "login",
        "logout", "coworker", "timestamp", "whitespace", "onboarding", "inbox", "standup", "autoscaling", "autoscaler",
        "timezone", "username", "hotfix", "tarball", "screenshot", "autopay", "changelog", "bodyweight", "dataset",
        "smartphone", "backend", "frontend", "plugin", "emoji", "selfie", "hashtag", "playlist",
        "chatbot", "webhook", "endpoint", "runtime", "middleware", "lockfile", "linter", "microservice", "checkbox",
        "dropdown", "popup", "toolbar", "sidebar", "navbar", "homepage", "subfolder", "subdirectory", "filename",
        "hostname", "dataframe", "workspace", "uptime", "env", "prod", "bday", "tix", "pickleball", "keto",
        "startup", "passcode", "voicemail", "textbook", "website", "webpage", "offsite",
    ), "n"),
    **dict.fromkeys(("unsubscribe", "rebase", "autofill", "livestream", "timebox"), "v"),
    **dict.fromkeys(("refundable", "offline", "online", "onsite"), "a"),
    **dict.fromkeys((
        "lol", "lmao", "haha", "hehe", "fyi", "tbh", "imo", "imho", "btw", "omg", "ugh", "eek", "oof", "tho", "pls",
        "plz", "thx", "ty", "idk", "asap", "lmk", "rn", "ya", "yep", "yup", "nope", "gonna", "wanna", "gotta", "kinda",
        "sorta",
    ), "r"),
}


def _data() -> dict[str, Any]:
    global _DATA
    if _DATA is None:
        with _LOCK:
            if _DATA is None:
                raw = resources.files("actioncache.semantic").joinpath("data/lexicon.json.gz").read_bytes()
                loaded = json.loads(gzip.decompress(raw))
                kinds = json.loads(gzip.decompress(
                    resources.files("actioncache.semantic").joinpath("data/kinds.json.gz").read_bytes()))
                synonyms: dict[str, set[int]] = {}
                for index, group in enumerate(loaded["synsets"]):
                    for word in group:
                        synonyms.setdefault(word, set()).add(index)
                _DATA = {
                    "pos": {**_NEWER_WORDS, **loaded["pos"]},  # WordNet's own entry wins
                    "proper": frozenset(loaded["proper"]),
                    "antonyms": frozenset(tuple(pair) for pair in loaded["antonyms"]),
                    "base": loaded["base"],
                    "synonyms": synonyms,
                    # WordNet's semantic classes the checks ask about (``data/kinds.json.gz``, built by
                    # ``scripts/build_wordnet_lexicon.py``: see its docstring for each class).
                    "kinds": {k: frozenset(kinds[k]) for k in _KIND_POS},
                    "person_kinds": {w: frozenset(c) for w, c in kinds.get("person_kinds", {}).items()},
                }
    return _DATA


def load() -> None:
    """Load the lexicon now (a server may call this at start-up instead of on its first lookup)."""
    _data()


def pos(word: str) -> str:
    """WordNet parts of speech of ``word`` (``"nva"``...), ``""`` when WordNet does not know it."""
    found: str = _data()["pos"].get(word, "")
    return found


@lru_cache(maxsize=65536)
def known(word: str) -> bool:
    return word in FUNCTION_WORDS or bool(pos(word)) or bool(pos(lemma(word)))


def is_proper(word: str) -> bool:
    """WordNet only ever spells it capitalized: a place, a person, a weekday, a brand."""
    return word in _data()["proper"]


@lru_cache(maxsize=65536)
def lemmas(word: str) -> frozenset[str]:
    """Possible base forms of a lower-case word (itself included): "cheaper" -> {cheaper, cheap}."""
    data = _data()
    out = {word}
    out.update(data["base"].get(word, ()))
    vocab = data["pos"]
    for suffix, repl in (("ies", "y"), ("es", ""), ("s", ""), ("ied", "y"), ("ed", ""), ("ed", "e"), ("ing", ""),
                         ("ing", "e"), ("ier", "y"), ("iest", "y"), ("er", ""), ("er", "e"), ("est", ""), ("est", "e")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            stem = word[: len(word) - len(suffix)] + repl
            if stem in vocab:
                out.add(stem)
            # doubled consonant: "bigger" -> "big", "stopped" -> "stop"
            if len(stem) >= 3 and stem[-1] == stem[-2] and stem[:-1] in vocab and not repl:
                out.add(stem[:-1])
    return frozenset(out)


@lru_cache(maxsize=65536)
def lemma(word: str) -> str:
    """One base form: the shortest known one (good enough to compare two words), the first in
    alphabetical order among equally short ones: a set's order changes with the hash seed, and a
    check must answer the same in every process ("lost": "lose", not "lost" in one and "lose" in another)."""
    options = [w for w in lemmas(word) if w in _data()["pos"]]
    return min(options, key=lambda w: (len(w), w)) if options else word


@lru_cache(maxsize=65536)
def opposite(a: str, b: str) -> bool:
    """Some base form of ``a`` is a WordNet antonym of some base form of ``b``, or one negates the
    other by a prefix ("lock"/"unlock", "connect"/"disconnect", "arm"/"disarm"), or the two share
    a stem behind opposing prefixes ("encrypt"/"decrypt", "upload"/"download", "import"/"export"),
    or they are aspectual verbs of two phases ("pause"/"resume", "start"/"stop", "stop"/"finish")."""
    antonyms = _data()["antonyms"]
    for x in lemmas(a):
        for y in lemmas(b):
            if ((x, y) in antonyms or (y, x) in antonyms or _prefix_negation(x, y) or _prefix_negation(y, x)
                    or _prefix_swap(x, y)):
                return True
    pa, pb = phase(a), phase(b)
    return bool(pa and pb and pa != pb)


# The aspectual verbs of English, by the phase of an activity they name: its start, its start over,
# its going on, a break in it, its being cut off, its completion. Two of different phases on the
# same thing are two actions ("pause the backup" / "resume the backup", "stop" / "finish"); WordNet
# lists few of them as antonyms. A closed class of English grammar, not a list of test words.
_PHASES = {
    "start": ("begin", "start", "commence", "initiate"),
    "restart": ("restart", "recommence", "reinitiate"),
    "continue": ("continue", "resume", "proceed", "unpause"),
    "break": ("pause", "suspend", "interrupt"),
    "halt": ("stop", "halt", "cease", "quit", "discontinue", "terminate", "abort"),
    "complete": ("finish", "complete", "conclude"),
}
_PHASE_OF = {verb: name for name, verbs in _PHASES.items() for verb in verbs}


def phase(word: str) -> str:
    """The phase an aspectual verb names ("pause" -> "break", "resumed" -> "continue"), else ``""``."""
    for base in sorted(lemmas(word), key=len):
        if base in _PHASE_OF:
            return _PHASE_OF[base]
    return ""


_NEGATING_PREFIXES = ("un", "dis", "de", "non", "non-", "in", "im", "il", "ir", "anti", "mis")
# Prefixes of opposite direction or degree (a closed class of English morphology).
_OPPOSING_PREFIXES = frozenset(frozenset(pair) for pair in (
    ("en", "de"), ("en", "dis"), ("in", "ex"), ("im", "ex"), ("in", "de"), ("up", "down"), ("over", "under"),
    ("pre", "post"), ("max", "min"), ("in", "out"), ("inter", "intra"), ("hyper", "hypo"), ("inc", "dec"),
))


def _prefix_negation(a: str, b: str) -> bool:
    return len(a) >= 3 and any(b == prefix + a for prefix in _NEGATING_PREFIXES)


# Each opposing pair in both orders.
_PREFIX_SWAPS = tuple((p, q) for pair in _OPPOSING_PREFIXES for p, q in (tuple(pair), tuple(pair)[::-1]))


def _prefix_swap(a: str, b: str) -> bool:
    """The same stem (three letters or more) behind two opposing prefixes."""
    return any(a.startswith(p) and b.startswith(q) and a[len(p):] == b[len(q):] and len(a) - len(p) >= 3
               for p, q in _PREFIX_SWAPS)


@lru_cache(maxsize=65536)
def of_kind(kind: str, word: str) -> bool:
    """Some base form of ``word`` is in WordNet's class ``kind`` (a verb's class: as a verb, a noun's: as a noun)."""
    table = _data()["kinds"][kind]
    wanted = _KIND_POS[kind]
    return any(w in table for w in lemmas(word) if not wanted or wanted in pos(w))


_KIND_POS = {"feeling": "", "mental": "v", "happening": "n", "message": "n", "holding": "v", "person": "n"}


def feeling(word: str) -> bool:
    """``word`` names a feeling: an adjective of feeling ("nervous") or a form of a verb of emotion
    ("stressed", "worried")."""
    return of_kind("feeling", word)


def mental(word: str) -> bool:
    """``word`` is (a form of) a verb whose commonest sense thinks, perceives, says or feels ("think", "hope")."""
    return of_kind("mental", word)


def happening(word: str) -> bool:
    """``word`` is (a form of) a noun whose commonest sense is an act, an event or a time ("project",
    "trip", "deadline")."""
    return of_kind("happening", word)


def message(word: str) -> bool:
    """``word`` is (a form of) a noun whose commonest sense is a communication ("question", "interview")."""
    return of_kind("message", word)


def holding(word: str) -> bool:
    """``word`` is a form of a verb one of whose commonest senses uses or is ("using", "runs", "lives")."""
    return of_kind("holding", word)


def person(word: str) -> bool:
    """``word`` is (a form of) a noun whose commonest sense is a person ("tenant", "manager", "sister")."""
    return of_kind("person", word)


def same_kind_of_person(a: str, b: str) -> bool:
    """Two person nouns share a narrow WordNet class at the same depth above them ("boss" /
    "manager": leaders; "friend" / "mate": associates), or one is a kind of the other ("daughter" /
    "kid"), so they may name one person in two words."""
    table = _data()["person_kinds"]
    left = set().union(*(table.get(x, frozenset()) for x in lemmas(a)))
    right = set().union(*(table.get(y, frozenset()) for y in lemmas(b)))
    if any(not c.endswith("@*") for c in left & right):
        return True
    # One names a kind of the other ("daughter" is a kind of "kid"; "dad" of "father").
    return any(c.endswith("@0") and c[:-1] + "*" in other for one, other in ((left, right), (right, left)) for c in one)


def synonyms(a: str, b: str) -> bool:
    """Some base forms of the two words share a WordNet synset."""
    table = _data()["synonyms"]
    left = set().union(*(table.get(x, set()) for x in lemmas(a)))
    return any(left & table.get(y, set()) for y in lemmas(b))
