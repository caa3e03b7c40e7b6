"""Repeated blocks folded: consecutive sibling rows whose nodes are structurally the same.

Two rows are the same block when their nodes, in dependency order, run the same ops with the same
attribute values, read weights of the same dtype and shape, and are wired the same way (an input
is "output j of the k-th node of the block", "weight dtype[dims]" or "the m-th value from outside
the block"), names aside. Siblings named ``<base><index>`` with consecutive indices (``layers.0``,
``layers.1``...) fold into one ``fold`` row when most of them are the same block; the ones that
differ stay in it, marked with how (:func:`explain`: an extra node, another shape, another
attribute). Other siblings fold when consecutive and identical. No UI here.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Callable

from ...format.schema import Graph, Node, SparseTensor, Tensor, Type
from .rows import STEP, Outline, Row, subtree_nodes
from .text import common_member

__all__ = ["Folder", "fold_outline", "fold_children", "signature", "explain", "node_key"]

_INDEXED = re.compile(r"^(.*?)(\d+)$", re.S)
_FOLDABLE = ("scope", "stretch")


class _Keys:
    """Node structure keys of one graph (op, domain, attributes, arity), interned as small ints."""

    def __init__(self) -> None:
        self.ids: dict[tuple, int] = {}
        self.table: list[tuple] = []
        self.per_graph: dict[int, tuple[Graph, tuple[Node, ...], list[int]]] = {}
        self.wrefs: dict[str, tuple] = {}
        """Initializer name -> its reference in a signature (``("w", dtype, dims)``)."""
        self.sig_ids: dict[tuple, int] = {}
        """Block signature -> its id."""
        self.sigs: list[tuple] = []
        """Id -> block signature."""

    def nodes(self, g: Graph) -> tuple[tuple[Node, ...], list[int]]:
        """``g``'s nodes as a tuple (a NodeList's item look-up costs ~2 µs) and its key list (-1: not yet)."""
        held = self.per_graph.get(id(g))
        if held is None or held[0] is not g:
            nodes = g.nodes if isinstance(g.nodes, tuple) else g.nodes[:]
            held = self.per_graph[id(g)] = (g, nodes, [-1] * len(nodes))
        return held[1], held[2]

    def key(self, n: Node) -> int:
        key = node_key(n)
        k = self.ids.get(key)
        if k is None:
            k = self.ids[key] = len(self.table)
            self.table.append(key)
        return k


def _value_key(v: Any) -> Any:
    if isinstance(v, Tensor):
        return ("tensor", v.dtype, v.dims)
    if isinstance(v, SparseTensor):
        return ("sparse", v.values.dtype, v.dims)
    if isinstance(v, Graph):
        return ("graph", len(v.nodes))
    if isinstance(v, Type):
        return ("type", v.kind, v.elem, v.shape)
    if isinstance(v, tuple):
        return tuple(_value_key(x) for x in v)
    return v


def node_key(n: Node) -> tuple:
    """What makes two nodes the same, names aside: op, domain, attribute values (tensors by dtype and
    shape, graphs by size), input and output counts."""
    attrs = tuple((a.name, a.type, a.ref, _value_key(a.value)) for a in n.attributes) if n.attributes else ()
    return (n.op, n.domain, attrs, len(n.inputs), len(n.outputs))


def signature(row: Row, keys: _Keys, gf) -> tuple:
    """The structure of ``row``'s nodes (see the module docstring) as a hashable tuple."""
    g = row.graph
    assert g is not None
    nodes, kk = keys.nodes(g)
    if any(c.graph is g for c in row.children):
        idx = [i for _, i in subtree_nodes(row)]
    else:
        idx = row.nodes  # a leaf scope: its nodes are in dependency order already
    local = dict(zip(idx, range(len(idx))))
    outside: dict[str, int] = {}
    producer, init, wrefs = gf.producer, gf.initializer, keys.wrefs
    entries = []
    for i in idx:
        n = nodes[i]
        refs: list[Any] = []
        for x in n.inputs:
            if not x:
                refs.append(None)
                continue
            p = producer.get(x)
            k = local.get(p) if p is not None else None
            if k is not None:
                outs = nodes[p].outputs
                refs.append((k, outs.index(x) if len(outs) > 1 else 0))
                continue
            w = wrefs.get(x)
            if w is None:
                t = init.get(x)
                if t is not None:
                    w = wrefs[x] = ("w", t.dtype, t.dims)
            if w is not None:
                refs.append(w)
                continue
            refs.append(("x", outside.setdefault(x, len(outside))))
        key = kk[i]
        if key < 0:
            key = kk[i] = keys.key(n)
        entries.append((key, tuple(refs)))
    return tuple(entries)


