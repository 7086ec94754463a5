"""``code_exact``: code is compared as typed. Prose is case-folded; flags, paths, file names,
identifiers, signed numbers and quoted strings are not.

``git branch -d`` deletes a merged branch and ``git branch -D`` any branch; ``ls -r`` reverses
and ``ls -R`` recurses; ``chmod +x`` and ``chmod -x`` undo each other; ``/var/Log`` is not
``/var/log`` on Linux. Read as words, each pair is one request. Here a request's *code tokens*
are the chunks between spaces (edge punctuation trimmed) that are not prose:

* flags and signs: ``-d``, ``--force``, ``+x``, ``-5``;
* paths and file names: anything with ``/`` or ``\\``, ``~/notes``, ``deploy.sh``, ``logs.tar.gz``;
* identifiers and assignments: ``API_TIMEOUT=30``, ``user_id``, ``requests==2.31.0``, ``os.path``,
  ``$HOME``, ``a::b``, ``f()``;
* quoted strings, whole and with their spaces (``','`` is not ``', '``); backticked code chunk by chunk;
* operators and shell symbols typed between spaces (``=``, ``!=``, ``>=``, ``|``, ``&&``, ``>>``, ``**``,
  ``$?``), without the sentence's own punctuation after them ("with >."), compared when both sides
  have some (one on one side only may be prose: "timeout = 30 seconds"), or when one stands in
  backticks ("`ul > li`" / "`ul li`").

* camel case that starts in lower case: ``getUserById``, ``maxRetries`` (not ``iPhone``, ``FitLife``:
  brands, names in any case);
* in a command line (a request with a flag or a path), any word with a capital past its first
  letter or inside the line: ``git checkout -b Feature`` is not ``... feature``.

Backticked code is compared as typed, case and spaces included, unless the other side says it bare
as typed (:func:`_unsaid_code`); in a command line every chunk of symbols is an argument ("run
./start.sh &"); a directory said in dots or a tilde ("..", "~") is a path, and a dotfile's dot is part
of its name (".env" is not "env"); superscripts, subscripts and circled characters keep their form
(:func:`nfkc`: "x²" is not "x2").

Two more readings of the same kind: a word each side types with a deliberate case (a capital past
its first letter and lower-case letters too) in another case ("getUserId" / "getUserID", "XmlParser" /
"XMLParser": :func:`recased`; a side typing it in lower case, in capitals or with one capital in front,
"github" / "Github", types casually); and one sentence, word for word, with its code in other places
("rename getUserId to getUserID" / "rename getUserID to getUserId": :func:`swapped`), the direction
of a rename, a change or a move; a word the request itself types in two cases is code there
(:func:`case_pairs`: "rename Parse to parse"), and so are an operator's operands that are no English
words ("a < b" / "b < a").

These must be the same on both sides, character for character, unless the other side says them
in prose: a path, file name or quoted string on one side only whose every word and number the
other side says as plain words ("extract archive.zip to ./data" / "unzip archive.zip into the data
folder", "add a field 'phone'" / "add a phone field") restates them. A flag or a sign is never
prose, and a token that only one side has in a place where the other has code of its own
("./build" / "/build") is still a difference. Letters with digits and nothing
else (``EC2``, ``OPS-142``, ``iphone15``) are names people type in any case: the entity check
compares them, up to case, as it compares every name. Numbers,
money and plain words are the other checks' business; a capital that only opens a sentence
("Deploy.sh failed") is no difference. :func:`exact_form` is the same reading for the exact-match key: prose
case-folded, code as typed.

The gate ``command_line`` compares two *lines typed for a program*, requests that say no prose at all
("git checkout Main", "docker rmi web", "drop table Users"): no flag marks their words as code, yet
each is an argument, so a word each side says that the other does not (a capital included) is
another request; and the exact-match form keeps such a line's capitals.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from functools import lru_cache

from .. import lexicon
from .registry import GATES, RULE, Pair, register
from .text import ARROW, CARDINALS, CHAT_SPELLINGS

# A quoted string is compared whole; backticks only mark code, whose chunks are read one by one.
_QUOTED = re.compile(r"\"[^\"\n]{1,200}\"|“[^”\n]{1,200}”|(?<!\w)'[^'\n]{1,200}'(?!\w)")
_ABBREVIATION = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]?")  # "e.g.", "U.S.", "a.m.": prose
_LEAD = "([{\"'`“‘<"
_TRAIL = ".,;:!?)]}\"'`”’>"
_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*(?:['’]s?)?")
_NUMBER = re.compile(r"#?\d+(?:[.,:/]\d+)*(?:st|nd|rd|th|am|pm|k|m|s|h)?|[$€£¥]\d+(?:[.,]\d+)*[kKmM]?|\d+(?:[.,]\d+)?[%°]")
_VERSION = re.compile(r"[vV]\d+(?:\.\d+)+")  # "v2.4.1" is the version 2.4.1
_NAME = re.compile(r"[#@][^\W\d_][\w-]*")  # a channel or a handle: the entity check's
_LOWER_CAMEL = re.compile(r"[a-z]{2,}(?:[A-Z][a-z0-9]*)+")  # "getUser", "maxRetries"; not "iPhone", "eBay"
# "..", "~", "~/", "./", "../..": directories. Not a lone "." nor "/": a sentence's full stop left
# alone when quotes or backticks are read away ("from `orders`."), a slash between words ("this / that").
_BARE_PATH = re.compile(r"~/?|\.\./?|\./|(?:\.\./)+(?:\.\.)?")
_ALNUM = re.compile(r"[^\W_]+(?:-[^\W_]+)*")  # letters and digits, hyphens between: "EC2", "OPS-142"
# A comparison or a pipe, typed between spaces: "id = 5" is not "id != 5", "a | b" not "a || b".
_OPERATOR = re.compile(r"&&|[!=<>|&≠≤≥]*[=<>|≠≤≥][!=<>|&≠≤≥]*")
_ARITHMETIC = frozenset({"+", "-", "*", "/", "×", "÷", "−", "**", "^", "%", "//"})
# Symbols only a program reads: a shell's special parameters and the like ("$?", "$!", "$@", "$#").
_SHELL_SYMBOL = re.compile(r"\$[?!@#*$0-9-]|\$\{[^}\s]*\}")
# The closed classes of English that make a sentence prose: articles and possessives, pronouns,
# question words, auxiliaries and modals, prepositions, conjunctions. A request with none of them
# ("git checkout Main", "docker rmi web", "drop table Users") is a line typed for a program.
_PROSE = frozenset(["a", "an", "the", "this", "that", "these", "those", "my", "your", "his", "her", "its", "our", "their", "some", "any", "every", "each", "i", "me", "you", "we", "us", "he", "she", "it", "they", "them", "him", "what", "where", "when", "why", "how", "who", "whom", "whose", "which", "is", "are", "am", "was", "were", "be", "been", "being", "do", "does", "did", "have", "has", "had", "will", "would", "shall", "should", "can", "could", "may", "might", "must", "to", "of", "in", "on", "at", "by", "for", "from", "with", "about", "into", "onto", "than", "via", "between", "through", "during", "before", "after", "and", "or", "but", "if", "because"])


def _capitalised(token: str) -> bool:
    return token[:1].isupper() and not any(c.isupper() for c in token[1:])


def _token(chunk: str) -> str:
    """A chunk between spaces without the punctuation around it; an operator stays whole."""
    return chunk if _OPERATOR.fullmatch(chunk) or _BARE_PATH.fullmatch(chunk) else _trim(chunk)


def _trim(chunk: str) -> str:
    return chunk.lstrip(_LEAD).rstrip(_TRAIL)


def _read(text: str) -> str:
    """``text`` as the code checks read it: Unicode NFKC (:func:`nfkc`), backticks gone (they only mark
    code), an arrow said as "to"."""
    return ARROW.sub(" to ", nfkc(text).replace("`", " "))


# Compatibility forms that NFKC would fold into other characters of another meaning in code and
# formulas: "x²" is not "x2", "x₁" not "x1", "file①" not "file1", "½" not "1/2".
_KEPT_FORMS = ("<super>", "<sub>", "<circle>", "<fraction>")


@lru_cache(maxsize=8192)
def nfkc(text: str) -> str:
    """Unicode NFKC (full-width letters, ligatures and the like as their plain forms), but for
    superscripts, subscripts, circled characters and fractions, which keep their form."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", "".join(
        ch if unicodedata.decomposition(ch).startswith(_KEPT_FORMS) else unicodedata.normalize("NFKC", ch) for ch in text))


