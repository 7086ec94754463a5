"""Social talk that asks for nothing: greetings, thanks, pleasantries, hedges and fillers.

"Hi there! Could you restart the api if it's not too much trouble? Thanks so much :)" asks what
"restart the api" asks. Read word by word, its chatter misleads the checks: "good morning" has a
time of day, "not too much trouble" a negation, a nickname or an emoticon looks like a name. So
before any check (and before the request is embedded), :func:`strip_chatter` removes it: at the
start (greetings, fillers, "quick question"), at the end (thanks, "no rush", "have a nice day")
and as a parenthetical (", if you don't mind,", "real quick"). Only whole phrases of these
closed classes of English discourse go; what is left keeps its spelling and case.
"""

from __future__ import annotations

import re

# A smiley or pictograph typed between words ends a phrase as a stop does ("morning :) add eggs ...");
# it stands as _SEP while the chatter is taken off, and as a space after. SENTENCE_MARK marks where a
# pictograph ends a sentence (_symbols_out with breaks): the checks that read sentences see it.
_SEP = "\x1f"
SENTENCE_MARK = "¶"

_GREETING = (r"(?:(?:hi+|hel+o+|he+y+|heya|hiya|howdy|yo+|greetings|good\s+(?:morning|afternoon|evening|day))"
             r"(?:\s+(?:there|all|team|everyone|folks|guys|bot|assistant|buddy|mate|friend))?"
             rf"|(?:morning|evening)(?=\s*(?:[,.!{_SEP}{SENTENCE_MARK}]|$)))")  # a bare "morning" greets only before a stop (or a smiley)
# Longer phrases first: an alternation takes the first that fits.
_THANKS = (r"(?:thanks?\s+(?:a\s+lot|so\s+much|a\s+bunch|a\s+ton|in\s+advance|again)"
           r"|thank\s+you\s+(?:so\s+much|very\s+much|in\s+advance)|you(?:'re|\s+are|re)\s+(?:the\s+best|a\s+star|awesome)"
           r"|many\s+thanks|much\s+appreciated|much\s+obliged|(?:i\s+)?appreciate\s+it|you\s+rock|k\s+thx|ok(?:ay)?\s+thanks"
           r"|thanks|thank\s+you|thx|ty|tysm|cheers)")
_PLEASANTRY = (r"(?:(?:i\s+)?hope\s+you(?:'re|\s+are|re)\s+(?:well|doing\s+well|good)|(?:i\s+)?hope\s+(?:your|the)\s+"
               r"(?:day|week|weekend)(?:'s|\s+is)\s+going\s+well|how\s+are\s+you(?:\s+doing)?(?:\s+today)?"
               r"|(?:i\s+)?hope\s+(?:all|everything)(?:'s|\s+is)\s+(?:well|good|ok|okay)"
               r"|(?:i\s+)?hope\s+you\s+had\s+a\s+(?:good|nice|great|lovely)\s+(?:day|week|weekend|holiday|break)"
               r"|(?:i\s+)?hope\s+this\s+(?:isn't|is\s+not|isnt)\s+a\s+(?:dumb|stupid|silly)\s+question"
               r"|sorry\s+to\s+(?:bother|bug|trouble)\s+(?:you|u|ya)(?:\s+again)?|no\s+rush|no\s+hurry|no\s+worries(?:\s+if\s+not)?"
               r"|have\s+a\s+(?:good|nice|great|lovely)\s+(?:one|day|weekend|evening|night))")
_HEDGE = (r"(?:if\s+(?:it(?:'s|\s+is|s)\s+not\s+too\s+much\s+(?:trouble|bother|work)|you\s+(?:don't|do\s+not|dont)\s+mind"
          r"|you\s+can|possible|that(?:'s|\s+is|s)\s+(?:ok|okay|alright|fine)|you\s+get\s+a\s+(?:chance|sec|second|minute|moment))"
          r"|when(?:ever)?\s+you\s+(?:get|have)\s+a\s+(?:chance|sec|second|minute|moment)|whenever\s+you\s+can"
          r"|real\s+quick|quickly\s+please)")
_FILLER = (r"(?:ok(?:ay)?|alright|so|um+|uh+|erm|ugh+|argh+|hmm+|quick\s+question|quick\s+one|real\s+quick"
           r"|btw|by\s+the\s+way|lol|haha+|hehe|yay|oops"
           r"|(?:well|oh|cool|great|nice|awesome|perfect|sure|certainly|absolutely|of\s+course|got\s+it|sounds\s+good"
           r"|no\s+problem|understood|noted|right)(?=\s*[,.!]))")
