"""Untrusted mode: what an agent from elsewhere may do (``load_agent(..., trusted=False)``,
``actioncache run --untrusted``).

A trusted agent is code you wrote: it may run Python, commands, read any file, reach any host.
An untrusted one is data: every capability it could abuse is refused unless the user running it
allows it, and each refusal names its rule and the flag that allows it, so the user decides
knowingly. The rules (each a name used in messages and docs):

* ``run-blocks``  no ``run:`` blocks (they are Python)
* ``imports``     no ``imports:`` (they are Python)
* ``commands``    no ``command.run`` / ``command.exec_cached``
* ``files``       ``file.*``, ``storage.hash``, the ``storage_hash`` filter, ``file_content`` keys and
                  local store paths stay under one root (the agent's directory or ``--root``),
                  after symlinks and ``..`` are resolved
* ``hosts``       network actions and network stores reach only hosts from ``--allow-host``
* ``stores``      a store the agent names is judged on what its own URL parser says it opens (the
                  files, socket directories and hosts ``stores.registry.store_targets`` reports, the
                  function its ``from_url`` takes them from): ``sqlite://localhost/ABS``, ``%2f``,
                  ``..`` and symlinks are read as the store reads them; a kind of store that cannot
                  say (Firestore, cloud blob stores, third-party stores) is refused
* ``env``         ``${VAR}`` expands only variables from ``--allow-env``
* ``secrets``     an API key from the environment goes only to the origin (scheme, host and port) of
                  the base URL the environment names (``$OPENAI_BASE_URL``) or to a host the user
                  allowed, never to one the agent picked (another port or ``http`` on the same host
                  is another server)
* templates run in Jinja's immutable sandbox: no ``state.update(...)`` or any other mutation, and
  under a budget of operations, value sizes, output and wall-clock time (``agents/templating.py``)

An untrusted agent that names no store gets its own (``.actioncache-untrusted.db`` under its
root), never the user's default store, where it could plant answers for the user's own agents.
"""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..config import file_url
from ..errors import ActionCacheError
from .errors import AgentDefinitionError, NodeError

UNTRUSTED_STORE_FILE = ".actioncache-untrusted.db"


class UntrustedRefusal(ActionCacheError):
    """Raised by an action refusing an untrusted agent; the engine turns it into :class:`RefusedError`."""


class RefusedAtLoadError(AgentDefinitionError):
    """An untrusted agent's file asks for something its mode refuses (exit code 2)."""


class RefusedError(NodeError):
    """An untrusted agent tried something its mode refuses while running (exit code 4)."""


def refusal(rule: str, what: str, allow: str) -> str:
    """The one shape of every refusal: the rule, what it refused, how to allow it."""
    return f"untrusted mode refused {what} (rule {rule!r}); {allow}"