_CHAT = frozenset({"w/", "w/o", "b/c", "b4", "a/c", "n/a"})  # chat spellings with a slash: words


@lru_cache(maxsize=16384)  # asked for every token of both requests, by several checks
def kind(token: str) -> str | None:
    """``"exact"`` (compared as typed), ``"name"`` (a name, compared up to case by the entity check)
    or ``None`` (prose, a number)."""
    if token.casefold() in _CHAT:
        return None
    if token.endswith(("'s", "’s")) and len(token) > 2:
        token = token[:-2]  # a possessive: "draft.docx's name"
    if _BARE_PATH.fullmatch(token):
        return "exact"  # ".", "..", "~", "/", "../..": a directory, as a command's argument
    if not token.isascii() and any(unicodedata.decomposition(c).startswith(_KEPT_FORMS) for c in token):
        return "exact"  # "x²", "x₁", "file①": a formula's or a name's own characters
    if not any(c.isalnum() for c in token) or _NUMBER.fullmatch(token) or _VERSION.fullmatch(token) or _NAME.fullmatch(token):
        return None
    if _ABBREVIATION.fullmatch(token):
        return None
    if _WORD.fullmatch(token):
        if _LOWER_CAMEL.fullmatch(token):
            return "exact"  # getUserById: an identifier
        return "name" if re.search(r"[a-z][A-Z]", token) else None  # FitLife, iPhone: a brand, in any case
    if token[0] in "+-" and len(token) > 1:
        return "exact"  # a flag or a sign
    if _ALNUM.fullmatch(token):
        return "name"
    return "exact"


