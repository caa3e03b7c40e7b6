"""Sparse tensors' indices as ONNX requires them: INT64.

ONNX Runtime's converter narrows sparse indices to the smallest integer type that holds them
(INT64 to INT8 or INT16 or INT32), and ``onnx.checker`` rejects any type but INT64 ("Sparse tensor
indices (...) must have INT64 type"). :func:`widen_sparse_indices` gives a model whose sparse
tensors (graph sparse initializers and SPARSE_TENSOR(S) attributes, in every subgraph and function)
have INT64 indices: the narrowed ones decoded and widened into memory (indices are small: one per
stored value), every other record shared with the input model. The values are equal, so
``--diff`` finds the result equal to the source.
"""

from __future__ import annotations

from dataclasses import replace

from .dtypes import AttrType, DataType
from .errors import FormatError, Kind
from .schema import Attribute, Graph, Model, Node, SparseTensor, Tensor, nodes_with_contents
from .storage import BytesStorage

NARROW = frozenset({DataType.INT8, DataType.UINT8, DataType.INT16, DataType.UINT16, DataType.INT32, DataType.UINT32})
"""Index types widened to INT64 (UINT64 indices are not touched: their large values have no INT64 form)."""


def widen_indices(t: Tensor) -> Tensor:
    """``t`` (sparse indices) as INT64 when stored narrower; ``t`` itself otherwise."""
    if t.dtype not in NARROW:
        return t
    import numpy as np

    values = np.asarray(t.values()).astype(np.int64).reshape(-1)
    data = values.astype("<i8").tobytes()
    if len(data) != 8 * t.count:  # pragma: no cover - values() returns count elements
        raise FormatError(Kind.INVALID_MODEL, t.where, t.file_offset, "sparse indices do not match their dims")
    return replace(t, dtype=int(DataType.INT64), offset=0, length=len(data), file_offset=0,
                   storage=BytesStorage(data, f"{t.where} (widened to INT64)"))


def _sparse(s: SparseTensor) -> SparseTensor:
    idx = widen_indices(s.indices)
    return s if idx is s.indices else replace(s, indices=idx)


_HOLDERS = frozenset({AttrType.SPARSE_TENSOR, AttrType.SPARSE_TENSORS, AttrType.GRAPH, AttrType.GRAPHS})
"""Attribute types whose value may hold a sparse tensor (itself, or in a subgraph)."""


class _Widener:
    def __init__(self) -> None:
        self.count = 0

    def sparse(self, s: SparseTensor) -> SparseTensor:
        out = _sparse(s)
        self.count += out is not s
        return out

    def attribute(self, a: Attribute) -> Attribute:
        v = a.value
        if a.ref or v is None:
            return a
        if a.type == AttrType.SPARSE_TENSOR:
            nv = self.sparse(v)
        elif a.type == AttrType.SPARSE_TENSORS:
            nv = tuple(self.sparse(x) for x in v)
            nv = v if all(x is y for x, y in zip(nv, v)) else nv
        elif a.type == AttrType.GRAPH:
            nv = self.graph(v)
        elif a.type == AttrType.GRAPHS:
            nv = tuple(self.graph(x) for x in v)
            nv = v if all(x is y for x, y in zip(nv, v)) else nv
        else:
            return a
        return a if nv is v else replace(a, value=nv)

    def node(self, n: Node) -> Node:
        if not any([a.type in _HOLDERS for a in n.attributes]):  # most nodes (1G model: 11 -> 5 ms CPU)
            return n
        attrs = tuple(self.attribute(a) for a in n.attributes)
        return n if all(x is y for x, y in zip(attrs, n.attributes)) else replace(n, attributes=attrs)

    def nodes(self, nodes):
        changed = {}
        for n in nodes_with_contents(nodes):
            m = self.node(n)
            if m is not n:
                changed[id(n)] = m
        return nodes if not changed else tuple(changed.get(id(n), n) for n in nodes)

    def graph(self, g: Graph) -> Graph:
        sparse = tuple(self.sparse(s) for s in g.sparse_initializers)
        nodes = self.nodes(g.nodes)
        same_sparse = all(x is y for x, y in zip(sparse, g.sparse_initializers))
        if same_sparse and nodes is g.nodes:
            return g
        return replace(g, sparse_initializers=g.sparse_initializers if same_sparse else sparse, nodes=nodes)


def widen_sparse_indices(model: Model) -> tuple[Model, int]:
    """``model`` with every sparse tensor's indices INT64, and how many were widened (0: ``model`` itself)."""
    w = _Widener()
    graph = w.graph(model.graph)
    functions = []
    for f in model.functions:
        nodes = w.nodes(f.nodes)
        functions.append(f if nodes is f.nodes else replace(f, nodes=nodes))
    if not w.count:
        return model, 0
    return replace(model, graph=graph, functions=tuple(functions)), w.count
