"""code_exact: flags, paths, identifiers and quoted strings are compared as typed; prose is not.

Written for these tests: shell commands whose flags differ only in case or sign, paths and file
names in another case, and the same requests with only prose case changed (which must still hit).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache.semantic import HashingEmbedder, SemanticCache, normalize_prompt
from actioncache.semantic.guard import GATES, Pair, contrast
from actioncache.semantic.guard.code import code_tokens, exact_form
from actioncache.stores.memory import MemoryStore

CASE_OR_SIGN = [
    ("git branch -d feature/login", "git branch -D feature/login"),
    ("ls -r ~/projects", "ls -R ~/projects"),
    ("grep -i timeout app.log", "grep -I timeout app.log"),
    ("rsync -a ./site/ web1:/var/www/", "rsync -A ./site/ web1:/var/www/"),
    ("chmod +x deploy.sh", "chmod -x deploy.sh"),
    ("tail the log in /var/log/app", "tail the log in /var/Log/app"),
    ("open notes/Todo.md", "open notes/todo.md"),
    ("set API_TIMEOUT=30 on the worker", "set api_timeout=30 on the worker"),
    ('create an issue titled "Login broken"', 'create an issue titled "login broken"'),
    ("set the offset to -5", "set the offset to +5"),
    ("pip install requests==2.31", "pip install requests>=2.31"),
]


@pytest.mark.parametrize("a, b", CASE_OR_SIGN)
def test_a_case_or_sign_change_in_code_is_another_request(a, b):
    assert GATES["code_exact"](Pair(a, b)) == "code_exact"
    assert contrast(a, b) is not None and contrast(b, a) is not None


@pytest.mark.parametrize("a, b", CASE_OR_SIGN)
def test_the_exact_match_path_keeps_code_apart(a, b):
    """Before: the exact-match form was case-folded, so these were one request at similarity 1.0
    and no check ran at all."""
    assert normalize_prompt(a) != normalize_prompt(b)
    sc = SemanticCache(MemoryStore(), embedder=HashingEmbedder())  # exact matches only
    sc.store(a, ["plan a"])
    assert sc.lookup(b) is None
    assert sc.lookup(a) is not None


@pytest.mark.parametrize("a, b", [
    ("Git branch -d feature/login", "git branch -d feature/login"),
    ("RESTART the payments service", "restart the payments service"),
    ("Deploy.sh failed, rerun it", "deploy.sh failed, rerun it"),  # a capital that only opens the sentence
    ("restart the EC2 instance", "restart the ec2 instance"),  # a name, in any case
])
def test_prose_case_is_no_difference(a, b):
    assert contrast(a, b) is None
    assert exact_form(a).casefold() == exact_form(b).casefold()


def test_backticks_mark_code_that_the_exact_form_keeps_as_typed():
    """The same code bare and in backticks is the same request to the checks; the exact-match form
    keeps backticked code verbatim (its case and spaces are the code's), so the two are no exact
    match and the checks decide."""
    assert contrast("run `ls -la` now", "run ls -la now") is None
    assert exact_form("Run  `ls -la`   now") == "run `ls -la` now"
    assert exact_form("search for `TODO`") != exact_form("search for `todo`")
    assert exact_form("replace `a  b`") != exact_form("replace `a b`")


def test_code_tokens_read_flags_paths_identifiers_and_quotes():
    tokens = code_tokens('grep -i "Timeout" ./logs/app.log --color=auto for user_id')
    assert tokens == {"-i": 1, '«"Timeout"»': 1, "./logs/app.log": 1, "--color=auto": 1, "user_id": 1}
    assert not code_tokens("book 2 tickets for $40 at 7:30pm, 5% off, order #4821, v2.4.1")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("abcXYZ -_/.=+\"'`:#12"), max_size=40))
def test_exact_form_is_stable_and_keeps_code(text):
    once = exact_form(text)
    assert exact_form(once) == once
    assert code_tokens(once) == code_tokens(text)


@pytest.mark.parametrize("a, b, same", [
    ("set timeout: 30 in the workflow yaml", "set timeout-minutes: 30 in the workflow yaml", False),
    ("set retries: 3 in config.yaml", "set max-retries: 3 in config.yaml", False),
    ("add worker_count: 4 to settings", "add worker_threads: 4 to settings", False),
    ("set timeout: 30 in the workflow", "set the timeout to 30 in the workflow", True),
    ("note: 5 items are missing, find them", "find the 5 missing items", True),
    ("set debug: true in settings", "set debug to true in settings", True),
])
def test_a_settings_key_before_its_value_is_code(a, b, same):
    """The class: "key: value" with a key of joined words (YAML, a config line) names one setting as
    typed; a plain word before a colon may be prose."""
    assert (contrast(a, b) is None, contrast(b, a) is None) == (same, same)


# Written for these tests: an identifier typed with a deliberate case on both sides, in another case.
RECASED = [
    ("call getUserId on the client", "call getUserID on the client"),
    ("use the XmlParser class for the feed", "use the XMLParser class for the feed"),
    ("check isValidURL before saving", "check isValidUrl before saving"),
    ("rename maxRetries in the settings", "rename MaxRetries in the settings"),
]


@pytest.mark.parametrize("a, b", RECASED)
def test_an_identifier_in_another_deliberate_case_is_another_request(a, b):
    assert contrast(a, b) == "code_exact" and contrast(b, a) == "code_exact"
    assert normalize_prompt(a) != normalize_prompt(b)  # nor one exact match, where no check runs
    sc = SemanticCache(MemoryStore(), embedder=HashingEmbedder())
    sc.store(a, ["plan a"])
    assert sc.lookup(b) is None


@pytest.mark.parametrize("a, b", [
    ("deploy to GitHub Pages", "deploy to github pages"),
    ("deploy to GitHub Pages", "Deploy to Github Pages"),  # one capital in front: typed casually
    ("open my iPhone settings", "open my iphone settings"),
    ("cancel my FitLife membership", "cancel my Fitlife membership"),
    ("CALL getUserId ON THE CLIENT", "call getUserId on the client"),
])
def test_a_name_typed_casually_is_no_difference(a, b):
    assert contrast(a, b) is None and contrast(b, a) is None


@pytest.mark.parametrize("a, b", [
    ("rename getUserId to getUserID", "rename getUserID to getUserId"),
    ("change `a < b` to `a <= b` in the loop", "change `a <= b` to `a < b` in the loop"),
    ("move config.yaml to backup.yaml", "move backup.yaml to config.yaml"),
    ("replace HttpClient with HTTPClient", "replace HTTPClient with HttpClient"),
])
def test_code_traded_between_the_slots_of_one_sentence_is_another_request(a, b):
    """The same sentence word for word, the same code, in other places: the direction of a rename,
    a change or a move is the request."""
    assert contrast(a, b) == "code_exact" and contrast(b, a) == "code_exact"


@pytest.mark.parametrize("a, b", [
    ("in bash, what does `$?` hold?", "in bash, what does `$!` hold?"),  # a shell's special parameters
    ("write the output to out.txt with >.", "write the output to out.txt with >>."),  # a full stop is not the operator's
    ("what does `>>` do in a redirect?", "what does `>` do in a redirect?"),  # backticks are not part of it
    ("evaluate `2 ** 8` in Python", "evaluate `2 ^ 8` in Python"),
    ("style the `ul > li` items", "style the `ul li` items"),  # in backticks, even on one side only
    ("split the string on ','", "split the string on ', '"),  # a quoted string's spaces are part of it
    ("search for `TODO` in src", "search for `todo` in src"),  # backticked code keeps its case
    ("call `Parse` on the input", "call parse on the input"),
    ("replace `a  b` with `c`", "replace `a b` with `c`"),  # and its spaces
    ("use the -> operator", "use the => operator"),  # any chunk of symbols, not only comparisons
    ("replace :) with :( in the chat log", "replace :( with :) in the chat log"),
    ("use [] instead of ()", "use () instead of []"),
    ("check whether a < b", "check whether b < a"),  # an operator's operands are its slots
    ("cd ..", "cd ."),  # a directory said in dots, a tilde or a slash
    ("move notes.txt to ~", "move notes.txt to /"),
    ("run ./start.sh &", "run ./start.sh"),  # in a command line every symbol is an argument
    ("source .env before starting", "source env before starting"),  # the dot of a dotfile is the name
    ("style the .card elements", "style the #card elements"),
    ("change the arrow -> to =>", "change the arrow => to ->"),
    ('grep -r "TODO" src/', "grep -r 'TODO' src/"),  # in a command line a string keeps its quotes
])
def test_symbols_and_spaces_in_code_are_compared_as_typed(a, b):
    assert contrast(a, b) == "code_exact" and contrast(b, a) == "code_exact"


@pytest.mark.parametrize("a, b", [
    ("rename getUserId to getUserID", "rename getUserId to getUserID, please"),
    ("move config.yaml to backup.yaml", "move config.yaml into backup.yaml"),
    ("timeout = 30 seconds on the worker", "set the worker's timeout to 30 seconds"),  # an operator on one side, prose
    ("call `parse` on the input", "call parse on the input"),  # backticks only mark the code
    ("copy notes.txt into the backup folder", "copy notes.txt to ./backup"),  # a relative path said in prose
    ("Tom & Jerry episode list", "Tom and Jerry episode list"),  # "&" in prose
    ("wait - deploy it first", "deploy it first"),  # a dash
])
def test_the_same_code_in_the_same_places_is_no_difference(a, b):
    assert GATES["code_exact"](Pair(a, b)) is None and GATES["code_exact"](Pair(b, a)) is None


_CODEISH = st.text(alphabet=st.sampled_from("abXY `'\"<>=$?!*^.-_/"), max_size=30)


@settings(max_examples=300, deadline=None)
@given(_CODEISH, _CODEISH)
def test_the_new_readings_are_symmetric_and_never_part_a_text_from_itself(a, b):
    from actioncache.semantic.guard.code import recased, swapped

    assert recased(a, b) == recased(b, a) and swapped(a, b) == swapped(b, a)
    assert not recased(a, a) and not swapped(a, a)
    assert GATES["code_exact"](Pair(a, a)) is None


@pytest.mark.parametrize("a, b", [
    ("parse the JSON file", "parse the Json file"),  # an acronym typed with one capital, as brands are
    ("unset the PATH variable", "unset the Path variable"),  # (so this one is not read: docs/semantic.md)
])
def test_capitals_against_one_capital_in_front_are_typed_casually(a, b):
    """Capitals against one capital in front is how acronyms and brands are typed casually. The
    exact-match form folds both, and its match is served only when the code checks agree."""
    assert contrast(a, b) is None and contrast(b, a) is None
    sc = SemanticCache(MemoryStore(), embedder=HashingEmbedder())  # exact matches only
    sc.store(a, ["plan a"])
    assert sc.lookup(b) is not None


def test_an_exact_match_is_served_only_when_the_code_checks_agree():
    """The exact-match form folds what the checks may read (a word the request types in two cases is
    kept; a cased identifier is kept): every exact hit is also a pair the code checks pass."""
    sc = SemanticCache(MemoryStore(), embedder=HashingEmbedder())
    sc.store("rename getUserId to getUserID", ["plan a"])
    assert sc.lookup("Rename getUserId to getUserID") is not None
    assert sc.lookup("rename getUserID to getUserId") is None