@lru_cache(maxsize=8192)
def code_tokens(text: str) -> Counter[str]:
    """The tokens of ``text`` compared as typed, quoted strings included whole."""
    text = _read(text)
    exact: Counter[str] = Counter()
    chunks = _QUOTED.sub(" ", text).split()
    command_line = _command_line(chunks)
    for quoted in _QUOTED.findall(text):
        # As typed, its spaces too ("split on ','" is not "split on ', '"); in a command line its
        # quotes too: a shell expands "$HOME" and not '$HOME'.
        exact["«" + (quoted if command_line else quoted[1:-1]) + "»"] += 1
    starts = True
    for i, chunk in enumerate(chunks):
        token = _token(chunk)
        if token.endswith(("'s", "’s")) and len(token) > 2:
            token = token[:-2]  # a possessive is not part of the code: "draft.docx's name" names draft.docx
        if _key(chunk, chunks[i + 1] if i + 1 < len(chunks) else ""):
            exact[token] += 1  # "timeout-minutes: 30", "retries: 3": a setting's key, as typed
            starts = False
            continue
        if starts and _capitalised(token):
            token = token[0].lower() + token[1:]  # a capital that only starts a sentence ("Deploy.sh failed")
        starts = chunk[-1:] in ".!?:"
        if kind(token) == "exact" or (command_line and any(c.isupper() for c in token)):
            exact[token] += 1
    return exact


_KEY = re.compile(r"[A-Za-z_]\w*(?:[._-]\w+)+:")  # words joined by "-", "_" or ".": a plain word and a colon may be prose
_VALUE = re.compile(r"-?\d[\d.,]*\w*|true|false|yes|no|null|none|on|off|[\"'].*", re.IGNORECASE)


