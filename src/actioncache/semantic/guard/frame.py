"""Who does what to whom: each participant of a request (a person, a pronoun for the speaker or
another person, a name, a value, a thing) and the parts it plays.

A request is cut into noun phrases (from a determiner, a possessive, a pronoun, a name or a word
that can only be a noun, over the nouns, adjectives, names and numbers after it). A phrase's part
is read from what governs it:

* a preposition: ``("to", "from address")``, the preposition and the two words before it (what it
  attaches to: "the reply-to address to X" and "the from address to X" are two slots);
* a verb before it: ``("obj", "owe")``; of two objects in a row the first is who receives, ``("dat", verb)``;
* otherwise the verb after it: ``("subj", "owe")``, or in the passive ("I'm owed $40 by Alex")
  ``("obj", "owe")``, the phrase after its "by" then being the subject; with no verb, the
  preposition after it ("my wife on the aisle"): ``("pre", "on")``.

A possessor ("my", "Alex's") plays ``("poss", <what it owns>, <the owned phrase's part>)``.
Pronouns are the person they name ("I", "me", "my", "mine" are one speaker); "you" is left out
("can you" is politeness). Closed classes of English only: pronouns, determiners, prepositions,
auxiliaries.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .. import lexicon
from .entity import is_entity
from .text import DATE_WORDS, NOW, TOKEN, Side, is_number, split_contractions

PERSON_OF = {"i": "1s", "me": "1s", "my": "1s", "mine": "1s", "myself": "1s", "we": "1p", "us": "1p", "our": "1p",
             "ours": "1p", "he": "3m", "him": "3m", "his": "3m", "she": "3f", "her": "3f", "hers": "3f",
             "they": "3p", "them": "3p", "their": "3p", "theirs": "3p", "your": "2", "yours": "2"}
_PRONOUNS = frozenset(PERSON_OF.values())
_SUBJECT_PRONOUNS = frozenset({"i", "we", "he", "she", "they"})
_POSSESSIVE = frozenset({"my", "our", "his", "her", "their", "your", "its"})
_DETERMINERS = frozenset({"the", "a", "an", "this", "that", "these", "those", "all", "every", "each", "some", "any",
                          "another", "other", "both", "either", "no"})
PREPOSITIONS = frozenset({"in", "on", "at", "for", "of", "with", "by", "from", "to", "into", "onto", "about", "via",
                          "between", "than", "against", "under", "over", "after", "before", "near", "through", "per",
                          "as", "like", "toward", "towards", "across", "behind", "beside", "inside", "within",
                          "without", "among", "vs", "versus", "upon"})
_BE = frozenset({"be", "am", "is", "are", "was", "were", "been", "being", "get", "gets", "got", "getting"})
_AUXILIARIES = _BE | frozenset({"do", "does", "did", "have", "has", "had", "will", "would", "shall", "should", "can",
                                "could", "may", "might", "must", "not", "also", "still", "just", "really"})
_POSS_MARK = "'s"
# A web address or an e-mail address is one value (the shared tokens split them at ":" and "@").
_VALUE = re.compile(r"[a-z][a-z0-9+.\-]*://[^\s,;]*[^\s,;.]|[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+", re.IGNORECASE)
_BREAK = re.compile(r"[,;:!?()\u2014\u2013]|\.(?:\s|$)|\s-\s")
Role = tuple[str, ...]


@lru_cache(maxsize=4096)
def _tokens(text: str) -> tuple[str, ...]:
    """The text's words, a possessive "'s" a token of its own, "|" where punctuation breaks a clause,
    web and e-mail addresses whole."""
    out: list[str] = []
    pieces: list[tuple[int, str, bool]] = [(m.start(), m.group(), True) for m in _VALUE.finditer(text)]
    covered = [(m.start(), m.end()) for m in _VALUE.finditer(text)]
    pieces += [(m.start(), "|", True) for m in _BREAK.finditer(text) if not any(s <= m.start() < e for s, e in covered)]
    for m in TOKEN.finditer(text):
        if any(s <= m.start() < e for s, e in covered):
            continue
        pieces.append((m.start(), m.group(), False))
    pieces.sort()
    for _, piece, whole in pieces:
        if whole:
            if piece != "|" or (out and out[-1] != "|"):
                out.append(piece.lower())
            continue
        low = piece.lower()
        head, _, tail = low.partition("'")
        if tail == "s" and head.isalpha() and head not in ("it", "that", "what", "who", "there", "here", "he", "she",
                                                          "let", "where", "how", "when", "why", "this"):
            out += [head, _POSS_MARK]
        else:
            out += [t.lower() for t in split_contractions([piece])]
    return tuple(out)


@lru_cache(maxsize=16384)  # a word's parts of speech: asked for every word of every phrase
def _verb(tok: str) -> bool:
    return tok not in lexicon.FUNCTION_WORDS and "v" in lexicon.pos(lexicon.lemma(tok))


@lru_cache(maxsize=16384)  # a word's parts of speech: asked for every word of every phrase
def _only_noun(tok: str) -> bool:
    kinds = "".join(lexicon.pos(w) for w in lexicon.lemmas(tok) | {tok})
    return bool(kinds) and "v" not in kinds and ("n" in kinds or "a" in kinds) and not tok.endswith("ing")


def _name(tok: str, i: int) -> bool:
    return bool(_VALUE.fullmatch(tok)) or is_number(tok) or is_entity(tok, tok, i)


def _starts_phrase(tok: str, i: int) -> bool:
    return tok != "|" and (tok in _DETERMINERS or tok in _POSSESSIVE or tok in PERSON_OF
            or (tok not in lexicon.FUNCTION_WORDS and (_only_noun(tok) or _name(tok, i))))


def _object_of_command(toks: tuple[str, ...], i: int) -> bool:
    """A word that can be a noun right after the verb that opens a command ("join orders on ...")."""
    if i == 0 or toks[i] in lexicon.FUNCTION_WORDS or "n" not in lexicon.pos(lexicon.lemma(toks[i])):
        return False
    return _verb(toks[i - 1]) and (i == 1 or toks[i - 2] in ("|", "to", "please", "and", "then"))


def _present_tense(toks: tuple[str, ...], j: int) -> bool:
    """A verb's "-s" form after a singular noun, before a preposition and a pronoun or article: "the
    board presents to me" (the phrase is "the board")."""
    tok, before = toks[j], toks[j - 1]
    return (tok.endswith("s") and not before.endswith("s") and _verb(tok) and "n" in lexicon.pos(noun(before))
            and j + 2 < len(toks) and toks[j + 1] in PREPOSITIONS
            and (toks[j + 2] in PERSON_OF or toks[j + 2] in _DETERMINERS))


