"""The scope outline of a model: its nodes grouped by the scopes of their names.

A node named ``/model/layers.0/attn/q_proj/MatMul`` sits in the scope ``model › layers.0 › attn ›
q_proj`` (names split on ``/``, ``.`` and ``::``; a numeric segment is a block index and stays with
the segment before it: ``layers.0``; the last segment is the node's own name). Every row of the
outline (:class:`Row`) carries its node count, op histogram, and the parameter count and bytes of
the initializers and Constant (or other attribute) tensors read by its nodes, everything under it
included; rows are in dependency order (by their first node). A node holding subgraphs (If, Loop,
Scan) is a row of its own with the subgraphs' outlines under it; a model-local function's body
appears under the first node calling it. An initializer read by nodes of several scopes is counted
once, in the scope of its first reader; one read by no node is counted in an ``(unread)`` row, so
the figures of the top rows add up to the model's parameter count (:func:`.params.count_model`).

Scopes with many direct nodes (names like ``Conv_12``) are split into connected stretches
(:mod:`.fallback`); repeated blocks are folded afterwards (:mod:`.folding`). No UI here; the
work calls ``step`` every few thousand nodes (a cancellable worker's checkpoint).
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

from ...format.dtypes import AttrType
from ...format.schema import Function, Graph, Model, Node, SparseTensor, Tensor
from ..facts import Facts
from ..params import count_graph
from .fallback import split_flat
from .folding import fold_outline
from .rows import STEP, Outline, Row

__all__ = ["PREVIEW_AT", "build_outline", "scope_labels"]

PREVIEW_AT = 65_536
"""Nodes grouped before :func:`build_outline`'s ``preview`` (~0.1-0.3 s of work)."""

_SEP = re.compile(r"/|::|\.")
_LAST = re.compile(r"(.*)(?:/|::|\.)")
_HEAVY_ATTRS = frozenset(int(t) for t in (AttrType.TENSOR, AttrType.TENSORS, AttrType.SPARSE_TENSOR,
                                         AttrType.SPARSE_TENSORS, AttrType.GRAPH, AttrType.GRAPHS))


def scope_labels(prefix: str) -> tuple[str, ...]:
    """The scope labels of a name's prefix: ``/model/layers.0/attn`` -> ``("model", "layers.0", "attn")``."""
    out: list[str] = []
    for seg in _SEP.split(prefix):
        if not seg:
            continue
        if seg.isdigit() and out and seg.isascii():
            out[-1] = out[-1] + "." + seg
        else:
            out.append(seg)
    return tuple(out)


def _tensor_figures(t: Tensor) -> tuple[int, int]:
    nbytes = t.length if not t.is_string else sum(len(s) for s in (t.strings or ()))
    return t.count, nbytes


def _held_figures(n: Node) -> tuple[int, int]:
    """Parameters a node holds (Constant value, tensor attributes, subgraphs), counted by :func:`count_graph`."""
    c = count_graph(Graph(nodes=(n,)))
    return c.elements, c.bytes


def _is_heavy(n: Node) -> bool:
    if n.op == "Constant":
        return bool(n.attributes)
    for a in n.attributes:
        if a.type in _HEAVY_ATTRS:
            return True
    return False