def _key(chunk: str, following: str) -> bool:
    """``chunk`` is a setting's key: words joined by "-", "_" or "." and a colon, followed by a value
    (a number, a boolean, a quoted string), as in YAML or a config line ("timeout-minutes: 30",
    "max_retries: 3"). Prose that introduces a list or a clause with a colon ("note: 5 items are
    missing", "road trip: Denver to SLC") has a plain word there."""
    return bool(_KEY.fullmatch(chunk)) and bool(_VALUE.fullmatch(following.rstrip(".,;")))


def _command_line(chunks: list[str]) -> bool:
    """A request with a flag or a path: every capital in it is code."""
    return any(kind(t) == "exact" and t[:1] in "-+/~." for t in map(_token, chunks))


# Inside a line: "Okay, TypeScript React.", "road trip: Denver to SLC" are sentences, and so is one
# that ends in "?" or "!" ("Sounds fun!"); a line may end with a full stop: "Run git checkout Main."
_SENTENCE_MARKS = ",.;:!?"
_POLITE = frozenset({"please", "thanks", "thank", "now"})  # said to the agent, not to the program


def _bare(chunks: list[str]) -> bool:
    """Two words or more and no prose: no article, pronoun, question word, auxiliary, preposition or
    conjunction, no sentence punctuation ("git checkout Main", "docker rmi web", "drop table Users"):
    a line typed for a program."""
    words = [t.lower() for t in map(_token, chunks) if _WORD.fullmatch(t)]
    return (len(words) >= 2 and not any(w in _PROSE or "'" in w or "’" in w for w in words)
            and not any(c[-1] in _SENTENCE_MARKS and kind(_token(c)) != "exact" for c in chunks[:-1])
            and not chunks[-1].endswith(("?", "!")))


@lru_cache(maxsize=8192)
def line_words(text: str) -> Counter[str]:
    """The words of a line typed for a program (:func:`_bare`), as typed but for a capital that only
    opens it, chat spellings ("pls") left out; empty for prose. Two such lines that each say a word
    the other does not are different requests: "docker rm web" / "docker rmi web", "git rebase main"
    / "git merge main", "git checkout Main" / "... main" (a word English may not know, may call a
    synonym, or may fold); a word said on one side only ("run cargo build" / "cargo build") is the
    other checks' business."""
    chunks = _QUOTED.sub(" ", _read(text)).split()
    if not _bare(chunks):
        # A line after a lead-in set off by a comma or colon ("pls, git checkout main", "sorry to ask
        # again: docker rm web") is that line: what comes before it never changes what it runs.
        ends = [i for i, c in enumerate(chunks[:-1]) if c[-1] in ",:;" and kind(_token(c)) != "exact"]
        chunks = chunks[ends[-1] + 1:] if ends else []
        if not _bare(chunks):
            return Counter()
    words = [t for t in map(_token, chunks) if t and t.lower() not in CHAT_SPELLINGS and t.lower() not in _POLITE]
    if words and _capitalised(words[0]):
        words[0] = words[0].lower()
    return Counter(words)


@lru_cache(maxsize=8192)
def operators(text: str) -> Counter[str]:
    """The comparisons, pipes, redirections, arithmetic and shell symbols typed between spaces ("id = 5",
    "a || b", "size > 5 GB", "balance + 50", "with >>", "`$?`", "`2 ** 10`"; a hyphen between spaces
    is a dash in prose, so it counts only against a side that has operators too). Backticks and the
    sentence's own punctuation after a chunk ("with >.") are not part of it."""
    return Counter(c for c, _ in _symbol_chunks(text))


@lru_cache(maxsize=8192)
def _symbol_chunks(text: str) -> tuple[tuple[str, bool], ...]:
    """Each operator or symbol chunk of ``text`` and whether it stands inside backticks (code for sure)."""
    out: list[tuple[str, bool]] = []
    for n, span in enumerate(nfkc(text).split("`")):
        for chunk in span.split():
            chunk = _without_stop(chunk)
            if symbolic(chunk):
                out.append((chunk, n % 2 == 1))
    return tuple(out)


