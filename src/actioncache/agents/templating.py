"""Jinja for agents: a sandboxed environment with StrictUndefined and the cache filters.

Why these choices: agent files travel (shared repos, generated plans), so templates must not
reach Python internals (``SandboxedEnvironment``), and a typo in ``state.file_path`` must fail
loudly rather than render an empty string into a cache key (``StrictUndefined``). A value that
is exactly one ``{{ expr }}`` keeps its Python type, so ``ttl_days: "{{ state.days }}"`` stays
an int and ``args: "{{ state.payload }}"`` stays a dict.
"""

from __future__ import annotations

import functools
import json
import re
import sys
import threading
import time
from typing import Any, Callable, Mapping

from jinja2 import StrictUndefined, Template, TemplateSyntaxError, UndefinedError
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


# --- the budget of an untrusted template ------------------------------------------------------
#
# The immutable sandbox stops a template from reaching Python internals, not from burning the
# machine: ``7 ** 1000000000``, ``'a' * 300000000``, nested ``range`` loops. An untrusted agent's
# every render runs under a budget, checked before the expensive step is taken:
# * a power whose result would exceed MAX_POWER_BITS bits is refused unevaluated;
# * a repetition (``'a' * n``, ``[x] * n``), a filter or call whose text or sequence result would
#   exceed MAX_VALUE_ITEMS, or that is passed an integer over it (``center``, ``indent``,
#   ``lipsum``, ``truncate`` ...) is refused before it allocates;
# * ``range`` items, calls, operators, attribute reads and executed template lines count against
#   MAX_OPERATIONS per render;
# * the rendered text stops at MAX_OUTPUT_CHARS;
# * the render stops after MAX_SECONDS of wall-clock time (checked on every counted step).
MAX_OPERATIONS = 1_000_000
MAX_VALUE_ITEMS = 4 * 1024 * 1024
MAX_OUTPUT_CHARS = 4 * 1024 * 1024
MAX_POWER_BITS = 100_000
MAX_SECONDS = 5.0
_CHECK_CLOCK_EVERY = 1024


class TemplateBudgetError(ActionCacheError):
    """An untrusted template went over its budget (see the constants above)."""


class _Budget:
    __slots__ = ("ops", "deadline", "ticks")

    def __init__(self) -> None:
        self.ops = MAX_OPERATIONS
        self.deadline = time.monotonic() + MAX_SECONDS
        self.ticks = 0

    def spend(self, count: int = 1) -> None:
        self.ops -= count
        if self.ops < 0:
            raise TemplateBudgetError(f"more than {MAX_OPERATIONS:,} operations (loops, range items, calls)")
        self.ticks += count
        if self.ticks >= _CHECK_CLOCK_EVERY:
            self.ticks = 0
            self.clock()

    def clock(self) -> None:
        if time.monotonic() > self.deadline:
            raise TemplateBudgetError(f"ran longer than {MAX_SECONDS:g} s")


_budgets = threading.local()


def _budget() -> _Budget | None:
    return getattr(_budgets, "current", None)


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, bytes, list, tuple, dict)) else 0


def _check_args(args: tuple[Any, ...], kwargs: Mapping[str, Any], what: str) -> None:
    for arg in (*args, *kwargs.values()):
        if isinstance(arg, int) and not isinstance(arg, bool) and abs(arg) > MAX_VALUE_ITEMS:
            raise TemplateBudgetError(f"{what} with the number {arg} (over {MAX_VALUE_ITEMS:,})")


def _check_result(value: Any, what: str) -> Any:
    if _size(value) > MAX_VALUE_ITEMS:
        raise TemplateBudgetError(f"{what} made a value of {_size(value):,} items (over {MAX_VALUE_ITEMS:,})")
    return value


def _repeat_size(left: Any, right: Any) -> int:
    for seq, times in ((left, right), (right, left)):
        if _size(seq) and isinstance(times, int) and not isinstance(times, bool):
            return _size(seq) * max(times, 0)
    return 0


def _power_bits(base: Any, exponent: Any) -> float:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        return float(abs(base).bit_length()) * exponent
    return 0.0


