"""Contrast checks: a near neighbour is not a hit when the words that differ change the request.

Sentence embeddings place "turn on the lights" and "turn off the lights", "nyc to la" and "la to
nyc", "delete all my emails" and "delete some of my emails" closer together than many true
paraphrases, so no threshold separates them. After the vector search, :func:`contrast` compares
the two requests word by word (lower-cased: capitalisation never decides) and names the first
contradiction it finds, or returns ``None``:

``number``     the digits differ, or the number words ("three" vs "four"), or the word after a
               shared number (its unit: "5 minutes" vs "5 hours", "7 am" vs "7 pm"), or the unit
               of a rate ("per second" vs "per minute", "3 times a day" vs "... a week");
``date``       weekday/month names, relative days ("tomorrow") or their modifier ("this" vs "next
               Friday"); "today", "now" and "currently" count as no date (a request is about now);
``negation``   one side is negated (not, no, never, without, except, stop, n't ...), the other not;
``opposite``   a word only one side has is a WordNet antonym of a word only the other side has
               ("lock"/"unlock", "cheap"/"expensive", "add"/"remove"), prefixes included;
``direction``  a directional particle or preposition only one side has faces its counterpart on
               the other (in/out, up/down, on/off, to/from, before/after, above/below, over/under,
               ..., and the coordinators and/or) attached to the same word: a closed class of
               English, so the pairs are written out ("zoom in"/"zoom out");
``person``     the owner or addressee changes: a possessive or object pronoun only one side has
               faces one of another person on the other ("my order" / "his order");
``quantifier`` different quantifiers (all/some/none/only/first/at least ...), or a restricting one
               on one side only ("only the unread messages");
``comparison`` both sides compare, differently ("cheaper" vs "more expensive", "more" vs "fewer");
``modality``   tense or modality differs: past (did, was, has), future (will), possibility (can I,
               may I), obligation (should, must); "can you ..." is politeness and does not count;
``entity``     a name or identifier of one side is missing from the other: a word WordNet does not
               know ("nyc", "priya", "acme/api", "PROJ-12"), one WordNet only knows as a proper noun
               ("paris", "monday"), a capitalised word inside the sentence, a quoted string;
``role``       the same relation word (from/to/into/than/between/via/against/vs; an arrow is "to")
               governs different words, or the word it governs on one side stands right before it
               on the other ("nyc to la flight" / "la to nyc flight"), or the same content words
               stand in another order ("bob owes alice");
``substitution`` one content word swapped for a non-synonym, or added, in an otherwise identical
               request ("share it with the finance team" vs "... legal team", "alphabetical" vs
               "reverse alphabetical").
``clause``     one request has a clause the other lacks: between clause breaks (sentence punctuation,
               a comma, "and", "then", "also"), an action whose content words the other request does
               not cover, not even by a base form, a WordNet synonym or a typo ("summarize the notes"
               / "summarize the notes and then delete the database").

Before comparing, both sides are normalised the same way: Unicode, case, contractions with or
without the apostrophe ("what's", "whats" -> "what is"; "dont" -> "do not"), chat spellings of
"please", and compounds written apart, hyphenated or joined ("to-do"/"todo", "log in"/"login")
take the other side's spelling. A leading verb of running ("run git push" / "git push") and a
"can"/"could" after a question word ("how can I" / "how do I") are treated as style.

Every rule comes from English grammar or from WordNet (``lexicon.py``), never from a list of the
words of a test set. They err on the side of a miss: a paraphrase that renames an entity ("NYC"
for "New York") or reorders arguments misses, and the agent plans afresh.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from . import lexicon

# A command-line flag ("-la", "--force") at the start of a word is one token, an identifier.
_TOKEN = re.compile(r"(?<!\S)--?[^\W\d_][\w-]*|[$€£#@]?\w+(?:[./\-:'’]\w+)*%?", re.UNICODE)
_ARROW = re.compile(r"\s*(?:->|→|⟶)\s*")
# Double quotes and backticks; a single quote only as a pair around words, not an apostrophe.
_QUOTED = re.compile(r"[\"“”`]([^\"“”`\n]{1,80})[\"“”`]|(?<!\w)'([^'\n]{1,80})'(?!\w)")

_NUMBER_WORDS = {
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    "hundred", "thousand", "million", "billion", "half", "dozen", "second", "third",
    "fourth", "fifth",
}
_DATE_WORDS = {
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday", "sunday", "tomorrow", "yesterday", "tonight", "morning", "afternoon",
    "evening", "weekend", "week", "month", "year", "am", "pm", "noon", "midnight",
}
_NOW = {"today", "now", "currently", "current", "right"}
_DATE_MODIFIERS = {"this", "next", "last", "previous", "coming", "following", "past"}
# "may", "march" and "second" are also ordinary words: dates only next to a number.
_AMBIGUOUS_DATES = {"may", "march", "second"}
_NEGATIONS = {
    "not", "no", "never", "none", "nothing", "nobody", "nor", "neither", "without", "cannot",
    "stop", "unless", "except", "exclude", "excluding", "excludes", "excluded", "nowhere", "lack", "lacking",
}
_QUANTIFIERS = {
    "all": "all", "every": "all", "each": "all", "whole": "all", "entire": "all",
    "some": "some", "several": "some", "part": "some", "partial": "some", "any": "any",
    "no": "none", "none": "none", "nobody": "none", "few": "few", "fewer": "few", "many": "many", "most": "most",
    "both": "both", "either": "either", "neither": "neither", "only": "only", "just": "only",
    "first": "first", "last": "last", "least": "least", "one": "one", "single": "one",
}
# Quantifiers that narrow a request: present on one side only, they change it.
_RESTRICTING = {"some", "none", "few", "most", "neither", "only", "first", "last", "least", "one"}
_COMPARATIVE_WORDS = {"more": "more", "less": "less", "fewer": "less", "most": "most", "least": "least",
                      "better": "good+", "best": "good++", "worse": "bad+", "worst": "bad++"}
_MODALITY = {
    "did": "past", "was": "past", "were": "past", "had": "past", "has": "past", "have": "past",
    "will": "future", "shall": "future", "won't": "future", "gonna": "future",
    "can": "possibility", "could": "possibility", "may": "possibility", "might": "possibility",
    "should": "obligation", "must": "obligation", "ought": "obligation", "shouldn't": "obligation",
    "would": "conditional",
}
_BE_FORMS = {"be", "been", "being", "is", "are", "was", "were", "am", "get", "got", "gets", "have", "has", "had"}
_RELATIONS = {"from", "to", "into", "onto", "than", "via", "between", "against", "vs", "versus"}
_SKIP_AFTER_RELATION = {"the", "a", "an", "my", "your", "our", "their", "his", "her", "its", "this", "that"}


@dataclass(frozen=True, slots=True)
class _Side:
    text: str
    tokens: tuple[str, ...]  # lower-case
    raw: tuple[str, ...]  # as typed


def _normal(text: str) -> str:
    return unicodedata.normalize("NFKC", text).replace("’", "'").replace("‘", "'")


@lru_cache(maxsize=4096)
def _side(text: str) -> _Side:
    normal = _normal(text)
    # A leading "No," / "Yes," answers a question; it neither negates nor quantifies the request.
    normal = re.sub(r"^\s*(?:no|yes)\s*[,.!]\s*", "", normal, flags=re.IGNORECASE)
    # An arrow between two words says "to" ("nyc -> la", "eur→usd").
    normal = _ARROW.sub(" to ", normal)
    raw = tuple(_split_contractions(_TOKEN.findall(normal)))
    return _Side(normal.lower(), tuple(t.lower() for t in raw), raw)


# Contractions, closed classes of English: auxiliaries that take "n't", and the pronouns and question
# words that take "'s", "'re", "'ll"... They are recognised with the apostrophe or without ("dont",
# "whats", "youre": people type to agents without one), the latter only when WordNet does not know
# the joined word ("ill", "were", "well", "id" stay words).
_NOT_AUXILIARIES = {"do": "do", "does": "does", "did": "did", "is": "is", "are": "are", "was": "was", "were": "were",
                    "has": "has", "have": "have", "had": "had", "could": "could", "would": "would", "should": "should",
                    "must": "must", "need": "need", "might": "might", "ca": "can", "wo": "will", "sha": "shall"}
_CONTRACTING_HEADS = {"i", "you", "we", "they", "he", "she", "it", "that", "there", "here", "what", "who", "where",
                      "when", "why", "how", "which", "this", "let"}
_CONTRACTION_TAILS = {"s": "is", "re": "are", "ll": "will", "ve": "have", "m": "am", "d": "would"}
# Chat spellings of the politeness words (already function words when spelt out).
_CHAT_SPELLINGS = {"pls": "please", "plz": "please", "thx": "thanks", "u": "you"}


def _contraction(low: str) -> tuple[str, str] | None:
    """("what", "is") for "what's" or "whats"; ("do", "not") for "don't" or "dont"; else None."""
    bare = low.replace("'", "")
    apostrophe = "'" in low
    if not apostrophe and (bare in lexicon.FUNCTION_WORDS or lexicon.pos(bare)) and bare not in ("cant", "wont"):
        return None
    if bare.endswith("nt") and (apostrophe and low.endswith("n't") or not apostrophe) and bare[:-2] in _NOT_AUXILIARIES:
        return _NOT_AUXILIARIES[bare[:-2]], "not"
    for tail, word in _CONTRACTION_TAILS.items():
        head = bare[: -len(tail)]
        if bare.endswith(tail) and head in _CONTRACTING_HEADS and (not apostrophe or low == f"{head}'{tail}"):
            return head, ("us" if head == "let" else word)
    return None


def _split_contractions(tokens: list[str]) -> list[str]:
    out: list[str] = []
    for tok in tokens:
        low = tok.lower()
        split = _contraction(low) if low.replace("'", "").isalpha() else None
        if low in _CHAT_SPELLINGS:
            out.append(_CHAT_SPELLINGS[low])
        elif split is not None:
            out += [tok[: len(split[0])] if tok[: len(split[0])].lower() == split[0] else split[0], split[1]]
        elif low.endswith("n't") and len(low) > 3:
            out += [tok[:-3], "not"]
        elif re.fullmatch(r"\w+'(s|re|ll|ve|d|m)", low):
            head, tail = tok.split("'", 1)
            # a possessive "'s" is dropped ("Madrid's station" ~ "Madrid station").
            out += [head] + ([_CONTRACTION_TAILS[tail.lower()]] if tail.lower() != "s" else [])
        elif re.fullmatch(r"\d+(am|pm)", low):  # "7am" is "7 am"
            out += [tok[:-2], tok[-2:]]
        else:
            out.append(tok)
    return out


def _is_number(tok: str) -> bool:
    return any(c.isdigit() for c in tok) and bool(re.fullmatch(r"[$€£]?\d+(?:[.,:/]\d+)*(?:%|st|nd|rd|th|k|m)?", tok))


def _number_key(tok: str) -> str:
    return _CARDINALS.get(tok) or tok.lstrip("$€£").replace(",", "")


# --- the checks, one per kind of contradiction ----------------------------------------------------


# Cardinal number words read as digits ("two tickets" is "2 tickets"); "one" (also a pronoun) and
# "second" (also a unit of time) stay words.
_CARDINALS = {w: str(n) for n, w in enumerate(
    "zero _ two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split()) if w != "_"}
_CARDINALS.update({"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80",
                   "ninety": "90", "hundred": "100", "thousand": "1000", "dozen": "12"})


def _digit_groups(side: _Side) -> set[str]:
    """Every run of digits, inside identifiers too ("fix-7", "PROJ-123", "iphone15"), and the
    cardinal number words as digits."""
    return ({g.replace(",", "") for t in side.tokens for g in re.findall(r"\d+(?:[.,:/]\d+)*", t)}
            | {_CARDINALS[t] for t in side.tokens if t in _CARDINALS})


def _numbers(a: _Side, b: _Side) -> bool:
    if _digit_groups(a) != _digit_groups(b):
        return True
    a_words = {t for t in a.tokens if t in _NUMBER_WORDS and t not in _CARDINALS}
    b_words = {t for t in b.tokens if t in _NUMBER_WORDS and t not in _CARDINALS}
    if a_words and b_words and a_words != b_words:
        return True
    # The word right after a shared number is its unit: it must agree when both sides have one.
    a_units, b_units = _units(a), _units(b)
    if any(not _same_unit(a_units[n], b_units[n]) for n in a_units.keys() & b_units.keys()):
        return True
    # A rate's unit ("per second", "100 requests a minute") must agree when both sides give one.
    a_rates, b_rates = _rates(a), _rates(b)
    return bool(a_rates and b_rates) and not (all(any(_same_unit(x, y) for y in b_rates) for x in a_rates)
                                              and all(any(_same_unit(y, x) for x in a_rates) for y in b_rates))


def _same_unit(x: str, y: str) -> bool:
    """One unit, in one inflection or an abbreviation of it: "seconds" / "second", "sec" / "second",
    "hr" / "hour" (a WordNet synonym whose letters the longer word has in order, from its first)."""
    if x == y or lexicon.lemmas(x) & lexicon.lemmas(y):
        return True
    short, long = sorted((lexicon.lemma(x), lexicon.lemma(y)), key=len)
    if len(short) < 2 or short[0] != long[0] or not short.isalpha():
        return False
    letters = iter(long)
    return all(c in letters for c in short) and lexicon.synonyms(short, long)


# What a rate is counted against: "per X" anywhere, and "a"/"an"/"each"/"every" X right after a
# number and its unit ("100 requests a second", "3 times every day").
_RATE_AFTER_NUMBER = {"a", "an", "each", "every", "per"}


def _rates(side: _Side) -> set[str]:
    out = set()
    toks = side.tokens
    for i, tok in enumerate(toks):
        if tok == "per":
            j = i + 1
        elif tok in _RATE_AFTER_NUMBER and any(_is_number(t) or t in _NUMBER_WORDS for t in toks[max(0, i - 2):i]):
            j = i + 1  # right after a number or a number and its unit
        else:
            continue
        while j < len(toks) and toks[j] in _SKIP_AFTER_RELATION:
            j += 1
        if j < len(toks) and toks[j].isalpha() and toks[j] not in lexicon.FUNCTION_WORDS:
            out.add(toks[j])
    return out


def _units(side: _Side) -> dict[str, str]:
    out: dict[str, str] = {}
    toks = side.tokens
    for i, tok in enumerate(toks):
        if _is_number(tok) or tok in _NUMBER_WORDS:
            unit = ""
            if i + 1 < len(toks) and not _is_number(toks[i + 1]) and toks[i + 1] not in lexicon.FUNCTION_WORDS:
                unit = lexicon.lemma(toks[i + 1])
            if tok[:1] in "$€£":
                unit = tok[0]
            out.setdefault(_number_key(tok), unit)
    return {k: v for k, v in out.items() if v}


def _dates(side: _Side) -> set[str]:
    out = set()
    toks = side.tokens
    for i, tok in enumerate(toks):
        if tok not in _DATE_WORDS:
            continue
        if tok in _AMBIGUOUS_DATES:
            near = toks[max(0, i - 1):i] + toks[i + 1:i + 2]
            if not any(_is_number(t) for t in near):
                continue
        modifier = toks[i - 1] if i and toks[i - 1] in _DATE_MODIFIERS else ""
        out.add(f"{modifier} {tok[:3]}".strip())
    return out


def _date(a: _Side, b: _Side) -> bool:
    return _dates(a) != _dates(b)


def _negated(side: _Side) -> bool:
    return any(t in _NEGATIONS for t in side.tokens)


def _negation(a: _Side, b: _Side) -> bool:
    # "not mandatory" is "optional": a negation that comes with an opposite word cancels out.
    return _negated(a) != _negated(b) and not _has_opposite(a, b)


def _only_in(a: _Side, b: _Side) -> tuple[set[str], set[str]]:
    """The words each side has and the other lacks; two inflections of one word, each on one side
    only, cancel ("cheaper" / "cheap"), but a word shared by both cancels nothing ("show hidden
    files" / "hide hidden files" still differ by show / hide)."""
    a_set, b_set = set(a.tokens), set(b.tokens)
    a_only, b_only = a_set - b_set, b_set - a_set
    a_lemmas = {lexicon.lemma(t) for t in a_only}
    b_lemmas = {lexicon.lemma(t) for t in b_only}
    return ({t for t in a_only if lexicon.lemma(t) not in b_lemmas},
            {t for t in b_only if lexicon.lemma(t) not in a_lemmas})


def _opposite(a: _Side, b: _Side) -> bool:
    if _negated(a) != _negated(b):
        return False  # "not mandatory" / "optional": the negation and the opposite cancel out
    return _has_opposite(a, b)


def _has_opposite(a: _Side, b: _Side) -> bool:
    left, right = _only_in(a, b)
    return any(lexicon.opposite(x, y) for x in left for y in right if _wordlike(x) and _wordlike(y))


def _wordlike(tok: str) -> bool:
    """Letters, hyphens between them allowed ("non-vegetarian"): a word, not an identifier."""
    return tok.replace("-", "").isalpha() and not tok.startswith("-")


# Directional particles and prepositions with their counterparts: a closed class of English, so
# the pairs are written out (WordNet has few antonyms among function words).
_DIRECTION_PAIRS = frozenset(frozenset(pair) for pair in (
    ("in", "out"), ("into", "out"), ("inside", "outside"), ("up", "down"), ("on", "off"), ("onto", "off"),
    ("to", "from"), ("toward", "from"), ("towards", "from"), ("before", "after"), ("above", "below"),
    ("over", "under"), ("with", "without"), ("upward", "downward"), ("upwards", "downwards"),
    ("forward", "backward"), ("forwards", "backwards"), ("inbound", "outbound"), ("incoming", "outgoing"),
    ("upstairs", "downstairs"), ("since", "until"), ("since", "till"), ("inward", "outward"),
    ("ahead", "behind"), ("in", "off"), ("on", "out"), ("and", "or"),
))


def _direction(a: _Side, b: _Side) -> bool:
    """Counterparts that attach to the same word: the same verb before them ("zoom in" / "zoom
    out") or the same object after them ("before noon" / "after noon"). In a free rewording the
    particles come with other words ("in addition to" / "apart from") and say nothing."""
    left, right = _only_in(a, b)
    left = {t for t in left if _directional(a, t)}
    right = {t for t in right if _directional(b, t)}
    return any(frozenset((x, y)) in _DIRECTION_PAIRS and _neighbours(a, x) & _neighbours(b, y)
               for x in left for y in right)


def _neighbours(side: _Side, word: str) -> set[str]:
    """Lemmas of the words right before and right after ``word`` (past an article or possessive)."""
    toks = side.tokens
    out: set[str] = set()
    for i, tok in enumerate(toks):
        if tok != word:
            continue
        if i:
            out.add("<" + lexicon.lemma(toks[i - 1]))
        j = i + 1
        while j < len(toks) and toks[j] in _SKIP_AFTER_RELATION:
            j += 1
        if j < len(toks):
            out.add(">" + lexicon.lemma(toks[j]))
    return out


def _directional(side: _Side, word: str) -> bool:
    """A particle or preposition, not the "to" of an infinitive ("remind me to water ...")."""
    if word != "to":
        return True
    toks = side.tokens
    i = toks.index(word)
    nxt = toks[i + 1] if i + 1 < len(toks) else ""
    kinds = lexicon.pos(nxt)
    return not (kinds and "v" in kinds and "n" not in kinds) and nxt not in ("be", "do", "get", "make", "see")


# Whose thing, or whom to: possessive determiners and object pronouns, a closed class ("you" is
# left out: it is also the subject of "can you", and politeness is no difference).
_PERSONS = {"my": "1s", "me": "1s", "mine": "1s", "our": "1p", "us": "1p", "ours": "1p", "your": "2", "yours": "2",
            "his": "3m", "him": "3m", "her": "3f", "hers": "3f", "their": "3p", "them": "3p", "theirs": "3p"}


def _person(a: _Side, b: _Side) -> bool:
    """One side's owner or addressee is another person than the other's ("cancel my order" /
    "cancel his order", "email them the file" / "email me the file")."""
    left, right = _only_in(a, b)
    pa = {_PERSONS[t] for t in left if t in _PERSONS}
    pb = {_PERSONS[t] for t in right if t in _PERSONS}
    return bool(pa and pb and not pa & pb)


def _quantifiers(side: _Side) -> set[str]:
    out = set()
    toks = side.tokens
    for i, tok in enumerate(toks):
        q = _QUANTIFIERS.get(tok)
        if q is None:
            continue
        if q in ("least", "most") and i and toks[i - 1] == "at":
            q = "at " + q
        elif q == "most" and i + 1 < len(toks) and toks[i + 1] not in ("of",) and lexicon.pos(toks[i + 1]) and "a" in lexicon.pos(toks[i + 1]) and "n" not in lexicon.pos(toks[i + 1]):
            continue  # "most expensive": a superlative, judged by the comparison check
        elif q == "one" and i + 1 < len(toks) and toks[i + 1] in ("can", "could", "may", "should", "must"):
            continue  # "one can ...": the pronoun
        elif q == "first" and i + 1 < len(toks) and toks[i + 1] in ("of",):
            continue
        out.add(q)
    return out


def _quantifier(a: _Side, b: _Side) -> bool:
    qa, qb = _quantifiers(a), _quantifiers(b)
    if qa == qb:
        return False
    # Quantifiers change a request that is otherwise worded alike ("delete all / some of my
    # emails"); in a free rewording ("some examples are listed" / "examples are shown") they are style.
    if _overlap(a, b) < 0.4:
        return False
    return bool(qa and qb) or bool((qa | qb) & _RESTRICTING)


def _overlap(a: _Side, b: _Side) -> float:
    """Share of content words the two sides have in common (Jaccard), two inflections of one word
    counting as one ("servers" / "server": their shortest base forms differ, "server" / "serve")."""
    ca = {t for t in a.tokens if t not in lexicon.FUNCTION_WORDS and t not in _RELATIONS}
    cb = {t for t in b.tokens if t not in lexicon.FUNCTION_WORDS and t not in _RELATIONS}
    shared = min(len(cb), sum(1 for x in ca if any(x == y or lexicon.lemmas(x) & lexicon.lemmas(y) for y in cb)))
    return shared / max(1, len(ca) + len(cb) - shared)


def _comparisons(side: _Side) -> set[str]:
    out = set()
    for tok in side.tokens:
        if tok in _COMPARATIVE_WORDS:
            out.add(_COMPARATIVE_WORDS[tok])
        elif len(tok) > 4 and tok.isalpha() and (tok.endswith("er") or tok.endswith("est")):
            stems = [w for w in lexicon.lemmas(tok) if w != tok and "a" in lexicon.pos(w)]
            if stems and "n" not in lexicon.pos(tok):
                out.add(min(stems, key=len) + ("++" if tok.endswith("est") else "+"))
    return out


def _comparison(a: _Side, b: _Side) -> bool:
    ca, cb = _comparisons(a), _comparisons(b)
    if not (ca and cb) or ca == cb:
        return False
    # "nearest" / "closest": the same degree of WordNet synonyms compares alike.
    return not all(any(_same_comparison(x, y) for y in cb) for x in ca) or not all(
        any(_same_comparison(y, x) for x in ca) for y in cb)


def _same_comparison(x: str, y: str) -> bool:
    sx, sy = x.rstrip("+"), y.rstrip("+")
    return x == y or (len(x) - len(sx) == len(y) - len(sy) and sx.isalpha() and sy.isalpha() and lexicon.synonyms(sx, sy))


_WH_WORDS = {"what", "which", "who", "whom", "where", "when", "why", "how"}
_SUBJECTS = {"i", "we", "you", "he", "she", "it", "they", "the", "my", "our", "this", "that", "there"}


def _modalities(side: _Side) -> set[str]:
    """Tense and modality of the request itself: an auxiliary that opens it or a question
    ("did I", "should we", "was the"), or follows a pronoun subject ("I should"). One inside a
    longer statement ("... can be used to ...") describes, it does not ask."""
    out = set()
    toks = side.tokens
    for i, tok in enumerate(toks):
        kind = _MODALITY.get(tok)
        if kind is None:
            continue
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        prev = toks[i - 1] if i else ""
        opens = i == 0 or (i == 1 and toks[0] in _WH_WORDS)
        if not (opens or (nxt in _SUBJECTS and nxt != "there") or prev in ("i", "we")):
            continue
        if nxt == "you" and kind in ("possibility", "future", "conditional"):
            continue  # "can you / could you / will you / would you": a polite request
        if kind == "possibility" and i == 1 and toks[0] in _WH_WORDS:
            continue  # "how can I", "where can I": asks the way, as "how do I" does
        if kind == "conditional" and nxt in ("like", "love"):
            continue  # "I would like": a request
        if tok in ("has", "have", "had") and nxt not in ("been",) and not _past_participle(nxt):
            if tok != "had":
                continue  # "has two doors", "have to": possession or obligation, not tense
        out.add(kind)
    return out


def _past_participle(tok: str) -> bool:
    return tok.endswith("ed") or tok in _IRREGULAR_PARTICIPLES


_IRREGULAR_PARTICIPLES = frozenset({"done", "gone", "sent", "made", "paid", "seen", "been", "taken", "given",
                                    "built", "bought", "sold", "won", "lost", "written", "run", "put", "set"})


def _modality(a: _Side, b: _Side) -> bool:
    if _modalities(a) != _modalities(b):
        return True
    # The same verb in another tense: "deployed" vs "deploy" (a passive "be used" is not a past).
    return _tense_shift(a, b) or _tense_shift(b, a)


def _tense_shift(a: _Side, b: _Side) -> bool:
    b_set = set(b.tokens)
    for i, tok in enumerate(a.tokens):
        if tok in b_set or not tok.endswith("ed") or len(tok) < 5:
            continue
        # A past tense has a subject right before it ("I cancelled", "who deployed"); otherwise
        # an -ed word is a participle ("titled", "be used"), not a tense.
        if i and a.tokens[i - 1] not in ("i", "we", "you", "he", "she", "they", "who", "it"):
            continue
        bases = lexicon.lemmas(tok) - {tok}
        if any(base in b_set and "v" in lexicon.pos(base) for base in bases):
            return True
    return False


def _is_entity(raw: str, low: str, position: int) -> bool:
    if low in lexicon.FUNCTION_WORDS or low in _NUMBER_WORDS or low in _DATE_WORDS or low in _NOW:
        return False
    if _is_number(low):
        return False  # numbers have their own check
    if not low.replace("'", "").isalpha():
        parts = re.split(r"[-']", low)
        # "on-the-fly" is words; "acme/api", "report.pdf", "proj-12", "#design", "iphone15" are names,
        # and so is a hyphenated word with a one-letter part WordNet does not know ("feature-x", not "x-ray").
        if "-" in low and any(len(p) == 1 for p in parts) and not lexicon.known(low):
            return True
        return not all(p.isalpha() and lexicon.known(p) for p in parts)
    if lexicon.is_proper(low):
        return True
    if position > 0 and raw[:1].isupper() and not raw.isupper() and lexicon.is_proper(low):
        return True
    return not lexicon.known(low)


def _entities(side: _Side) -> list[str]:
    return [low for i, (raw, low) in enumerate(zip(side.raw, side.tokens)) if _is_entity(raw, low, i)]


def _quoted(side: _Side) -> set[str]:
    return {q.strip().lower() for pair in _QUOTED.findall(side.text) for q in pair if q.strip()}


def _typo_of(word: str, others: set[str]) -> bool:
    """An unknown word one transposition, insertion, deletion or substitution away from a word of the
    other side. Only letters: "fix-7" and "fix-9" are two identifiers, not a typo."""
    if len(word) < 5 or not word.isalpha():
        return False
    for other in others:
        if abs(len(other) - len(word)) <= 1 and len(other) >= 5 and _edit_distance_le1(word, other):
            return True
    return False


def _edit_distance_le1(a: str, b: str) -> bool:
    if a == b:
        return True
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    if len(a) > len(b):
        a, b = b, a
    return any(b[:i] + b[i + 1:] == a for i in range(len(b)))


def _entity(a: _Side, b: _Side) -> bool:
    if _quoted(a) != _quoted(b):
        return True
    a_set, b_set = set(a.tokens), set(b.tokens)
    for mine, theirs, theirs_text in ((a, b_set, b.text), (b, a_set, a.text)):
        for name in _entities(mine):
            bare = name.lstrip("#@")  # "#support" and "support" name the same channel
            if name in theirs or bare in theirs or any(w in theirs for w in lexicon.lemmas(name)):
                continue
            if name in theirs_text.replace(" ", "") or _typo_of(name, theirs):
                continue
            return True
    return False


def _relations(side: _Side) -> dict[str, frozenset[str]]:
    """Relation word -> the words of the phrase it governs ("from" -> {nyc}, "to" -> {tokyo, central,
    station}), for relations used once, before a name or a noun (not "to" before a verb: "used to load")."""
    out: dict[str, frozenset[str]] = {}
    toks = side.tokens
    for i, tok in enumerate(toks):
        if tok not in _RELATIONS or toks.count(tok) > 1:
            continue
        j = i + 1
        while j < len(toks) and toks[j] in _SKIP_AFTER_RELATION:
            j += 1
        if j >= len(toks):
            continue
        word = toks[j]
        kinds = lexicon.pos(lexicon.lemma(word))
        if not (_is_entity(side.raw[j], word, j) or _is_number(word) or ("n" in kinds and "v" not in kinds)
                or word in _DATE_WORDS):
            continue
        phrase = []
        while j < len(toks) and len(phrase) < 4 and toks[j] not in _RELATIONS and (
                toks[j] not in lexicon.FUNCTION_WORDS or not phrase):
            phrase.append(lexicon.lemma(toks[j]))
            j += 1
        out[tok] = frozenset(phrase)
    return out


def _around(side: _Side, relation: str) -> tuple[str, str]:
    """The lemmas of the word right before a relation word used once and of the first word it governs
    (past an article or possessive); "" where there is none or it is a function word."""
    toks = side.tokens
    i = toks.index(relation)
    j = i + 1
    while j < len(toks) and toks[j] in _SKIP_AFTER_RELATION:
        j += 1
    before = toks[i - 1] if i else ""
    after = toks[j] if j < len(toks) else ""
    return tuple(lexicon.lemma(w) if w and w not in lexicon.FUNCTION_WORDS and w not in _RELATIONS else ""
                 for w in (before, after))  # type: ignore[return-value]


def _crossed(a: _Side, b: _Side, relation: str) -> bool:
    """What ``relation`` governs in ``a`` stands right before it in ``b``."""
    governed = _around(a, relation)[1]
    return bool(governed) and governed == _around(b, relation)[0]


def _content(side: _Side) -> list[str]:
    return [lexicon.lemma(t) for t in side.tokens if t not in lexicon.FUNCTION_WORDS and t not in _RELATIONS]


def _wh_role(side: _Side) -> str | None:
    """Which part a question word plays: "who does sarah report to" asks for an object (do-support
    after it), "who reports to sarah" for the subject (a verb right after it)."""
    toks = side.tokens
    if len(toks) < 3 or toks[0] not in _WH_WORDS - {"how", "why", "where", "when"}:
        return None
    if toks[1] in ("do", "does", "did"):
        return "object"
    if toks[1] not in lexicon.FUNCTION_WORDS and "v" in lexicon.pos(lexicon.lemma(toks[1])):
        return "subject"
    return None


def _role(a: _Side, b: _Side) -> bool:
    wa, wb = _wh_role(a), _wh_role(b)
    if wa and wb and wa != wb and a.tokens[0] == b.tokens[0] and set(_content(a)) == set(_content(b)):
        return True
    ra, rb = _relations(a), _relations(b)
    shared = ra.keys() & rb.keys()
    if any(not ra[w] & rb[w] for w in shared):
        return True
    # The words on the two sides of a shared relation trade places ("nyc to la flight" / "la to
    # nyc flight"): the word it governs on one side stands right before it on the other.
    if any(_crossed(a, b, w) or _crossed(b, a, w) for w in shared):
        return True
    # The same words, function words included, in another order: who does what to whom changed
    # ("bob owes alice"), unless the relations pin every argument ("to la from nyc").
    return sorted(a.tokens) == sorted(b.tokens) and a.tokens != b.tokens and not shared


def _substitution(a: _Side, b: _Side) -> bool:
    """One short span of content words swapped for another (or added) in an otherwise identical
    request: another object, property or action ("check stock of widgets" / "... of printer
    paper", "pause" / "resume", "alphabetical" / "reverse alphabetical"). A WordNet synonym or a
    typo is no swap ("buy" / "purchase")."""
    x, y = a.tokens, b.tokens
    start = 0
    while start < min(len(x), len(y)) and x[start] == y[start]:
        start += 1
    end = 0
    while end < min(len(x), len(y)) - start and x[len(x) - 1 - end] == y[len(y) - 1 - end]:
        end += 1
    span_a, span_b = x[start:len(x) - end], y[start:len(y) - end]
    if not (span_a or span_b) or len(span_a) > 3 or len(span_b) > 3 or start + end == 0:
        return False
    words = span_a + span_b
    if start == 0 and not (span_a and span_b) and _runs(words):
        return False  # "run git push" / "git push": the verb only says to run what follows
    if not all(w.isalpha() and w not in lexicon.FUNCTION_WORDS and w not in _NOW for w in words):
        return False  # a changed function word is the other checks' business (or style)
    if len(span_a) == 1 and len(span_b) == 1:
        p, q = span_a[0], span_b[0]
        if lexicon.synonyms(p, q) or _edit_distance_le1(p, q):
            return False
    return not ({lexicon.lemma(w) for w in span_a} & {lexicon.lemma(w) for w in span_b})


def _uncovered(words: list[str] | tuple[str, ...], b: _Side) -> list[str]:
    """The content words among ``words`` that ``b`` does not cover: not there as such, nor a base
    form, a WordNet synonym or a typo of one of ``b``'s words. Names and numbers have their checks."""
    theirs = {t for t in b.tokens if t.isalpha()}
    their_lemmas = set().union(*(lexicon.lemmas(t) for t in theirs)) if theirs else set()
    their_content = [t for t in theirs if t not in lexicon.FUNCTION_WORDS]
    out = []
    for tok in words:
        if not _content_word(tok) or tok in theirs or lexicon.lemmas(tok) & their_lemmas:
            continue
        if any(lexicon.synonyms(tok, w) for w in their_content) or _typo_of(tok, theirs):
            continue
        out.append(tok)
    return out


# Where one clause of a request ends and another begins: sentence punctuation, a comma or a
# coordinating word (a closed class of English).
_CLAUSE_BREAK = re.compile(r"[.;:!?,]+(?:\s|$)|\b(?:and|then|also|plus|afterwards|next)\b")


def _clauses(side: _Side) -> list[list[str]]:
    return [[t.lower() for t in _TOKEN.findall(part)] for part in _CLAUSE_BREAK.split(side.text)]


def _clause(a: _Side, b: _Side) -> bool:
    """One request has a clause the other lacks: a stretch between clause breaks whose content words
    (two or more, one of them a verb) the other request does not cover at all ("summarize the
    notes" / "summarize the notes and then delete the database")."""
    for mine, theirs in ((a, b), (b, a)):
        if len(_uncovered(theirs.tokens, mine)) > 1:
            continue  # both sides reword freely: a paraphrase, not one request inside the other
        clauses = [c for c in ([t for t in words if _content_word(t)] for words in _clauses(mine)) if c]
        if len(clauses) < 2:
            continue  # one clause reworded ("read the file x" / "open x") is the other checks' business
        for words in _clauses(mine):
            content = [t for t in words if _content_word(t)]
            if len(content) < 2 or len(_uncovered(content, theirs)) < len(content):
                continue
            # An action: a verb, or an unknown word where a command's verb stands ("cc the team").
            if any("v" in lexicon.pos(lexicon.lemma(t)) for t in content) or (words and words[0] == content[0]):
                return True
    return False


def _content_word(tok: str) -> bool:
    return (tok.isalpha() and tok not in lexicon.FUNCTION_WORDS and tok not in _RELATIONS and tok not in _NOW
            and tok not in _NUMBER_WORDS)


def _runs(words: list[str]) -> bool:
    """One verb that means running a program (WordNet: a synonym of "execute")."""
    return len(words) == 1 and (words[0] == "execute" or lexicon.synonyms(words[0], "execute")) and "v" in lexicon.pos(words[0])


# --- both sides spelt alike ---------------------------------------------------------------------


def _align(a: _Side, b: _Side) -> tuple[_Side, _Side]:
    """Compounds spelt apart, hyphenated or joined take one spelling: a run of words of one side
    (or a hyphenated word) that joins into a word of the other side becomes that word ("to-do" /
    "todo", "log in" / "login", "e-mail" / "email")."""
    return _join_into(a, set(b.tokens)), _join_into(b, set(a.tokens))


def _join_into(side: _Side, others: set[str]) -> _Side:
    toks, raw = list(side.tokens), list(side.raw)
    changed = False
    i = 0
    while i < len(toks):
        if "-" in toks[i] and toks[i] not in others and toks[i].replace("-", "") in others:
            toks[i] = raw[i] = toks[i].replace("-", "")
            changed = True
        for n in (4, 3, 2):
            joined = "".join(t.replace("-", "") for t in toks[i:i + n])
            if len(toks[i:i + n]) == n and joined in others and joined not in toks and all(t.isalpha() for t in toks[i:i + n]):
                toks[i:i + n] = [joined]
                raw[i:i + n] = [joined]
                changed = True
                break
        i += 1
    return _Side(side.text, tuple(toks), tuple(raw)) if changed else side


_CHECKS = (
    ("number", _numbers), ("date", _date), ("negation", _negation), ("opposite", _opposite),
    ("direction", _direction), ("person", _person), ("quantifier", _quantifier), ("comparison", _comparison), ("modality", _modality),
    ("entity", _entity), ("role", _role), ("substitution", _substitution), ("clause", _clause),
)


@lru_cache(maxsize=4096)
def contrast(request: str, candidate: str) -> str | None:
    """The name of the first check that finds the two requests contradicting, or ``None``.

    Remembered for the last 4,096 pairs: the answer depends on the two texts only, and an agent
    asks the same request again and again."""
    a, b = _align(_side(request), _side(candidate))
    if a.tokens == b.tokens:
        return None
    for name, check in _CHECKS:
        if check(a, b):
            return name
    return None


def literal_guard(request: str, candidate: str) -> bool:
    """True when ``candidate`` may answer ``request``: no contrast check finds a contradiction."""
    return contrast(request, candidate) is None


CONTRAST_CHECKS = tuple(name for name, _ in _CHECKS)