def _without_stop(chunk: str) -> str:
    """``chunk`` without the sentence's full stop, comma, colon or semicolon after it, where two
    characters or more are left ("with >>." is ">>")."""
    stripped = chunk.rstrip(".,;:")
    return stripped if len(stripped) > 1 else chunk


# A sentence's own punctuation standing alone: a dash, an ellipsis, a full stop, comma, colon or semicolon.
_PUNCTUATION = frozenset({"–", "—", "...", "…", ".", ",", ";", ":"})
# Chunks of symbols only that prose writes between spaces: that punctuation, a lone question or
# exclamation mark ("&" in prose, "Tom & Jerry", is compared only against a side with symbols of its own).
_PROSE_SYMBOLS = _PUNCTUATION | {"?", "!", "?!", "!?"}


def symbolic(chunk: str) -> bool:
    """An operator, a shell symbol or a chunk of ASCII symbols only that is not prose's: "->", "=>",
    "??", ":=", "|", "..", "~", "/", ".*", "[]", ":)"; a hyphen between spaces counts as arithmetic;
    a lone full stop, comma, colon or semicolon is a sentence's, an emoji no symbol."""
    if _OPERATOR.fullmatch(chunk) or chunk in _ARITHMETIC or _SHELL_SYMBOL.fullmatch(chunk):
        return True
    return bool(chunk) and all(c in _SYMBOL_CHARS for c in chunk) and chunk not in _PROSE_SYMBOLS


_SYMBOL_CHARS = frozenset(string.punctuation) | frozenset("≠≤≥×÷−")


_BACKTICKED = re.compile(r"`([^`\n]+)`")


def _unsaid_code(mine: str, other: str) -> bool:
    """A span ``mine`` writes in backticks that ``other`` neither writes in backticks nor says bare,
    exactly as typed (case, spaces, symbols): backticks mark code, and code is compared as typed
    ("search for `TODO`" / "search for `todo`", "`a  b`" / "`a b`")."""
    spans = Counter(_BACKTICKED.findall(mine)) - Counter(_BACKTICKED.findall(other))
    bare = other.replace("`", " ")
    return any(not span.strip() or not re.search(rf"(?<![\w`]){re.escape(span)}(?![\w`])", bare) for span in spans)


def _line_symbols(text: str) -> Counter[str]:
    """The chunks of ASCII symbols only of ``text``, "&" and a lone "!" included (a command line's
    arguments); a dash, an ellipsis and a lone full stop, comma, colon or semicolon (a sentence's) not."""
    chunks = (_without_stop(c) for c in nfkc(text).replace("`", " ").split())
    return Counter(c for c in chunks if c and all(ch in _SYMBOL_CHARS for ch in c) and c not in _PUNCTUATION)


@lru_cache(maxsize=8192)
def _program_line(text: str) -> bool:
    """A command line: a request with a flag or a path ("run ./start.sh &", "cd ../src"; not
    "timeout = 30 seconds", where an operator may be prose)."""
    return _command_line(_QUOTED.sub(" ", _read(text)).split())


def _coded_operators(text: str) -> Counter[str]:
    """The operators and symbols ``text`` writes inside backticks."""
    return Counter(c for c, coded in _symbol_chunks(text) if coded)