def _shape(ref: Any) -> str:
    from ...format.dtypes import name_of

    return f"{name_of(ref[1])}[{','.join(str(d) for d in ref[2])}]"


def explain(odd: tuple, common: tuple, keys: _Keys) -> str:
    """How block signature ``odd`` differs from ``common``: an extra node, another shape, attribute, op or wiring."""
    t = keys.table
    if len(odd) != len(common):
        a = Counter(t[k][0] for k, _ in odd)
        b = Counter(t[k][0] for k, _ in common)
        more, fewer = a - b, b - a
        parts = []
        if more:
            n = sum(more.values())
            parts.append(f"{n} extra node{'s' if n > 1 else ''} ({', '.join(sorted(more))})")
        if fewer:
            n = sum(fewer.values())
            parts.append(f"{n} node{'s' if n > 1 else ''} fewer ({', '.join(sorted(fewer))})")
        return "; ".join(parts) or f"{len(odd)} nodes instead of {len(common)} (other wiring)"
    for (ka, ra), (kb, rb) in zip(odd, common):
        if ka != kb:
            x, y = t[ka], t[kb]
            if x[0] != y[0] or x[1] != y[1]:
                return f"another op: {x[0]} where the others have {y[0]}"
            if x[2] != y[2]:
                da, db = dict((a[0], a[3]) for a in x[2]), dict((a[0], a[3]) for a in y[2])
                for name in sorted(set(da) | set(db)):
                    if da.get(name) != db.get(name):
                        return (f"another attribute: {x[0]} {name}={_show(da.get(name))} "
                                f"(the others {_show(db.get(name))})")
            return f"another arity: {x[0]} with {x[3]} inputs, {x[4]} outputs (the others {y[3]}, {y[4]})"
        if ra != rb:
            for a, b in zip(ra, rb):
                if a != b and isinstance(a, tuple) and isinstance(b, tuple) and a[0] == "w" and b[0] == "w":
                    return f"another shape: {t[ka][0]} weight {_shape(a)} (the others {_shape(b)})"
            return f"other wiring at {t[ka][0]}"
    return "differs"


def _show(v: Any) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, tuple) and v and v[0] == "tensor":
        return f"tensor {_shape(('w', v[1], v[2]))}"
    if isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    text = repr(v) if not isinstance(v, str) else v
    return text if len(text) <= 40 else text[:39] + "…"


def _indexed(label: str) -> tuple[str, int] | None:
    m = _INDEXED.match(label)
    if m is None or not m.group(2).isascii():
        return None
    return m.group(1), int(m.group(2))


def _runs(kids: list[Row]) -> list[tuple[int, int, bool]]:
    """[start, end) runs of foldable siblings: same ``<base>`` with indices counting up (True), or not (False)."""
    out = []
    k = 0
    while k < len(kids):
        r = kids[k]
        ix = _indexed(r.label) if r.kind in _FOLDABLE else None
        end = k + 1
        if ix is not None:
            while end < len(kids) and kids[end].kind == r.kind:
                nx = _indexed(kids[end].label)
                if nx is None or nx[0] != ix[0] or nx[1] != ix[1] + (end - k):
                    break
                end += 1
        out.append((k, end, ix is not None and end - k > 1))
        k = end
    return out


def _fold(members: list[Row], odd: dict[int, str], label: str) -> Row:
    f = Row("fold", label, members[0].graph, first=members[0].first, members=members, children=list(members), odd=odd)
    for m in members:
        f.count += m.count
        f.params += m.params
        f.bytes += m.bytes
        for op, n in m.ops.items():
            f.ops[op] = f.ops.get(op, 0) + n
    for k, why in odd.items():
        members[k].differs = why
    return f