def _past_tense(toks: tuple[str, ...], j: int) -> bool:
    """A past form of a verb with no noun after it: a verb, not an adjective ("my tenant stopped
    paying", not "a lost passport")."""
    tok = toks[j]
    irregular = lexicon.lemma(tok) != tok and not set(lexicon.pos(tok)) & {"n", "a"}
    if not (tok.endswith(("ed", "en")) or irregular):
        return False
    if tok.endswith(("s", "ing")) or not _verb(tok):
        return False
    nxt = toks[j + 1] if j + 1 < len(toks) else "|"
    return nxt == "|" or nxt in lexicon.FUNCTION_WORDS or nxt in PREPOSITIONS or not (
        "n" in lexicon.pos(noun(nxt)) or _name(nxt, j + 1))


def _inside_phrase(tok: str, i: int) -> bool:
    """A word that continues a noun phrase: a noun or adjective (even one that can be a verb), a name,
    a number, a possessive mark."""
    if tok == _POSS_MARK or tok in ("very", "most", "least", "more", "less"):
        return True  # "my very first meeting"
    if tok in lexicon.FUNCTION_WORDS or tok == "|" or tok in PREPOSITIONS:
        return False
    kinds = lexicon.pos(lexicon.lemma(tok)) + lexicon.pos(tok)
    if not kinds:
        return _name(tok, i)
    if "a" in lexicon.pos(tok) and not tok.endswith("ing"):
        return True  # "a lost passport"
    if tok.endswith("ing") or (tok.endswith(("ed", "en")) and lexicon.lemma(tok) != tok and "v" in kinds
                               and "n" not in lexicon.pos(tok)):
        return False  # a participle or a past tense: the phrase has ended at its verb
    return "n" in kinds or "a" in kinds or _name(tok, i)