def exact_form(text: str) -> str:
    """The exact-match form of a request: Unicode NFKC (:func:`nfkc`), whitespace collapsed, prose
    case-folded, code as typed: flags, paths, identifiers, operators, quoted strings with their
    spaces, words typed with a deliberate case ("DataFrame") or in two cases by the request itself
    ("rename Parse to parse"), a command line's capitals past its first letter, and backticked code
    verbatim, backticks included. An exact match is served with no other check once
    :func:`exact_alike` agrees."""
    spans: list[str] = []

    def hold(match: re.Match[str]) -> str:  # backticked code, as typed: no case folded, no space collapsed
        spans.append(match.group(0))
        return f"\x00{len(spans) - 1}\x00"

    whole = nfkc(text).replace("`", " ")
    chunks = ARROW.sub(" to ", _QUOTED.sub(" ", whole)).split()
    text = nfkc(_BACKTICKED.sub(hold, text)).replace("`", " ")
    command_line = _command_line(chunks) or _bare(chunks)  # the command_line gate compares bare lines' case
    paired = case_pairs(whole)
    out: list[str] = []
    last = 0
    for match in _QUOTED.finditer(text):
        prose = _fold_prose(text[last:match.start()], starts=not text[:match.start()].strip(),
                            command_line=command_line, paired=paired)
        out.append(_SPACES.sub(" ", prose))
        out.append(match.group(0))  # a quoted string as typed, its spaces too
        last = match.end()
    out.append(_SPACES.sub(" ", _fold_prose(text[last:], starts=not text[:last].strip(), command_line=command_line,
                                            paired=paired)))
    return _HELD.sub(lambda m: spans[int(m.group(1))], "".join(out).strip())


_HELD = re.compile(r"\x00(\d+)\x00")


_SPACES = re.compile(r"\s+")


@lru_cache(maxsize=8192)
def case_pairs(text: str) -> frozenset[str]:
    """The words ``text`` itself types in two cases or more ("rename Parse to parse", "return None
    instead of none", "from Path to PATH"): the request makes the case a difference, so each keeps it.
    A capital that only opens a sentence is not a case of its own."""
    seen: dict[str, set[str]] = {}
    for token in _sentence_words(text):
        if any(c.isalpha() for c in token):
            seen.setdefault(token.casefold(), set()).add(token)
    return frozenset(t for spellings in seen.values() if len(spellings) > 1 for t in spellings)


def _fold_prose(text: str, *, starts: bool, command_line: bool, paired: frozenset[str] = frozenset()) -> str:
    """Case-fold the chunks of ``text`` that are not code, keeping the spaces between them."""

    def fold(match: re.Match[str]) -> str:
        nonlocal starts
        chunk = match.group(0)
        token = _token(chunk)
        if starts and _capitalised(token):
            chunk = chunk.replace(token, token[0].lower() + token[1:], 1)
        starts = chunk[-1:] in ".!?:"
        token = _token(chunk)
        keep = kind(token) == "exact" or _cased(token) or token in paired or \
            (command_line and any(c.isupper() for c in token))
        return chunk if keep else chunk.casefold()

    return re.sub(r"\S+", fold, text)


def _cased(token: str) -> bool:
    """A word typed with a deliberate case: a capital past its first letter and lower-case letters too
    ("DataFrame", "getUserID", "HTTPClient", "iPhone"); not "Restart", "RESTART", "restart"."""
    letters = [c for c in token if c.isalpha()]
    return any(c.isupper() for c in letters[1:]) and any(c.islower() for c in letters)


@lru_cache(maxsize=8192)
def recased(a: str, b: str) -> bool:
    """A word each side types with a deliberate case, in another case: both with a capital past the
    first letter and lower-case letters too (:func:`_cased`: "getUserId" / "getUserID", "HttpClient" /
    "HTTPClient"). A side that types it in lower case ("github") is typing casually, and so is one
    with one capital in front against one with capitals past it: brands and acronyms are often
    typed so ("Github" / "GitHub", "Json" / "JSON"), which leaves "Path" / "PATH" unread."""
    words_a, words_b = set(_sentence_words(_read(a))), set(_sentence_words(_read(b)))
    return any(_cased(x) and _cased(y) for x in words_a - words_b for y in words_b - words_a
               if x.casefold() == y.casefold())


def _sentence_words(text: str) -> list[str]:
    """The words of ``text`` (as read already) as typed, but for a capital that only opens a sentence."""
    out = []
    starts = True
    for chunk in text.split():
        token = _token(chunk)
        if starts and _capitalised(token):
            token = token[0].lower() + token[1:]
        starts = chunk[-1:] in ".!?:"
        if token:
            out.append(token)
    return out