# What an assistant says to be kind: an apology, an offer, a promise to help (the user's turns have them too).
_COURTESY = (r"(?:(?:i'?m|i\s+am|so|very)\s+sorry(?:\s+(?:to\s+hear\s+(?:that|it)|about\s+that))?"
             r"|sorry(?:\s+(?:to\s+hear\s+(?:that|it)|about\s+that))?|(?:i'?d\s+be\s+)?happy\s+to\s+help"
             r"|i\s+can\s+help(?:\s+(?:you\s+)?with\s+that)?|let\s+me\s+help(?:\s+you)?|glad\s+to\s+help"
             r"|great\s+question|good\s+question|here\s+you\s+go|how\s+(?:can|may)\s+i\s+help(?:\s+you)?(?:\s+today)?"
             r"|what\s+can\s+i\s+do\s+for\s+you(?:\s+today)?|what\s+do\s+you\s+need(?:\s+today)?)")
# Emoticons and pictographs (emoji and dingbats; not arrows, degrees or currency signs, which say something).
_EMOTICON = re.compile(r"(?<!\w)(?:[:;=]-?[)(/\\|DPp]+|<3|\^_\^|xD)(?!\w)")

_STOP = rf"[\s,.;:!?~\-–—{_SEP}{SENTENCE_MARK}]"  # what may separate chatter from the rest
_LEADING = re.compile(rf"^(?:{_STOP}*(?:{_GREETING}|{_COURTESY}|{_FILLER}|{_PLEASANTRY}|{_THANKS})(?={_STOP}|$))+{_STOP}*", re.IGNORECASE)
_TRAILING = re.compile(rf"{_STOP}+(?:(?:{_THANKS}|{_PLEASANTRY}|{_HEDGE})(?:{_STOP}+|$))+$", re.IGNORECASE)
_INSIDE = re.compile(rf"(?:,\s*(?:{_HEDGE})\s*(?=,|$)|\s+(?:real\s+quick|quickly\s+please)(?=\W|$))", re.IGNORECASE)
# A hedge that opens the request, set off by punctuation ("If it's not too much trouble, show ..."):
# without it ("if you can restart the server, ...") the words ask whether, and stay.
_OPENING_HEDGE = re.compile(rf"^{_STOP}*(?:{_HEDGE})\s*[,;:!.\-–—]+\s*", re.IGNORECASE)


def _pictograph(c: str) -> bool:
    code = ord(c)
    return code >= 0x1F000 or 0x2600 <= code <= 0x27BF or code in (0xFE0F, 0x200D)


_PICTOGRAPHS = re.compile(r"\s*[\U0001F000-\U0010FFFF\u2600-\u27BF\uFE0F\u200D]+\s*")


def _symbols_out(text: str, breaks: bool = False) -> str:
    """``text`` without emoticons and pictographs; with ``breaks``, a pictograph typed between two
    sentences ends the first ("my mac is full 🙃 how do i free up space": two sentences), marked by
    :data:`SENTENCE_MARK` (no word, no clause break: only the checks that read sentences see it)."""
    text = _EMOTICON.sub(f" {_SEP} ", text)
    if breaks:
        text = _PICTOGRAPHS.sub(lambda m: f" {_SEP} " if not m.string[:m.start()].strip() or m.string[:m.start()].rstrip()[-1] in ".!?,;:"
                                else f" {SENTENCE_MARK} ", text)
    return "".join(f" {_SEP} " if _pictograph(c) else c for c in text)


def strip_chatter(text: str, breaks: bool = False) -> str:
    """``text`` without the social talk around its request; the text itself when nothing else is left.
    ``breaks``: a pictograph between two sentences leaves :data:`SENTENCE_MARK` (the checks read it)."""
    out = without_chatter(text, breaks)
    return out if out else " ".join(text.split())


def without_chatter(text: str, breaks: bool = False) -> str:
    """``text`` without its social talk; ``""`` when it was all social talk ("hi!", "thanks so much")."""
    out = _symbols_out(text, breaks)
    for _ in range(3):  # "hey, hi! ok so ..." : phrases follow one another
        before = out
        out = _LEADING.sub("", out)
        out = _TRAILING.sub("", out)
        out = _INSIDE.sub("", out)
        out = _OPENING_HEDGE.sub("", out)
        if out == before:
            break
    out = " ".join(out.replace(_SEP, " ").split())
    return out if any(c.isalnum() for c in out) else ""
