"""Jinja for agents: a sandboxed environment with StrictUndefined and the cache filters.

Why these choices: agent files travel (shared repos, generated plans), so templates must not
reach Python internals (``SandboxedEnvironment``), and a typo in ``state.file_path`` must fail
loudly rather than render an empty string into a cache key (``StrictUndefined``). A value that
is exactly one ``{{ expr }}`` keeps its Python type, so ``ttl_days: "{{ state.days }}"`` stays
an int and ``args: "{{ state.payload }}"`` stays a dict.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Mapping

from jinja2 import StrictUndefined, TemplateSyntaxError, UndefinedError
from jinja2.exceptions import SecurityError
from jinja2.runtime import Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment

from ..errors import ActionCacheError, HashError
from ..hashing import hash_file
from ..keys import sha256_hex
from .errors import AgentDefinitionError, NodeError, SandboxError, TemplateVariableError
from .trust import RefusedError, Trust, UntrustedRefusal

_SINGLE_EXPRESSION = re.compile(r"^\s*\{\{(?P<expr>.*?)\}\}\s*$", re.DOTALL)


def _storage_hash_filter(path: Any, algorithm: str = "sha256") -> str:
    try:
        return hash_file(str(path), algorithm)[0]
    except HashError as exc:
        raise NodeTemplateFailure(f"storage_hash filter: {exc}") from exc


def _json_filter(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, indent=indent, default=str)


def _fromjson_filter(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError) as exc:
        raise NodeTemplateFailure(f"fromjson filter: not JSON ({exc})") from exc


FILTERS: dict[str, Callable[..., Any]] = {
    "sha256": sha256_hex,
    "storage_hash": _storage_hash_filter,
    "json": _json_filter,
    "fromjson": _fromjson_filter,
}


class NodeTemplateFailure(ActionCacheError):
    """Raised inside a filter; the renderer turns it into a NodeError naming the node."""


def make_environment(trust: Trust | None = None) -> SandboxedEnvironment:
    """The trusted environment, or for an untrusted agent the immutable sandbox (no ``state.update``,
    ``list.append`` or any other mutation) whose ``storage_hash`` filter reads only under the root."""
    if trust is None or trust.trusted:
        env = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
        env.filters.update(FILTERS)
        return env
    env = ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
    env.filters.update(FILTERS)

    def confined_storage_hash(path: Any, algorithm: str = "sha256") -> str:
        return _storage_hash_filter(trust.local_path(path, "the storage_hash filter"), algorithm)

    env.filters["storage_hash"] = confined_storage_hash
    return env


class Renderer:
    """Renders ``with:`` values and evaluates ``if:``/``when:`` conditions, caching compiled templates."""

    def __init__(self, env: SandboxedEnvironment | None = None) -> None:
        self.env = env or make_environment()
        self._compiled: dict[tuple[str, str], Callable[[Mapping[str, Any]], Any]] = {}

    def _compile(self, text: str, kind: str) -> Callable[[Mapping[str, Any]], Any]:
        cache_key = (kind, text)
        fn = self._compiled.get(cache_key)
        if fn is None:
            if kind == "expr":
                fn = self.env.compile_expression(text, undefined_to_none=False)
            else:
                template = self.env.from_string(text)
                fn = template.render
            self._compiled[cache_key] = fn
        return fn

    def _mode_hint(self, exc: Exception) -> str:
        """Why the immutable sandbox refused, when the trusted one would not have (not for ``_x``)."""
        attribute = re.search(r"attribute '([^']*)'", str(exc))
        if isinstance(self.env, ImmutableSandboxedEnvironment) and not (attribute and attribute[1].startswith("_")):
            return ("; untrusted mode runs templates in an immutable sandbox (rule 'templates'): they read "
                    "state, never change it; run the agent trusted to allow it")
        return ""

    def check_syntax(self, value: Any, where: str) -> None:
        """Compile every template in ``value`` now, so a syntax error is reported at load time."""
        for text, kind in _templates_in(value):
            try:
                self._compile(text, kind)
            except TemplateSyntaxError as exc:
                raise AgentDefinitionError(f"{where}: template syntax error: {exc.message} in {text!r}") from exc

    def render(self, value: Any, context: Mapping[str, Any], node: str, where: str) -> Any:
        """Render strings anywhere inside dicts and lists; other values pass through."""
        if isinstance(value, str):
            if "{{" not in value and "{%" not in value:
                return value
            match = _SINGLE_EXPRESSION.match(value)
            if match and "{{" not in match["expr"] and "}}" not in match["expr"]:
                return self._run(match["expr"], "expr", context, node, where, shown=value.strip())
            return self._run(value, "template", context, node, where)
        if isinstance(value, dict):
            return {k: self.render(v, context, node, f"{where}.{k}") for k, v in value.items()}
        if isinstance(value, list):
            return [self.render(v, context, node, f"{where}[{i}]") for i, v in enumerate(value)]
        return value

    def condition(self, expr: Any, context: Mapping[str, Any], node: str, where: str) -> bool:
        """A condition is a Jinja expression without braces (braces are tolerated); booleans pass."""
        if isinstance(expr, bool):
            return expr
        return bool(self._run(_condition_text(expr), "expr", context, node, where))

    def check_condition(self, expr: Any, where: str) -> None:
        """Compile a condition now, so its syntax error is reported at load time."""
        if isinstance(expr, bool):
            return
        text = _condition_text(expr)
        try:
            self._compile(text, "expr")
        except TemplateSyntaxError as exc:
            raise AgentDefinitionError(f"{where}: condition syntax error: {exc.message} in {text!r}") from exc

    def _run(self, text: str, kind: str, context: Mapping[str, Any], node: str, where: str,
             shown: str | None = None) -> Any:
        shown = shown or text.strip()
        try:
            fn = self._compile(text, kind)
            result = fn(context) if kind == "expr" else fn(**context)
            if kind == "expr":
                _raise_if_undefined(result)
            return result
        except SecurityError as exc:
            raise SandboxError(node, f"{where}: refused by the template sandbox: {exc} (in {shown!r}){self._mode_hint(exc)}") from exc
        except UndefinedError as exc:
            if "unsafe" in str(exc):
                raise SandboxError(node, f"{where}: refused by the template sandbox: {exc} (in {shown!r})") from exc
            raise TemplateVariableError(
                node, f"{where}: missing template variable: {_explain_undefined(exc)} (in {shown!r}); "
                      f"pass it in the input state or use `| default(...)`"
            ) from exc
        except NodeTemplateFailure as exc:
            raise NodeError(node, f"{where}: {exc}") from exc
        except UntrustedRefusal as exc:
            raise RefusedError(node, f"{where}: {exc}") from exc
        except TemplateSyntaxError as exc:
            raise NodeError(node, f"{where}: template syntax error: {exc.message} in {shown!r}") from exc
        except Exception as exc:
            raise NodeError(node, f"{where}: template failed: {type(exc).__name__}: {exc} (in {shown!r})") from exc


def _condition_text(expr: Any) -> str:
    text = str(expr).strip()
    match = _SINGLE_EXPRESSION.match(text)
    return match["expr"] if match else text


def _explain_undefined(exc: UndefinedError) -> str:
    message = str(exc)
    match = re.match(r"'(?:dict|list) object' has no attribute '(.+)'", message)
    if match:
        return f"no field {match.group(1)!r} ({message})"
    return message


def _raise_if_undefined(value: Any, depth: int = 0) -> None:
    """A bare expression returns an Undefined instead of raising; make it raise (and look inside lists/dicts)."""
    if isinstance(value, Undefined):
        str(value)  # StrictUndefined raises UndefinedError (or SecurityError) here
        raise UndefinedError("undefined value")
    if depth < 3 and isinstance(value, (list, tuple)):
        for item in value:
            _raise_if_undefined(item, depth + 1)
    elif depth < 3 and isinstance(value, dict):
        for item in value.values():
            _raise_if_undefined(item, depth + 1)


def _templates_in(value: Any) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if isinstance(value, str) and ("{{" in value or "{%" in value):
        match = _SINGLE_EXPRESSION.match(value)
        if match and "{{" not in match["expr"] and "}}" not in match["expr"]:
            out.append((match["expr"], "expr"))
        else:
            out.append((value, "template"))
    elif isinstance(value, dict):
        for v in value.values():
            out.extend(_templates_in(v))
    elif isinstance(value, list):
        for v in value:
            out.extend(_templates_in(v))
    return out
