"""Record classes without the ``dataclasses`` module: ``@record`` and ``@record(frozen=True)``.

What ``@dataclass`` gives the classes on ``actioncache exec``'s miss path, which is all they use:
an ``__init__`` over the annotated fields in order (by position or name; a default in the class
body, or ``field(default=..., default_factory=..., init=..., repr=..., compare=...)``), a
``__repr__``, an ``__eq__`` over the compared fields (same class only), and with ``frozen=True``
a ``__setattr__``/``__delattr__`` that raise ``AttributeError`` (``dataclasses.FrozenInstanceError``
is one; a class of our own would stand outside the package's error root) and a
``__hash__`` of the compared fields (not frozen: unhashable, as a dataclass with ``eq``). ``replace``
is ``dataclasses.replace``. Type checkers read it as a dataclass (``dataclass_transform``).

Why: importing ``dataclasses`` (and with it ``inspect``, ``ast``, ``dis``, ``tokenize``) costs ~43 M
instructions, and each class it builds ~4 M more (it writes each method as source text and
compiles it): ~85 M of a traced miss's ~455 M (``bench/bench_miss_instructions.py``). Here the
methods are closures over the field list: nothing is compiled when a module is imported.
Not supported (nothing here needs them): inheritance between records, ``ClassVar`` fields,
keyword-only fields, ``__post_init__``, ``slots``, ordering.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the leaves import nothing they can do without
if TYPE_CHECKING:
    from typing import Any, Callable, TypeVar, dataclass_transform

    T = TypeVar("T")
    C = TypeVar("C", bound=type)

__all__ = ["field", "record", "replace"]

_MISSING: Any = object()


class Field:
    __slots__ = ("default", "default_factory", "init", "repr", "compare")

    def __init__(self, default: Any, default_factory: Any, init: bool, repr: bool, compare: bool) -> None:
        self.default, self.default_factory = default, default_factory
        self.init, self.repr, self.compare = init, repr, compare


def field(*, default: Any = _MISSING, default_factory: Any = _MISSING, init: bool = True, repr: bool = True,
          compare: bool = True) -> Any:
    if default is not _MISSING and default_factory is not _MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return Field(default, default_factory, init, repr, compare)


def _fields(cls: type) -> list[tuple[str, Field]]:
    """The class's fields in order; a class attribute that is a default becomes that default (a
    factory's is removed), as ``dataclass`` leaves the class."""
    found: list[tuple[str, Field]] = []
    for name in cls.__dict__.get("__annotations__", {}):
        value = cls.__dict__.get(name, _MISSING)
        spec = value if isinstance(value, Field) else Field(value, _MISSING, True, True, True)
        if isinstance(value, Field):
            if spec.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
        if isinstance(spec.default, (list, dict, set)):
            raise ValueError(f"mutable default {type(spec.default)} for field {name} is not allowed: use default_factory")
        found.append((name, spec))
    return found


def _build(cls: C, frozen: bool) -> C:
    fields = _fields(cls)
    init_names = tuple(name for name, spec in fields if spec.init)
    accepted = frozenset(init_names)
    defaults = {name: spec.default for name, spec in fields if spec.default is not _MISSING}
    factories = tuple((name, spec.default_factory) for name, spec in fields if spec.default_factory is not _MISSING)
    count = len(fields)
    compared = tuple(name for name, spec in fields if spec.compare)
    shown = tuple(name for name, spec in fields if spec.repr)
    kind = cls.__qualname__

    # One dict of the values, then one update of the instance's __dict__ (which a frozen record's
    # __setattr__ does not stand in front of): a traced miss builds ~400 Touch records.
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        values = defaults.copy()
        if args:
            if len(args) > len(init_names):
                raise TypeError(f"{kind}.__init__() takes {len(init_names) + 1} positional arguments but "
                                f"{len(args) + 1} were given")
            values.update(zip(init_names, args))
        if kwargs:
            for name in kwargs:
                if name not in accepted:
                    raise TypeError(f"{kind}.__init__() got an unexpected keyword argument {name!r}")
                if name in init_names[:len(args)]:
                    raise TypeError(f"{kind}.__init__() got multiple values for argument {name!r}")
            values.update(kwargs)
        for name, factory in factories:
            if name not in values:
                values[name] = factory()
        if len(values) != count:
            missing = [name for name, _ in fields if name not in values]
            raise TypeError(f"{kind}.__init__() missing {len(missing)} required argument(s): "
                            + ", ".join(repr(name) for name in missing))
        self.__dict__.update(values)

    def __repr__(self: Any) -> str:
        return f"{kind}(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in shown) + ")"

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple(getattr(self, name) for name in compared) == tuple(getattr(other, name) for name in compared)

    methods: dict[str, Any] = {"__init__": __init__, "__repr__": __repr__, "__eq__": __eq__}
    if frozen:
        def __setattr__(self: Any, name: str, value: Any) -> None:
            raise AttributeError(f"cannot assign to field {name!r}")

        def __delattr__(self: Any, name: str) -> None:
            raise AttributeError(f"cannot delete field {name!r}")

        def __hash__(self: Any) -> int:
            return hash(tuple(getattr(self, name) for name in compared))

        methods.update(__setattr__=__setattr__, __delattr__=__delattr__, __hash__=__hash__)
    elif "__hash__" not in cls.__dict__:
        methods["__hash__"] = None  # eq without frozen: unhashable, as a dataclass
    for name, method in methods.items():
        if method is not None:
            method.__qualname__ = f"{kind}.{name}"
        setattr(cls, name, method)
    cls.__record_fields__ = tuple(init_names)  # type: ignore[attr-defined]
    return cls


if TYPE_CHECKING:  # what type checkers see: a dataclass (the runtime's record below is the same)
    @dataclass_transform(field_specifiers=(field,))
    def record(*, frozen: bool = False) -> Callable[[C], C]: ...
else:
    def record(*, frozen=False):
        """``@record()`` or ``@record(frozen=True)``: the class with its record methods (module docstring)."""
        return lambda cls: _build(cls, frozen)


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of the record ``obj`` with ``changes`` (as ``dataclasses.replace``)."""
    names = type(obj).__record_fields__  # type: ignore[attr-defined]
    for name in changes:
        if name not in names:
            raise TypeError(f"{type(obj).__qualname__}.__init__() got an unexpected keyword argument {name!r}")
    return type(obj)(**{name: changes[name] if name in changes else getattr(obj, name) for name in names})
