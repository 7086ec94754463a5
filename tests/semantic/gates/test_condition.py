"""One side adds a fact the answer depends on: a stated condition of the asker or of something of
theirs, or an adjunct that places or scopes the action. The other side says nothing of it.

The class: "I'm pregnant. Is it ok to take ibuprofen for a headache?" is not the plain question, nor
is "drop the users table in the test database" "drop the users table". Beside them, the chat that
must still be served: greetings, apologies, feelings, thanks, a purpose, what one is doing or did, and
a condition the other side restates. Pairs written for these tests (the two reported by an outside
tester, the rest our own); each is checked in both directions.
"""

from __future__ import annotations

import pytest

from actioncache.semantic import lexicon
from actioncache.semantic.guard import contrast
from actioncache.semantic.guard.condition import stated
from actioncache.semantic.guard.registry import GATES, Pair

# A present condition of the asker ("i", "we") or of something of theirs ("my X", "our X").
STATED = [
    ("I'm pregnant. Is it ok to take ibuprofen for a headache?", "Is it ok to take ibuprofen for a headache?"),
    ("i have a peanut allergy, what should i eat for breakfast?", "what should i eat for breakfast?"),
    ("I'm diabetic, can I eat bananas?", "can I eat bananas?"),
    ("I live in germany, how do I file my taxes?", "how do I file my taxes?"),
    ("I am on a budget, what laptop should i buy?", "what laptop should i buy?"),
    ("we're on windows, how do i install docker", "how do i install docker"),
    ("my laptop is a mac, how do i take a screenshot", "how do i take a screenshot"),
    ("I'm on blood thinners — can I take aspirin?", "can I take aspirin?"),
    ("I'm in canada, when is the tax deadline?", "when is the tax deadline?"),
    ("I use a mac — how do I take a screenshot?", "how do I take a screenshot?"),
    ("I'm allergic to penicillin, what antibiotic should I take for strep throat?",
     "what antibiotic should I take for strep throat?"),
    ("my repo uses yarn, how do i add a dependency", "how do i add a dependency"),
    ("my dog is a puppy, how often should i feed him?", "how often should i feed my dog?"),
    ("because we're on kubernetes, how do we roll back a deploy?", "how do we roll back a deploy?"),
    ("i'm vegan. what should i cook for dinner tonight?", "what should i cook for dinner tonight?"),
    ("I'm breastfeeding, can I drink coffee?", "can I drink coffee?"),
    ("I'm fasting, can I take my vitamins?", "can I take my vitamins?"),
    ("I'm using a mac, how do I take a screenshot?", "how do I take a screenshot?"),
    ("I'm living in lyon, how do I renew my passport?", "how do I renew my passport?"),
    ("I work night shifts, when should I sleep?", "when should I sleep?"),
    ("my landlord is my brother, can he raise the rent?", "can my landlord raise the rent?"),
    ("I'm on a keto diet, give me a dessert recipe", "give me a dessert recipe"),
    ("we have a dog, which plants are safe for the garden?", "which plants are safe for the garden?"),
    ("my car is electric, how often should i service it?", "how often should i service my car?"),
    ("As a diabetic, can I eat bananas?", "can I eat bananas?"),
    ("being pregnant, can I take ibuprofen?", "can I take ibuprofen?"),
    ("I'm left-handed, which guitar should I buy?", "which guitar should I buy?"),
    ("i'm self-employed, how do I pay taxes?", "how do I pay taxes?"),
    ("we're a nonprofit, do we pay sales tax?", "do we pay sales tax?"),
    ("I'm a nurse, what are the best shoes?", "what are the best shoes?"),  # a noun, though "nurse" is a verb of emotion too
    ("my phone is an android, how do I block a number?", "how do I block a number?"),
    # a role the asker states is a fact the text depends on (a best man's toast is his own): the
    # clause check lets it by as a statement (test_aligned.py), this check does not
    ("write a toast for my brother's wedding",
     "my brother is getting married and i'm the best man, could you write a toast for his wedding"),
]