class _Builder:
    def __init__(self, model: Model | None, facts: Facts, step: Callable[[], object] | None) -> None:
        self.model = model
        self.facts = facts
        self.step = step
        self.claimed: set[int] = set()
        self.functions = {(f.domain, f.name): f for f in (model.functions if model is not None else ())}
        self.functions_done: set[tuple[str, str]] = set()
        self.preview: Callable[[Outline], object] | None = None

    def graph_rows(self, g: Graph, kind: str, label: str, outer: list[dict[str, object]]) -> Row:
        """The row of graph ``g`` (the main graph: ``root``), its scopes as children."""
        gf = self.facts.of(g, self.step)
        row = Row(kind, label, g)
        nodes = g.nodes
        order: Iterable[int] = g.order if g.order is not None else range(len(nodes))
        local: dict[str, object] = {}
        for t in g.initializers:
            local.setdefault(t.name, t)
        for s in g.sparse_initializers:
            local.setdefault(s.name, s)
        chain = [local, *outer]
        leaves: dict[str, Row] = {"": row}
        scopes: dict[tuple[str, ...], Row] = {(): row}
        seq = nodes if isinstance(nodes, tuple) else nodes[:]  # a NodeList's item look-up: ~2 µs
        funcs, claimed, step, match = self.functions, self.claimed, self.step, _LAST.match
        single = local if len(chain) == 1 else None
        preview_at = PREVIEW_AT
        preview = self.preview if kind == "root" and len(nodes) > preview_at else None
        for pos, i in enumerate(order):
            if step is not None and not pos % STEP:
                step()
            if preview is not None and pos == preview_at:
                _finish(row)  # the figures of the nodes grouped so far
                preview(Outline(row, g, gf, self.facts))
                preview = None
            n = seq[i]
            name = n.name
            m = match(name) if name else None
            prefix = m.group(1) if m is not None else ""
            leaf = leaves.get(prefix)
            if leaf is None:  # a new scope row starts at its first node (so does each new parent)
                leaf = leaves[prefix] = self._scope(scopes, scope_labels(prefix), g, pos)
            holder = leaf
            if (n.attributes and _is_heavy(n)) or (funcs and (n.domain, n.op) in funcs):
                holder = self._node_row(g, i, n, pos, chain)
                leaf.children.append(holder)
            else:
                leaf.nodes.append(i)
                leaf.pos.append(pos)
            for x in n.inputs:
                if single is not None:
                    t = single.get(x)
                else:
                    t = next((d[x] for d in chain if x in d), None)
                if t is not None and id(t) not in claimed:
                    claimed.add(id(t))
                    e, b = _tensor_figures(t) if isinstance(t, Tensor) else _sparse_figures(t)
                    holder.own_params += e
                    holder.own_bytes += b
        unread = [t for t in local.values() if id(t) not in self.claimed]
        if unread and kind == "root":
            u = Row("unread", "(initializers read by no node)", g, first=1 << 62)
            for t in unread:
                self.claimed.add(id(t))
                e, b = _tensor_figures(t) if isinstance(t, Tensor) else _sparse_figures(t)
                u.own_params += e
                u.own_bytes += b
            row.children.append(u)
        elif unread:
            for t in unread:
                self.claimed.add(id(t))
                e, b = _tensor_figures(t) if isinstance(t, Tensor) else _sparse_figures(t)
                row.own_params += e
                row.own_bytes += b
        for r in scopes.values():
            split_flat(r, gf)
        if kind == "root":
            for key, f in self.functions.items():
                if key not in self.functions_done:
                    self.functions_done.add(key)
                    row.children.append(self.function_row(f, first=1 << 62))
        _finish(row)
        return row

    def _scope(self, scopes: dict[tuple[str, ...], Row], labels: tuple[str, ...], g: Graph, pos: int) -> Row:
        row = scopes.get(labels)
        if row is not None:
            return row
        parent = self._scope(scopes, labels[:-1], g, pos)
        row = scopes[labels] = Row("scope", labels[-1], g, first=pos)
        parent.children.append(row)
        return row

    def _node_row(self, g: Graph, i: int, n: Node, pos: int, chain: list[dict[str, object]]) -> Row:
        row = Row("node", n.name, g, [i], [pos], first=pos, node=n)
        if n.op == "Constant" or any(a.type in _HEAVY_ATTRS for a in n.attributes):
            subs = [(a.name, sg) for a in n.attributes for sg in a.graphs()]
            if subs:  # the node's own tensors here, its subgraphs' as rows of their own
                e, b = _held_figures(Node(n.op, n.name, n.domain, attributes=tuple(
                    a for a in n.attributes if a.type not in (AttrType.GRAPH, AttrType.GRAPHS))))
            else:
                e, b = _held_figures(n)
            row.own_params += e
            row.own_bytes += b
            for attr, sg in subs:
                row.children.append(self.graph_rows(sg, "graph", f"{attr}: {sg.name}", chain))
        key = (n.domain, n.op)
        f = self.functions.get(key)
        if f is not None and key not in self.functions_done:
            self.functions_done.add(key)
            row.children.append(self.function_row(f, first=pos))
        return row

    def function_row(self, f: Function, first: int) -> Row:
        g = Graph(name=f.name, nodes=f.nodes, order=f.order, where=f.where)
        row = self.graph_rows(g, "function", f"function {f.domain + '.' if f.domain else ''}{f.name}", [])
        row.first = first
        return row


def _sparse_figures(s: SparseTensor) -> tuple[int, int]:
    e, b = _tensor_figures(s.values)
    return e, b + s.indices.length


def _finish(row: Row) -> None:
    """Children in dependency order; figures summed up the tree (children first)."""
    seqs: dict[int, tuple[Node, ...]] = {}
    stack = [(row, False)]
    while stack:
        r, done = stack.pop()
        if not done:
            stack.append((r, True))
            stack.extend((c, False) for c in r.children)
            continue
        r.children.sort(key=lambda c: c.first)
        r.params, r.bytes = r.own_params, r.own_bytes
        if r.kind == "node":
            r.count, r.ops = 1, ({r.node.op: 1} if r.node is not None else {})
        else:
            r.count, r.ops = len(r.nodes), {}
            if r.graph is not None and r.nodes:
                nodes = seqs.get(id(r.graph))
                if nodes is None:
                    nodes = seqs[id(r.graph)] = r.graph.nodes if isinstance(r.graph.nodes, tuple) else r.graph.nodes[:]
                ops = r.ops
                for i in r.nodes:
                    op = nodes[i].op
                    ops[op] = ops.get(op, 0) + 1
        for c in r.children:
            r.count += c.count
            r.params += c.params
            r.bytes += c.bytes
            for op, k in c.ops.items():
                r.ops[op] = r.ops.get(op, 0) + k


def build_outline(model: Model, facts: Facts | None = None, step: Callable[[], object] | None = None,
                  *, fold: bool = True, preview: Callable[[Outline], object] | None = None) -> Outline:
    """The outline of ``model``'s main graph (its subgraphs and functions under their nodes).

    ``step`` is called every :data:`STEP` nodes (a worker raises there to stop). ``fold``: fold repeated
    blocks (:func:`.folding.fold_outline`). ``preview``: called once, after the first :data:`PREVIEW_AT`
    nodes of a bigger main graph, with the outline of those nodes (its rows go on growing: a reader in
    another thread sees lists being appended to and sorted, never a torn record).
    """
    facts = facts or Facts()
    b = _Builder(model, facts, step)
    b.preview = preview
    root = b.graph_rows(model.graph, "root", model.graph.name, [])
    out = Outline(root, model.graph, facts.of(model.graph), facts)
    if fold:
        fold_outline(out, step)
    return out
