"""The cross-encoder verifier (the default with the packaged model, verifier="cross" by name): shipped as int8 ONNX with its tokenizer, reading
both key texts in one input; it refuses the small edits it learned, serves a
free rewording, and a broken model file refuses rather than serves."""

from __future__ import annotations

import json

import pytest

from actioncache.semantic import HashingEmbedder, SemanticCache
from actioncache.semantic.guard import VERIFIER, Pair, Pipeline
from actioncache.stores.memory import MemoryStore


@pytest.fixture(scope="module")
def cross():
    from actioncache.semantic import cross

    if not cross.available():
        pytest.fail("the cross-encoder's model files must ship in actioncache/semantic/data")
    return cross


def test_it_ships_with_its_operating_point_and_loads(cross):
    from importlib import resources

    data = resources.files("actioncache.semantic").joinpath("data")
    meta = json.loads(data.joinpath("verifier_cross.json").read_text())
    assert meta["kind"] == "cross-encoder" and 0.0 < meta["min_score"] < 1.0
    assert len(data.joinpath(meta["file"]).read_bytes()) < 30_000_000  # int8 weights, the word-piece table too
    verifier = cross.CrossEncoderVerifier()
    assert verifier.min_score == meta["min_score"] and verifier.id == meta["id"]
    assert 0.0 <= verifier.probability("restart the api", "restart the api service") <= 1.0


def test_it_is_the_default_with_the_packaged_model_and_chosen_by_name_with_any_embedder(model, cross):
    default = SemanticCache(MemoryStore(), embedder=model)
    assert [type(g).__name__ for g in default.pipeline.gates if g.kind == VERIFIER] == ["CrossEncoderVerifier"]
    # the cosine only chooses what the cross-encoder reads: its own calibrated threshold, lower than alone
    assert default.threshold == 0.55
    assert SemanticCache(MemoryStore(), embedder=model, verifier="learned").threshold == 0.70
    assert SemanticCache(MemoryStore(), embedder=model, verifier=None).threshold == 0.70
    assert SemanticCache(MemoryStore(), embedder=model, threshold=0.8).threshold == 0.8  # yours stays
    chosen = [g for g in SemanticCache(MemoryStore(), embedder=model, verifier="cross").pipeline.gates
              if g.kind == VERIFIER]
    assert [type(g).__name__ for g in chosen] == ["CrossEncoderVerifier"] and chosen[0].name == "cross"
    # it reads texts, not an embedder's states: on with any embedder when asked
    with_hashing = SemanticCache(MemoryStore(), embedder=HashingEmbedder(), verifier="cross")
    assert [type(g).__name__ for g in with_hashing.pipeline.gates if g.kind == VERIFIER] == ["CrossEncoderVerifier"]
    with pytest.raises(ValueError, match="'cross'"):
        SemanticCache(MemoryStore(), embedder=HashingEmbedder(), verifier="crosss")


# Small edits of classes it was trained to refuse (an exception added, a scope narrowed), not in its
# training data as written here; the rules refuse them too, so it is asked alone.
TRAPS = [
    ("Email everyone on the team about the outage", "Email everyone on the team about the outage except Jake"),
    ("archive all of the old invoices", "archive only the oldest invoice"),
]


@pytest.mark.parametrize(("stored", "asked"), TRAPS)
def test_it_refuses_a_small_edit_by_itself(model, cross, stored, asked):
    verifier = cross.CrossEncoderVerifier()
    assert Pipeline([verifier]).check(Pair(asked, stored, 0.9)) is not None
    assert verifier.probability(stored, asked) < verifier.min_score


# The same small talk around two different requests makes them no more alike: the model is trained
# with chatter-wrapped copies of its pairs (bench/train_semantic_crossencoder.py, chatter_wrapped).
# Before, it had seen chatter only around should-hits, and scored the first pair 0.92 and the last 0.91.
# Pairs written for this test, asked of the model alone (the rules refuse them too).
SHARED_CHATTER_TRAPS = [
    ("hey quick favor, transfer $200 from checking to savings, thanks a ton!",
     "hey quick favor, transfer $200 from savings to checking, thanks a ton!"),
    ("sorry to be a pain but could you email Dana the slides? ty!!",
     "sorry to be a pain but could you email Omar the slides? ty!!"),
    ("morning :) add eggs to the shopping list, much obliged",
     "morning :) remove eggs from the shopping list, much obliged"),
]


@pytest.mark.parametrize(("stored", "asked"), SHARED_CHATTER_TRAPS)
def test_shared_small_talk_does_not_make_two_requests_one(cross, stored, asked):
    verifier = cross.CrossEncoderVerifier()
    assert verifier.probability(stored, asked) < verifier.min_score
    assert verifier.probability(asked, stored) < verifier.min_score