def _budgeted_filter(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    @functools.wraps(fn)  # keeps jinja's pass_context / pass_environment marks
    def filtered(*args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        if budget is None:
            return fn(*args, **kwargs)
        budget.spend()
        _check_args(args, kwargs, f"the {name!r} filter")
        return _check_result(fn(*args, **kwargs), f"the {name!r} filter")

    return filtered


def _budgeted_join(join: Callable[..., Any]) -> Callable[..., Any]:
    """Jinja's ``~`` (a Concat node compiles to a call of ``str_join``/``markup_join``, not to a
    binary operator the sandbox intercepts): sized before the strings are joined."""

    def joined(seq: Any) -> Any:
        budget = _budget()
        if budget is None:
            return join(seq)
        budget.spend()
        items = list(seq)
        total = sum(len(item) if isinstance(item, str) else _size(item) for item in items)
        if total > MAX_VALUE_ITEMS:
            raise TemplateBudgetError(f"a '~' join of {total:,} characters (over {MAX_VALUE_ITEMS:,})")
        return _check_result(join(items), "the '~' operator")

    return joined


class _BudgetedTemplate(Template):
    """A template of the bounded sandbox: its compiled code's join helpers are the budgeted ones."""

    @classmethod
    def _from_namespace(cls, environment: Any, namespace: Any, globals: Any) -> Any:
        for name in ("str_join", "markup_join"):
            if name in namespace:
                namespace[name] = _budgeted_join(namespace[name])
        return super()._from_namespace(environment, namespace, globals)


class _BoundedSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox, with every operator, call, attribute read and ``range`` charged to
    the render's budget and the expensive ones sized before they run."""

    template_class = _BudgetedTemplate

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        budget = _budget()
        if budget is not None:
            budget.spend()
            if operator == "**" and _power_bits(left, right) > MAX_POWER_BITS:
                raise TemplateBudgetError(f"{left!r} ** {right!r} (a number of over {MAX_POWER_BITS:,} bits)")
            if operator == "*" and _repeat_size(left, right) > MAX_VALUE_ITEMS:
                raise TemplateBudgetError(f"a repetition of {_repeat_size(left, right):,} items (over {MAX_VALUE_ITEMS:,})")
            if operator == "+" and _size(left) + _size(right) > MAX_VALUE_ITEMS:
                raise TemplateBudgetError(f"a concatenation of {_size(left) + _size(right):,} items")
            if operator == "%" and isinstance(left, str):
                _check_args(right if isinstance(right, tuple) else (right,), {}, "'%' formatting")
                if re.search(r"\d{7,}", left):  # a width or precision of millions of characters
                    raise TemplateBudgetError(f"'%' formatting with the width in {left[:80]!r}")
            return _check_result(super().call_binop(context, operator, left, right), f"the {operator!r} operator")
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        if budget is None:
            return super().call(__context, __obj, *args, **kwargs)
        budget.spend()
        what = f"calling {getattr(__obj, '__name__', type(__obj).__name__)}"
        _check_args(args, kwargs, what)
        bound = getattr(getattr(__obj, "__wrapped__", __obj), "__self__", None)  # the sandbox wraps str.format
        if isinstance(bound, str) and re.search(r"\d{7,}", bound):
            raise TemplateBudgetError(f"calling a method of {bound[:80]!r} (a width or count of millions)")
        return _check_result(super().call(__context, __obj, *args, **kwargs), what)

    def getattr(self, obj: Any, attribute: str) -> Any:
        budget = _budget()
        if budget is not None:
            budget.spend()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        budget = _budget()
        if budget is not None:
            budget.spend()
        return super().getitem(obj, argument)


def _budgeted_range(*args: int) -> range:
    items = range(*args)
    budget = _budget()
    if budget is not None:
        budget.spend(len(items))  # every item counts: nested ranges multiply
    return items


def _run_budgeted(render: Callable[[], Any]) -> Any:
    """``render()`` under a fresh budget; template lines are counted by a trace hook on this thread
    (a loop over a long list that calls nothing is still stopped by the clock)."""
    budget = _Budget()
    previous_budget = _budget()
    previous_trace = sys.gettrace()

    def on_line(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            budget.spend()
        return on_line

    def on_call(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename == "<template>":
            return on_line
        return None

    _budgets.current = budget
    sys.settrace(on_call)
    try:
        return render()
    finally:
        sys.settrace(previous_trace)
        _budgets.current = previous_budget


def _render_bounded(template: Any, context: Mapping[str, Any]) -> str:
    """A template's text, stopped at MAX_OUTPUT_CHARS (the budget is the caller's)."""
    parts: list[str] = []
    size = 0
    for chunk in template.generate(**context):
        size += len(chunk)
        if size > MAX_OUTPUT_CHARS:
            raise TemplateBudgetError(f"rendered more than {MAX_OUTPUT_CHARS:,} characters")
        parts.append(chunk)
    return "".join(parts)


def make_environment(trust: Trust | None = None) -> SandboxedEnvironment:
    """The trusted environment, or for an untrusted agent the immutable sandbox (no ``state.update``,
    ``list.append`` or any other mutation) whose ``storage_hash`` filter reads only under the root,
    and whose every render runs under a budget (see ``MAX_OPERATIONS`` and its neighbours)."""
    if trust is None or trust.trusted:
        env = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
        env.filters.update(FILTERS)
        return env
    # optimized=False: no constant folding, which would run a filter on constants
    # (``'a'|center(10**9)``) at compile time, outside every budget.
    env = _BoundedSandbox(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True, optimized=False)
    env.filters.update(FILTERS)
    env.globals["range"] = _budgeted_range

    def confined_storage_hash(path: Any, algorithm: str = "sha256") -> str:
        return _storage_hash_filter(trust.local_path(path, "the storage_hash filter"), algorithm)

    env.filters["storage_hash"] = confined_storage_hash
    env.filters.update({name: _budgeted_filter(fn, name) for name, fn in env.filters.items()})
    return env


class Renderer:
    """Renders ``with:`` values and evaluates ``if:``/``when:`` conditions, caching compiled templates."""

    def __init__(self, env: SandboxedEnvironment | None = None) -> None:
        self.env = env or make_environment()
        self._compiled: dict[tuple[str, str], Callable[..., Any]] = {}

    def _compile(self, text: str, kind: str) -> Callable[..., Any]:
        cache_key = (kind, text)
        fn = self._compiled.get(cache_key)
        if fn is None:
            if kind == "expr":
                fn = self.env.compile_expression(text, undefined_to_none=False)
            else:
                template = self.env.from_string(text)
                fn = template.render
            if isinstance(self.env, _BoundedSandbox):
                fn = _bounded(fn, None if kind == "expr" else template)
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
        except TemplateBudgetError as exc:
            raise SandboxError(node, f"{where}: template over its budget: {exc} (in {shown[:200]!r}); untrusted "
                                     "templates run under an operation, size and time budget (YAML_REFERENCE.md, "
                                     "untrusted mode); run the agent trusted to lift it") from exc
        except RecursionError as exc:
            raise NodeError(node, f"{where}: template nested too deeply ({exc}) (in {shown[:200]!r})") from exc
        except NodeTemplateFailure as exc:
            raise NodeError(node, f"{where}: {exc}") from exc
        except UntrustedRefusal as exc:
            raise RefusedError(node, f"{where}: {exc}") from exc
        except TemplateSyntaxError as exc:
            raise NodeError(node, f"{where}: template syntax error: {exc.message} in {shown!r}") from exc
        except Exception as exc:
            raise NodeError(node, f"{where}: template failed: {type(exc).__name__}: {exc} (in {shown!r})") from exc


def _bounded(fn: Callable[..., Any], template: Any) -> Callable[..., Any]:
    """``fn`` (a compiled expression, or a template's render) run under a fresh budget."""
    if template is not None:
        return lambda **context: _run_budgeted(lambda: _render_bounded(template, context))
    return lambda context: _run_budgeted(lambda: fn(context))


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