def _alike(a: Row, b: Row) -> bool:
    """Cheap checks before comparing signatures: same kind, node count and op histogram."""
    return a.kind == b.kind and a.count == b.count and a.ops == b.ops


def fold_children(row: Row, keys: _Keys, gf, tick: Callable[[int], None]) -> None:
    """Fold the runs of repeated blocks among ``row``'s children (not deeper)."""
    kids = row.children
    if len(kids) < 2:
        return
    sigs: dict[int, int] = {}

    def sig(k: int) -> int:
        """The id of kid ``k``'s signature (interned: a signature is a tuple of a tuple per node, and 10^5
        identical ones kept to the end were ~2*10^6 tuples freed at once, 0.3 s holding the interpreter)."""
        s = sigs.get(k)
        if s is None:
            full = signature(kids[k], keys, gf)
            s = sigs[k] = keys.sig_ids.setdefault(full, len(keys.sig_ids))
            if s == len(keys.sigs):
                keys.sigs.append(full)
            tick(len(full))
        return s

    out: list[Row] = []
    plain: list[int] = []  # not indexed: runs of identical siblings

    def flush_plain() -> None:
        j = 0
        while j < len(plain):
            k = plain[j]
            end = j + 1
            if kids[k].kind in _FOLDABLE:
                while end < len(plain) and _alike(kids[plain[end]], kids[k]) and sig(plain[end]) == sig(k):
                    end += 1
            if end - j > 1:
                ms = [kids[plain[x]] for x in range(j, end)]
                out.append(_fold(ms, {}, f"{ms[0].label} – {ms[-1].label}"))
            else:
                out.append(kids[k])
            j = end
        plain.clear()

    for a, b, indexed in _runs(kids):
        if not indexed:
            plain.extend(range(a, b))
            continue
        flush_plain()
        counts = Counter(sig(k) for k in range(a, b))
        common, n = counts.most_common(1)[0]
        if n < 2:
            out.extend(kids[a:b])
            continue
        odd = {k - a: explain(keys.sigs[sig(k)], keys.sigs[common], keys) for k in range(a, b) if sig(k) != common}
        base, first = _indexed(kids[a].label)  # type: ignore[misc]
        out.append(_fold(kids[a:b], odd, f"{base}{first}–{first + b - a - 1}"))
    flush_plain()
    row.children = out


class Folder:
    """Folds an outline's rows, level by level; keeps the interned node keys between calls."""

    def __init__(self, outline: Outline, step: Callable[[], object] | None = None) -> None:
        from ..facts import Facts

        self.outline = outline
        self.keys = _Keys()
        self.facts = outline.cache or Facts()
        self.step = step
        self.done = 0

    def tick(self, n: int) -> None:
        self.done += n
        if self.step is not None and self.done >= STEP:
            self.done = 0
            self.step()

    def ensure(self, row: Row) -> None:
        """Fold ``row``'s children, once."""
        if row.ready:
            return
        row.ready = True
        if row.graph is not None and len(row.children) > 1:
            o = self.outline
            gf = o.facts if row.graph is o.graph else self.facts.of(row.graph)
            fold_children(row, self.keys, gf, self.tick)


def fold_outline(outline: Outline, step: Callable[[], object] | None = None) -> None:
    """Fold repeated blocks at every level of ``outline`` (subgraphs and functions included), except inside
    the copies of a repeated block after its first: those fold when first looked into (:meth:`Folder.ensure`,
    through :attr:`.Outline.folder`; 144 identical layers are folded inside once, not 144 times)."""
    folder = Folder(outline, step)
    outline.folder = folder
    stack = [outline.root]
    while stack:
        r = stack.pop()
        folder.ensure(r)
        for c in r.children:
            if c.kind != "fold":
                stack.append(c)
                continue
            common = common_member(c)
            stack.extend(m for k, m in enumerate(c.members) if m is common or k in c.odd)
    outline.folded = True
