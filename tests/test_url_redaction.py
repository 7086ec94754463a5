"""One URL redaction everywhere a URL is shown: ``repr(cache)``, ``cache.url``, ``stats()["store"]``,
``_cache_error`` and every ``StoreURLError``, whatever characters the password holds.

The servers are addressed on port 1, which refuses connections: every store call fails, and every
message about the failure must stay clean. No server is needed."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actioncache import Cache
from actioncache.errors import StoreURLError
from actioncache.stores.base import redact_secrets, redact_url, url_secrets

SECRET = "S3CRETq"


def _shown(url: str) -> list[str]:
    """Everything a user sees of a cache on ``url``; a URL refused at open shows its error chain."""
    try:
        cache = Cache(url)
    except StoreURLError as err:
        assert err.__cause__ is None and (err.__context__ is None or err.__suppress_context__), \
            "an error about a URL must not chain the parser's exception (its text may hold the password)"
        return [str(err)]
    result = cache.wrap("a", lambda: 1, key="k")
    assert result["result"] == 1
    shown = [repr(cache), cache.url, str(result), str(cache.stats()), str(cache.get("k")),
             str(cache.invalidate(pattern="*"))]
    cache.close()
    return shown


@pytest.mark.parametrize("url", [
    f"postgresql://127.0.0.1:1/test?sslpassword={SECRET}",
    f"postgresql://127.0.0.1:1/test?PASSWORD={SECRET}",
    f"redis://:{SECRET} pw@127.0.0.1:1/13",
    f"redis://:{SECRET}/pw@127.0.0.1:1/13",
    f"redis://:{SECRET}#pw@127.0.0.1:1/13",
    f"redis://:{SECRET}?pw@127.0.0.1:1/13",
    f"postgresql://postgres:{SECRET}?pw@127.0.0.1:1/test",
    f"s3://bucket/p?secret={SECRET}&key={SECRET}",
])
def test_password_never_shown(url):
    pytest.importorskip("redis" if url.startswith("redis") else "psycopg")
    for text in _shown(url):
        assert SECRET not in text, text


@pytest.mark.parametrize("name", ["password", "sslpassword", "PASSWORD", "passwd", "db_pwd", "client_secret",
                                  "authToken", "refresh_token", "AccountKey", "sslkey", "sig", "X-Amz-Signature",
                                  "credentials", "auth"])
def test_secret_option_names_follow_one_pattern(name):
    """Any option whose name contains password, passwd, pwd, secret, token, key, signature, sig,
    credential or auth (any case) is hidden; other options stay readable."""
    shown = redact_url(f"postgresql://h/db?table=t&{name}={SECRET}&sslmode=disable")
    assert SECRET not in shown and "table=t" in shown and "sslmode=disable" in shown


def test_user_name_without_password_is_kept():
    assert redact_url("postgresql://postgres@127.0.0.1:5432/test?table=t") == \
        "postgresql://postgres@127.0.0.1:5432/test?table=t"
    assert redact_url("redis://user:pw@127.0.0.1:6379/0") == "redis://user:***@127.0.0.1:6379/0"


def test_a_drivers_message_quoting_a_piece_of_the_password_is_scrubbed():
    url = "redis://:S3CRET/pw@127.0.0.1:1/13"
    message = "Port could not be cast to integer value as 'S3CRET'"
    assert "S3CRET" not in redact_secrets(message, url_secrets(url))


_PRINTABLE = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=16)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(middle=_PRINTABLE, scheme=st.sampled_from(["redis", "postgresql"]), user=st.sampled_from(["", "app"]))
def test_no_password_is_ever_shown(middle, scheme, user):
    """A password of any printable characters (space, '/', '#', '@', ':', '%' ...) is never shown.
    The markers around it also catch a driver quoting only a piece of it."""
    pytest.importorskip("redis" if scheme == "redis" else "psycopg")
    password = f"ZQX{middle}XQZ"
    url = f"{scheme}://{user}:{password}@127.0.0.1:1/13"
    for text in _shown(url):
        assert password not in text and "ZQX" not in text and "XQZ" not in text, text


# Every store URL a user may hold a secret in: each query option below is unknown to the store (or,
# for blob-sqlite, given beside a bad option), so opening it fails with an error that quotes the URL.
_SECRET_NAMES = ("token", "api_key", "password", "secret")
_STORE_URLS = {
    "sqlite": "sqlite:///{tmp}/c.db?{option}",
    "memory": "memory://?{option}",
    "duckdb": "duckdb:///{tmp}/c.duckdb?{option}",
    "libsql": "libsql+file:///{tmp}/c.db?{option}",
    "blob-sqlite": "blob-sqlite+file:///{tmp}/c.db?flush_writes=x&{option}",
    "blob-sqlite-bare": "blob-sqlite://bucket/c.db?{option}",
}
_USERINFO_URLS = {
    "sqlite": "sqlite://u:{secret}@localhost/{tmp}/c.db",
    "memory": "memory://u:{secret}@name/x?bogus=1",
    "duckdb": "duckdb://u:{secret}@host/{tmp}/c.duckdb",
    "libsql": "libsql+file://u:{secret}@host/{tmp}/c.db",
    "blob-sqlite-bare": "blob-sqlite://u:{secret}@bucket/c.db",
}
_DRIVERS = {"duckdb": "duckdb", "libsql": "libsql"}
_CASES = [pytest.param(store, template.replace("{option}", f"{name}={SECRET}"), id=f"{store}-{name}")
          for store, template in _STORE_URLS.items() for name in _SECRET_NAMES]
_CASES += [pytest.param(store, template.replace("{secret}", SECRET), id=f"{store}-userinfo")
           for store, template in _USERINFO_URLS.items()]


@pytest.mark.parametrize(("store", "template"), _CASES)
def test_a_refused_store_url_never_shows_its_secret(store, template, tmp_path):
    if store in _DRIVERS:
        pytest.importorskip(_DRIVERS[store])
    url = template.replace("{tmp}", str(tmp_path).lstrip("/"))
    with pytest.raises(StoreURLError) as err:
        Cache(url)
    assert SECRET not in str(err.value), str(err.value)
    assert "***" in str(err.value) or "u:" not in url, str(err.value)


@pytest.mark.parametrize(("store", "template"), _CASES)
def test_the_cli_never_shows_a_store_urls_secret(store, template, tmp_path, src_env):
    import subprocess
    import sys

    if store in _DRIVERS:
        pytest.importorskip(_DRIVERS[store])
    url = template.replace("{tmp}", str(tmp_path).lstrip("/"))
    for argv in (["copy", "--from", url, "--to", f"sqlite:///{tmp_path}/to.db"], ["stats", "--store", url]):
        done = subprocess.run([sys.executable, "-m", "actioncache", *argv], capture_output=True, text=True,
                              env=src_env, timeout=120)
        assert done.returncode != 0, (argv, done.stdout, done.stderr)
        assert SECRET not in done.stdout + done.stderr, (argv, done.stdout, done.stderr)


# --- messages: only the secrets go, never the driver's words ----------------------------------

DRIVER_MESSAGES = [
    # a Lua error: '@user_script:23' after a URL must not be read as the end of a password
    "Redis at redis://127.0.0.1:6379/0?prefix=x (prefix 'x'): put failed: WRONGTYPE Operation against a key "
    "holding the wrong kind of value script: 3f2a, on @user_script:23.",
    "connection to server at \"db.example:5432\" (10.0.0.1), port 5432 failed: FATAL: role \"bob@corp\" does not exist",
    "Error 111 connecting to 127.0.0.1:6379. Connection refused. user@host:22 said key=cache:a:1",
    "see https://redis.io/docs/latest/ and mailto:ops@example.com for help: @everyone",
]


@pytest.mark.parametrize("message", DRIVER_MESSAGES)
def test_a_driver_message_without_secrets_is_shown_whole(message):
    assert redact_secrets(message) == message


def test_secrets_inside_a_driver_message_go_and_the_rest_stays():
    url = f"redis://:{SECRET}@127.0.0.1:1/0"
    message = (f"Error connecting to {url}: @user_script:23 failed; retry with password={SECRET} "
               f"or sslpassword='{SECRET}' (key=cache:k)")
    shown = redact_secrets(message, url_secrets(url))
    assert SECRET not in shown
    assert "@user_script:23 failed; retry with" in shown and "(key=cache:k)" in shown
    assert "redis://:***@127.0.0.1:1/0" in shown


def test_a_planted_wrong_type_key_no_longer_fails_a_script_on_a_real_redis(tmp_path):
    """A wrong-type bookkeeping key used to fail the write script (its '@user_script:N' error reached
    _cache_error whole); the scripts now check every key's type before the first write and repair
    garbage (issue 32: a write that failed midway left half an entry), so the write lands whole."""
    import services

    services.require_redis()
    from actioncache import open_store
    from actioncache.stores.redis import bucket_of

    store = open_store(services.redis_url(15, "prefix=redact_script"))
    try:
        cache = Cache(store=store, cleanup_probability=0)
        key = cache.key_for("act", {})
        store.client.set(f"{{redact_script|{bucket_of(key)}}}:z", "a string where the expiry index goes")
        result = cache.wrap("act", lambda: 1)
        assert result["result"] == 1 and "_cache_error" not in result, result
        again = cache.wrap("act", lambda: 2)
        assert again["_cache_hit"] is True and again["result"] == 1, again
    finally:
        store.drop()
        store.close()