def _participant(tok: str, i: int) -> str | None:
    if tok in PERSON_OF:
        return PERSON_OF[tok]
    if tok in lexicon.FUNCTION_WORDS or tok in DATE_WORDS or tok in NOW or tok == _POSS_MARK or tok == "|":
        return None
    if _name(tok, i):
        return tok
    return noun(tok) if "n" in lexicon.pos(noun(tok)) else None


@lru_cache(maxsize=16384)  # a word's parts of speech: asked for every word of every phrase
def noun(tok: str) -> str:
    """The base form of a noun ("owners" -> "owner"; ``lexicon.lemma`` may give a verb: "manager" -> "manage")."""
    forms = [w for w in lexicon.lemmas(tok) if "n" in lexicon.pos(w)]
    return min(forms, key=lambda w: (len(w), w)) if forms else tok


def _participle(tok: str) -> bool:
    return not tok.endswith(("ing", "s")) and lexicon.lemma(tok) != tok and _verb(tok)


def _passive(toks: tuple[str, ...], k: int) -> bool:
    """The verb at ``k`` is a participle after a form of "be" or "get" ("am owed", "be interviewed")."""
    tok = toks[k]
    if tok.endswith(("ing", "s")) or lexicon.lemma(tok) == tok:
        return False
    j = k - 1
    while j >= 0 and toks[j] in ("not", "also", "still", "just", "being", "been"):
        j -= 1
    return j >= 0 and toks[j] in _BE


def frame(side: Side) -> dict[str, frozenset[Role]]:
    """Each participant of the request and the parts it plays."""
    return _frame(side.text, frozenset(t.lower() for t in side.raw if t.isupper() and len(t) > 1))


@lru_cache(maxsize=4096)
def _frame(text: str, capitals: frozenset[str]) -> dict[str, frozenset[Role]]:
    # A pronoun written in capitals is a name ("the US").
    toks = _named(text, capitals)
    phrases = _phrases(toks)
    roles: dict[int, Role] = {}
    return _frame_of(toks, phrases, roles)


def _phrases(toks: tuple[str, ...]) -> list[tuple[int, int]]:
    """The noun phrases, as [start, end) spans."""
    n = len(toks)
    phrases: list[tuple[int, int]] = []
    i = 0
    while i < n:
        relative = toks[i] in ("that", "which", "who") and bool(phrases) and phrases[-1][1] == i
        if toks[i] != _POSS_MARK and not relative and (_starts_phrase(toks[i], i) or _object_of_command(toks, i)):
            j = i + 1
            if toks[i] not in PERSON_OF or toks[i] in _POSSESSIVE:
                while j < n and (_inside_phrase(toks[j], j) or toks[j] in _DETERMINERS and toks[j - 1] == _POSS_MARK
                                 or j == i + 1 and toks[i] in _POSSESSIVE and toks[j].endswith("ing")) \
                        and not _present_tense(toks, j) and not _past_tense(toks, j):
                    j += 1
            phrases.append((i, j))
            i = j
        else:
            i += 1
    return phrases


def _named(text: str, capitals: frozenset[str]) -> tuple[str, ...]:
    # A pronoun written in capitals is a name ("the US").
    return tuple(f"{t}." if t in capitals and t in PERSON_OF else t for t in _tokens(text))