def test_different_small_talk_around_one_request_is_one_request(cross):
    verifier = cross.CrossEncoderVerifier()
    stored, asked = "hey quick favor, archive the Q3 invoices, thanks a ton!", "ok so basically, archive the Q3 invoices pls, cheers"
    assert min(verifier.probability(stored, asked), verifier.probability(asked, stored)) >= verifier.min_score


def test_it_serves_a_free_rewording(model, cross):
    sc = SemanticCache(MemoryStore(), embedder=model, verifier="cross")
    sc.store("restart the payments service in production", ["k8s.rollout_restart('payments', env='prod')"])
    hit = sc.lookup_hit("could you restart the payments service in production for me?")
    assert hit is not None and not hit.exact
    assert cross.CrossEncoderVerifier().probability(
        "restart the payments service in production", "restart the payments service in production for me") >= 0.5


def test_a_refusal_is_counted(model, cross):
    sc = SemanticCache(MemoryStore(), embedder=model, verifier=cross.CrossEncoderVerifier(min_score=1.0))
    sc.store("list the open pull requests in acme/api", ["gh.pr_list('acme/api')"])
    assert sc.lookup("show the open pull requests in acme/api") is None
    assert sc.stats()["rejections"] == {"cross": 1} and sc.stats()["verifier_rejections"] == 1


def test_a_broken_model_file_refuses_rather_than_serves(model, cross, monkeypatch):
    meta = cross.CrossEncoderVerifier().meta
    real = cross._data
    monkeypatch.setattr(cross, "_data", lambda name: b"\x08\x07 not a model" if name == meta["file"] else real(name))
    monkeypatch.setattr(cross, "_LOADED", {})
    sc = SemanticCache(MemoryStore(), embedder=model, verifier="cross")
    sc.store("restart the payments service in production", ["restart"])
    assert sc.lookup("could you restart the payments service in production for me?") is None
    assert sc.stats()["rejections"] == {"cross": 1}


def test_a_bad_operating_point_is_a_clear_error(cross):
    with pytest.raises(ValueError, match="min_score"):
        cross.CrossEncoderVerifier(min_score=1.5)


def test_without_its_files_the_default_falls_back_to_the_token_state_head(model, cross, monkeypatch):
    monkeypatch.setattr(cross, "available", lambda: False)
    sc = SemanticCache(MemoryStore(), embedder=model)
    assert [g.name for g in sc.pipeline.gates if g.kind == VERIFIER] == ["learned"] and sc.threshold == 0.70
    with pytest.raises(ValueError, match="cross-encoder verifier needs"):
        SemanticCache(MemoryStore(), embedder=model, verifier="cross")


# A lookup starts the model on its first candidate on a spare core while the rules read it
# (CrossEncoderVerifier.prepare): only the time may change, never a decision.
READ_AHEAD_PAIRS = [
    ("restart the payments service in production", "could you restart the payments service in production for me?"),
    ("Email everyone on the team about the outage", "Email everyone on the team about the outage except Jake"),
    ("archive all of the old invoices", "archive only the oldest invoice"),
    ("list the open pull requests in acme/api", "show me the open pull requests in acme/api"),
    ("book a table for two at 7pm", "book a table for two at 8pm"),
]


def _cross_gate(sc):
    return next(g for g in sc.pipeline.gates if g.kind == VERIFIER)


def _lookups(model, spare: bool, runs_on: list[str]):
    import threading

    out = []
    for stored, asked in READ_AHEAD_PAIRS:
        sc = SemanticCache(MemoryStore(), embedder=model)
        gate = _cross_gate(sc)
        gate._spare_core = lambda: spare  # as if the load average said so
        real_run = gate._run

        def run(feeds, real_run=real_run):
            runs_on.append(threading.current_thread().name)
            return real_run(feeds)

        gate._run = run
        sc.store(stored, ["plan", stored])
        hit = sc.lookup_hit(asked)
        out.append((hit is not None and hit.actions, sc.stats()["rejections"], sc.stats()["verifier_rejections"]))
    return out


def test_reading_ahead_on_a_spare_core_decides_as_reading_after(model, cross):
    ahead_threads: list[str] = []
    after_threads: list[str] = []
    ahead = _lookups(model, True, ahead_threads)
    after = _lookups(model, False, after_threads)
    assert ahead == after
    assert any(served for served, _, _ in after) and any(not served for served, _, _ in after)  # both kinds asked
    # (a lookup whose read ahead found the worker still on the last one runs its model itself)
    assert any(name.startswith("actioncache-cross") for name in ahead_threads)
    assert after_threads and not any(name.startswith("actioncache-cross") for name in after_threads)


