"""What a diff produces: differences, the side-by-side tree, the result (see :mod:`.diff`).

Shared by the structural matching (:mod:`.diff_structure`), which builds the tree, and the
entry points (:mod:`.diff`), which fill in the tensor data comparisons (:mod:`.diff_tensors`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterator

__all__ = ["ADDED", "REMOVED", "CHANGED", "EQUAL", "DataDelta", "DiffCancelled", "Difference", "DiffNode", "DiffResult", "NotCompared",
           "json_number"]

ADDED, REMOVED, CHANGED, EQUAL = "added", "removed", "changed", "equal"


def json_number(x: float | None) -> float | str | None:
    """A float for JSON: non-finite values as ``"nan"``, ``"inf"``, ``"-inf"``."""
    if x is None:
        return None
    x = float(x)
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


class DiffCancelled(Exception):
    """The ``cancel`` event was set while the diff was running."""


@dataclass(slots=True)
class DataDelta:
    """How the data of two tensors of one dtype and shape differ (at least one element does)."""

    count: int
    """Elements per tensor."""
    differing: int
    """Elements whose bit patterns differ."""
    first: int
    """Flat index of the first differing element."""
    a_first: str
    """That element in A, as text (NaN payloads and ``-0.0`` visible)."""
    b_first: str
    is_float: bool
    max_abs: float | int = 0
    """Largest |b − a| (integers: exact; floats: over finite pairs)."""
    max_rel: float = 0.0
    """Largest |b − a| / max(|a|, |b|) over finite pairs (floats)."""
    nonfinite: int = 0
    """Element pairs where either side is NaN or ±Inf (floats)."""
    finite: int = 0
    """Element pairs where both sides are finite (floats)."""
    sum_aa: float = 0.0
    """Σa² over finite pairs (floats; complex: Σ|a|²)."""
    sum_bb: float = 0.0
    sum_ab: float = 0.0
    """Σab over finite pairs (complex: Re Σ conj(a)·b)."""
    sum_dd: float = 0.0
    """Σ(b − a)² over finite pairs."""
    sum_abs: float = 0.0
    """Σ|b − a| over finite pairs."""

    @property
    def rel_l2(self) -> float:
        """‖b − a‖₂ / ‖a‖₂; 0 when both are zero, ``inf`` when only ‖a‖₂ is."""
        if self.sum_aa > 0:
            return math.sqrt(self.sum_dd) / math.sqrt(self.sum_aa)
        return 0.0 if self.sum_dd == 0 else math.inf

    @property
    def cosine(self) -> float | None:
        """Cosine similarity; 1 when both sides are all zeros, ``None`` when only one is."""
        if self.sum_aa > 0 and self.sum_bb > 0:
            return max(-1.0, min(1.0, self.sum_ab / (math.sqrt(self.sum_aa) * math.sqrt(self.sum_bb))))
        return 1.0 if self.sum_aa == self.sum_bb == 0 else None

    @property
    def mean_abs(self) -> float | None:
        """Mean |b − a| over finite pairs (``None`` without any)."""
        return self.sum_abs / self.finite if self.finite else None

    def metrics(self) -> dict[str, Any]:
        """The JSON-safe figures of a ``detail`` (beside the index and offset facts the caller adds)."""
        out: dict[str, Any] = {"differing": self.differing, "count": self.count}
        if self.is_float:
            out.update(max_abs=json_number(self.max_abs), max_rel=json_number(self.max_rel),
                       rel_l2=json_number(self.rel_l2), cosine=json_number(self.cosine),
                       mean_abs=json_number(self.mean_abs), nonfinite=self.nonfinite)
        else:
            out["max_abs"] = int(self.max_abs)
        return out


@dataclass(frozen=True, slots=True)
class Difference:
    """One difference between A and B."""

    where: str
    """What differs, named by names from the file (``graph.nodes["conv1"].op``)."""
    change: str
    """``added``, ``removed`` or ``changed``."""
    a: Any
    """The value in A (JSON-safe), ``None`` when added."""
    b: Any
    """The value in B (JSON-safe), ``None`` when removed."""
    detail: dict | None = None
    """Extra JSON-safe facts (tensor data: differing count, first index, how much it moved...)."""
    a_ref: Any = field(default=None, compare=False, repr=False)
    """The record in A this is about (Tensor, Node, ...), for viewers; not part of the JSON."""
    b_ref: Any = field(default=None, compare=False, repr=False)

    def as_json(self) -> dict:
        out = {"where": self.where, "change": self.change, "a": self.a, "b": self.b}
        if self.detail is not None:
            out["detail"] = self.detail
        return out

    @property
    def is_data(self) -> bool:
        """A change of a tensor's values (its ``detail`` holds the element counts and metrics)."""
        return self.where.endswith(".data") and self.detail is not None and "differing" in self.detail


