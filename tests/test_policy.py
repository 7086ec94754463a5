"""The policy layer: modes, scopes, phase guards, non-cacheable tools, env and config sources,
``cache.policy()`` blocks, and the rule that calls without a scope are never governed by it."""

from __future__ import annotations

import asyncio
import threading
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actioncache import Cache, cached
from actioncache.policy import (
    BLOCKING_PHASES,
    ENV_VARS,
    MODES,
    Policy,
    PolicyError,
    default_policy,
    load_config,
    policy_environ,
)
from actioncache.trust import trust


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    """No policy variable from the developer's shell, and a working directory without a config."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ACTIONCACHE_TRUST_FILE", str(tmp_path / "trusted"))  # never the user's own list
    (tmp_path / ".git").mkdir()  # stop the config search at this directory
    monkeypatch.chdir(tmp_path)


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, x: int = 1) -> dict:
        self.calls += 1
        return {"x": x, "call": self.calls}


def run_twice(cache: Cache, scope: str | None, action: str = "lint") -> Counter:
    fn = Counter()
    cache.wrap(action, fn, {"x": 1}, scope=scope)
    cache.wrap(action, fn, {"x": 1}, scope=scope)
    return fn


# --- decide() ---------------------------------------------------------------------------------


def test_default_policy_is_off_with_verify_and_read():
    policy = default_policy()
    assert policy.mode == "off"
    assert policy.scopes == {"verify", "read"}
    assert policy.max_age_hours == 168
    decision = policy.decide("verify", "shellcheck")
    assert not decision.lookup and not decision.store and "off" in decision.reason


@pytest.mark.parametrize("mode, lookup, store", [("off", False, False), ("record", False, True), ("use", True, True)])
def test_modes(mode, lookup, store):
    decision = Policy(mode=mode).decide("verify", "shellcheck")
    assert (decision.lookup, decision.store) == (lookup, store)


def test_scope_must_be_enabled():
    policy = Policy(mode="use", scopes=frozenset({"verify"}))
    assert policy.decide("verify", "t").lookup
    refused = policy.decide("read", "t")
    assert not refused.lookup and not refused.store and "not enabled" in refused.reason


def test_non_cacheable_tools_take_globs_and_paths():
    policy = Policy(mode="use", non_cacheable=frozenset({"git_push", "deploy*"}))
    for action in ("git_push", "deploy_prod", "/usr/local/bin/deploy.sh"):
        assert policy.decide("verify", action).store is False
    assert policy.decide("verify", "shellcheck").store is True


@given(mode=st.sampled_from(MODES), phase=st.sampled_from(sorted(BLOCKING_PHASES)),
       scopes=st.sets(st.sampled_from(["verify", "read", "llm_ro", "custom"])), force=st.booleans())
def test_llm_ro_is_never_cached_in_plan_or_build_whatever_the_configuration(mode, phase, scopes, force):
    policy = Policy(mode=mode, scopes=frozenset(scopes), phase=phase, force_fresh=force)
    decision = policy.decide("llm_ro", "llm.call")
    assert not decision.lookup and not decision.store


@given(mode=st.sampled_from(MODES), phase=st.one_of(st.none(), st.sampled_from(["PLAN", "BUILD", "REPORT"])),
       action=st.text(min_size=1, max_size=20))
def test_calls_without_a_scope_always_cache(mode, phase, action):
    assert Policy(mode=mode, phase=phase).decide(None, action) == (True, True, None)


def test_llm_ro_allowed_in_report():
    policy = Policy(mode="use", scopes=frozenset({"verify", "read", "llm_ro"}), phase="REPORT")
    assert policy.decide("llm_ro", "llm.call").lookup


def test_force_fresh_runs_and_refreshes():
    decision = Policy(mode="use", force_fresh=True).decide("verify", "t")
    assert (decision.lookup, decision.store) == (False, True)


# --- environment ------------------------------------------------------------------------------


def test_environment_sets_the_default(monkeypatch):
    monkeypatch.setenv("CACHE_MODE", "use")
    monkeypatch.setenv("CACHE_SCOPE", "verify, LLM_RO")
    monkeypatch.setenv("CACHE_PHASE", "report")
    policy = default_policy()
    assert (policy.mode, policy.scopes, policy.phase) == ("use", {"verify", "llm_ro"}, "REPORT")


def test_actioncache_names_win_over_cache_names(monkeypatch):
    monkeypatch.setenv("CACHE_MODE", "use")
    monkeypatch.setenv("ACTIONCACHE_MODE", "record")
    assert default_policy().mode == "record"


def test_bad_mode_names_the_variable_and_the_fix(monkeypatch):
    monkeypatch.setenv("CACHE_MODE", "yes")
    with pytest.raises(PolicyError, match=r"\$CACHE_MODE='yes'.*off.*record.*use"):
        default_policy()


def test_cache_skip_maps_to_use_and_warns(monkeypatch):
    monkeypatch.setenv("CACHE_SKIP", "1")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        policy = default_policy()
    assert (policy.mode, policy.scopes) == ("use", {"verify", "read"})
    assert any("deprecated" in str(w.message) for w in caught)


def test_policy_environ_round_trips_through_the_environment(monkeypatch):
    policy = Policy(mode="record", scopes=frozenset({"read", "llm_ro"}), phase="REPORT")
    for name, value in policy_environ(policy).items():
        monkeypatch.setenv(name, value)
    again = default_policy()
    assert (again.mode, again.scopes, again.phase) == (policy.mode, policy.scopes, policy.phase)


# --- config files -----------------------------------------------------------------------------


def test_toml_config(tmp_path):
    (tmp_path / "actioncache.toml").write_text(
        'mode = "use"\nscopes = ["verify"]\nnon_cacheable_tools = ["git_push"]\nmax_cache_age_hours = 24\n'
        'store = ".cache/ac.db"\n')
    trust(tmp_path)  # a walked-up config chooses mode and store only once trusted
    policy = default_policy()
    assert (policy.mode, policy.scopes, policy.max_age_hours) == ("use", {"verify"}, 24.0)
    assert policy.decide("verify", "git_push").store is False
    assert load_config().store == "sqlite:///" + str((tmp_path / ".cache" / "ac.db").resolve()).lstrip("/")


@pytest.mark.parametrize("line, named", [("max_cache_age_hours = -3", "max_cache_age_hours=-3"),
                                          ("non_cacheable_tools = 5", "non_cacheable_tools")])
def test_a_bad_config_value_is_named_as_the_file_spells_it(tmp_path, line, named):
    (tmp_path / "actioncache.toml").write_text(line + "\n")
    with pytest.raises(PolicyError, match=f"actioncache.toml: {named}"):
        load_config()


def test_seed_style_yaml_config_found_from_a_subdirectory(tmp_path, monkeypatch):
    (tmp_path / ".actioncache.yml").write_text(
        "non_cacheable_tools:\n  - git_push\n  - deploy_script\nmax_cache_age_hours: 168\n"
        "cache_settings:\n  enabled: true\n  check_git_sha: false\n  verbose: false\n")
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    policy = default_policy()
    assert policy.non_cacheable == {"git_push", "deploy_script"}
    assert policy.check_git_sha is False


def test_environment_wins_over_config(tmp_path, monkeypatch):
    (tmp_path / "actioncache.toml").write_text('mode = "record"\n')
    trust(tmp_path)
    assert default_policy().mode == "record"
    monkeypatch.setenv("CACHE_MODE", "use")
    assert default_policy().mode == "use"


def test_config_edits_are_seen(tmp_path):
    config = tmp_path / "actioncache.toml"
    config.write_text('mode = "record"\n')
    trust(tmp_path)
    assert default_policy().mode == "record"
    config.write_text('mode = "use"   \n')
    import os

    os.utime(config, ns=(1, 10**18))  # a different mtime, whatever the clock's resolution
    assert default_policy().mode == "use"


def test_unknown_config_key_is_named(tmp_path):
    (tmp_path / "actioncache.toml").write_text('mdoe = "use"\n')
    with pytest.raises(PolicyError, match="unknown setting 'mdoe'"):
        default_policy()


def test_disabled_cache_settings_mean_off(tmp_path, monkeypatch):
    (tmp_path / ".actioncache.yml").write_text("mode: use\ncache_settings:\n  enabled: false\n")
    assert default_policy().mode == "off"


def test_disabled_cache_settings_beat_an_exported_mode(tmp_path, monkeypatch):
    # Seed 001's kill switch needs no trust (turning caching off is always safe) and must kill.
    (tmp_path / ".actioncache.yml").write_text("cache_settings:\n  enabled: false\n")
    monkeypatch.setenv("CACHE_MODE", "use")
    assert default_policy().mode == "off"


def test_seed_config_location_is_found(tmp_path, monkeypatch):
    seed = tmp_path / "artifacts" / "rollflow_cache"
    seed.mkdir(parents=True)
    (seed / "config.yml").write_text("non_cacheable_tools: [git_push]\nmax_cache_age_hours: 12\n")
    sub = tmp_path / "workers" / "ralph"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert load_config().path == seed / "config.yml"
    assert default_policy().max_age_hours == 12.0 and default_policy().non_cacheable == {"git_push"}


def test_untrusted_config_keeps_keys_but_not_store_or_mode(tmp_path):
    (tmp_path / "actioncache.toml").write_text('mode = "use"\nstore = "/tmp/elsewhere.db"\nscopes = ["verify"]\n')
    policy = default_policy()
    assert policy.mode == "off" and policy.scopes == {"verify"} and load_config().store is None
    assert any("actioncache trust" in note and "store = '/tmp/elsewhere.db'" in note for note in policy.notes)
    trust(tmp_path)
    import os

    os.utime(tmp_path / "actioncache.toml", ns=(1, 10**18))  # re-read
    assert default_policy().mode == "use" and load_config().store == "sqlite:///tmp/elsewhere.db"


def test_named_config_file_needs_no_trust(tmp_path, monkeypatch):
    named = tmp_path / "mine.toml"
    named.write_text('mode = "record"\n')
    monkeypatch.setenv("ACTIONCACHE_CONFIG", str(named))
    assert default_policy().mode == "record"


@pytest.mark.parametrize("phase", [None, "PLAN", "BUILD", "VERIFY", "SOMETHING"])
def test_llm_ro_is_cached_only_in_allowed_phases(cache, phase, caplog):
    with cache.policy(mode="use", scopes="verify,read,llm_ro", phase=phase):
        assert run_twice(cache, "llm_ro", "llm.step").calls == 2
    assert "never cached" in caplog.text
    assert cache.stats()["by_action"]["llm.step"]["phase_blocked"] == 2


@pytest.mark.parametrize("phase", ["REPORT", "ANALYZE", "review"])
def test_llm_ro_is_cached_in_read_only_phases(cache, phase):
    with cache.policy(mode="use", scopes="verify,read,llm_ro", phase=phase):
        assert run_twice(cache, "llm_ro", "llm.step").calls == 1


def test_llm_ro_phase_list_is_configurable(cache, monkeypatch):
    monkeypatch.setenv("CACHE_LLM_RO_PHASES", "VERIFY")
    with cache.policy(mode="use", scopes="verify,read,llm_ro", phase="VERIFY"):
        assert run_twice(cache, "llm_ro", "llm.step").calls == 1
    with cache.policy(mode="use", scopes="verify,read,llm_ro", phase="REPORT"):
        assert run_twice(cache, "llm_ro", "llm.other").calls == 2


# --- through the cache ------------------------------------------------------------------------


def test_scoped_calls_run_fresh_by_default(cache):
    assert run_twice(cache, "verify").calls == 2
    assert cache.store.count() == 0


def test_unscoped_calls_cache_whatever_the_mode(cache, monkeypatch):
    monkeypatch.setenv("CACHE_MODE", "off")
    with cache.policy(mode="off"):
        assert run_twice(cache, None).calls == 1


def test_env_mode_use_caches_scoped_calls(cache, monkeypatch):
    monkeypatch.setenv("CACHE_MODE", "use")
    assert run_twice(cache, "verify").calls == 1


def test_record_mode_stores_without_looking_up(cache):
    with cache.policy(mode="record"):
        assert run_twice(cache, "verify").calls == 2
    with cache.policy(mode="use"):
        assert run_twice(cache, "verify").calls == 0


def test_policy_blocks_nest_and_restore(cache):
    with cache.policy(mode="use") as outer:
        with cache.policy(phase="BUILD") as inner:
            assert inner.mode == "use" and inner.phase == "BUILD"
        assert outer.phase is None
    with cache.policy(mode="use", scopes="verify,read,llm_ro", phase="REPORT"):
        assert run_twice(cache, "llm_ro", "report").calls == 1
    assert run_twice(cache, "llm_ro", "report2").calls == 2  # back to the default: off


def test_phase_block_is_logged_and_counted(cache, caplog):
    with cache.policy(mode="use", scopes=["verify", "read", "llm_ro"], phase="build"):
        fn = run_twice(cache, "llm_ro", "llm.plan")
    assert fn.calls == 2
    assert cache.store.count() == 0
    assert "never cached in phase BUILD" in caplog.text
    assert cache.stats()["by_action"]["llm.plan"]["phase_blocked"] == 2


def test_non_cacheable_from_a_block_adds_to_the_config(cache, tmp_path):
    (tmp_path / "actioncache.toml").write_text('non_cacheable_tools = ["git_push"]\n')
    with cache.policy(mode="use", non_cacheable=["deploy"]) as policy:
        assert policy.non_cacheable == {"git_push", "deploy"}
        assert run_twice(cache, "verify", "deploy").calls == 2
        assert run_twice(cache, "verify", "git_push").calls == 2
        assert run_twice(cache, "verify", "lint").calls == 1


def test_decorator_scope_obeys_the_policy(cache):
    calls = []

    @cached(cache=cache, scope="read")
    def read(path: str) -> str:
        calls.append(path)
        return path.upper()

    @cached(cache=cache)
    def plain(x: int) -> int:
        calls.append(x)
        return x

    read("a"), read("a"), plain(1), plain(1)
    assert calls == ["a", "a", 1]
    with cache.policy(mode="use"):
        read("b"), read("b"), plain(1)
    assert calls == ["a", "a", 1, "b"]


def test_blocks_are_per_thread(cache):
    seen: dict[str, str] = {}
    inside = threading.Event()
    release = threading.Event()

    def worker() -> None:
        inside.wait(5)
        from actioncache.policy import active_policy

        seen["thread"] = active_policy(cache).mode
        release.set()

    thread = threading.Thread(target=worker)
    thread.start()
    with cache.policy(mode="use"):
        inside.set()
        release.wait(5)
    thread.join(5)
    assert seen["thread"] == "off"


def test_blocks_are_per_task(cache):
    from actioncache.policy import active_policy

    async def in_block(mode: str, started: asyncio.Event, other: asyncio.Event) -> str:
        with cache.policy(mode=mode):
            started.set()
            await other.wait()
            return active_policy(cache).mode

    async def main() -> list[str]:
        a, b = asyncio.Event(), asyncio.Event()
        return await asyncio.gather(in_block("use", a, b), in_block("record", b, a))

    assert asyncio.run(main()) == ["use", "record"]


def test_block_arguments_are_validated(cache):
    with pytest.raises(PolicyError, match="not a cache mode"):
        with cache.policy(mode="always"):
            pass
    with pytest.raises(PolicyError, match="between 0 and 1"):
        with cache.policy(audit_rate=2):
            pass


def test_custom_hook_is_kept_and_refused_by_blocks(sqlite_url):
    class Never:
        def decide(self, scope, action):
            from actioncache import Decision

            return Decision(False, False, "never")

    cache = Cache(sqlite_url, policy_hook=Never())
    fn = Counter()
    cache.wrap("a", fn, {})
    cache.wrap("a", fn, {})
    assert fn.calls == 2  # a custom hook still governs unscoped calls, as before
    with pytest.raises(PolicyError, match="custom policy_hook"):
        with cache.policy(mode="use"):
            pass
    cache.close()