def test_a_read_ahead_that_fails_or_never_ends_leaves_the_lookup_to_run_the_model_itself(model, cross, monkeypatch):
    from concurrent.futures import Future

    class NeverRuns:
        def submit(self, fn):
            return Future()  # a worker lost (say, to a fork): never done

    class Fails:
        def submit(self, fn):
            future: Future = Future()
            future.set_exception(RuntimeError("the worker's model run failed"))
            return future

    import threading

    monkeypatch.setattr(cross, "_AHEAD_PATIENCE", 0.05)
    for worker in (NeverRuns(), Fails()):
        monkeypatch.setattr(cross, "_worker", lambda worker=worker: worker)
        monkeypatch.setattr(cross, "_IN_FLIGHT", threading.Lock())  # (a lost read stays in flight for good)
        sc = SemanticCache(MemoryStore(), embedder=model)
        _cross_gate(sc)._spare_core = lambda: True
        sc.store("restart the payments service in production", ["restart"])
        assert sc.lookup("could you restart the payments service in production for me?") == (
            sc.entry_ids()[0], ["restart"])
        sc.store("Email everyone on the team about the outage", ["email"])
        assert sc.lookup("Email everyone on the team about the outage except Jake") is None


def test_a_child_forked_while_another_thread_held_the_verifiers_locks_still_looks_up(model, cross):
    """Only the forking thread lives on in a child: a lock another thread held at the fork would stay
    held there forever. The verifier's locks and its worker are made anew in the child."""
    import os
    import threading
    import time

    sc = SemanticCache(MemoryStore(), embedder=model)
    gate = _cross_gate(sc)
    gate._spare_core = lambda: True
    sc.store("restart the payments service in production", ["restart"])
    assert sc.lookup("could you restart the payments service in production for me?") is not None
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with gate._lock, cross._LOCK:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10)
    pid = os.fork()
    if pid == 0:  # the child: a new request, so the model runs (ahead, then for the verdict)
        try:
            os._exit(0 if sc.lookup("please restart the payments service in production") is not None else 1)
        except BaseException:  # any failure is the child's exit code
            os._exit(2)
    release.set()
    holder.join()
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child's lookup hung on a lock held at the fork")
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_read_ahead_never_queues_behind_another_and_a_shutdown_refuses_it_quietly(model, cross, monkeypatch, caplog):
    """One read ahead in flight per process: lookups from many threads never wait behind reads whose
    candidates the rules refused. After the interpreter began to shut down the worker takes no work:
    the lookup runs its model itself and says nothing."""
    import threading

    busy = threading.Lock()
    monkeypatch.setattr(cross, "_IN_FLIGHT", busy)
    runs_on: list[str] = []
    assert busy.acquire()  # another read ahead is running
    try:
        assert _lookups(model, True, runs_on) == _lookups(model, False, [])
    finally:
        busy.release()
    assert runs_on and not any(name.startswith("actioncache-cross") for name in runs_on)

    class ShutDown:
        def submit(self, fn):
            raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    monkeypatch.setattr(cross, "_worker", lambda: ShutDown())
    with caplog.at_level("WARNING", logger="actioncache.semantic"):
        assert _lookups(model, True, []) == _lookups(model, False, [])
    assert not [r for r in caplog.records if "preparing" in r.getMessage()]
    assert busy.acquire(blocking=False)  # each refused hand-over let go of it
    busy.release()


def test_the_read_ahead_turns_itself_off_where_the_hand_over_is_slow(model, cross, monkeypatch):
    """Where the scheduler wakes the caller only after the worker's model run, the read ahead only
    costs time: past a slow median of nine hand-overs it stays off for a while."""
    import threading

    monkeypatch.setattr(cross, "_SLOW_HANDOVER", 0.0)  # every hand-over counts as slow
    monkeypatch.setattr(cross, "_IN_FLIGHT", threading.Lock())
    sc = SemanticCache(MemoryStore(), embedder=model)
    gate = _cross_gate(sc)
    gate._spare_core = lambda: True
    runs_on: list[str] = []
    real_run = gate._run
    gate._run = lambda feeds: (runs_on.append(threading.current_thread().name), real_run(feeds))[1]
    sc.store("restart the payments service in production", ["restart"])
    asked = [f"could you restart the payments service in production {tail}" for tail in
             ("for me", "now", "please", "today", "asap", "right away", "for us", "quickly", "again", "soon", "tonight")]
    for text in asked:
        sc.lookup(text)
        assert cross._IN_FLIGHT.acquire(timeout=5)  # (each read ahead over before the next lookup)
        cross._IN_FLIGHT.release()
    on_worker = [name.startswith("actioncache-cross") for name in runs_on]
    assert on_worker[:9] == [True] * 9  # nine read ahead, then off
    assert not any(on_worker[9:]) and len(on_worker) > 9