@dataclass(frozen=True, slots=True)
class NotCompared:
    """A tensor pair of one dtype and shape whose values were not compared: one side's bytes are unusable.

    Not a difference: the verdict is over the sound parts, and this says which part was left out.
    """

    where: str
    """The tensor's ``where`` in the diff (``graph.initializers["w"]``)."""
    a: Any
    """Why A's bytes cannot be read (a :class:`~..format.errors.Problem`), ``None`` when they can."""
    b: Any
    a_ref: Any = field(default=None, compare=False, repr=False)
    """The tensor in A, for viewers; not part of the JSON."""
    b_ref: Any = field(default=None, compare=False, repr=False)

    def as_json(self) -> dict:
        from ...format.spec_rules import problem_json

        return {"where": self.where, "a": None if self.a is None else problem_json(self.a),
                "b": None if self.b is None else problem_json(self.b)}


@dataclass(slots=True, eq=False)
class DiffNode:
    """One entry of the side-by-side tree (a model field, node, tensor, attribute, group...)."""

    label: str
    """The last segment of ``where`` (``nodes["conv1"]``, ``initializers``)."""
    where: str
    status: str = EQUAL
    """``equal``, ``added``, ``removed`` or ``changed`` (set for the whole subtree)."""
    a: Any = None
    """The record in A (or ``None``)."""
    b: Any = None
    children: list["DiffNode"] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    """Differences found on this entry itself (its fields), not in its children."""
    pending: bool = False
    """Its tensor data is still being compared (only while a diff runs in stages)."""
    not_compared: NotCompared | None = None
    """Its tensor data cannot be compared (one side's bytes are unusable): why."""
    parent: "DiffNode | None" = field(default=None, repr=False)

    def walk(self) -> Iterator["DiffNode"]:
        yield self
        for c in self.children:
            yield from c.walk()


@dataclass(frozen=True, slots=True)
class DiffResult:
    equal: bool
    differences: list[Difference]
    equivalences: list[str]
    """Equivalences of the spec that were applied (things that differ in form, not in meaning)."""
    root: DiffNode | None = field(default=None, compare=False, repr=False)
    """The whole side-by-side tree (equal entries included), for viewers."""
    compared_bytes: int = 0
    """Tensor bytes compared (per side)."""
    totals: dict | None = None
    """Whole-model figures over the compared float tensors (``changed_tensors``, ``rel_l2``...), when compared."""
    not_compared: list[NotCompared] = field(default_factory=list)
    """Tensor pairs left out of the verdict (one side's bytes unusable), in walk order."""

    def as_json(self, a: str, b: str) -> dict:
        out = {
            "a": a,
            "b": b,
            "equal": self.equal,
            "differences": [d.as_json() for d in self.differences],
            "equivalences": list(self.equivalences),
            "not_compared": [n.as_json() for n in self.not_compared],
        }
        if self.totals is not None:
            out["totals"] = self.totals
        return out