def _frame_of(toks: tuple[str, ...], phrases: list[tuple[int, int]], roles: dict[int, Role]) -> dict[str, frozenset[Role]]:
    controlled: dict[int, Role] = {}
    for index, (start, _end) in enumerate(phrases):
        roles[index] = _role(toks, phrases, index, roles)
        end = phrases[index][1]
        if roles[index][0] in ("obj", "dat") and end + 1 < len(toks) and toks[end] == "to" and _verb(toks[end + 1]) \
                and not _only_noun(toks[end + 1]) and _someone(toks[end - 1], end - 1):
            # "ask my manager to review my pr": the one asked is who reviews.
            controlled[index] = ("subj", lexicon.lemma(toks[end + 1]))
        # A list's members play one part: a member after "and", "or" or a comma right after the member
        # before it, with no verb of its own, plays that member's part ("methods, results and limitations").
        joined = index and start >= 1 and toks[start - 1] in ("and", "or", "|") and phrases[index - 1][1] == start - 1
        if joined and roles[index][0] in ("none", "pre") and toks[start] not in _SUBJECT_PRONOUNS:
            roles[index] = roles[index - 1]
        elif joined and toks[start - 1] != "|" and roles[index][0] == "subj" and roles[index - 1][0] in ("none", "pre"):
            # Two subjects of one verb act together ("he and anna met" is "he met anna"): neither is
            # its sole doer, so neither trades that part.
            roles[index] = roles[index - 1] = ("with", *roles[index][1:])
    out: dict[str, set[Role]] = {}
    for index, (start, end) in enumerate(phrases):
        role = roles[index]
        # The possessors in the phrase ("my", "alex 's"): they own what comes after them.
        owner_end = start
        for k in range(start, end):
            if toks[k] == _POSS_MARK:
                owner_end = k + 1
        for k in range(start, end):
            who = _participant(toks[k], k)
            if who is None:
                continue
            if (toks[k] in _POSSESSIVE and k + 1 < end) or k + 1 < owner_end:
                # What it owns: the word before the next "'s" ("my manager 's pr": my manager), else the head.
                marks = [m for m in range(k + 2, end) if toks[m] == _POSS_MARK]
                out.setdefault(who, set()).add(("poss", noun(toks[marks[0] - 1] if marks else toks[end - 1]), *role))
            else:
                out.setdefault(who, set()).add(role)
                if index in controlled:
                    out[who].add(controlled[index])
    return {who: frozenset(parts) for who, parts in out.items()}


def _role(toks: tuple[str, ...], phrases: list[tuple[int, int]], index: int, roles: dict[int, Role]) -> Role:
    start, end = phrases[index]
    before = toks[start - 1] if start else "|"
    if before == "as":
        return ("as",)  # the capacity the clause's subject acts in ("as a client")
    if before in PREPOSITIONS:
        if before == "by":  # the agent of a passive verb before it ("i'm owed $40 by alex") is its subject
            for k in range(start - 2, max(-1, start - 7), -1):
                if toks[k] == "|":
                    break
                if _verb(toks[k]) and _passive(toks, k):
                    return ("subj", lexicon.lemma(toks[k]))
        return (before, *_attached(toks, start - 1))
    if toks[start] in _SUBJECT_PRONOUNS:
        return _subject_role(toks, end)  # "they say i underreported": "i" is a subject, never an object
    if index and phrases[index - 1][1] == start and roles.get(index - 1, ("",))[0] == "obj":
        # Two objects: the first is who receives ("send the team a reminder" is "send a reminder to
        # the team"; "give the dog the cat's food").
        roles[index - 1] = ("dat", roles[index - 1][1])
        return ("obj", roles[index - 1][1])
    if before != "|" and before not in lexicon.FUNCTION_WORDS - {"get", "give", "tell", "show", "find", "make", "put",
                                                                "set", "check", "see", "know", "want", "like"} \
            and _verb(before):
        return ("obj", lexicon.lemma(before))
    if before in ("give", "tell", "show", "find", "make", "put", "set", "check", "see", "know", "want", "like"):
        return ("obj", before)
    return _subject_role(toks, end, before)


def _someone(tok: str, i: int) -> bool:
    """A word that names someone who can act: a pronoun, a name, a noun of a person."""
    return tok in PERSON_OF or lexicon.person(tok) or (_name(tok, i) and not is_number(tok))


