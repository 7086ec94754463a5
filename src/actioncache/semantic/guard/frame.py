"""Who does what to whom: each participant of a request (a person, a pronoun for the speaker or
another person, a name, a value, a thing) and the parts it plays.

A request is cut into noun phrases (from a determiner, a possessive, a pronoun, a name or a word
that can only be a noun, over the nouns, adjectives, names and numbers after it). A phrase's part
is read from what governs it:

* a preposition: ``("to", "from address")``, the preposition and the two words before it (what it
  attaches to: "the reply-to address to X" and "the from address to X" are two slots);
* a verb before it: ``("obj", "owe")``; a second object right after a first one is ``("obj2", verb)``;
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
                                "could", "may", "might", "must", "not", "to", "also", "still", "just", "really"})
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


def _verb(tok: str) -> bool:
    return tok not in lexicon.FUNCTION_WORDS and "v" in lexicon.pos(lexicon.lemma(tok))


def _only_noun(tok: str) -> bool:
    kinds = lexicon.pos(lexicon.lemma(tok)) or lexicon.pos(tok)
    return bool(kinds) and "v" not in kinds and ("n" in kinds or "a" in kinds)


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


def _inside_phrase(tok: str, i: int) -> bool:
    """A word that continues a noun phrase: a noun or adjective (even one that can be a verb), a name,
    a number, a possessive mark."""
    if tok == _POSS_MARK:
        return True
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


def noun(tok: str) -> str:
    """The base form of a noun ("owners" -> "owner"; ``lexicon.lemma`` may give a verb: "manager" -> "manage")."""
    forms = [w for w in lexicon.lemmas(tok) if "n" in lexicon.pos(w)]
    return min(forms, key=lambda w: (len(w), w)) if forms else tok


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
    toks = tuple(f"{t}." if t in capitals and t in PERSON_OF else t for t in _tokens(text))
    n = len(toks)
    phrases: list[tuple[int, int]] = []  # [start, end)
    i = 0
    while i < n:
        if toks[i] != _POSS_MARK and (_starts_phrase(toks[i], i) or _object_of_command(toks, i)):
            j = i + 1
            if toks[i] not in PERSON_OF or toks[i] in _POSSESSIVE:
                while j < n and (_inside_phrase(toks[j], j) or toks[j] in _DETERMINERS and toks[j - 1] == _POSS_MARK):
                    j += 1
            if toks[i] in ("her", "his") and (j == i + 1):
                pass  # "her" with nothing after is an object pronoun, "his" a pronoun of its own
            phrases.append((i, j))
            i = j
        else:
            i += 1
    roles: dict[int, Role] = {}
    for index, (start, _end) in enumerate(phrases):
        roles[index] = _role(toks, phrases, index, roles)
        # A list's members play one part: a member after "and", "or" or a comma right after the member
        # before it, with no verb of its own, plays that member's part ("methods, results and limitations").
        if index and roles[index][0] in ("none", "pre") and start >= 1 and toks[start - 1] in ("and", "or", "|") \
                and phrases[index - 1][1] == start - 1:
            roles[index] = roles[index - 1]
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
                out.setdefault(who, set()).add(("poss", noun(toks[end - 1]), *role))
            else:
                out.setdefault(who, set()).add(role)
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
    if index and phrases[index - 1][1] == start and roles.get(index - 1, ("",))[0] == "obj":
        return ("obj2", roles[index - 1][1])  # "give the dog the cat's food"
    if before != "|" and before not in lexicon.FUNCTION_WORDS - {"get", "give", "tell", "show", "find", "make", "put",
                                                                "set", "check", "see", "know", "want", "like"} \
            and _verb(before):
        return ("obj", lexicon.lemma(before))
    if before in ("give", "tell", "show", "find", "make", "put", "set", "check", "see", "know", "want", "like"):
        return ("obj", before)
    k = end
    while k < len(toks) and toks[k] in _AUXILIARIES:
        k += 1
    if k == end and k < len(toks) and toks[k].endswith("ing"):
        return ("none",)  # "my grocery spending": a noun, not a verb this phrase is the subject of
    if k < len(toks) and toks[k] != "|" and toks[k] not in PREPOSITIONS and (_verb(toks[k]) or toks[k] in _BE):
        verb = toks[k]
        if k + 1 < len(toks) and verb in _BE and _verb(toks[k + 1]) and _passive(toks, k + 1):
            return ("obj", lexicon.lemma(toks[k + 1]))
        if _passive(toks, k):
            return ("obj", lexicon.lemma(verb))
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
        lost = holders_a[r] - holders_b[r]
        gained = holders_b[r] - holders_a[r]
        # A pronoun of the third person may be the other side's noun ("check their logs" / "check
        # the logs of the pods"): it trades a part only with another pronoun.
        if any(x != y and (x in _PRONOUNS) == (y in _PRONOUNS) or (x in _PRONOUNS and x[0] != "3")
               or (y in _PRONOUNS and y[0] != "3") for x in lost for y in gained):
            return True
    return False
