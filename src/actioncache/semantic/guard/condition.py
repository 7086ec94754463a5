"""``condition``: one request adds a fact the answer depends on, which the other does not say.

"I'm pregnant. Is it ok to take ibuprofen for a headache?" is not "is it ok to take ibuprofen for a
headache?", nor is "drop the users table in the test database" "drop the users table". One side says
all the other says and more, and the more is one of two things:

* a clause that states a present condition of the asker or of something of theirs: a subject "i",
  "we", "my X", "our X" with a verb in the present, "be" ("i'm diabetic", "we're on windows 10", "my
  dog is a puppy"), "have" ("i have a peanut allergy"), a progressive of using or being ("i'm using a
  mac", "i'm fasting") or another verb ("i live in germany", "my repo uses yarn"); or with the
  subject left out, "being pregnant, ...", "as a diabetic, ..."; whose words the other side does not
  cover;
* an adjunct inside the request that the other lacks: a preposition and its noun, the place or
  scope the action applies to ("on the remote", "in the test database", "for the admin account"),
  or an added word marked as additional ("too", "also", "as well").

Or the two sides say the action happens on another event: a trigger ("when i get home", "once ci
passes", "if the backup fails") on one side only, or another trigger on each side (``triggers``).

What is told around a request without changing it passes, and the form of the clause says which:
a feeling ("i'm so stressed", "i'm nervous": WordNet's adjectives of feeling and verbs of emotion),
what one is doing, has done or will do (a progressive, a past, a perfect: "i'm writing a report",
"i cooked too much pasta on tuesday", "trying to reach my aunt"), what one thinks, hopes or wants
(a verb of thinking, perceiving, saying or feeling), what one has to do ("i have an interview
tomorrow", "i have a question": an act, an event, a time or a message, not a thing one is or owns),
a graded state, an evaluation ("pretty new to git", "a total mess"), and a purpose ("for a school
project"). A condition the other side restates ("i'm a us citizen ... visa requirements for us
citizens") adds nothing, nor do two sides that each state one fact in their own words ("i use vs
code" / "editor: vscode", as conversations' histories do): one side must say nothing the other
does not, outside one reworded word of the request.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from .. import lexicon
from .chatter import SENTENCE_MARK
from .clause import statement
from .registry import rule
from .text import (
    CLAUSE_BREAK,
    DATE_WORDS,
    NOW,
    Side,
    align,
    content_word,
    is_number,
    uncovered,
    words_of,
)

# A clause of its own: the shared clause breaks, a pictograph between two sentences, a dash or a bracket.
_CLAUSE = re.compile(rf"{CLAUSE_BREAK.pattern}|{SENTENCE_MARK}|\s[-–—]+\s|[()–—]")
# A sentence (for the adjuncts: a comma or "and" does not end the request an adjunct belongs to).
_SENTENCE = re.compile(rf"[.;!?]+(?:\s|$)|{SENTENCE_MARK}|\s[-–—]+\s|[()–—]")

# Closed classes of English: words that open a clause before its subject, the subjects that state
# the asker's own condition, the present forms of "be" and "have", and the determiners of a noun.
_OPENERS = frozenset({"and", "but", "so", "because", "since", "as", "if", "also", "plus", "well", "now", "though",
                      "although", "cause", "btw", "oh", "ok", "okay", "just", "when", "while"})
_ASKER = frozenset({"i", "we"})
_POSSESSIVE = frozenset({"my", "our"})
_BE = frozenset({"am", "is", "are"})
_HAVE = frozenset({"have", "has"})
_PAST = frozenset({"was", "were", "had", "did", "got", "went", "came", "made"})
_DETERMINERS = frozenset({"a", "an", "the", "my", "our", "your", "his", "her", "their", "its", "this", "that",
                          "these", "those", "some", "no", "any", "all", "every", "each"})
# Prepositions that place or scope an action ("in the test database", "on the remote", "for the admin
# account", "without sugar", "from the admin group"). "to", "into" (where a thing goes) are the role and direction checks..
_SCOPE = frozenset({"in", "on", "at", "for", "from", "with", "without", "within", "inside", "under", "across", "throughout",
                    "over", "behind", "outside"})
# Words that mark an addition to what was said before: "delete it on the remote too", "as well".
_ADDITIVE = frozenset({"too", "also", "either"})
_SUBJECTS = frozenset({"i", "we", "you", "he", "she", "they", "it"})
# Verbs whose progressive is an auxiliary's or a change's ("having fun", "getting married", "keeping busy").
_AUXILIARY = frozenset({"have", "get", "keep", "be", "do"})
# Degree and hedge modifiers (a closed class of English): a state said "so", "pretty", "a bit",
# "kind of" is graded, an evaluation of how things feel ("pretty new to git", "a bit rusty", "a total
# mess"); a condition the answer depends on is not graded ("pregnant", "on windows 10", "16").
_DEGREE = frozenset({"so", "too", "very", "really", "super", "pretty", "quite", "kinda", "kind", "sort", "sorta",
                     "bit", "little", "totally", "total", "completely", "complete", "absolutely", "absolute",
                     "extremely", "literally", "basically", "lowkey", "highkey", "honestly", "seriously", "such",
                     "way", "rather", "fairly", "somewhat", "slightly", "incredibly", "terribly", "awfully",
                     "truly", "utterly", "utter", "sooo", "soo", "mega", "hella", "bloody", "freaking"})


def _adverb(word: str) -> bool:
    kinds = lexicon.pos(word)
    return bool(kinds) and set(kinds) <= {"r"}


def _verb(word: str) -> bool:
    return any("v" in lexicon.pos(w) for w in lexicon.lemmas(word))


def _progressive(word: str) -> bool:
    return word.endswith("ing") and _verb(word)


def _participle(word: str) -> bool:
    """A past form ("cooked", "moved", "started"): what happened, not what is."""
    return word.endswith(("ed", "en")) and bool(_verb_bases(word))


def _verb_bases(word: str) -> set[str]:
    """The verbs ``word`` is an inflection of, itself left out ("lost" -> {"lose"}; "live" -> {}): all
    of them, as the shortest base form alone ties ("lost" / "lose")."""
    if word.endswith(("er", "est")):
        return set()  # "beginner", "faster": a noun or a degree, no verb's inflection
    return {w for w in lexicon.lemmas(word) if w != word and "v" in lexicon.pos(w)}


def stated(words: list[str]) -> list[str] | None:
    """The words a clause states of the asker (or of something of theirs) as a present condition,
    or ``None`` when it states none (another subject, a past, a progressive, a feeling, a thought)."""
    i = 0
    while i < len(words) and (words[i] in _OPENERS or _adverb(words[i])):
        i += 1
    if i >= len(words):
        return None
    if words[i] == "being":
        return _being(words[i + 1:])  # "being pregnant, can i ...": the asker's state, its subject left out
    asker = words[i] in _ASKER
    if asker:
        i += 1
    elif words[i] in _POSSESSIVE:
        # "my dog", "our prod database": one to three words before the verb.
        j = i + 1
        while j < len(words) and j - i <= 3 and words[j] not in _BE | _HAVE | _PAST and not (
                j > i + 1 and words[j].endswith("s") and _verb(words[j]) and not _participle(words[j])):
            j += 1
        if j == i + 1 or j >= len(words) or j - i > 3:
            return None
        i = j
    else:
        return None
    while i < len(words) and (_adverb(words[i]) or words[i] == "not") and words[i] not in _BE | _HAVE:
        i += 1
    if i >= len(words):
        return None
    verb, rest = words[i], words[i + 1:]
    if verb in _BE:
        return _being(rest, asker)
    if verb in _HAVE:
        return _having(rest)
    if verb in _PAST or not _verb(verb) or lexicon.mental(verb) or _progressive(verb) or _participle(verb):
        return None
    if verb in lexicon.FUNCTION_WORDS:
        return None  # "i need a passport photo", "i want ...", "i get ...": the request itself, not a state
    if _verb_bases(verb) and not verb.endswith("s"):
        return None  # an irregular past ("i ran", "i took")
    if rest[:1] == ["to"] or (rest and _progressive(rest[0])):
        return None  # "i need to ...", "i keep hearing ...": what one means to do or keeps doing
    return rest


def _being(rest: list[str], asker: bool = True) -> list[str] | None:
    """What follows "i am", "my X is": a state ("pregnant", "on windows 10", "a vegan", "16"), unless it
    is a feeling or what one is doing ("so stressed", "writing a report", "going to ...")."""
    rest = [w for w in rest if w != "not"]
    if rest and _progressive(rest[0]) and lexicon.holding(rest[0]) and not _verb_bases(rest[0]) & _AUXILIARY:
        if len(rest) == 1:
            return rest  # "i'm breastfeeding", "i'm fasting": a state of the body
        if _noun_phrase(rest[1]) or rest[1] in _SCOPE:
            return _owned(rest[1:])  # "i'm using python 2", "i'm living in lyon": what one uses or is
    if not rest or rest[0] in ("going", "about") or _progressive(rest[0]) or _DEGREE & set(rest):
        return None
    head = next((w for w in rest if content_word(w) and not _adverb(w)), None)
    if head is not None and (_progressive(head) or _participle(head) and _progressive(rest[0])):
        return None
    if asker and any(_feels(w) for w in rest if content_word(w)):
        return None  # how one feels ("nervous", "on the highway freaking out"); a thing of theirs feels nothing
    phrase = _phrase(rest[1:]) if rest[0] in _SCOPE or rest[0] == "up" else []
    if phrase and lexicon.happening(phrase[-1]):
        return None  # what is going on ("on vacation", "up for renewal"), not what one is
    return rest


def _feels(word: str) -> bool:
    """An adjective or a verb's participle of feeling ("nervous", "stressed", "freaking"), not a noun
    that is also a verb of emotion ("a nurse")."""
    return lexicon.feeling(word) and ("a" in lexicon.pos(word) or bool(_verb_bases(word)))


def _phrase(words: list[str]) -> list[str]:
    """The content words of the noun phrase ``words`` open with (past a preposition of it)."""
    out = []
    for w in words:
        if w in _DETERMINERS or is_number(w) or w == "for":
            continue
        if not content_word(w) or _progressive(w):
            break
        out.append(w)
    return out


def _having(rest: list[str]) -> list[str] | None:
    """What follows "i have": a thing one has ("a peanut allergy", "two kids", "a mac"), unless one has
    to do something, has done it ("have to", "have been", "have finished") or has an act, an event, a
    time or a message ("an interview tomorrow", "a question", "no clue")."""
    if rest[:1] == ["got"]:
        rest = rest[1:]
    if not rest or rest[0] in ("to", "been", "had", "got") or _participle(rest[0]):
        return None
    return _owned(rest)


def _owned(rest: list[str]) -> list[str] | None:
    """What one has or uses, unless it is an act, an event, a time or a message ("an interview
    tomorrow", "a question", "a tutorial"): what one has to do or is reading, not what one owns."""
    if not rest:
        return None
    noun = []
    for w in rest:
        if w in _SCOPE or _progressive(w) or w in ("to", "that", "which", "who"):
            break
        if content_word(w) and w not in DATE_WORDS:
            noun.append(w)
    if noun and (lexicon.happening(noun[-1]) or lexicon.message(noun[-1])):
        return None
    return rest


def _clauses(side: Side) -> list[list[str]]:
    return [w for w in (words_of(part) for part in _CLAUSE.split(side.text)) if w]


def _with_parts(side: Side) -> Side:
    """``side`` with the parts of its hyphenated words as words too ("non-technical" says "technical")."""
    parts = tuple(p for t in side.tokens if "-" in t.strip("-") for p in t.split("-") if p)
    return Side(side.text, side.tokens + parts, side.raw + parts) if parts else side


def _states_more(mine: Side, theirs: Side) -> bool:
    """A clause of ``mine`` states a condition whose words ``theirs`` does not cover."""
    theirs = _with_parts(theirs)
    for words in _clauses(mine):
        said = stated(words)
        if said is None:
            continue
        # Compounds spelt as the other side spells them ("vs code" / "vscode"); the fact is in its
        # nouns, adjectives and names, not in the verb forms around them ("built on wordpress",
        # "an app written in kotlin", "planning an offsite": the other side may say it without them).
        joined = align(Side(" ".join(said), tuple(said), tuple(said)), theirs)[0].tokens
        joined = tuple(p for w in joined for p in (w.split("-") if _hyphenated(w) else [w]))  # "left-handed"
        facts = [w for w in joined if content_word(w) and w not in DATE_WORDS and not _verb_form(w)]
        facts = facts or [w for w in joined if content_word(w)]  # the verb is all it states: "i'm fasting"
        if uncovered(facts, theirs):
            return True
    return False


def _hyphenated(word: str) -> bool:
    return "-" in word and all(part.isalpha() for part in word.split("-"))


def _verb_form(word: str) -> bool:
    """An inflected verb that is no plural noun ("built", "written", "selling"; not "apps")."""
    return any(not ("n" in lexicon.pos(base) and word == base + "s") for base in _verb_bases(word))


def _states(side: Side, word: str) -> bool:
    """``word`` stands in a clause of ``side`` that states something (a subject and its verb)."""
    return any(word in words and (stated(words) is not None or statement(words)) for words in _clauses(side))


def _lemma(word: str) -> str:
    return lexicon.lemma(word) if word.isalpha() else word


def _adds_adjunct(mine: Side, theirs: Side) -> bool:
    """``mine`` is ``theirs`` with an adjunct inside the request: a scoping preposition and a noun
    ``theirs`` does not cover, or an added word marked as additional ("too", "as well")."""
    parts = [w for w in (words_of(p) for p in _SENTENCE.split(mine.text)) if w]
    flat = [w for p in parts for w in p]
    where = [n for n, p in enumerate(parts) for _ in p]
    other = words_of(theirs.text)
    matcher = SequenceMatcher(None, [_lemma(w) for w in other], [_lemma(w) for w in flat], autojunk=False)
    matched = [False] * len(flat)
    covered = 0
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            matched[block.b + k] = True
            covered += content_word(other[block.a + k])
    if covered < sum(content_word(w) for w in other) or not covered:
        return False  # the other side says something this one does not: a rewording, the other checks'
    asked = {where[k] for k, m in enumerate(matched) if m and content_word(flat[k])}
    k = 0
    while k < len(flat):
        if matched[k]:
            k += 1
            continue
        start = k
        while k < len(flat) and not matched[k] and where[k] == where[start]:
            k += 1
        gap = flat[start:k]
        if where[start] not in asked or _SUBJECTS & set(gap):
            continue  # a sentence of its own (the clause check's and the stated conditions'), a statement
        if _adjunct(gap, theirs, ends=k >= len(flat) or where[k] != where[start] or not matched[k]):
            return True
    return False


def _noun_phrase(word: str) -> bool:
    """``word`` opens a noun phrase: a determiner, a number, a noun that is no adjective or adverb, a name."""
    kinds = lexicon.pos(word)
    return word in _DETERMINERS or is_number(word) or (content_word(word) and "a" not in kinds and "r" not in kinds)


def _role(word: str) -> bool:
    """What "as" introduces as a role ("as a diabetic", "as root"), not as a degree ("as soon as")."""
    kinds = lexicon.pos(word)
    return word in _DETERMINERS or ("n" in kinds and "r" not in kinds and "a" not in kinds)


def _adjunct(gap: list[str], theirs: Side, ends: bool) -> bool:
    if ends and (gap[-1] in _ADDITIVE or gap[-2:] == ["as", "well"]):
        # "delete the old log files too": the request adds itself to something done or said before,
        # which the plain request does not do, even with nothing else added
        return True
    new = [w for w in uncovered(gap, theirs) if w not in DATE_WORDS and not is_number(w) and w not in ("as", "well")]
    if not new:
        return False
    for n, w in enumerate(gap):
        if w not in _SCOPE and not (w == "as" and n + 1 < len(gap) and _role(gap[n + 1])):
            continue
        # The preposition's noun phrase: its determiners, numbers and words up to the next function word.
        phrase = []
        for x in gap[n + 1:]:
            if x in _DETERMINERS or is_number(x) or (content_word(x) and x not in NOW):
                phrase.append(x)
            else:
                break
        nouns = [x for x in phrase if content_word(x)]
        if not nouns or not set(nouns) & set(new):
            continue
        if w == "for" and lexicon.happening(nouns[-1]):
            continue  # a purpose ("for a school project", "for work"): why one asks, not what
        return True
    return False


# Words that open a clause saying *when* the action is to happen (a trigger), by what they say of it:
# on or after the event, before it, up to it, unless it happens (closed classes of English).
_TRIGGERS = {"when": "on", "whenever": "on", "once": "on", "if": "on", "after": "on", "as soon as": "on",
             "soon as": "on", "the moment": "on", "until": "until", "till": "until",
             "unless": "unless"}
# "before" is none: "back it up before we migrate" says to do it now (and "before 5pm" is the date check's).
_TRIGGER = re.compile(r"\b(as soon as|soon as|the moment|when|whenever|once|if|after|until|till|unless)\b")
# Words that are prepositions or adverbs as well: they open a trigger only before a clause (a subject).
_CLAUSE_ONLY = frozenset({"once", "after", "until", "till", "the moment"})
_SUBJECT_PRONOUNS = frozenset({"i", "we", "you", "he", "she", "they", "it", "someone", "somebody", "anyone",
                               "anybody", "everyone", "nobody", "there"})
_SUBJECT_DETERMINERS = frozenset({"the", "my", "our", "your", "his", "her", "their", "its", "this", "that"})
# What a trigger says when it names no event, only the addressee's time or leave ("when you get a
# chance", "if you have a minute", "if possible", "if that's ok", "if needed"): chat, not a trigger.
_LEAVE = frozenset({"chance", "time", "minute", "minutes", "moment", "sec", "second", "min", "free", "possible",
                    "fine", "alright", "cool", "convenient", "needed", "necessary", "applicable", "appropriate",
                    "feasible", "available", "mind", "prefer", "wish", "able", "bandwidth", "spare",
                    "opportunity", "sure", "interested", "busy", "around"})
_QUESTION_AUX = frozenset({"is", "are", "am", "was", "were", "do", "does", "did", "will", "would", "can", "could",
                           "should", "shall", "may", "might", "must", "to", "exactly"})
_ASKING = frozenset({"can", "could", "would", "will", "pls", "plz"})
_QUESTION_WORDS = frozenset({"what", "how", "why", "which", "who", "whom", "where", "whats", "hows"})
_OBJECT_PRONOUNS = frozenset({"me", "us", "him", "her", "them", "you"})


def triggers(side: Side) -> list[tuple[str, list[str]]]:
    """The triggers of ``side``: for each clause that says when the action is to happen ("when i get
    home", "if the backup fails"), what it says of the event ("on", "before", "until", "unless") and
    its content words. An indirect question ("check if it is up", "tell me when it opens"), a question
    word ("when does it open"), a preposition ("after lunch", "run it once") and chat ("when you get a
    chance", "if possible") are none."""
    out: list[tuple[str, list[str]]] = []
    if _QUESTION_WORDS & set(side.tokens):
        return out  # "what should i do if ...", "how do i lower it when it's high": the condition of a
        # question, which the other side may state as a fact (the stated conditions' check)
    for part in _CLAUSE.split(side.text):
        low = part.strip()
        for m in _TRIGGER.finditer(low):
            before = words_of(low[:m.start()])
            after = words_of(low[m.end():])
            if not after or after[0] in _QUESTION_AUX:
                continue  # "when does it open", "when to plant": a question, not a trigger
            if not (after[0] in _SUBJECT_PRONOUNS or (after[0] in _SUBJECT_DETERMINERS and len(after) > 2)
                    or (len(after) > 1 and _noun_phrase(after[0]) and not _adverb(after[0]))):
                continue  # "null if active", "when saving", "after lunch": no clause, no event of its own
            if before and (before[-1] in DATE_WORDS or before[-1] in ("time", "times", "moment", "day", "days")):
                continue  # "a time when both are free": a relative clause of the time, what is asked for
            k = len(before) - 1
            while k >= 0 and before[k] in _OBJECT_PRONOUNS:
                k -= 1
            told = k < len(before) - 1 and before[k] not in ("ask", "tell", "show") or before[k - 2:k] in (
                ["let", "me"], ["let", "us"])
            if k >= 0 and lexicon.mental(before[k]) and not told:
                continue  # "check if it is up", "tell me when it opens": whether, or a question of time;
                # "email me if it fails", "let me know when it is done" are told on the event
            if k >= 0 and before[k] in ("even", "what", "as", "only"):
                continue  # "even if", "what if", "as if", "only if" reworded: not a plain trigger
            if m.group(1) in _CLAUSE_ONLY and not (after[0] in _SUBJECT_PRONOUNS | _SUBJECT_DETERMINERS or (
                    content_word(after[0]) and not _adverb(after[0]))):
                continue  # "after lunch", "run it once", "before pushing": a time or a count, the date check's
            cut = next((n for n in range(1, len(after)) if after[n] == "please" or (
                after[n] in _ASKING and after[n + 1:n + 2] in (["you"], ["u"]))), len(after))
            after = after[:cut]  # "whenever u have a min can u bump ...": the request starts at "can u"
            if m.group(1) in _CLAUSE_ONLY and not any(_verb(w) for w in after[2 if after[0] in _SUBJECT_DETERMINERS else 1:]):
                continue  # "after this miami conference", "after the deploy": a time, not an event told as a clause
            words = [w for w in after if content_word(w) and w not in DATE_WORDS]
            if not [w for w in words if w not in _LEAVE]:
                continue  # "if possible", "when you get a chance", "if that's ok"
            out.append((_TRIGGERS[m.group(1)], words))
    return out


def _other_trigger(a: Side, b: Side) -> bool:
    """A trigger of ``a`` that ``b`` does not say in its own words (with the same sense), nor as an
    action of its own ("send it after you convert it to pdf" / "convert it to pdf, then send it")."""
    theirs = triggers(b)
    for kind, words in triggers(a):
        left = uncovered(words, b)
        told = len(_clauses(b)) > 1 and len(left) < len(words) and all(_verb(w) for w in left)
        if not theirs and (told or _TRIGGER.search(b.text)):
            continue  # the event told as a clause of its own ("my flight lands at 6pm; book a taxi"), or
            # a trigger word the other side says in a form not read here ("when stock (col c) is under")
        if theirs and not set(left) < set(words):
            continue  # two triggers worded apart ("once ci passes" / "as soon as the checks go green")
        if not any(kind == k and not uncovered(words, Side(" ".join(w), tuple(w), tuple(w)))
                   and not uncovered(w, Side(" ".join(words), tuple(words), tuple(words))) for k, w in theirs):
            return True
    return False


@rule("condition", whole=True)
def condition(a: Side, b: Side) -> bool:
    """One side says all the other says and states a condition or adds an adjunct the other lacks,
    or the two say the action happens on another event (a trigger on one side only, or two)."""
    if _other_trigger(a, b) or _other_trigger(b, a):
        return True
    for mine, theirs in ((a, b), (b, a)):
        slack = uncovered(theirs.tokens, mine)
        if len(slack) > 1 or any(_states(theirs, w) for w in slack):
            continue  # both sides reword freely, or both state a fact in their own words: not one fact added
        if _states_more(mine, theirs) or _adds_adjunct(mine, theirs):
            return True
    return False