def _subject_role(toks: tuple[str, ...], end: int, before: str = "|") -> Role:
    """The part of a phrase ending at ``end`` that no verb or preposition governs: the subject of
    the verb after it (in the passive, its object), or the preposition after it."""
    k = end
    while k < len(toks) and toks[k] in _AUXILIARIES:
        k += 1
    if k == end and k < len(toks) and toks[k].endswith("ing"):
        return ("none",)  # "my grocery spending": a noun, not a verb this phrase is the subject of
    if k < len(toks) and toks[k] != "|" and toks[k] not in PREPOSITIONS and (_verb(toks[k]) or toks[k] in _BE):
        verb = toks[k]
        if k + 1 < len(toks) and verb in _BE and _verb(toks[k + 1]) and _passive(toks, k + 1):
            verb, k = toks[k + 1], k + 1
        if _passive(toks, k) or (before in _BE and k == end and _participle(verb)):
            # (The second: a question, "was my application approved".) A feeling's participle said of
            # someone is their state ("i'm worried" is "i worry").
            felt = lexicon.feeling(verb) and end > 0 and _someone(toks[end - 1], end - 1)
            return ("subj" if felt else "obj", lexicon.lemma(verb))
        if k == end and not verb.endswith(("s", "ing")) and lexicon.lemma(verb) != verb \
                and before in ("need", "needs", "want", "wants", "get", "got", "have", "has", "had"):
            return ("obj", lexicon.lemma(verb))  # "i need the report submitted": the report undergoes it
        return ("subj", lexicon.lemma(verb) if verb not in _BE else "be")
    if k < len(toks) and toks[k] in PREPOSITIONS:
        return ("pre", toks[k])
    return ("none",)


def _attached(toks: tuple[str, ...], p: int) -> tuple[str, ...]:
    """What the preposition at ``p`` attaches to: the two words before it (past articles) and the
    verb of its clause ("the reply-to address to", "resize the images to")."""
    words: list[str] = []
    verb = ""
    k = p - 1
    while k >= 0 and toks[k] != "|":
        tok = toks[k]
        if len(words) < 2 and tok not in _DETERMINERS and tok not in ("and", "or"):
            words.append(lexicon.lemma(tok))
        if not verb and k < p - 1 and _verb(tok) and not _only_noun(tok) and tok not in PREPOSITIONS:
            verb = lexicon.lemma(tok)
        k -= 1
    head = tuple(reversed(words))
    return head if not verb or verb in head else (verb, *head)


def swapped(a: Side, b: Side) -> bool:
    """Two participants both requests name trade a part: a part (the subject of one verb, its object,
    the phrase after one preposition on one word, the owner of one thing) is held by one of them on one
    side and by the other on the other side ("alex owes me" / "i owe alex", "so i sit by the window"
    / "so my wife sits by the window", "redirect x to y" / "redirect y to x")."""
    fa, fb = frame(a), frame(b)
    shared = fa.keys() & fb.keys()
    # One participant is the doer of a verb on one side and its undergoer on the other ("how do I get
    # reimbursed" / "how do I reimburse my employee", "alex owes me" / "i owe alex").
    # Only where the verb is said with both parts on one side: "the office closed" is "the office
    # was closed" (a verb whose subject undergoes it when it has no object).
    for who in shared:
        for fx, fy in ((fa, fb), (fb, fa)):
            if any(r[0] == "subj" and ("obj", *r[1:]) in fy[who] and ("obj", *r[1:]) not in fx[who]
                   and r not in fy[who] and (_held(fx, ("obj", *r[1:])) or _held(fy, r)) for r in fx[who]):
                return True
        # The doer a passive names with "by" is not the one it names with another preposition on the
        # same word ("emails sent by john" / "sent to john", "files shared by maria" / "with maria");
        # "from" may name the doer too ("emails from john").
        for fx, fy in ((fa, fb), (fb, fa)):
            if any(r[0] == "by" and r not in fy[who] and any(q[1:] == r[1:] and q[0] not in ("by", "from") for q in fy[who])
                   for r in fx[who]):
                return True
    if len(shared) < 2:
        return False
    holders_a: dict[Role, set[str]] = {}
    holders_b: dict[Role, set[str]] = {}
    for who in shared:
        for r in fa[who]:
            holders_a.setdefault(r, set()).add(who)
        for r in fb[who]:
            holders_b.setdefault(r, set()).add(who)
    for r in holders_a.keys() & holders_b.keys():
        if r[0] in ("none", "pre") or len(r) < 2 and r[0] != "as":
            continue
        # What one side does something with may do it on the other ("we deploy the app with a helm
        # chart" / "our helm chart deploys the app"): an instrument made subject trades no part.
        lost = {x for x in holders_a[r] - holders_b[r] if not (r[0] == "subj" and _means(fb[x]))}
        gained = {y for y in holders_b[r] - holders_a[r] if not (r[0] == "subj" and _means(fa[y]))}
        # A pronoun of the third person may be the other side's noun ("check their logs" / "check
        # the logs of the pods"): it trades a part only with another pronoun.
        if any(x != y and (x in _PRONOUNS) == (y in _PRONOUNS) or (x in _PRONOUNS and x[0] != "3")
               or (y in _PRONOUNS and y[0] != "3") for x in lost for y in gained):
            return True
    return False