# An adjunct inside the request: where or to what the action applies, or marked as additional.
ADJUNCT = [
    ("delete the branch", "delete the branch on the remote too"),
    ("drop the users table", "drop the users table in the test database"),
    ("drop the users table", "in the test database, drop the users table"),
    ("restart the nginx service", "restart the nginx service on the staging box"),
    ("list the open tickets", "list the open tickets for the mobile team"),
    ("turn off notifications", "turn off notifications on my phone"),
    ("rename the function", "rename the function across the whole codebase"),
    ("reset the password", "reset the password for the admin account"),
    ("purge the queue", "purge the queue on the eu cluster as well"),
    ("make pancakes", "make pancakes with oat milk"),
    ("write a birthday poem", "write a birthday poem for my mom"),
    ("delete the branch", "delete the branch, the remote one too"),
]


@pytest.mark.parametrize("a, b", STATED + ADJUNCT)
def test_a_fact_on_one_side_only_is_another_request(a, b):
    assert contrast(a, b) is not None
    assert contrast(b, a) is not None


@pytest.mark.parametrize("a, b", STATED + ADJUNCT)
def test_the_condition_gate_decides_it_alone(a, b):
    gate = GATES["condition"]
    assert gate(Pair(a, b)) == "condition"
    assert gate(Pair(b, a)) == "condition"


# What is told around a request without changing what it asks.
CHAT = [
    ("I'm so stressed, how do I reset my password?", "how do I reset my password"),
    ("I'm nervous, how do I reset my password?", "how do I reset my password"),
    ("hi! I'm so excited, can you book a table for two at 8?", "book a table for two at 8"),
    ("I'm nervous about my interview, what are common interview questions?", "what are common interview questions?"),
    ("i'm bored lol, tell me a joke", "tell me a joke"),
    ("I'm so sorry to bother you, but could you restart the api?", "restart the api"),
    ("thanks so much! I really appreciate it, can you restart the api?", "restart the api"),
    # a purpose: why one asks
    ("for a school project, what is the capital of peru?", "what is the capital of peru"),
    ("what is the capital of peru for a school project", "what is the capital of peru"),
    # what one is doing, did, has to do, thinks or hopes
    ("i'm writing a report, what is the population of japan?", "what is the population of japan"),
    ("I'm writing a report on japan, what is the population of japan?", "what is the population of japan?"),
    ("I have a question: how do I reset my password?", "how do I reset my password"),
    ("I have an interview tomorrow, what should I wear?", "what should I wear?"),
    ("I'm on vacation, can you set an out of office reply?", "set an out of office reply"),
    ("I hope this makes sense: how do i merge two dicts in python?", "how do i merge two dicts in python?"),
    ("ok so my internet is being dumb again... how do i reset my router", "how do I reset my router"),
    ("my sourdough bread keeps coming out dense, why is my sourdough so dense?", "why is my sourdough so dense?"),
    # a graded state is an evaluation of how things feel
    ("hey, I'm pretty new to git. how do I fix a merge conflict?", "how do I fix a merge conflict in git?"),
    ("my photos folder is a total mess, could you write a script that renames files by date?",
     "write a script that renames files by date"),
    # a condition the other side restates
    ("i'm a us citizen, what are the visa requirements for visiting vietnam?",
     "what are the visa requirements for us citizens visiting vietnam"),
    ("my manager isn't technical — how do I describe kubernetes to them?",
     "how do I describe kubernetes to a non-technical manager?"),
    ("I'm allergic to nuts and shellfish — suggest a dinner menu for six people",
     "Suggest a dinner menu for six people; I'm allergic to shellfish and nuts"),
]

# Two sides that state one fact, each in its own words (conversations' histories do): no fact added.
REWORDED = [
    ("I use VS Code.", "editor: vscode"),
    ("Our website is built on WordPress.", "hey so our site is wordpress"),
    ("My laptop fan is constantly loud.", "laptop fan is always roaring"),
    ("I've got an Android app written in Kotlin.", "kotlin android app here"),
    ("Our startup is using Stripe for payments.", "we use stripe for billing"),
    ("I need a new passport photo.", "gotta get a passport pic"),
]


