"""actioncache._record: the records of exec's miss path behave as the dataclasses they replaced."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from actioncache._record import field, record, replace


def _pair(frozen: bool) -> tuple[type, type]:
    """The same class as a record and as a dataclass."""
    classes = []
    for decorate, make_field in ((record(frozen=frozen), field), (dataclasses.dataclass(frozen=frozen), dataclasses.field)):
        @decorate
        class Sample:
            a: int
            b: str = "x"
            c: list[int] = make_field(default_factory=list)
            d: tuple[str, ...] = make_field(default=(), compare=False)
            e: float | None = make_field(default=None, init=False, repr=False)

            def total(self) -> int:
                return self.a + len(self.c)

        classes.append(Sample)
    return classes[0], classes[1]


@pytest.mark.parametrize("frozen", [False, True])
def test_a_record_behaves_as_the_dataclass(frozen):
    mine, theirs = _pair(frozen)
    for args, kwargs in [((1,), {}), ((1, "y"), {}), ((1,), {"c": [2], "d": ("n",)}), ((), {"a": 3, "b": "z"})]:
        one, two = mine(*args, **kwargs), theirs(*args, **kwargs)
        assert repr(one).replace("test_record.", "") == repr(two).replace("test_record.", "")
        assert [getattr(one, n) for n in "abcde"] == [getattr(two, n) for n in "abcde"]
        assert one.total() == two.total()
        assert one == mine(*args, **kwargs) and one != two
        assert replace(one, b="w") == mine(a=one.a, c=one.c, d=one.d, b="w")
        assert repr(replace(one, b="w")).replace("test_record.", "") == repr(dataclasses.replace(two, b="w")).replace("test_record.", "")
    assert mine(1, d=("p",)) == mine(1, d=("q",))  # compare=False
    assert mine(1) != mine(2) and mine(1).c is not mine(1).c  # a factory per instance
    assert mine.b == "x" and not hasattr(mine, "c")  # class attributes as a dataclass leaves them
    if frozen:
        assert hash(mine(1, c=())) == hash(mine(1, c=()))  # type: ignore[arg-type]
        with pytest.raises(AttributeError):
            mine(1).a = 2
        with pytest.raises(AttributeError):
            del mine(1).b
    else:
        with pytest.raises(TypeError):
            hash(mine(1))
        one = mine(1)
        one.a = 5
        assert one.a == 5


@pytest.mark.parametrize("bad", [((), {}), ((1, "y", [], (), 0.0), {}), ((1,), {"a": 2}), ((1,), {"z": 0}),
                                 ((1,), {"e": 1.0})])
def test_wrong_arguments_fail_as_the_dataclass_does(bad):
    mine, theirs = _pair(True)
    args, kwargs = bad
    with pytest.raises(TypeError):
        theirs(*args, **kwargs)
    with pytest.raises(TypeError):
        mine(*args, **kwargs)
    with pytest.raises(TypeError):
        replace(mine(1), z=0)


def test_a_mutable_default_is_refused_and_records_pickle():
    with pytest.raises(ValueError):
        @record()
        class Bad:
            items: list[int] = []  # the mistake under test

    from actioncache.policy import Policy
    policy = Policy(mode="use", notes=("n",))
    assert pickle.loads(pickle.dumps(policy)) == policy
    assert replace(policy, mode="off").mode == "off" and policy.mode == "use"
