"""Structural matching of two models: the side-by-side tree and every difference but tensor values.

:func:`match_models` walks both :class:`~onemodel_viewer.format.schema.Model` records side by
side. It never cares which file format a document came from: a OneModel file and an
imported ONNX file give the same records.

What counts as the same (the spec's equivalences, listed when they applied):

* ONNX typed payload fields and ``raw_data``: both are raw bytes by the time
  they reach a :class:`Tensor`;
* a different stored node order: nodes are matched by name (or by the values
  they produce), never by their index, when names allow it;
* opset and node domain ``""`` and ``"ai.onnx"``.

Floats in attributes are compared by bit pattern, so NaN payloads and the sign of zero
count. A tensor pair of one dtype and shape becomes a :class:`DataJob`: its values are
compared afterwards (:mod:`.diff_tensors`, driven by :mod:`.diff`), so the tree is
complete before any tensor byte is read. String tensors are compared here.

A file opened in diagnose mode leaves parts unread (``None`` attribute values, tensors without
bytes): matching takes them as they are, and a tensor pair whose bytes one side cannot give is
*not compared* (:mod:`.diff_skip`: the reason, from the document's problems), never a data job.

Every entry has a ``where`` naming it by names from the file where possible
(``graph.nodes["conv1"].attributes["strides"]``, ``graph.initializers["w"].data``,
``model.opsets[""]``), positionally (``graph.nodes[3]``) when a name is empty or not
unique. Names go in as-is: render them through ``textsafe.visible`` before showing them
in a terminal. No UI here; cancellation is a plain ``threading.Event``.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from ...format.dtypes import STRING, AttrType, name_of
from ...format.schema import (
    Attribute,
    Function,
    Graph,
    Model,
    Node,
    OperatorSet,
    SparseTensor,
    Tensor,
    Type,
    ValueInfo,
)
from ...format.errors import Finding, Problem
from .result import ADDED, CHANGED, EQUAL, REMOVED, DiffCancelled, Difference, DiffNode, NotCompared
from .skip import ProblemIndex, bytes_problem
from ..floatbits import format_f32

__all__ = ["DataJob", "Structure", "match_models", "set_statuses", "unravel", "MAX_LIST"]

MAX_LIST = 64
"""Longest attribute list reported in full; longer ones are summarised."""


@dataclass(slots=True, eq=False)
class DataJob:
    """A tensor pair of one dtype and shape whose values are still to be compared."""

    node: DiffNode
    a: Tensor
    b: Tensor
    position: int
    """Where its data difference goes in :attr:`Structure.differences` (the count before it)."""


@dataclass(slots=True, eq=False)
class Structure:
    """What :func:`match_models` found: the tree, the differences so far, the data still to compare."""

    root: DiffNode
    differences: list[Difference]
    equivalences: list[str]
    jobs: list[DataJob] = field(default_factory=list)
    not_compared: list[NotCompared] = field(default_factory=list)
    """Tensor pairs of one dtype and shape whose bytes one side cannot give (walk order)."""


# ---------------------------------------------------------------------------- formatting

def _text(b: bytes) -> str:
    return b.decode("utf-8", errors="backslashreplace")


def unravel(flat: int, dims: Sequence[int]) -> list[int]:
    """The index of element ``flat`` of a C-ordered array of shape ``dims``."""
    out = []
    for d in reversed(dims):
        out.append(flat % d if d else 0)
        flat = flat // d if d else 0
    return out[::-1]


def _type_key(t: Type | None):
    if t is None:
        return None
    return (t.kind, t.elem, t.shape, _type_key(t.inner), t.key, t.domain, t.name)


def _type_str(t: Type | None) -> str | None:
    return None if t is None else str(t)


def _canon_domain(d: str) -> str:
    return "" if d == "ai.onnx" else d


def _attr_value_json(attr: Attribute) -> Any:
    """A small JSON-safe rendering of an attribute value (used for added/removed/changed values)."""
    t, v = attr.type, attr.value
    if attr.ref:
        return {"ref": attr.ref}
    if v is None:  # a value diagnose mode could not read
        return None
    if t == AttrType.FLOAT:
        return format_f32(v)  # type: ignore[arg-type]
    if t == AttrType.INT:
        return v
    if t == AttrType.STRING:
        return _text(v)  # type: ignore[arg-type]
    if t == AttrType.FLOATS:
        return _cap([format_f32(x) for x in v])  # type: ignore[union-attr]
    if t == AttrType.INTS:
        return _cap(list(v))  # type: ignore[arg-type]
    if t == AttrType.STRINGS:
        return _cap([_text(x) for x in v])  # type: ignore[union-attr]
    if t == AttrType.TENSOR:
        return v.type_str()  # type: ignore[union-attr]
    if t == AttrType.TENSORS:
        return _cap([x.type_str() for x in v])  # type: ignore[union-attr]
    if t == AttrType.GRAPH:
        return f"graph {v.name} ({len(v.nodes)} nodes)"  # type: ignore[union-attr]
    if t == AttrType.GRAPHS:
        return _cap([f"graph {g.name} ({len(g.nodes)} nodes)" for g in v])  # type: ignore[union-attr]
    if t == AttrType.SPARSE_TENSOR:
        return f"sparse {name_of(v.values.dtype)}[{','.join(map(str, v.dims))}]"  # type: ignore[union-attr]
    if t == AttrType.SPARSE_TENSORS:
        return _cap([f"sparse {name_of(s.values.dtype)}[{','.join(map(str, s.dims))}]" for s in v])  # type: ignore[union-attr]
    if t == AttrType.TYPE_PROTO:
        return _type_str(v)  # type: ignore[arg-type]
    if t == AttrType.TYPE_PROTOS:
        return _cap([_type_str(x) for x in v])  # type: ignore[union-attr]
    return None


def _cap(items: list) -> list:
    if len(items) <= MAX_LIST:
        return items
    return items[:MAX_LIST] + [f"... {len(items) - MAX_LIST} more"]


def _node_summary(n: Node) -> dict:
    return {"op": n.op, "domain": n.domain, "inputs": list(n.inputs), "outputs": list(n.outputs)}


def _tensor_summary(t: Tensor) -> str:
    return t.type_str()


def _type_name(code: int) -> str:
    try:
        return AttrType(code).name
    except ValueError:
        return f"type({code})"


# attribute types whose values compare with == (floats as bit patterns)
_PLAIN = frozenset((AttrType.FLOAT, AttrType.INT, AttrType.STRING, AttrType.FLOATS, AttrType.INTS, AttrType.STRINGS))


def _same_node(a: Node, b: Node) -> bool:
    """Equal fields and equal plain attributes (``_PLAIN``) in one order under unique names: then
    :meth:`_Matcher.node` finds no difference (a model against its converted twin: nearly every node)."""
    if (a.op, a.name, a.domain, a.overload, a.doc, a.inputs, a.outputs) != (
            b.op, b.name, b.domain, b.overload, b.doc, b.inputs, b.outputs) or len(a.attributes) != len(b.attributes):
        return False
    names = set()
    for x, y in zip(a.attributes, b.attributes):
        if (x.type not in _PLAIN or not x.name or x.name in names
                or (x.name, x.type, x.value, x.ref, x.doc) != (y.name, y.type, y.value, y.ref, y.doc)):
            return False
        names.add(x.name)
    return True


# ---------------------------------------------------------------------------- the walk


class _Matcher:
    def __init__(self, cancel: threading.Event | None, problems: tuple[ProblemIndex, ProblemIndex],
                 whole_tree: bool = True):
        self.cancel = cancel
        self.problems = problems
        self.whole_tree = whole_tree  # False: identical nodes get no tree entry
        self.differences: list[Difference] = []
        self.equivalences: dict[str, None] = {}
        self.jobs: list[DataJob] = []
        self.not_compared: list[NotCompared] = []

    # -- bookkeeping

    def check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise DiffCancelled()

    def add(self, node: DiffNode, suffix: str, change: str, a: Any, b: Any, detail: dict | None = None,
            a_ref: Any = None, b_ref: Any = None) -> None:
        d = Difference(node.where + suffix, change, a, b, detail, a_ref, b_ref)
        self.differences.append(d)
        node.differences.append(d)

    def child(self, parent: DiffNode, label: str, a: Any, b: Any, sep: str = ".") -> DiffNode:
        where = label if not parent.where else parent.where + (sep if not label.startswith("[") else "") + label
        node = DiffNode(label, where, EQUAL, a, b, parent=parent)
        parent.children.append(node)
        return node

    def added(self, parent: DiffNode, label: str, b_rec: Any, value: Any) -> None:
        node = self.child(parent, label, None, b_rec)
        node.status = ADDED
        self.add(node, "", ADDED, None, value, b_ref=b_rec)

    def removed(self, parent: DiffNode, label: str, a_rec: Any, value: Any) -> None:
        node = self.child(parent, label, a_rec, None)
        node.status = REMOVED
        self.add(node, "", REMOVED, value, None, a_ref=a_rec)

    def field(self, node: DiffNode, name: str, a: Any, b: Any) -> None:
        if a != b:
            self.add(node, "." + name, CHANGED, a, b, a_ref=node.a, b_ref=node.b)

    def equivalence(self, text: str) -> None:
        self.equivalences.setdefault(text, None)

    # -- model

    def model(self, root: DiffNode, ma: Model, mb: Model) -> None:
        m = self.child(root, "model", ma, mb)
        for name in ("ir_version", "producer_name", "producer_version", "domain", "model_version", "doc"):
            self.field(m, name, getattr(ma, name), getattr(mb, name))
        self.opsets(m, "opsets", ma.opsets, mb.opsets)
        self.metadata(m, ma.metadata, mb.metadata)
        self.graph(root, "graph", ma.graph, mb.graph)
        self.functions(root, ma.functions, mb.functions)

    def opsets(self, parent: DiffNode, label: str, a: Sequence[OperatorSet], b: Sequence[OperatorSet]) -> None:
        grp = self.child(parent, label, a, b)
        for side in (a, b):
            domains = {o.domain for o in side}
            if "ai.onnx" in domains:
                other = b if side is a else a
                if any(o.domain == "" for o in other) and not any(o.domain == "ai.onnx" for o in other):
                    self.equivalence('opset domain "ai.onnx" and "" are the same default domain')
        ma = {_canon_domain(o.domain): o for o in a}
        mb = {_canon_domain(o.domain): o for o in b}
        for dom in list(ma) + [d for d in mb if d not in ma]:
            label_d = f'["{dom}"]'
            if dom not in mb:
                self.removed(grp, label_d, ma[dom], ma[dom].version)
            elif dom not in ma:
                self.added(grp, label_d, mb[dom], mb[dom].version)
            else:
                node = self.child(grp, label_d, ma[dom], mb[dom])
                if ma[dom].version != mb[dom].version:
                    self.add(node, "", CHANGED, ma[dom].version, mb[dom].version)

    def metadata(self, parent: DiffNode, a: Sequence[tuple[str, str]], b: Sequence[tuple[str, str]]) -> None:
        grp = self.child(parent, "metadata", a, b)
        ka, kb = [k for k, _ in a], [k for k, _ in b]
        if len(set(ka)) != len(ka) or len(set(kb)) != len(kb):
            # duplicate keys: compare as lists
            if list(a) != list(b):
                self.add(grp, "", CHANGED, [[k, v] for k, v in a], [[k, v] for k, v in b])
            return
        da, db = dict(a), dict(b)
        for k in ka + [k for k in kb if k not in da]:
            label = f'["{k}"]'
            if k not in db:
                self.removed(grp, label, (k, da[k]), da[k])
            elif k not in da:
                self.added(grp, label, (k, db[k]), db[k])
            else:
                node = self.child(grp, label, (k, da[k]), (k, db[k]))
                if da[k] != db[k]:
                    self.add(node, "", CHANGED, da[k], db[k])
        common_a = [k for k in ka if k in db]
        common_b = [k for k in kb if k in da]
        if common_a != common_b:
            self.add(grp, "", CHANGED, common_a, common_b, {"order": True})

    # -- graphs

    def graph(self, parent: DiffNode, label: str, ga: Graph, gb: Graph) -> None:
        g = self.child(parent, label, ga, gb)
        self.graph_body(g, ga, gb)

    def graph_body(self, g: DiffNode, ga: Graph, gb: Graph) -> None:
        self.check_cancel()
        self.field(g, "name", ga.name, gb.name)
        self.field(g, "doc", ga.doc, gb.doc)
        self.value_infos(g, "inputs", ga.inputs, gb.inputs, ordered=True)
        self.value_infos(g, "outputs", ga.outputs, gb.outputs, ordered=True)
        self.value_infos(g, "value_info", ga.value_info, gb.value_info, ordered=False)
        self.named_records(g, "initializers", ga.initializers, gb.initializers, lambda t: t.name, self.tensor,
                           _tensor_summary)
        self.named_records(g, "sparse_initializers", ga.sparse_initializers, gb.sparse_initializers,
                           lambda s: s.name, self.sparse, lambda s: "sparse " + s.values.type_str())
        self.nodes(g, ga.ordered_nodes(), gb.ordered_nodes(), ga.nodes, gb.nodes)

    def value_infos(self, parent: DiffNode, label: str, a: Sequence[ValueInfo], b: Sequence[ValueInfo],
                    ordered: bool) -> None:
        grp = self.child(parent, label, a, b)

        def cmp(node: DiffNode, x: ValueInfo, y: ValueInfo) -> None:
            if _type_key(x.type) != _type_key(y.type):
                self.add(node, ".type", CHANGED, _type_str(x.type), _type_str(y.type), a_ref=x, b_ref=y)

        self.keyed(grp, a, b, lambda v: v.name, cmp, lambda v: _type_str(v.type))
        if ordered:
            na, nb = [v.name for v in a], [v.name for v in b]
            sa, sb = set(nb), set(na)
            ca, cb = [n for n in na if n in sa], [n for n in nb if n in sb]
            if ca != cb:
                self.add(grp, "", CHANGED, ca, cb, {"order": True})

    def named_records(self, parent: DiffNode, label: str, a: Sequence, b: Sequence, key, cmp, summary) -> None:
        grp = self.child(parent, label, a, b)
        self.keyed(grp, a, b, key, cmp, summary)

    def keyed(self, grp: DiffNode, a: Sequence, b: Sequence, key, cmp, summary) -> None:
        """Match records by a unique non-empty key (else by position) and compare each pair."""
        ka, kb = [key(x) for x in a], [key(x) for x in b]
        unique = (all(ka) and all(kb) and len(set(ka)) == len(ka) and len(set(kb)) == len(kb))
        if unique:
            db = dict(zip(kb, b))
            da = dict(zip(ka, a))
            for k, x in zip(ka, a):
                label = f'["{k}"]'
                if k in db:
                    cmp(self.child(grp, label, x, db[k]), x, db[k])
                else:
                    self.removed(grp, label, x, summary(x))
            for k, y in zip(kb, b):
                if k not in da:
                    self.added(grp, f'["{k}"]', y, summary(y))
        else:
            for i in range(max(len(a), len(b))):
                label = f"[{i}]"
                if i >= len(b):
                    self.removed(grp, label, a[i], summary(a[i]))
                elif i >= len(a):
                    self.added(grp, label, b[i], summary(b[i]))
                else:
                    node = self.child(grp, label, a[i], b[i])
                    self.field(node, "name", key(a[i]), key(b[i]))
                    cmp(node, a[i], b[i])

    # -- nodes

    def nodes(self, parent: DiffNode, ord_a: Sequence[Node], ord_b: Sequence[Node],
              stored_a: Sequence[Node], stored_b: Sequence[Node], label: str = "nodes") -> None:
        grp = self.child(parent, label, stored_a, stored_b)
        idx_a = {id(n): i for i, n in enumerate(stored_a)}
        idx_b = {id(n): i for i, n in enumerate(stored_b)}
        ca = Counter(n.name for n in ord_a)
        cb = Counter(n.name for n in ord_b)
        named = {k for k in ca.keys() | cb.keys() if k and ca[k] <= 1 and cb[k] <= 1}  # identify a node in both files

        pairs: dict[int, Node] = {}  # id(a node) -> b node
        used_b: set[int] = set()
        by_name_b = {n.name: n for n in ord_b if n.name in named}
        for n in ord_a:
            if n.name in by_name_b:
                m = by_name_b[n.name]
                pairs[id(n)] = m
                used_b.add(id(m))
        # Next: identical non-empty outputs (ONNX values are defined once, so outputs name a node).
        left_a = [n for n in ord_a if id(n) not in pairs]
        left_b = [n for n in ord_b if id(n) not in used_b]
        oa = Counter(n.outputs for n in left_a if any(n.outputs))
        ob = Counter(n.outputs for n in left_b if any(n.outputs))
        by_out_b = {n.outputs: n for n in left_b if any(n.outputs) and ob[n.outputs] == 1}
        for n in left_a:
            if any(n.outputs) and oa[n.outputs] == 1 and n.outputs in by_out_b:
                m = by_out_b[n.outputs]
                pairs[id(n)] = m
                used_b.add(id(m))
        # Then: nodes without an identifying name, by position in dependency order.
        rest_a = [n for n in ord_a if id(n) not in pairs and n.name not in named]
        rest_b = [n for n in ord_b if id(n) not in used_b and n.name not in named]
        for n, m in zip(rest_a, rest_b):
            pairs[id(n)] = m
            used_b.add(id(m))

        def label_of(n: Node, index: int) -> str:
            return f'["{n.name}"]' if n.name in named else f"[{index}]"

        for n in ord_a:
            m = pairs.get(id(n))
            if m is not None and not self.whole_tree and _same_node(n, m):
                continue  # no difference, no entry wanted (1 GiB benchmark twin: match ~125 -> ~90 ms CPU)
            lab = label_of(n, idx_a[id(n)])
            if m is None:
                self.removed(grp, lab, n, _node_summary(n))
            else:
                self.node(self.child(grp, lab, n, m), n, m)
        for m in ord_b:
            if id(m) not in used_b:
                self.added(grp, label_of(m, idx_b[id(m)]), m, _node_summary(m))
        # Stored order differing for matched nodes is an equivalence (dependency order is what counts).
        if pairs:
            seq = [idx_b[id(pairs[id(n)])] for n in stored_a if id(n) in pairs]
            if any(x > y for x, y in zip(seq, seq[1:])):
                self.equivalence(f"{parent.where or 'graph'}: nodes are stored in a different order "
                                 "(matched by name; order is not significant)")

    def node(self, nd: DiffNode, a: Node, b: Node) -> None:
        self.check_cancel()
        # nothing to compare, only the tree's entries to make (1 GiB benchmark pair: match ~100 -> ~82 ms CPU)
        if _same_node(a, b):
            if a.attributes:
                grp = self.child(nd, "attributes", a.attributes, b.attributes)
                for x, y in zip(a.attributes, b.attributes):
                    self.child(grp, f'["{x.name}"]', x, y)
            return
        self.field(nd, "name", a.name, b.name)
        self.field(nd, "op", a.op, b.op)
        if _canon_domain(a.domain) != _canon_domain(b.domain):
            self.add(nd, ".domain", CHANGED, a.domain, b.domain, a_ref=a, b_ref=b)
        elif a.domain != b.domain:
            self.equivalence('node domain "ai.onnx" and "" are the same default domain')
        self.field(nd, "overload", a.overload, b.overload)
        self.field(nd, "doc", a.doc, b.doc)
        self.field(nd, "inputs", list(a.inputs), list(b.inputs))
        self.field(nd, "outputs", list(a.outputs), list(b.outputs))
        self.attributes(nd, "attributes", a.attributes, b.attributes)

    def attributes(self, parent: DiffNode, label: str, a: Sequence[Attribute], b: Sequence[Attribute]) -> None:
        if not a and not b:
            return
        grp = self.child(parent, label, a, b)
        self.keyed(grp, a, b, lambda x: x.name, self.attribute, _attr_value_json)

    def attribute(self, nd: DiffNode, a: Attribute, b: Attribute) -> None:
        if a.type != b.type:
            detail = {"a_value": _attr_value_json(a), "b_value": _attr_value_json(b)}
            self.add(nd, ".type", CHANGED, _type_name(a.type), _type_name(b.type), detail, a, b)
            return
        self.field(nd, "ref", a.ref, b.ref)
        self.field(nd, "doc", a.doc, b.doc)
        if a.ref or b.ref:
            return
        t, va, vb = a.type, a.value, b.value
        if va is None or vb is None:  # unread in diagnose mode (the file's problems say why)
            if va is not vb:
                self.add(nd, "", CHANGED, _attr_value_json(a), _attr_value_json(b), None, a, b)
            return
        if t in (AttrType.FLOAT, AttrType.INT, AttrType.STRING, AttrType.FLOATS, AttrType.INTS, AttrType.STRINGS):
            if va != vb:  # floats are bit patterns: NaN payloads and -0.0 count
                detail = None
                if isinstance(va, tuple) and isinstance(vb, tuple):
                    first = next((i for i, (x, y) in enumerate(zip(va, vb)) if x != y), min(len(va), len(vb)))
                    detail = {"first_index": first, "a_length": len(va), "b_length": len(vb)}
                self.add(nd, "", CHANGED, _attr_value_json(a), _attr_value_json(b), detail, a, b)
        elif t == AttrType.TENSOR:
            self.tensor(nd, va, vb, named=True)  # type: ignore[arg-type]
        elif t == AttrType.GRAPH:
            self.graph_body(nd, va, vb)  # type: ignore[arg-type]
        elif t == AttrType.SPARSE_TENSOR:
            self.sparse(nd, va, vb)  # type: ignore[arg-type]
        elif t == AttrType.TYPE_PROTO:
            if _type_key(va) != _type_key(vb):  # type: ignore[arg-type]
                self.add(nd, "", CHANGED, _type_str(va), _type_str(vb), a_ref=a, b_ref=b)  # type: ignore[arg-type]
        elif t in (AttrType.TENSORS, AttrType.GRAPHS, AttrType.SPARSE_TENSORS, AttrType.TYPE_PROTOS):
            la, lb = list(va or ()), list(vb or ())  # type: ignore[arg-type]
            for i in range(max(len(la), len(lb))):
                lab = f"[{i}]"
                if i >= len(lb):
                    self.removed(nd, lab, la[i], None)
                elif i >= len(la):
                    self.added(nd, lab, lb[i], None)
                else:
                    sub = self.child(nd, lab, la[i], lb[i])
                    if t == AttrType.TENSORS:
                        self.tensor(sub, la[i], lb[i], named=True)
                    elif t == AttrType.GRAPHS:
                        self.graph_body(sub, la[i], lb[i])
                    elif t == AttrType.SPARSE_TENSORS:
                        self.sparse(sub, la[i], lb[i])
                    elif _type_key(la[i]) != _type_key(lb[i]):
                        self.add(sub, "", CHANGED, _type_str(la[i]), _type_str(lb[i]))
        else:  # unknown type code: compare what we can
            if va != vb:
                self.add(nd, "", CHANGED, repr(va), repr(vb), a_ref=a, b_ref=b)

    # -- functions

    def functions(self, root: DiffNode, a: Sequence[Function], b: Sequence[Function]) -> None:
        if not a and not b:
            return

        names_a, names_b = [f.name for f in a], [f.name for f in b]
        by_name = len(set(names_a)) == len(names_a) and len(set(names_b)) == len(names_b)

        def key(f: Function) -> str:
            if by_name:  # names alone identify functions: functions["f"]
                return f.name
            k = f.name if not f.domain else f"{f.domain}:{f.name}"
            return k + (f":{f.overload}" if f.overload else "")

        grp = self.child(root, "functions", a, b)
        self.keyed(grp, a, b, key, self.function, lambda f: f"{len(f.nodes)} nodes")

    def function(self, nd: DiffNode, a: Function, b: Function) -> None:
        self.check_cancel()
        self.field(nd, "name", a.name, b.name)
        self.field(nd, "domain", a.domain, b.domain)
        self.field(nd, "overload", a.overload, b.overload)
        self.field(nd, "doc", a.doc, b.doc)
        self.field(nd, "inputs", list(a.inputs), list(b.inputs))
        self.field(nd, "outputs", list(a.outputs), list(b.outputs))
        self.field(nd, "attribute_names", list(a.attribute_names), list(b.attribute_names))
        self.attributes(nd, "attribute_defaults", a.attribute_defaults, b.attribute_defaults)
        self.opsets(nd, "opsets", a.opsets, b.opsets)
        self.nodes(nd, a.nodes, b.nodes, a.nodes, b.nodes)

    # -- tensors

    def sparse(self, nd: DiffNode, a: SparseTensor, b: SparseTensor) -> None:
        self.field(nd, "dims", list(a.dims), list(b.dims))
        self.tensor(self.child(nd, "values", a.values, b.values), a.values, b.values, named=False)
        self.tensor(self.child(nd, "indices", a.indices, b.indices), a.indices, b.indices, named=True)

    def tensor(self, nd: DiffNode, a: Tensor, b: Tensor, named: bool = False) -> None:
        self.check_cancel()
        if named:
            self.field(nd, "name", a.name, b.name)
        self.field(nd, "doc", a.doc, b.doc)
        if a.dtype != b.dtype:
            self.add(nd, ".dtype", CHANGED, name_of(a.dtype), name_of(b.dtype), a_ref=a, b_ref=b)
            return
        if tuple(a.dims) != tuple(b.dims):
            self.add(nd, ".dims", CHANGED, list(a.dims), list(b.dims), a_ref=a, b_ref=b)
            return
        if a.dtype == STRING:
            self.strings(nd, a, b)
            return
        why_a, why_b = bytes_problem(a, self.problems[0]), bytes_problem(b, self.problems[1])
        if why_a is not None or why_b is not None:
            nd.not_compared = NotCompared(nd.where, why_a, why_b, a, b)
            self.not_compared.append(nd.not_compared)
            return
        nd.pending = True
        self.jobs.append(DataJob(nd, a, b, len(self.differences)))

    def strings(self, nd: DiffNode, a: Tensor, b: Tensor) -> None:
        sa, sb = a.strings or (), b.strings or ()
        if sa == sb:
            return
        diffs = [i for i, (x, y) in enumerate(zip(sa, sb)) if x != y]
        first = diffs[0] if diffs else min(len(sa), len(sb))
        index = unravel(first, a.dims) if a.dims and first < a.count else [first]
        xa = _text(sa[first]) if first < len(sa) else None
        xb = _text(sb[first]) if first < len(sb) else None
        detail = {"differing": len(diffs) + abs(len(sa) - len(sb)), "first_index": [int(i) for i in index]}
        self.add(nd, ".data", CHANGED, xa, xb, detail, a, b)


def set_statuses(node: DiffNode) -> str:
    """Set each node's status from its own differences and its children; return it."""
    if node.status in (ADDED, REMOVED):
        return node.status
    changed = bool(node.differences)
    for c in node.children:
        if set_statuses(c) != EQUAL:
            changed = True
    node.status = CHANGED if changed else EQUAL
    return node.status


def match_models(ma: Model, mb: Model, *, cancel: threading.Event | None = None,
                 problems: tuple[Sequence[Problem], Sequence[Problem]] = ((), ()),
                 findings: tuple[Sequence[Finding], Sequence[Finding]] = ((), ()),
                 whole_tree: bool = True) -> Structure:
    """Match two models and compare everything but tensor values (those are left in ``jobs``).

    ``problems`` and ``findings``: each file's (diagnose mode), which say why a tensor's bytes are unusable.
    ``whole_tree=False``: nodes identical in both are left out of the tree (the differences are the same).
    """
    m = _Matcher(cancel, (ProblemIndex(problems[0], findings[0]), ProblemIndex(problems[1], findings[1])), whole_tree)
    root = DiffNode("", "", EQUAL, ma, mb)
    m.model(root, ma, mb)
    set_statuses(root)
    return Structure(root, m.differences, list(m.equivalences), m.jobs, m.not_compared)