@pytest.mark.parametrize("a, b", REWORDED)
def test_one_fact_stated_twice_in_other_words_adds_nothing(a, b):
    gate = GATES["condition"]
    assert gate(Pair(a, b)) is None
    assert gate(Pair(b, a)) is None


# Pinned elsewhere (test_backstory.py, test_chatter.py): the chat this gate must keep serving.
PINNED = [
    ("how long does cooked pasta keep in the fridge",
     "so i cooked way too much pasta on tuesday lol, how long does cooked pasta keep in the fridge?"),
    ("what time is it in lima", "hey! trying to reach my aunt, what time is it in lima rn?"),
    ("check the status of the backup job", "morning, just got back from leave, can you check the status of the backup job?"),
    ("restart the billing worker", "hey, sorry to bother you this late, could you restart the billing worker?"),
    ("tag the current commit as v2.0.0", "our release at Initech is finally out, can u tag the current commit as v2.0.0?"),
    ("ok so, turn off the kitchen lights, no rush", "turn off the kitchen lights"),
]


@pytest.mark.parametrize("a, b", CHAT + PINNED)
def test_chat_around_the_request_is_the_same_request(a, b):
    assert contrast(a, b) is None
    assert contrast(b, a) is None


@pytest.mark.parametrize("clause, says", [
    (["i", "am", "pregnant"], ["pregnant"]),
    (["i", "have", "a", "peanut", "allergy"], ["a", "peanut", "allergy"]),
    (["my", "dog", "is", "a", "puppy"], ["a", "puppy"]),
    (["we", "are", "on", "windows"], ["on", "windows"]),
    (["i", "live", "in", "germany"], ["in", "germany"]),
    (["i", "am", "so", "stressed"], None),  # graded and a feeling
    (["i", "am", "nervous"], None),  # a feeling
    (["i", "am", "writing", "a", "report"], None),  # what one is doing
    (["i", "am", "using", "a", "mac"], ["a", "mac"]),  # what one uses
    (["we", "lost", "the", "cup"], None),  # a past, whichever base form "lost" has
    (["i", "cooked", "too", "much", "pasta"], None),  # what one did
    (["i", "have", "to", "leave", "soon"], None),  # what one has to do
    (["i", "have", "been", "sick"], None),  # a perfect: a story
    (["i", "have", "a", "question"], None),  # a message, not a thing one is or owns
    (["i", "think", "it", "broke"], None),  # a thought
    (["the", "budget", "is", "tight"], None),  # not the asker's nor theirs
])
def test_what_a_clause_states(clause, says):
    assert stated(clause) == says


def test_the_word_kinds_come_from_wordnet():
    assert lexicon.feeling("nervous") and lexicon.feeling("stressed") and lexicon.feeling("worried")
    assert not lexicon.feeling("pregnant") and not lexicon.feeling("diabetic") and not lexicon.feeling("allergic")
    assert lexicon.mental("think") and lexicon.mental("hopes") and not lexicon.mental("live")
    assert lexicon.happening("project") and lexicon.happening("deadline") and not lexicon.happening("allergy")
    assert lexicon.message("question") and not lexicon.message("laptop")


@pytest.mark.parametrize("a, b", [
    ("Delete the old log files", "Delete the old log files too"),
    ("Archive the report", "Archive the report as well"),
    ("send the invoice to Maria", "send the invoice to Maria too"),
])
def test_a_request_that_adds_itself_to_an_earlier_one_is_another_request(a, b):
    # An outside tester: "... too" was served for the plain request at 0.97. It presupposes something
    # done or asked before, which the plain request's plan does not do.
    assert contrast(a, b) is not None and contrast(b, a) is not None


def test_an_opening_also_only_links_the_request_to_the_conversation():
    assert contrast("also, restart nginx", "restart nginx") is None
