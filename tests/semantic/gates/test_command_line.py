"""A line typed for a program is compared as typed, even where no flag or path marks it as code.

Before: "git checkout Main" / "git checkout main", "kubectl delete pod Web" / "... web" and
"drop table Users" / "drop table users" had one exact-match form (prose was case-folded, and only a
flag or a path made a request a command line), so they were exact hits at similarity 1.0 and no
check ran; "docker rm web" / "docker rmi web" passed every check (a typo of the other side's word),
and "id = 5" / "id != 5" too (an operator was not code). Written for these tests, beyond the
outside tester's three: other programs, other arguments, other operators.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache.semantic import HashingEmbedder, SemanticCache
from actioncache.semantic.guard import contrast
from actioncache.semantic.guard.code import exact_form
from actioncache.stores.memory import MemoryStore

CASE_IN_A_LINE = [
    ("git checkout Main", "git checkout main"),
    ("kubectl delete pod Web", "kubectl delete pod web"),
    ("drop table Users", "drop table users"),
    ("git push origin Release", "git push origin release"),
    ("redis-cli del Session", "redis-cli del session"),
    ("Run git checkout Main.", "run git checkout main"),  # a full stop ends a line too
]


@pytest.mark.parametrize("a, b", CASE_IN_A_LINE)
def test_a_capital_in_a_command_line_is_another_request(a, b):
    assert exact_form(a) != exact_form(b)
    assert contrast(a, b) is not None and contrast(b, a) is not None


@pytest.mark.parametrize("a, b", CASE_IN_A_LINE)
def test_the_exact_match_path_serves_no_other_capital(a, b):
    sc = SemanticCache(MemoryStore(), embedder=HashingEmbedder())  # exact matches only
    sc.store(a, ["plan a"])
    assert sc.lookup(b) is None
    assert sc.lookup(a) is not None


WORD_IN_A_LINE = [
    ("docker rm web", "docker rmi web"),
    ("git rebase main", "git merge main"),
    ("systemctl stop nginx", "systemctl restart nginx"),
    ("npm install lodash", "npm uninstall lodash"),
    ("kubectl get pods", "kubectl get nodes"),
    ("brew install wget", "brew install curl"),
    ("git checkout main", "git checkout master"),  # a program's arguments, though English knows both words
    ("npm run build", "npm build"),  # a word on one side only is another subcommand
    ("git push", "git push origin main"),
]


@pytest.mark.parametrize("a, b", WORD_IN_A_LINE)
def test_a_word_changed_in_a_command_line_is_another_request(a, b):
    assert contrast(a, b) is not None and contrast(b, a) is not None


# A lead-in set off by a comma or colon leaves the line what it is (an outside tester: "pls, " or
# "sorry to ask again, " before one side turned the comparison off and both were served).
@pytest.mark.parametrize("lead_in", ["pls, ", "sorry to ask again, ", "quick one: ", "ok so, ", "hmm, "])
@pytest.mark.parametrize("a, b", WORD_IN_A_LINE[:4] + WORD_IN_A_LINE[6:8])
def test_a_lead_in_before_a_command_line_changes_nothing(lead_in, a, b):
    assert contrast(lead_in + a, b) is not None and contrast(b, lead_in + a) is not None
    assert contrast(lead_in + a, a) is None


OPERATORS = [
    ("select * from users where id = 5", "select * from users where id != 5"),
    ("SELECT * FROM users WHERE age > 18;", "SELECT * FROM users WHERE age >= 18;"),
    ("list the files bigger than x where size < 10", "list the files bigger than x where size <= 10"),
    ("run make test | tee out.txt", "run make test || tee out.txt"),
    ("show rows where status == 'open'", "show rows where status != 'open'"),
    ("UPDATE accounts SET balance = balance + 50 WHERE id = 7", "UPDATE accounts SET balance = balance - 50 WHERE id = 7"),
    ("set x = a * b", "set x = a / b"),  # arithmetic between spaces, beside another operator
]


@pytest.mark.parametrize("a, b", OPERATORS)
def test_an_operator_changed_is_another_request(a, b):
    assert exact_form(a) != exact_form(b)
    assert contrast(a, b) is not None and contrast(b, a) is not None


SAME = [
    ("run cargo build", "cargo build"),  # a word said on one side only is the other checks' business
    ("execute make clean", "make clean"),
    ("restart nginx", "please restart the nginx service"),  # the line's word said in prose
    ("restart nginx pls", "restart nginx"),  # a chat spelling is no argument
    ("git status", "git status please"),  # nor is a word said to the agent
    ("Git checkout main", "git checkout main"),  # a capital that only opens the line
    ("what is the capital of france", "What is the capital of France?"),  # prose: case-folded
    ("set the timeout to 30 seconds", "timeout = 30 seconds"),  # an operator on one side only: prose
    ("reset my password - how?", "how do I reset my password"),  # a hyphen between spaces on one side: a dash
    ("compare prices: Shark Stratos vs Dyson V15", "Compare the prices of the Dyson V15 and the Shark Stratos"),
]


@pytest.mark.parametrize("a, b", SAME)
def test_the_same_line_reworded_still_passes(a, b):
    assert contrast(a, b) is None and contrast(b, a) is None


_WORDS = st.sampled_from(["git", "checkout", "docker", "rm", "kubectl", "delete", "pod", "table", "web",
                          "main", "release", "users", "nginx", "restart", "logs", "build"])


@settings(max_examples=150, deadline=None)
@given(st.lists(_WORDS, min_size=2, max_size=5), st.data())
def test_any_capital_past_the_first_word_of_a_line_is_another_request(words, data):
    at = data.draw(st.integers(1, len(words) - 1))
    changed = list(words)
    changed[at] = changed[at][0].upper() + changed[at][1:]
    a, b = " ".join(words), " ".join(changed)
    if a == b:
        return
    assert exact_form(a) != exact_form(b)
    assert contrast(a, b) is not None and contrast(b, a) is not None


# programs whose names English has no verb for ("helm", "yarn" are verbs too: such a line reads as an imperative)
_PROGRAMS = st.sampled_from(["git", "docker", "kubectl", "npm", "cargo", "terraform", "psql", "redis-cli", "systemctl"])
_ARGUMENTS = st.sampled_from(["checkout", "delete", "pod", "table", "web", "main", "master", "release", "users",
                              "nginx", "restart", "logs", "build", "apply", "destroy", "staging", "prod", "rm", "rmi"])


@settings(max_examples=150, deadline=None)
@given(_PROGRAMS, st.lists(_ARGUMENTS, min_size=1, max_size=4, unique=True), st.data())
def test_any_argument_replaced_after_a_programs_name_is_another_request(program, arguments, data):
    at = data.draw(st.integers(0, len(arguments) - 1))
    other = data.draw(_ARGUMENTS.filter(lambda w: w not in arguments))
    changed = [*arguments[:at], other, *arguments[at + 1:]]
    a, b = " ".join([program, *arguments]), " ".join([program, *changed])
    assert contrast(a, b) is not None and contrast(b, a) is not None


IMPERATIVES = [
    ("resume playback", "continue playback"),  # known words of an imperative: the other checks judge them
    ("order two dozen bagels", "order 24 bagels"),  # numbers: the number checks'
]


@pytest.mark.parametrize("a, b", IMPERATIVES)
def test_an_imperative_without_prose_words_is_not_a_programs_line(a, b):
    assert contrast(a, b) is None and contrast(b, a) is None
