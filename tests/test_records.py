"""``format.records.record``: the core's frozen slotted records behave like the dataclasses they replace."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import pytest

from onemodel_viewer.format.errors import Finding, Kind, Problem
from onemodel_viewer.format.records import MISSING, FrozenInstanceError, field, record, record_fields
from onemodel_viewer.format.schema import Node, Tensor


@record
class Point:
    x: int
    y: int = 0
    tags: tuple = ()
    hidden: str = field(default="h", repr=False)


@record(eq=False)
class Ident:
    a: int


@record(frozen=False)
class Bag:
    name: str
    items: list = field(default_factory=list)


def test_fields_defaults_and_repr():
    p = Point(1)
    assert (p.x, p.y, p.tags, p.hidden) == (1, 0, (), "h")
    assert Point(1, 2, ("t",), "z").hidden == "z" and Point(x=3, y=4).y == 4
    assert repr(Point(1, 2)) == "Point(x=1, y=2, tags=())"
    assert Point.__match_args__ == ("x", "y", "tags", "hidden")
    assert record_fields(Point) == (("x", MISSING), ("y", 0), ("tags", ()), ("hidden", "h"))
    with pytest.raises(TypeError):
        Point()
    with pytest.raises(TypeError):
        Point(1, nope=2)


def test_frozen_and_slotted():
    p = Point(1)
    with pytest.raises(FrozenInstanceError):
        p.x = 2
    with pytest.raises(AttributeError):
        del p.y
    assert issubclass(FrozenInstanceError, AttributeError)
    assert not hasattr(p, "__dict__")
    with pytest.raises((AttributeError, TypeError)):
        object.__setattr__(p, "other", 1)
    object.__setattr__(p, "y", 5)  # the reader's escape hatch (Graph.order) still works
    assert p.y == 5


def test_equality_and_hash():
    assert Point(1, 2) == Point(1, 2) and Point(1, 2) != Point(1, 3)
    assert hash(Point(1, 2)) == hash(Point(1, 2)) and len({Point(1, 2), Point(1, 2), Point(2, 2)}) == 2
    assert Point(1) != (1, 0, (), "h")
    a, b = Ident(1), Ident(1)
    assert a != b and a == a and len({a, b}) == 2  # eq=False: identity, like dataclass(eq=False)
    bag = Bag("x")
    assert bag.__hash__ is None  # mutable with eq: unhashable, like a dataclass
    bag.name = "y"
    assert bag == Bag("y")


def test_default_factory_gives_a_fresh_value():
    a, b = Bag("a"), Bag("b")
    a.items.append(1)
    assert b.items == [] and Bag("c", [7]).items == [7]


def test_non_default_after_default_is_refused():
    with pytest.raises(TypeError):
        @record
        class Bad:
            a: int = 1
            b: int


def test_dataclasses_helpers_accept_records():
    p = Point(1, 2)
    assert dataclasses.is_dataclass(p) and dataclasses.is_dataclass(Point)
    assert [f.name for f in dataclasses.fields(p)] == ["x", "y", "tags", "hidden"]
    assert dataclasses.replace(p, y=9) == Point(1, 9)
    assert dataclasses.asdict(p) == {"x": 1, "y": 2, "tags": (), "hidden": "h"}
    assert dataclasses.replace(Bag("a"), name="b").items == []
    t = Tensor("w", 1, (2,))
    assert dataclasses.replace(t, name="v").name == "v" and dataclasses.replace(t, name="v").dims == (2,)


def test_core_records_keep_their_semantics():
    assert Problem(Kind.MALFORMED, "header", 0, "m") == Problem(Kind.MALFORMED, "header", 0, "m")
    assert len({Finding("c", "w", None, "m"), Finding("c", "w", None, "m")}) == 1
    n1, n2 = Node("Relu"), Node("Relu")
    assert n1 != n2 and n1.inputs == () and n1.where == ""  # nodes compare by identity
    with pytest.raises(FrozenInstanceError):
        n1.op = "Add"


def test_copy_and_pickle_keep_frozen_records_intact():
    import copy
    import pickle

    p = Point(1, 2, ("t",))
    for q in (copy.copy(p), copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert q == p and q is not p and type(q) is Point
        with pytest.raises(FrozenInstanceError):
            q.x = 5
    pr = Problem(Kind.IO, "file", None, "m")
    assert pickle.loads(pickle.dumps(pr)) == pr


def test_what_record_does_not_support_is_refused():
    with pytest.raises(TypeError):
        @record
        class WithPostInit:
            a: int

            def __post_init__(self):
                pass
    with pytest.raises(TypeError):
        @record
        class Child(Point):
            z: int = 0
    with pytest.raises(TypeError):
        @record
        class WithClassVar:
            a: ClassVar[int] = 1
