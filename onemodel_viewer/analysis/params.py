"""Parameter counts: elements and bytes by dtype, per graph and per model, and the largest tensors.

Counted: initializers, sparse initializers (values and indices; parameters are the values),
and the tensors Constant nodes hold (``value``, ``sparse_value``, ``value_float(s)``,
``value_int(s)``, ``value_string(s)``) -- a model keeping its weights in Constant nodes has no
initializers at all. Other tensor attributes (ConstantOfShape's ``value``...) are counted apart
as ``attribute``. Metadata only: no tensor byte is read. No UI here.
"""

from __future__ import annotations

import heapq
import threading
from dataclasses import dataclass, field

from ..format.dtypes import AttrType, DataType, name_of
from ..format.schema import Graph, Model, Node, SparseTensor, Tensor

__all__ = ["DTypeCount", "ParamCounts", "count_graph", "count_model", "constant_tensor"]

TOP = 16
"""Largest tensors kept."""

_CONST_SCALAR = {"value_float": (DataType.FLOAT, 4), "value_int": (DataType.INT64, 8), "value_floats": (DataType.FLOAT, 4),
                 "value_ints": (DataType.INT64, 8), "value_string": (DataType.STRING, 0), "value_strings": (DataType.STRING, 0)}
"""Constant's list/scalar attributes: (dtype code, bytes per element)."""


@dataclass(slots=True)
class DTypeCount:
    elements: int = 0
    bytes: int = 0
    tensors: int = 0


@dataclass(slots=True)
class ParamCounts:
    """Counts over a graph (with its subgraphs) or a whole model."""

    by_dtype: dict[str, DTypeCount] = field(default_factory=dict)
    """dtype name -> totals."""
    by_source: dict[str, DTypeCount] = field(default_factory=dict)
    """``initializer``, ``sparse``, ``constant``, ``attribute`` -> totals."""
    largest: list[tuple[int, int, str, str, str]] = field(default_factory=list)
    """(bytes, elements, name, type, where), largest first."""
    graphs: int = 0
    complete: bool = True

    @property
    def elements(self) -> int:
        return sum(c.elements for k, c in self.by_source.items() if k != "sparse-indices")

    @property
    def bytes(self) -> int:
        return sum(c.bytes for c in self.by_source.values())

    @property
    def tensors(self) -> int:
        return sum(c.tensors for c in self.by_source.values())

    def _add(self, source: str, dtype: str, elements: int, nbytes: int, name: str, type_str: str, where: str) -> None:
        for table, key in ((self.by_source, source), (self.by_dtype, dtype)):
            c = table.get(key)
            if c is None:
                c = table[key] = DTypeCount()
            if table is self.by_dtype and source == "sparse-indices":
                c.bytes += nbytes  # index bytes count as bytes, not as parameters
                continue
            c.elements += elements
            c.bytes += nbytes
            c.tensors += 1
        item = (nbytes, elements, name, type_str, where)
        if len(self.largest) < TOP:
            heapq.heappush(self.largest, item)
        elif item > self.largest[0]:
            heapq.heapreplace(self.largest, item)

    def add_tensor(self, t: Tensor, source: str) -> None:
        nbytes = t.length if not t.is_string else sum(len(s) for s in (t.strings or ()))
        self._add(source, name_of(t.dtype), t.count, nbytes, t.name, t.type_str(), t.where)

    def add_sparse(self, s: SparseTensor, source: str) -> None:
        self.add_tensor(s.values, source)
        self._add("sparse-indices", name_of(s.indices.dtype), s.indices.count, s.indices.length,
                  s.indices.name or s.name, s.indices.type_str(), s.indices.where)

    def finish(self) -> "ParamCounts":
        self.largest = sorted(self.largest, reverse=True)
        return self


def constant_tensor(n: Node) -> Tensor | SparseTensor | tuple[int, int, int] | None:
    """What a Constant node holds: its tensor, its sparse tensor, or (dtype, elements, bytes) for the
    scalar/list attributes (None when it holds nothing countable)."""
    for a in n.attributes:
        if a.ref:
            continue
        if a.name == "value" and a.type == AttrType.TENSOR and isinstance(a.value, Tensor):
            return a.value
        if a.name == "sparse_value" and a.type == AttrType.SPARSE_TENSOR and isinstance(a.value, SparseTensor):
            return a.value
        if a.name in _CONST_SCALAR:
            code, size = _CONST_SCALAR[a.name]
            v = a.value
            count = len(v) if isinstance(v, tuple) else 1
            if code == DataType.STRING:
                nbytes = sum(len(x) for x in v) if isinstance(v, tuple) else len(v or b"")
            else:
                nbytes = count * size
            return code, count, nbytes
    return None


def _is_constant(n: Node) -> bool:
    return n.op == "Constant" and n.domain in ("", "ai.onnx")


def count_graph(g: Graph, counts: ParamCounts | None = None, cancel: threading.Event | None = None,
                *, subgraphs: bool = True) -> ParamCounts:
    """Counts of ``g`` (and, with ``subgraphs``, every graph nested in its nodes)."""
    c = counts if counts is not None else ParamCounts()
    stack = [g]
    while stack:
        if cancel is not None and cancel.is_set():
            c.complete = False
            break
        cur = stack.pop()
        c.graphs += 1
        for t in cur.initializers:
            c.add_tensor(t, "initializer")
        for s in cur.sparse_initializers:
            c.add_sparse(s, "sparse")
        for i, n in enumerate(cur.nodes):  # every node: a Constant's value_float is a number, not built early by the reader
            if cancel is not None and not i & 4095 and cancel.is_set():  # every 4,096 nodes too
                c.complete = False
                return c.finish() if counts is None else c
            if not n.attributes:
                continue
            _count_node(n, c)
            if subgraphs:
                for a in n.attributes:
                    stack.extend(reversed(a.graphs()))
    return c.finish() if counts is None else c


def _count_node(n: Node, c: ParamCounts) -> None:
    if _is_constant(n):
        held = constant_tensor(n)
        if isinstance(held, Tensor):
            c.add_tensor(held, "constant")
        elif isinstance(held, SparseTensor):
            c.add_sparse(held, "constant")
        elif held is not None:
            code, count, nbytes = held
            c._add("constant", name_of(code), count, nbytes, n.outputs[0] if n.outputs else n.name,
                   f"{name_of(code)}[{count}]", n.where)
        return
    for a in n.attributes:
        if a.ref:
            continue
        if a.type in (AttrType.SPARSE_TENSOR, AttrType.SPARSE_TENSORS) and a.value is not None:
            for s in ((a.value,) if a.type == AttrType.SPARSE_TENSOR else tuple(a.value)):
                c.add_sparse(s, "attribute")
        else:
            for t in a.tensors():
                c.add_tensor(t, "attribute")


def count_model(m: Model, cancel: threading.Event | None = None) -> ParamCounts:
    """Counts of the whole model: the main graph with its subgraphs, and every function body."""
    c = ParamCounts()
    count_graph(m.graph, c, cancel)
    for f in m.functions:
        for n in f.nodes:
            if n.attributes:
                _count_node(n, c)
                for a in n.attributes:
                    for sub in a.graphs():
                        count_graph(sub, c, cancel)
    return c.finish()
