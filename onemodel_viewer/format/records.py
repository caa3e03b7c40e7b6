"""``@record``: the frozen, slotted records of the core, without ``dataclasses`` at import time.

``@dataclass(frozen=True, slots=True)`` costs ~0.6 ms per class (it compiles four or five
methods from source) plus ~6 ms to import ``dataclasses`` (which imports ``inspect``, ``ast``,
``dis``, ``tokenize``): ~16 ms of the ~25 ms that ``--check`` spent importing its own modules.
:func:`record` builds the same kind of class with one compiled ``__init__`` and shared
``__repr__``/``__eq__``/``__hash__``:

* fields are the class annotations, in order; a class attribute is the default; :func:`field`
  gives a ``default_factory`` or ``repr=False``;
* ``__slots__`` of the field names; ``frozen=True`` (default) refuses assignment and deletion
  (:class:`FrozenInstanceError`, an ``AttributeError``);
* ``eq=True`` (default): ``==`` compares the fields of two instances of the same class, and a
  frozen record hashes its fields; ``eq=False``: identity, as ``dataclass(eq=False)``;
* ``repr``: ``Name(field=value, ...)``;
* ``dataclasses.fields``, ``replace``, ``is_dataclass`` and ``asdict`` keep working: the class
  answers ``__dataclass_fields__`` by building real ``dataclasses.Field`` objects on first use
  (importing ``dataclasses`` only then).

Fast construction for hot paths: ``record_fields(cls)`` gives ``(name, default)`` pairs
(``MISSING`` when required) for the reader's constructor twins.
"""

from __future__ import annotations

from typing import Any, Callable

MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "MISSING", "__slots__": ()})()
"""No default (a required field)."""


class FrozenInstanceError(AttributeError):
    """Assignment to a field of a frozen record."""


class _Field:
    __slots__ = ("default", "default_factory", "repr")

    def __init__(self, default: Any, default_factory: Any, repr: bool) -> None:
        self.default = default
        self.default_factory = default_factory
        self.repr = repr


def field(*, default: Any = MISSING, default_factory: Callable[[], Any] | Any = MISSING, repr: bool = True) -> Any:
    """A field with a ``default_factory`` (a fresh value per instance) or left out of ``repr``."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return _Field(default, default_factory, repr)


def record_fields(cls: type) -> tuple[tuple[str, Any], ...]:
    """``(name, default)`` of each field of a record class (``MISSING``: required; factories: ``MISSING``)."""
    return tuple((n, d if f is MISSING else MISSING) for n, d, f, _r in cls.__record_fields__)


class _LazyDataclassFields:
    """``cls.__dataclass_fields__`` built on first access, so the ``dataclasses`` helpers accept records."""

    def __get__(self, obj: Any, owner: type) -> dict:
        import dataclasses

        out = {}
        miss = dataclasses.MISSING
        for name, default, factory, rep in owner.__record_fields__:
            f = dataclasses.field(
                default=miss if default is MISSING else default, default_factory=miss if factory is MISSING else factory, repr=rep,
            )
            f.name = name
            f.type = owner.__annotations__.get(name, Any)
            f._field_type = dataclasses._FIELD  # type: ignore[attr-defined]
            out[name] = f
        type.__setattr__(owner, "__dataclass_fields__", out)
        return out


def _repr(self) -> str:
    parts = [f"{n}={getattr(self, n)!r}" for n, _d, _f, rep in self.__record_fields__ if rep]
    return f"{type(self).__qualname__}({', '.join(parts)})"


def _key(self) -> tuple:
    return tuple([getattr(self, n) for n in self.__slots__])


def _eq(self, other) -> bool:
    if other.__class__ is self.__class__:
        return _key(self) == _key(other)
    return NotImplemented


def _hash(self) -> int:
    return hash(_key(self))


def _getstate(self) -> list:
    return [getattr(self, n) for n in self.__slots__]


def _setstate(self, state: list) -> None:
    for n, v in zip(self.__slots__, state):
        object.__setattr__(self, n, v)  # as dataclasses does for frozen slotted classes (pickle, copy)


def _frozen_setattr(self, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def record(cls: type | None = None, /, *, frozen: bool = True, eq: bool = True):
    """Class decorator: see the module docstring. ``@record`` or ``@record(frozen=False, eq=False)``."""

    def wrap(c: type) -> type:
        return _build(c, frozen, eq)

    return wrap if cls is None else wrap(cls)


def _build(cls: type, frozen: bool, eq: bool) -> type:
    # what the core's records never use, refused rather than silently mishandled
    if "__post_init__" in cls.__dict__:
        raise TypeError(f"@record does not call __post_init__ ({cls.__name__})")
    if any(hasattr(b, "__record_fields__") for b in cls.__mro__[1:]):
        raise TypeError(f"@record does not inherit fields ({cls.__name__})")
    if any("ClassVar" in str(a) or "InitVar" in str(a) for a in cls.__dict__.get("__annotations__", {}).values()):
        raise TypeError(f"@record has no ClassVar/InitVar fields ({cls.__name__})")
    ns = dict(cls.__dict__)
    ns.pop("__dict__", None)
    ns.pop("__weakref__", None)
    names = tuple(ns.get("__annotations__", {}))
    specs = []
    params = []
    body = []
    glb: dict[str, Any] = {"MISSING": MISSING, "_set": object.__setattr__}
    seen_default = False
    for n in names:
        v = ns.pop(n, MISSING)
        if isinstance(v, _Field):
            default, factory, rep = v.default, v.default_factory, v.repr
        else:
            default, factory, rep = v, MISSING, True
        specs.append((n, default, factory, rep))
        if factory is not MISSING:
            glb[f"_f_{n}"] = factory
            params.append(f"{n}=MISSING")
            body.append(f"    if {n} is MISSING: {n} = _f_{n}()\n")
            seen_default = True
        elif default is not MISSING:
            glb[f"_d_{n}"] = default
            params.append(f"{n}=_d_{n}")
            seen_default = True
        else:
            if seen_default:
                raise TypeError(f"non-default field {n!r} follows a field with a default in {cls.__name__}")
            params.append(n)
        body.append(f"    _set(self, {n!r}, {n})\n" if frozen else f"    self.{n} = {n}\n")
    src = f"def __init__(self, {', '.join(params)}):\n{''.join(body) or '    pass' + chr(10)}"
    exec(src, glb)  # noqa: S102 - generated from the class's own field names
    init = glb["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    ns["__init__"] = init
    ns["__slots__"] = names
    ns["__record_fields__"] = tuple(specs)
    ns["__match_args__"] = names
    ns["__dataclass_fields__"] = _LazyDataclassFields()
    ns.setdefault("__repr__", _repr)
    if eq:
        ns.setdefault("__eq__", _eq)
        ns["__hash__"] = _hash if frozen else None
    if frozen:
        ns["__setattr__"] = _frozen_setattr
        ns["__delattr__"] = _frozen_delattr
        ns.setdefault("__getstate__", _getstate)
        ns.setdefault("__setstate__", _setstate)
    return type(cls)(cls.__name__, cls.__bases__, ns)