def _held(frame_: dict[str, frozenset[Role]], role: Role) -> bool:
    return any(role in parts for parts in frame_.values())


def _means(parts: frozenset[Role]) -> bool:
    return any(r[0] in ("with", "via", "using", "through") or r[:2] == ("obj", "use") for r in parts)


@lru_cache(maxsize=4096)
def _voices(text: str, capitals: frozenset[str]) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The verbs said in the active with an object after them ("interview a candidate"), in a
    passive without a subject ("how to be interviewed"), and in another passive with a "by"."""
    toks = _named(text, capitals)
    inside = {k for start, end in _phrases(toks) for k in range(start, end)}
    starts = {start for start, _ in _phrases(toks)}
    active, bare, agent = set(), set(), set()
    for k, tok in enumerate(toks):
        if k in inside or tok in lexicon.FUNCTION_WORDS or not _verb(tok):
            continue
        if _passive(toks, k):
            rest = toks[k + 1:k + 6]
            until = rest.index("|") if "|" in rest else len(rest)
            if _controlled(toks, k):
                bare.add(lexicon.lemma(tok))
            elif "by" in rest[:until]:
                agent.add(lexicon.lemma(tok))
        elif k + 1 in starts and not tok.endswith("ed"):
            active.add(lexicon.lemma(tok))
    return frozenset(active), frozenset(bare), frozenset(agent)


def _controlled(toks: tuple[str, ...], k: int) -> bool:
    """The passive at ``k`` has no subject of its own: an infinitive or a gerund ("how to be
    interviewed", "getting paid"), whose undergoer is whoever wants or does it (the speaker)."""
    j = k - 1
    while j >= 0 and toks[j] in ("not", "also", "still", "just"):
        j -= 1
    if j < 0:
        return False
    return toks[j] in ("being", "getting") or (toks[j] in ("be", "get") and j > 0 and toks[j - 1] == "to")


def voice_turned(a: Side, b: Side) -> bool:
    """One verb done to something on one side ("how to interview a job candidate") is undergone
    on the other in a passive with no subject of its own ("how to be interviewed as a job
    candidate", "how to be mentored by a senior engineer"): the speaker moved from doing it to
    having it done."""
    va = _voices(a.text, frozenset(t.lower() for t in a.raw if t.isupper() and len(t) > 1))
    vb = _voices(b.text, frozenset(t.lower() for t in b.raw if t.isupper() and len(t) > 1))
    turned = ((va[0] - vb[0] - vb[2]) & (vb[1] - va[1])) | ((vb[0] - va[0] - va[2]) & (va[1] - vb[1]))
    if not turned:
        return False
    # The same doer on both sides ("how to be promoted by my manager" / "how my manager can promote
    # me") is the same act.
    fa, fb = frame(a), frame(b)
    return any(not any(("subj", verb) in fa[w] and ("subj", verb) in fb[w] for w in fa.keys() & fb.keys())
               for verb in turned)
