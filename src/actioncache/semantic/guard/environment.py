"""``environment``: the two requests act on another deployment environment.

"restart kafka in production" / "restart kafka on the dev cluster", "wipe the cache on my laptop" /
"... on the prod servers": the same command on another target is another request, and the words
that name a target are few (a closed class of the trade: production, staging, development, test,
QA, UAT, sandbox, the local machine). A word that always names one ("production", "prod",
"staging", "sandbox", "localhost", "locally") counts wherever it stands, but for "the production of
insulin"; one that is also an everyday word ("dev", "test", "local", "live", "laptop") counts where
a target stands: after a preposition of place or direction ("in dev", "on my laptop", "to test")
with nothing after it but the end or a preposition, or before a word for a part of a system ("the
dev cluster", "the test database", "the local repo"; not "the test account": a test user's).

Two different environments refuse, and so does one named on one side only, unless it stands in a
clause apart that tells the story around the request ("prod is on fire lol, restart nginx", see
``text.backstory``). Short forms are one environment ("prod" / "production", "dev" / "development").
"""

from __future__ import annotations

import re

from .registry import rule
from .text import Side, backstory

# Each word's environment. Always a target:
_NAMES = {"production": "production", "prod": "production", "prd": "production", "staging": "staging",
          "stg": "staging", "preprod": "staging", "sandbox": "sandbox", "uat": "uat", "qa": "qa",
          "localhost": "local", "locally": "local"}
# A target only where a target stands (also everyday words):
_WORDS = {"dev": "development", "development": "development", "test": "test", "testing": "test",
          "local": "local", "live": "production", "laptop": "local", "desktop": "local", "machine": "local",
          "computer": "local", "stage": "staging"}
# Words for where a target is: after one of these prepositions (past an article or possessive) ...
_PLACES = frozenset({"in", "on", "to", "into", "against", "from", "onto"})
_DETERMINERS = frozenset({"the", "my", "our", "your", "a", "their", "this", "that"})
# ... or before one of these parts of a system (a closed class of the trade).
_PARTS = frozenset({"cluster", "clusters", "server", "servers", "environment", "environments", "env", "envs",
                    "database", "databases", "db", "dbs", "namespace", "namespaces", "repo", "repos", "repository",
                    "instance", "instances", "box", "boxes", "stack", "stacks", "deployment", "deployments",
                    "site", "node", "nodes", "vm", "vms", "host", "hosts", "tier", "config", "configs", "region",
                    "bucket", "buckets", "workspace", "api", "endpoint", "data", "keys", "key", "pods", "pod"})
_LOCAL_ONLY = frozenset({"laptop", "desktop", "machine", "computer"})  # only after a preposition: "on my laptop"
_PIECES = re.compile(r"[-_./]")


def environments(side: Side) -> set[str]:
    """The environments ``side`` names as a target."""
    toks = side.tokens
    out = set()
    for i, tok in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        if tok in _NAMES:
            if nxt != "of":  # "the production of insulin"
                out.add(_NAMES[tok])
            continue
        pieces = _PIECES.split(tok)
        if len(pieces) > 1:  # "prod-db-1", "staging.example.com"
            out.update(_NAMES[p] for p in pieces if p in _NAMES)
            continue
        kind = _WORDS.get(tok)
        if kind is None:
            continue
        j = i - 1
        while j >= 0 and toks[j] in _DETERMINERS:
            j -= 1
        placed = j >= 0 and toks[j] in _PLACES
        if tok in _LOCAL_ONLY:
            if placed and j < i - 1 and (toks[i - 1] in ("my", "our") or toks[i - 1] == "the" and tok != "machine"):
                out.add(kind)  # "on my laptop", "from the laptop"; "on the machine" is any machine
            continue
        if nxt in _PARTS or (placed and (not nxt or nxt in _PLACES or nxt in ("and", "then", "first", "now"))):
            out.add(kind)
    return out


@rule("environment")
def environment(a: Side, b: Side) -> bool:
    """Another deployment environment on each side, or one on one side only that is not told apart
    from the request."""
    ea, eb = environments(a), environments(b)
    if ea == eb:
        return False
    if ea and eb:
        return True
    mine, theirs = (a, b) if ea else (b, a)
    named = ea or eb
    return not backstory(mine, theirs, lambda part: bool(environments(part) & named))