@dataclass(frozen=True)
class Trust:
    """The capabilities of one agent. ``Trust()`` is the trusted default: everything allowed."""

    trusted: bool = True
    root: Path | None = None
    allow_hosts: frozenset[str] = field(default_factory=frozenset)
    allow_env: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def untrusted(cls, root: str | Path, allow_hosts: Iterable[str] = (), allow_env: Iterable[str] = ()) -> Trust:
        return cls(False, Path(root).resolve(), frozenset(h.strip().lower() for h in allow_hosts if h.strip()),
                   frozenset(allow_env))

    # --- files ----------------------------------------------------------------------------

    def local_path(self, path: Any, what: str) -> Path:
        """``path`` resolved (symlinks and ``..``) and inside the root, or :class:`UntrustedRefusal`."""
        if self.trusted:
            return Path(os.fspath(path))
        text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else str(path)
        scheme, sep, rest = text.partition("://")
        if sep and scheme.lower() != "file":
            raise UntrustedRefusal(refusal("files", f"{what} of {text!r}: only local files under {self.root}",
                                           "trust the agent (run it without --untrusted) to reach remote storage"))
        candidate = Path(rest if sep else text).expanduser()
        if not candidate.is_absolute():
            candidate = self.root / candidate  # type: ignore[operator]
        resolved = candidate.resolve()
        assert self.root is not None
        if resolved != self.root and self.root not in resolved.parents:
            raise UntrustedRefusal(refusal("files", f"{what} of {text!r} (resolves to {resolved}, outside {self.root})",
                                           "pass --root DIR (root=...) with a directory that holds it"))
        return resolved

    # --- network --------------------------------------------------------------------------

    def check_url(self, url: str, what: str, implicitly_allowed: Iterable[str] = ()) -> None:
        """``url`` reaches an allowed host, or the origin of one of the ``implicitly_allowed`` URLs
        (the user's own ``$OPENAI_BASE_URL``: the same host on another port or scheme is not it)."""
        if self.trusted:
            return
        host = host_of(url)
        if host and (host in self.allow_hosts or same_origin_as_any(url, implicitly_allowed)):
            return
        raise UntrustedRefusal(refusal("hosts", f"{what} to {host or url!r}",
                                       f"allow it with --allow-host {host or 'HOST'} (allow_hosts=[...])"))

    def check_secret_destination(self, url: str, secret: str, env_base_url: str | None) -> None:
        """An environment secret may go to the environment's base URL or a user-allowed host only."""
        if self.trusted:
            return
        host = host_of(url)
        if host and (host in self.allow_hosts or same_origin_as_any(url, [env_base_url or ""])):
            return
        raise UntrustedRefusal(refusal("secrets", f"sending ${secret} to {url!r}, a base URL the agent chose "
                                                  f"(not the origin of $OPENAI_BASE_URL)",
                                       f"allow that host with --allow-host {host or 'HOST'}, or set OPENAI_BASE_URL yourself"))

    # --- settings -------------------------------------------------------------------------

    def default_store_url(self) -> str:
        """The store of an untrusted agent that names none: a SQLite file under its root."""
        assert self.root is not None
        return file_url("sqlite", self.root / UNTRUSTED_STORE_FILE)

    def check_env(self, name: str, where: str) -> None:
        if self.trusted or name in self.allow_env:
            return
        raise RefusedAtLoadError(refusal("env", f"{where}: expanding ${{{name}}}",
                                         f"allow it with --allow-env {name} (allow_env=[...])"))

    def check_store_url(self, url: str, where: str) -> None:
        """A store the agent names: every file it would open under the root, every host it would
        reach allowed. Judged on what the store's own URL parser says it opens
        (:func:`actioncache.stores.registry.store_targets`, the function its ``from_url`` takes its
        path and hosts from), never on the URL's text; a scheme that cannot say is refused."""
        if self.trusted:
            return
        from ..errors import MissingStoreExtraError, StoreURLError
        from ..stores.redaction import redact_url
        from ..stores.registry import store_targets

        shown = redact_url(url)
        try:
            targets = store_targets(url)
        except (StoreURLError, MissingStoreExtraError) as exc:
            raise RefusedAtLoadError(refusal("files", f"{where} store {shown!r}: {exc}",
                                             "fix the URL, or trust the agent (run it without --untrusted)")) from exc
        if targets is None:
            raise RefusedAtLoadError(refusal(
                "stores", f"{where} store {shown!r}: its kind of store cannot say which files and hosts it "
                          "would open, so none of them can be checked (Firestore, cloud blob stores, third-party "
                          "stores, and a PostgreSQL URL that leaves the host to libpq: no host, or service=)",
                "give it a local store (sqlite:///PATH under the root), pass --store yourself, or trust the agent"))
        try:
            for path in targets.paths:
                self.local_path(path, f"{where} store file")
            for host in targets.hosts:
                if host not in self.allow_hosts:
                    raise UntrustedRefusal(refusal("hosts", f"{where} store connection to {host!r}",
                                                   f"allow it with --allow-host {host} (allow_hosts=[...])"))
        except UntrustedRefusal as exc:
            raise RefusedAtLoadError(str(exc)) from exc
        if targets.learned:
            raise RefusedAtLoadError(refusal(
                "stores", f"{where} store {shown!r}: it connects to addresses it learns at run time (a Redis "
                          "Cluster's nodes and redirects, the master a Sentinel names), which no allowed-host "
                          "check can judge before they are known",
                "give it a single server (redis://HOST:PORT with --allow-host HOST), pass --store yourself, "
                "or trust the agent"))


def host_of(url: str) -> str:
    """The lower-case host name of a URL ('' when it has none)."""
    try:
        return (urllib.parse.urlsplit(str(url)).hostname or "").lower()
    except ValueError:
        return ""


_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def origin_of(url: str) -> tuple[str, str, int | None] | None:
    """(scheme, host, port) of a URL, the port defaulted from the scheme; None when it has no host."""
    try:
        parts = urllib.parse.urlsplit(str(url))
        scheme, host, port = parts.scheme.lower(), (parts.hostname or "").lower(), parts.port
    except ValueError:
        return None
    if not host:
        return None
    return scheme, host, port if port is not None else _DEFAULT_PORTS.get(scheme)


def same_origin_as_any(url: str, others: Iterable[str]) -> bool:
    """``url`` has the origin of one of ``others`` (a secret meant for one server goes to that server only)."""
    origin = origin_of(url)
    return origin is not None and any(origin == origin_of(other) for other in others if other)