def _slots(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``text`` as a frame and what fills it: each code token, operator or deliberately cased word
    becomes a slot ("rename ◊ to ◊"), the rest is case-folded prose; and the slots' fillers in order."""
    read = nfkc(text).replace("`", " ")  # an arrow stays a symbol here: "-> to =>" is not "=> to ->"
    paired = case_pairs(read)
    chunks = _QUOTED.sub(lambda m: " " + m.group(0).replace(" ", "\u00a0") + " ", read).split()
    slot = [chunk[:1] in "\"'“" and len(chunk) > 1 or symbolic(chunk) or kind(_token(chunk)) == "exact"
            or _cased(_token(chunk)) or _token(chunk) in paired for chunk in chunks]
    for i, chunk in enumerate(chunks):  # an operator's operands are slots too: "a < b" / "b < a"
        operands = chunks[i - 1:i] + chunks[i + 1:i + 2]
        if (_OPERATOR.fullmatch(chunk) or chunk in _ARITHMETIC) and len(operands) == 2 \
                and not any(_token(o).isalpha() and len(_token(o)) > 2 and lexicon.known(_token(o).lower()) for o in operands):
            slot[i - 1] = slot[i + 1] = True
    frame = tuple("◊" if is_slot else chunk.casefold() for chunk, is_slot in zip(chunks, slot))
    fillers = tuple(chunk if symbolic(chunk) else _token(chunk) or chunk for chunk, is_slot in zip(chunks, slot) if is_slot)
    return frame, fillers


@lru_cache(maxsize=8192)
def swapped(a: str, b: str) -> bool:
    """The same sentence with its code in other slots: "rename getUserId to getUserID" / "rename
    getUserID to getUserId", "change `i < n` to `i <= n`" / the other way round. The frames around
    the code are the same word for word, the fillers are the same, and their order is not."""
    frame_a, fill_a = _slots(a)
    frame_b, fill_b = _slots(b)
    return len(fill_a) > 1 and frame_a == frame_b and fill_a != fill_b and sorted(fill_a) == sorted(fill_b)


def exact_alike(request: str, candidate: str) -> bool:
    """Whether two requests of one exact-match form are one request to the code checks too: an exact
    match is served only when these agree (``SemanticCache``), so that a reading the form does not
    keep (it folds prose's case, "STOCK" is "stock") can never serve a pair the checks would refuse."""
    return request == candidate or (GATES["code_exact"](Pair(request, candidate)) is None
                                    and GATES["command_line"](Pair(request, candidate)) is None)


class CodeExact:
    """The rule gate ``code_exact``: the code tokens of the two requests differ."""

    kind = RULE
    name = "code_exact"

    def __call__(self, pair: Pair) -> str | None:
        mine_ops, their_ops = operators(pair.request), operators(pair.candidate)
        if mine_ops and their_ops and mine_ops != their_ops:
            return self.name  # "id = 5" / "id != 5"; an operator on one side only may be prose ("timeout = 30s")
        if _coded_operators(pair.request) - their_ops or _coded_operators(pair.candidate) - mine_ops:
            return self.name  # inside backticks an operator is code, even on one side only ("`.nav > li`" / "`.nav li`")
        if (_program_line(pair.request) or _program_line(pair.candidate)) and \
                _line_symbols(pair.request) != _line_symbols(pair.candidate):
            return self.name  # in a command line every symbol is an argument ("run ./start.sh &", "git checkout .")
        if _unsaid_code(pair.request, pair.candidate) or _unsaid_code(pair.candidate, pair.request):
            return self.name
        if recased(pair.request, pair.candidate) or swapped(pair.request, pair.candidate):
            return self.name
        mine, theirs = code_tokens(pair.request), code_tokens(pair.candidate)
        if mine == theirs:
            return None
        if all(_restated(t, pair.candidate) for t in mine - theirs) and all(_restated(t, pair.request) for t in theirs - mine):
            return None
        return self.name


_PARTS = re.compile(r"[^\W\d_]+|\d+")
_PATH = re.compile(r"(?=[^/.]*[/.])[\w.~/-]+")  # a path or a file name: words with a slash or a dot


@lru_cache(maxsize=8192)
def prose_words(text: str) -> frozenset[str]:
    """The words and numbers ``text`` says in prose (outside its code tokens), lower-case, number
    words as digits."""
    text = _read(text)
    chunks = _QUOTED.sub(" ", text).split()
    if _command_line(chunks):
        return frozenset()  # a command line's words are its arguments, not prose ("rsync -a src dest")
    out: set[str] = set()
    for chunk in chunks:
        token = _trim(chunk)
        if kind(token) == "exact":
            continue
        for part in _PARTS.findall(token):
            out.add(part if any(c.isupper() for c in part[1:]) else CARDINALS.get(part.lower(), part.lower()))
    return frozenset(out)


_DOTTED_NAME = re.compile(r"\.[^\W\d_]")  # ".env", ".git", ".header": not "./data", "../src"


def _restated(token: str, other: str) -> bool:
    """``token`` (a code token of one side only) is a quoted string, a relative path or a file name, and the other side says each of
    its words and numbers in prose (a plural or other form of the word counts; a word with a capital
    past its first letter only as typed)."""
    if not (token.startswith("«") or _PATH.fullmatch(token)) or token[:1] in "/+-#" or _DOTTED_NAME.match(token):
        return False  # only a quoted string, a relative path or a file name; never a flag, a sign, ":main",
        # "$HOME", nor a name whose leading dot is the point (".env", ".git", ".header")
    # a part with a capital past its first letter ("userID") is said only as typed
    parts = [p if any(c.isupper() for c in p[1:]) else p.lower() for p in _PARTS.findall(token.strip("«»"))]
    if not parts:
        return False
    said = prose_words(other)
    said_lemmas = set().union(*(lexicon.lemmas(w) for w in said if w.isalpha())) if said else set()
    return all(p in said or (p.isalpha() and p.islower() and len(p) > 1 and lexicon.lemmas(p) & said_lemmas) for p in parts)


register(CodeExact())


class CommandLine:
    """The rule gate ``command_line``: two lines typed for a program (:func:`line_words`) that both
    start with a program's name (:func:`_program_first`) and say other words; or that each say a
    word the other does not, one of them a word English does not know or one that differs from the
    other side's only in case. An imperative's known words changed are the other checks' business
    ("resume playback" / "continue playback" is a rewording), and so are numbers."""

    kind = RULE
    name = "command_line"

    def __call__(self, pair: Pair) -> str | None:
        mine, theirs = line_words(pair.request), line_words(pair.candidate)
        if not (mine and theirs) or mine == theirs:
            return None
        if _program_first(pair.request) and _program_first(pair.candidate):
            # a program's arguments, not English: "git checkout main" / "... master", "npm run build"
            # / "npm build" (a word on one side only is another subcommand or argument too)
            return self.name
        if not (mine - theirs and theirs - mine):
            return None
        changed = [w for w in (mine - theirs) + (theirs - mine) if not _NUMBER.fullmatch(w) and w.lower() not in CARDINALS]
        folded = Counter(w.lower() for w in changed)
        if any(n > 1 for n in folded.values()) or any(_foreign(w) for w in changed):
            return self.name  # a capital, or a word only the program knows
        return None


def _program_first(text: str) -> bool:
    """The line starts with a program's name, a word English has no verb for ("git", "docker",
    "kubectl"), not with an imperative ("resume playback", "order 24 bagels"): its other words are
    the program's arguments."""
    first = next(iter(line_words(text)), "").lower()
    return bool(first) and "v" not in lexicon.pos(first)  # as typed: "docker" is no form of "dock"


def _foreign(word: str) -> bool:
    """A word English does not know ("rm", "rmi", "kubectl", "wget"): only the program it is typed for
    knows what it means, so it is compared as typed. A number is the number checks' business."""
    low = word.lower()
    return bool(_WORD.fullmatch(word)) and not lexicon.known(low) and low not in CARDINALS


register(CommandLine())
