"""SemanticCache rules (seed 002 + issue 6): EMA, eviction and re-planning, namespaces, the exact-match
path, threshold semantics, guard, ambiguity, verifier, cross-process visibility, failure handling."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from actioncache import Cache, open_store
from actioncache.errors import StoreError
from actioncache.semantic import HashingEmbedder, SemanticCache, literal_guard, prompt_hash
from actioncache.stores.base import Entry
from actioncache.stores.memory import MemoryStore


class CountingEmbedder(HashingEmbedder):
    """The real HashingEmbedder, counting which texts it was asked to embed."""

    def __init__(self, dim: int = 256) -> None:
        super().__init__(dim=dim)
        self.calls: list[str] = []

    def embed(self, texts):
        self.calls.extend(texts)
        return super().embed(texts)


@pytest.fixture
def sc(sqlite_url):
    # HashingEmbedder scores rewordings lower than a sentence model; 0.5 suits it.
    return SemanticCache(open_store(sqlite_url), embedder=HashingEmbedder(), threshold=0.5)


PLAN_A = ["Tool: WeatherLookup, Input: 'Paris', Observation: 'sunny'"]
PLAN_B = ["Tool: WeatherLookup, Input: 'Paris, FR', Observation: 'sunny'"]


def test_store_then_lookup_returns_entry_id_and_actions(sc):
    entry_id = sc.store("What is the weather in Paris?", PLAN_A)
    assert sc.lookup("What is the weather in Paris?") == (entry_id, PLAN_A)
    assert sc.lookup("Tell me: what is the weather in Paris?") == (entry_id, PLAN_A)
    assert sc.lookup("Order three pizzas for the office party") is None


def test_entries_live_in_the_store_with_the_documented_shape(sc, sqlite_url):
    entry_id = sc.store("Check stock of widgets", ["Tool: InventoryCheck"])
    store = open_store(sqlite_url)
    entry = store.get(f"semantic:default:{entry_id}")
    assert entry is not None
    assert entry.metadata["_cache_type"] == "semantic_plan"
    assert entry.metadata["namespace"] == "default"
    assert entry.metadata["score"] == 1.0
    assert entry.metadata["prompt_hash"] == prompt_hash("check  STOCK of widgets")
    assert store.find("semantic:default:*", metadata_filter={"_cache_type": "semantic_plan"}) == [entry.key]


def test_update_reward_is_an_ema_with_alpha(sc):
    entry_id = sc.store("Book a table for two", ["Tool: Booking"])
    expected = 1.0
    for success in (False, True, False):
        assert sc.update_reward(entry_id, success) is True
        expected = 0.3 * float(success) + 0.7 * expected
        assert sc.get(entry_id)["score"] == pytest.approx(expected)


def test_custom_alpha_and_floor(sqlite_url):
    sc = SemanticCache(open_store(sqlite_url), embedder=HashingEmbedder(), alpha=0.5, floor=0.4)
    entry_id = sc.store("Ping the server", ["Tool: Ping"])
    sc.update_reward(entry_id, False)
    assert sc.get(entry_id)["score"] == pytest.approx(0.5)
    sc.update_reward(entry_id, False)  # 0.25 < 0.4
    assert sc.get(entry_id) is None


def test_repeated_negative_feedback_evicts_and_the_agent_replans(sc):
    """Seed 002, 8.3: store A, 'y', then 'n' until A falls below the floor, miss, store B."""
    prompt = "What is the weather in Paris?"
    assert sc.lookup(prompt) is None
    id_a = sc.store(prompt, PLAN_A)
    assert sc.update_reward(id_a, True)
    scores = []
    while sc.get(id_a) is not None:
        assert sc.lookup(prompt) == (id_a, PLAN_A)
        assert sc.update_reward(id_a, False)
        entry = sc.get(id_a)
        scores.append(None if entry is None else round(entry["score"], 4))
    assert scores == [0.7, 0.49, 0.343, 0.2401, None]  # 1.0 * 0.7^n until < 0.2
    assert sc.lookup(prompt) is None
    assert sc.stats()["evictions"] == 1
    id_b = sc.store(prompt, PLAN_B)
    assert id_b != id_a
    assert sc.lookup(prompt) == (id_b, PLAN_B)
    assert sc.get(id_b)["score"] == 1.0


def test_update_reward_of_unknown_or_malformed_id_is_false(sc):
    assert sc.update_reward("0" * 32, True) is False
    assert sc.update_reward("not-an-id", True) is False


def test_namespaces_never_answer_each_other(sqlite_url):
    store = open_store(sqlite_url)
    alice = SemanticCache(store, embedder=HashingEmbedder(), namespace="alice")
    bob = SemanticCache(store, embedder=HashingEmbedder(), namespace="bob")
    entry_id = alice.store("Show my unread email", ["Tool: Mail, Input: alice"])
    assert alice.lookup("Show my unread email") == (entry_id, ["Tool: Mail, Input: alice"])
    assert bob.lookup("Show my unread email") is None
    assert bob.update_reward(entry_id, False) is False
    assert alice.get(entry_id)["score"] == 1.0
    assert bob.entry_ids() == []


@pytest.mark.parametrize("namespace", ["", "a:b", 3])
def test_bad_namespace_is_refused(namespace):
    with pytest.raises(ValueError, match="namespace"):
        SemanticCache(MemoryStore(), embedder=HashingEmbedder(), namespace=namespace)


def test_exact_match_path_skips_the_embedder():
    embedder = CountingEmbedder()
    sc = SemanticCache(MemoryStore(), embedder=embedder)
    entry_id = sc.store("Convert 100 USD to EUR", ["Tool: FX"])
    embedder.calls.clear()
    hit = sc.lookup_hit("  convert 100 usd   TO eur ")
    assert hit is not None and hit.exact and hit.similarity == 1.0 and hit.entry_id == entry_id
    assert embedder.calls == []
    assert sc.stats()["exact_hits"] == 1


def test_only_the_given_request_is_embedded():
    embedder = CountingEmbedder()
    sc = SemanticCache(MemoryStore(), embedder=embedder, threshold=0.5)
    sc.store("Find hotels in Rome", ["Tool: Hotels"])
    sc.lookup("Book the second one")
    assert embedder.calls == ["Find hotels in Rome", "Book the second one"]


def test_storing_the_same_prompt_again_replaces_the_plan(sc):
    first = sc.store("Restart the web server", ["old"])
    second = sc.store("restart the  web server", ["new"])
    assert sc.get(first) is None
    assert sc.lookup("Restart the web server") == (second, ["new"])
    assert sc.entry_ids() == [second]


def _similarity(embedder, a, b):
    va, vb = embedder.embed([a, b])
    return float(va @ vb)


def test_threshold_is_cosine_similarity_inclusive():
    embedder = HashingEmbedder()
    stored, asked = "Summarize the design document", "Summarize the design doc please"
    sim = _similarity(embedder, stored, asked)
    assert 0 < sim < 1
    at = SemanticCache(MemoryStore(), embedder=embedder, threshold=sim - 1e-6)
    at.store(stored, ["plan"])
    assert at.lookup(asked) is not None
    above = SemanticCache(MemoryStore(), embedder=embedder, threshold=min(1.0, sim + 1e-3))
    above.store(stored, ["plan"])
    assert above.lookup(asked) is None


def test_threshold_zero_is_valid_and_accepts_any_non_negative_similarity():
    sc = SemanticCache(MemoryStore(), embedder=HashingEmbedder(), threshold=0.0, guard=None)
    entry_id = sc.store("Water the plants", ["Tool: Garden"])
    assert sc.lookup("Summarize quarterly revenue by region") in ((entry_id, ["Tool: Garden"]), None)
    # A request with no words embeds as all zeros (similarity 0 to everything), so even a zero
    # threshold would serve it anything: it is answered by its exact form only.
    assert sc.lookup_hit("??? !!!") is None
    sc.store("??? !!!", ["Tool: Ask"])
    hit = sc.lookup_hit("??? !!!")
    assert hit is not None and hit.exact and hit.actions == ["Tool: Ask"]
    assert sc.lookup_hit("!!! ???") is None


@pytest.mark.parametrize("bad", [1.5, -1.5, "0.8", True])
def test_threshold_out_of_range_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="threshold"):
        SemanticCache(MemoryStore(), embedder=HashingEmbedder(), threshold=bad)


def test_top_k_limits_the_candidates_considered():
    embedder = HashingEmbedder()
    asked, negated, reworded = "Turn on the kitchen lights", "Don't turn on the kitchen lights", "Kitchen lights: switch them on"
    assert _similarity(embedder, asked, negated) > _similarity(embedder, asked, reworded) > 0.1
    guarded = SemanticCache(MemoryStore(), embedder=embedder, top_k=1, threshold=0.1, ambiguity_margin=0.0)
    guarded.store(negated, ["off"])  # nearest, but the guard rejects it
    guarded.store(reworded, ["on"])
    assert guarded.lookup(asked) is None  # only the rejected top-1 was looked at
    wide = SemanticCache(MemoryStore(), embedder=embedder, top_k=3, threshold=0.1, ambiguity_margin=0.0)
    wide.store(negated, ["off"])
    wide.store(reworded, ["on"])
    assert wide.lookup(asked)[1] == ["on"]


def test_guard_rejects_negation_numbers_and_swapped_arguments():
    sc = SemanticCache(MemoryStore(), embedder=HashingEmbedder(), threshold=0.3)
    sc.store("Turn on the living room lights", ["on"])
    sc.store("Set an alarm for 7 am", ["alarm 7"])
    sc.store("Convert USD to EUR", ["usd->eur"])
    assert sc.lookup("Don't turn on the living room lights") is None
    assert sc.lookup("Set an alarm for 8 am") is None
    assert sc.lookup("Convert EUR to USD") is None
    assert sc.stats()["guard_rejections"] >= 3
    off = SemanticCache(MemoryStore(), embedder=HashingEmbedder(), threshold=0.3, guard=None)
    off.store("Set an alarm for 7 am", ["alarm 7"])
    assert off.lookup("Set an alarm for 8 am") is not None


@pytest.mark.parametrize(
    "request_text, candidate, allowed",
    [
        ("Book a flight to Rome on May 3", "Book a flight to Rome on May 4", False),
        ("Play the first episode", "Play the second episode", False),
        ("Find flights from Paris to London", "Find flights from London to Paris", False),
        ("What's the weather in Paris?", "What's the weather in Berlin?", False),
        ("What's the weather in Paris?", "How is the weather in Paris", True),
        ("You may use the `map()` function", "The `map()` function may be used", True),
        ("One can load it from the Hub", "It can be loaded from the Hub", True),
    ],
)
def test_literal_guard_cases(request_text, candidate, allowed):
    assert literal_guard(request_text, candidate) is allowed
    assert literal_guard(candidate, request_text) is allowed


def test_two_different_plans_equally_near_make_a_miss():
    # Both stored requests pass the contrast checks against the lookup ("now" and "please" change nothing).
    sc = SemanticCache(MemoryStore(), embedder=HashingEmbedder(), threshold=0.2, ambiguity_margin=0.5)
    sc.store("Deploy the service now", ["plan 1"])
    sc.store("Please deploy the service", ["plan 2"])
    assert sc.lookup("Deploy the service") is None
    assert sc.stats()["ambiguous"] == 1
    strict = SemanticCache(MemoryStore(), embedder=HashingEmbedder(), threshold=0.2, ambiguity_margin=0.0)
    strict.store("Deploy the service now", ["plan 1"])
    strict.store("Please deploy the service", ["plan 2"])
    assert strict.lookup("Deploy the service") is not None


def test_verifier_decides_borderline_hits_only():
    embedder = HashingEmbedder()
    stored, asked = "Summarize the design document", "Summarize the design doc please"
    sim = _similarity(embedder, stored, asked)
    seen = []

    def reject(prompt, hit):
        seen.append((prompt, hit.prompt, round(hit.similarity, 6)))
        return False

    borderline = SemanticCache(MemoryStore(), embedder=embedder, threshold=sim - 0.01, verifier=reject, verify_margin=0.05)
    borderline.store(stored, ["plan"])
    assert borderline.lookup(asked) is None
    assert seen == [(asked, stored, round(sim, 6))]
    assert borderline.stats()["verifier_rejections"] == 1

    seen.clear()
    confident = SemanticCache(MemoryStore(), embedder=embedder, threshold=sim - 0.2, verifier=reject, verify_margin=0.05)
    confident.store(stored, ["plan"])
    assert confident.lookup(asked) is not None
    assert confident.lookup(stored) is not None  # exact path: never borderline
    assert seen == []


def test_verifier_that_raises_counts_as_a_rejection():
    def broken(prompt, hit):
        raise RuntimeError("verifier down")

    sc = SemanticCache(MemoryStore(), embedder=HashingEmbedder(), threshold=0.3, verifier=broken, verify_margin=1.0)
    sc.store("Summarize the design document", ["plan"])
    assert sc.lookup("Summarize the design doc please") is None


def test_score_below_floor_is_never_returned(sqlite_url):
    store = open_store(sqlite_url)
    sc = SemanticCache(store, embedder=HashingEmbedder())
    entry_id = sc.store("List open tickets", ["Tool: Jira"])
    # A looser peer (floor 0.1) lowers the score to 0.147 without evicting it.
    loose = SemanticCache(store, embedder=HashingEmbedder(), floor=0.1)
    for _ in range(5):
        loose.update_reward(entry_id, False)
    assert loose.get(entry_id)["score"] < 0.2
    assert sc.lookup("List open tickets") is None
    assert loose.lookup("List open tickets") == (entry_id, ["Tool: Jira"])


def test_another_process_sees_new_entries_and_evictions(sqlite_url, src_env):
    sc = SemanticCache(open_store(sqlite_url), embedder=HashingEmbedder(), threshold=0.5)
    assert sc.lookup("Check the weather in Oslo") is None  # builds the index while empty
    script = (
        "import sys\n"
        "from actioncache import open_store\n"
        "from actioncache.semantic import SemanticCache, HashingEmbedder\n"
        "sc = SemanticCache(open_store(sys.argv[1]), embedder=HashingEmbedder(), threshold=0.5)\n"
        "print(sc.store('Check the weather in Oslo', ['Tool: WeatherLookup, Input: Oslo']))\n"
    )
    out = subprocess.run([sys.executable, "-c", script, sqlite_url], env=src_env, capture_output=True, text=True, check=True)
    entry_id = out.stdout.strip().splitlines()[-1]
    assert sc.lookup("Check the weather in Oslo") == (entry_id, ["Tool: WeatherLookup, Input: Oslo"])
    assert sc.lookup("Please check the weather in Oslo")[0] == entry_id  # the vector index has it too
    evict = script.replace(
        "print(sc.store('Check the weather in Oslo', ['Tool: WeatherLookup, Input: Oslo']))",
        f"[sc.update_reward('{entry_id}', False) for _ in range(5)]",
    )
    subprocess.run([sys.executable, "-c", evict, sqlite_url], env=src_env, check=True)
    assert sc.lookup("Please check the weather in Oslo") is None


def test_index_is_rebuilt_from_the_store(sqlite_url):
    first = SemanticCache(open_store(sqlite_url), embedder=HashingEmbedder())
    ids = {first.store(f"Open ticket {n}", [n]) for n in range(20)}
    fresh = SemanticCache(open_store(sqlite_url), embedder=HashingEmbedder(), threshold=0.5)
    assert fresh.rebuild_index() == 20
    assert set(fresh.entry_ids()) == ids
    assert fresh.lookup("Open ticket 7") is not None


def test_entries_of_another_embedder_are_reembedded(sqlite_url):
    SemanticCache(open_store(sqlite_url), embedder=HashingEmbedder(dim=64)).store("Water the plants", ["garden"])
    other = SemanticCache(open_store(sqlite_url), embedder=HashingEmbedder(dim=128), threshold=0.5)
    assert other.lookup("Please water the plants")[1] == ["garden"]


def test_an_entry_re_embedded_once_keeps_the_new_vector_for_the_next_process(sqlite_url):
    """An upgraded embedder (another name: the int8 recipe on 7 bits, say) re-embeds a store's entries
    once: the first cache to load them keeps its vector beside each, the next ones only read it."""
    created = SemanticCache(open_store(sqlite_url), embedder=HashingEmbedder(dim=64))
    entry_id = created.store("Water the plants", ["garden"])
    key = f"semantic:default:{entry_id}"
    before = created.backend.get(key)
    first = CountingEmbedder(dim=128)
    assert SemanticCache(open_store(sqlite_url), embedder=first, threshold=0.5).lookup("Please water the plants")[1] == ["garden"]
    assert "Water the plants" in first.calls
    assert created.backend.get(key) == before  # the entry itself is never written by a load
    later = CountingEmbedder(dim=128)
    assert SemanticCache(open_store(sqlite_url), embedder=later, threshold=0.5).lookup("Please water the plants")[1] == ["garden"]
    assert later.calls == ["Please water the plants"]  # the request only: the entry's vector was read
    # The first embedder reads its own vector in the entry; a third keeps its own beside the second's.
    again = CountingEmbedder(dim=64)
    assert SemanticCache(open_store(sqlite_url), embedder=again, threshold=0.5).lookup("Please water the plants")[1] == ["garden"]
    assert again.calls == ["Please water the plants"]
    third = CountingEmbedder(dim=96)
    assert SemanticCache(open_store(sqlite_url), embedder=third, threshold=0.5).lookup("Please water the plants")[1] == ["garden"]
    assert "Water the plants" in third.calls
    assert len(created.backend.find("semantic-vector:default:*")) == 2


def test_a_load_never_writes_an_entry_so_a_deleted_plan_stays_deleted(sqlite_url):
    """Loading another embedder's entries writes only the vectors beside them: an entry another
    process deletes or replaces meanwhile can never come back by that write."""
    store = open_store(sqlite_url)
    writer = SemanticCache(store, embedder=HashingEmbedder(dim=64))
    entry_ids = [writer.store(f"Water the plants in bed {n}", [n]) for n in range(3)]
    written = []

    class Watching(SemanticCache):
        def _read(self, key):
            loaded = super()._read(key)
            if loaded is not None and key.endswith(entry_ids[0]):
                writer.delete(entry_ids[0])  # another process deletes it right after this load read it
            return loaded

    original_put = store.put

    def put(entry):
        written.append(entry.key)
        return original_put(entry)

    store.put = put
    reader = Watching(store, embedder=HashingEmbedder(dim=128), threshold=0.5)
    reader.rebuild_index()
    assert not [k for k in written if k.startswith("semantic:")]
    assert len([k for k in written if k.startswith("semantic-vector:")]) == 3
    fresh = SemanticCache(open_store(sqlite_url), embedder=HashingEmbedder(dim=128), threshold=0.5)
    assert sorted(fresh.entry_ids()) == sorted(entry_ids[1:])
    assert fresh.lookup("Water the plants in bed 0") is None  # deleted, and never brought back


def test_a_plan_rejected_under_one_embedder_is_not_served_again_under_another(sqlite_url):
    """Feedback is a similarity one embedder measured: another embedder's similarity for the same two
    requests differs (the int8 recipe on 7 bits against 8: by up to 0.06), so after an embedder
    change a wrong answer counts at 1.0, and the rejected plan is not served again by vector."""
    stored, asked = "Water the plants in the garden", "water the garden plants please"
    old = SemanticCache(open_store(sqlite_url), embedder=HashingEmbedder(dim=128), threshold=0.3)
    old.store(stored, ["water"])
    hit = old.lookup_hit(asked)
    old.update_reward(hit.entry_id, success=False)
    assert old.lookup(asked) is None  # the entry's threshold rose above the similarity it was wrong at
    new = SemanticCache(open_store(sqlite_url), embedder=HashingEmbedder(dim=64), threshold=0.3)
    probe = SemanticCache(open_store(sqlite_url), embedder=HashingEmbedder(dim=64), threshold=0.3, namespace="probe")
    probe.store(stored, ["water"])
    assert probe.lookup_hit(asked).similarity > hit.similarity  # on this scale the pair reads closer
    assert new.lookup(asked) is None  # ... yet the rejection holds
    assert new.lookup(stored) is not None  # the exact request is still answered
    # Right answers on the new scale bring the entry back, as on one scale.
    for _ in range(15):
        new.update_reward(hit.entry_id, success=True, similarity=0.99)
    assert new.lookup(asked) is not None


def test_feedback_another_version_appends_untagged_after_an_upgrade_is_read_with_caution(sqlite_url):
    """A rolling upgrade: a process of the earlier version appends an observation without its scale
    to an entry whose observations name theirs. Its wrong answer counts at 1.0: the plan it rejected
    is not served by vector; the exact request still is."""
    stored, asked = "Water the plants in the garden", "water the garden plants please"
    sc = SemanticCache(open_store(sqlite_url), embedder=HashingEmbedder(dim=64), threshold=0.3)
    entry_id = sc.store(stored, ["water"])
    hit = sc.lookup_hit(asked)
    sc.update_reward(entry_id, success=True)  # an observation with its scale
    key = f"semantic:default:{entry_id}"
    entry = sc.backend.get(key)
    assert len(json.loads(entry.metadata["scaled_observations"])) == 1
    observed = json.loads(entry.metadata["observations"])  # what an earlier version reads, then appends to
    assert observed == []
    planted = dict(entry.metadata, observations=json.dumps([*observed, [round(hit.similarity - 0.01, 6), False]]))
    sc.backend.put(Entry(key, entry.value, planted, entry.created_at, entry.expires_at))
    fresh = SemanticCache(open_store(sqlite_url), embedder=HashingEmbedder(dim=64), threshold=0.3)
    assert fresh.lookup(asked) is None
    assert fresh.lookup(stored) is not None


@pytest.mark.parametrize("observations", ["not json", "{}", "[[\"x\", true], [0.5], 7, null]", "[[0.5, true, 3, 4]]"])
def test_unreadable_feedback_neither_fails_a_lookup_nor_widens_it(sqlite_url, observations):
    sc = SemanticCache(open_store(sqlite_url), embedder=HashingEmbedder(dim=64), threshold=0.3)
    entry_id = sc.store("Water the plants in the garden", ["water"])
    key = f"semantic:default:{entry_id}"
    entry = sc.backend.get(key)
    sc.backend.put(Entry(key, entry.value, dict(entry.metadata, observations=observations), entry.created_at,
                         entry.expires_at))
    fresh = SemanticCache(open_store(sqlite_url), embedder=HashingEmbedder(dim=64), threshold=0.3)
    assert fresh.lookup("water the garden plants please") is not None  # nothing readable says it was wrong
    assert fresh.update_reward(entry_id, success=False)
    assert fresh.lookup("water the garden plants please") is None


def test_feedback_after_several_hits_is_read_cautiously(sqlite_url):
    """Feedback without ``similarity`` answers one of the hits since the entry's last feedback, which
    one unknown: a wrong answer is taken at the highest of them, a right one only after a single hit
    (an outside tester's order: a right answer for the first hit recorded the second's similarity,
    a trap's, as right, and the rejection that followed recorded nothing)."""
    sc = SemanticCache(open_store(sqlite_url), embedder=HashingEmbedder(dim=64), threshold=0.3)
    entry_id = sc.store("Water the plants in the garden", ["water"])
    near = sc.lookup_hit("water the plants in the garden please")
    far = sc.lookup_hit("water the garden plants please")
    assert near and far and near.similarity > far.similarity
    sc.update_reward(entry_id, success=True)  # two hits: which one worked is unknown, nothing is recorded
    assert "scaled_observations" not in sc.get(entry_id)["metadata"]
    sc.lookup_hit("water the garden plants please")
    sc.lookup_hit("water the plants in the garden please")
    sc.update_reward(entry_id, success=False)  # a rejection after two hits: taken at the higher
    observed = json.loads(sc.get(entry_id)["metadata"]["scaled_observations"])
    assert [o[:2] for o in observed] == [[round(near.similarity, 6), False]]
    fresh = SemanticCache(open_store(sqlite_url), embedder=HashingEmbedder(dim=64), threshold=0.3)
    assert fresh.lookup("water the garden plants please") is None
    assert fresh.lookup("water the plants in the garden please") is None


def test_a_store_that_refuses_the_new_vector_still_serves(tmp_path):
    """Keeping a re-embedded vector is an optimisation: a store whose writes fail still answers the lookup."""

    refused = []

    class NoWrites(MemoryStore):
        def put(self, entry):
            if entry.key.startswith("semantic-vector:"):
                refused.append(entry.key)
                raise StoreError("read-only")
            return super().put(entry)

    store = NoWrites()
    SemanticCache(store, embedder=HashingEmbedder(dim=64)).store("Water the plants", ["garden"])
    assert SemanticCache(store, embedder=HashingEmbedder(dim=128), threshold=0.5).lookup("Please water the plants")[1] == ["garden"]
    assert refused  # the vector was offered, and the store refused it


def test_a_cache_object_shares_its_store(sqlite_url):
    cache = Cache(sqlite_url, cleanup_probability=0.0)
    sc = SemanticCache(cache, embedder=HashingEmbedder())
    entry_id = sc.store("Say hello", ["hi"])
    assert cache.store.get(f"semantic:default:{entry_id}") is not None


class FailingStore(MemoryStore):
    """A store whose every call fails (a stand-in for a server that is down; no real peer can be made to fail on cue)."""

    def _fail(self, *args, **kwargs):
        raise StoreError("store is down")

    get = put = delete = find = counters = add_counters = acquire_lease = _fail


def test_a_failing_store_never_fails_the_caller():
    sc = SemanticCache(FailingStore(), embedder=HashingEmbedder())
    assert sc.lookup("anything at all") is None
    assert sc.store("anything at all", ["plan"]) is None
    assert sc.update_reward("0" * 32, True) is False
    assert sc.stats()["errors"] == 3


def test_bad_input_is_a_clear_error(sc):
    # A list is a conversation now (issue 13): its items must be {role, content} messages.
    with pytest.raises(TypeError, match="'role' and 'content'"):
        sc.lookup(["a", "conversation"])
    with pytest.raises(TypeError, match="prompt must be a string or a non-empty list"):
        sc.lookup(42)
    with pytest.raises(ValueError, match="empty"):
        sc.store("   ", ["plan"])
    with pytest.raises(TypeError, match="JSON"):
        sc.store("Run it", [object()])


def test_ttl_expired_entries_miss():
    store = MemoryStore()
    sc = SemanticCache(store, embedder=HashingEmbedder(), ttl_seconds=60)
    entry_id = sc.store("Fetch the report", ["plan"])
    entry = store.get(f"semantic:default:{entry_id}")
    assert entry.expires_at is not None
    store.put(entry.replace(expires_at=1.0))  # long past
    assert sc.lookup("Fetch the report") is None


class _Recording(HashingEmbedder):
    def __init__(self):
        super().__init__()
        self.seen = []

    def embed(self, texts):
        self.seen.extend(texts)
        return super().embed(texts)


PREAMBLE = "Sprint log: we triaged the flaky upload test, renamed the billing queue and moved the retro. " * 12


def test_a_long_prompt_is_embedded_with_its_end():
    embedder = _Recording()
    sc = SemanticCache(MemoryStore(), embedder=embedder, threshold=0.3)
    sc.store(PREAMBLE + "finally rotate the signing keys", ["keys.rotate()"])
    (seen,) = embedder.seen
    assert seen.endswith("finally rotate the signing keys") and seen.startswith("Sprint log:")
    assert len(seen.split()) < len((PREAMBLE + "finally rotate the signing keys").split())


def test_long_prompts_that_share_a_preamble_must_agree_after_it():
    # No contrast checks: the endings alone must agree by meaning beyond the shared preamble.
    sc = SemanticCache(MemoryStore(), embedder=HashingEmbedder(), threshold=0.5, guard=None)
    sc.store(PREAMBLE + "finally rotate the signing keys", ["keys.rotate()"])
    assert sc.lookup(PREAMBLE + "cheers") is None
    assert sc.lookup(PREAMBLE + "Finally rotate the signing keys!") is not None
    assert sc.stats()["long_prompt_rejections"] == 1


@pytest.mark.parametrize("success, similarity, error, named", [
    ("no", None, TypeError, "success must be a bool"),
    (1, None, TypeError, "success must be a bool"),
    (None, None, TypeError, "success must be a bool"),
    (True, 5, ValueError, r"similarity must be a number in \[-1, 1\]"),
    (False, -1.5, ValueError, r"similarity must be a number in \[-1, 1\]"),
    (True, float("nan"), ValueError, r"similarity must be a number in \[-1, 1\]"),
    (True, "0.9", TypeError, r"similarity must be a number in \[-1, 1\]"),
    (True, True, TypeError, r"similarity must be a number in \[-1, 1\]"),
])
def test_update_reward_refuses_a_success_that_is_not_a_bool_or_a_similarity_out_of_range(sc, success, similarity, error, named):
    entry_id = sc.store("Book a table for two", ["Tool: Booking"])
    with pytest.raises(error, match=named):
        sc.update_reward(entry_id, success, similarity=similarity)
    entry = sc.get(entry_id)
    assert entry["score"] == 1.0 and "observations" not in entry["metadata"]  # nothing recorded
    assert sc.update_reward(entry_id, False, similarity=0.85) is True
    assert sc.update_reward(entry_id, True, similarity=-1) is True
    metadata = sc.get(entry_id)["metadata"]
    observed = json.loads(metadata["scaled_observations"])
    assert [o[:2] for o in observed] == [[0.85, False], [-1.0, True]]
    assert len({o[2] for o in observed}) == 1  # each names the scale it was measured on: this embedder's
    # What earlier versions read (pairs, no scale): each wrong answer at 1.0, the cautious reading.
    assert json.loads(metadata["observations"]) == [[1.0, False]]
