"""Compare two opened models: what was added, removed or changed (issue #5).

``diff(doc_a, doc_b)`` walks both :class:`~onemodel_viewer.format.schema.Model`
records side by side. It never cares which file format a document came from: a
OneModel file and an imported ONNX file give the same records, and tensor bytes
are compared from their zero-copy views, whatever backs them.

What counts as the same (the spec's equivalences, listed in
``DiffResult.equivalences`` when they applied):

* ONNX typed payload fields and ``raw_data``: both are raw bytes by the time
  they reach a :class:`Tensor`;
* a different stored node order: nodes are matched by name (or by the values
  they produce), never by their index, when names allow it;
* opset and node domain ``""`` and ``"ai.onnx"``.

Floats (attributes and tensor data) are compared by bit pattern, so NaN
payloads and the sign of zero count; tensor data is compared in chunks as
``uint64`` without allocating in the equal case, and only differing chunks are
decoded to find the first differing element and the largest differences.

Every entry has a ``where`` naming it by names from the file where possible
(``graph.nodes["conv1"].attributes["strides"]``,
``graph.initializers["w"].data``, ``model.opsets[""]``), positionally
(``graph.nodes[3]``) when a name is empty or not unique. Names go in as-is:
render them through ``textsafe.visible`` before showing them in a terminal.

This module never imports a UI toolkit. Cancellation is a plain
``threading.Event``.
"""

from __future__ import annotations

import math
import mmap
import os
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..format.document import Document
from ..format.dtypes import DTYPES, STRING, name_of
from ..format.schema import (
    Attribute,
    AttrType,
    Function,
    Graph,
    Model,
    Node,
    OperatorSet,
    SparseTensor,
    Tensor,
    Type,
    ValueInfo,
    all_tensors,
)

__all__ = ["Difference", "DiffNode", "DiffResult", "DiffCancelled", "diff", "diff_models", "CHUNK", "format_f32"]

CHUNK = 6 << 20
"""Bytes compared per step (6 MiB: a multiple of 8 for ``uint64`` views and of 3 for 6-bit elements)."""

SUBCHUNK = 384 << 10
"""Bytes decoded at once inside a differing chunk (bounds the memory of the element pass)."""

MAX_LIST = 64
"""Longest attribute list reported in full; longer ones are summarised."""

DEFAULT_DOMAIN_ALIASES = ("", "ai.onnx")

ADDED, REMOVED, CHANGED, EQUAL = "added", "removed", "changed", "equal"


class DiffCancelled(Exception):
    """The ``cancel`` event was set while the diff was running."""


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
    """Extra JSON-safe facts (tensor data: differing count, first index, max abs/rel difference)."""
    a_ref: Any = field(default=None, compare=False, repr=False)
    """The record in A this is about (Tensor, Node, ...), for viewers; not part of the JSON."""
    b_ref: Any = field(default=None, compare=False, repr=False)

    def as_json(self) -> dict:
        out = {"where": self.where, "change": self.change, "a": self.a, "b": self.b}
        if self.detail is not None:
            out["detail"] = self.detail
        return out


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

    def walk(self):
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

    def as_json(self, a: str, b: str) -> dict:
        return {
            "a": a,
            "b": b,
            "equal": self.equal,
            "differences": [d.as_json() for d in self.differences],
            "equivalences": list(self.equivalences),
        }


# ---------------------------------------------------------------------------- formatting


def format_f32(bits: int) -> str:
    """A float32 bit pattern as text: shortest repr, ``-0.0``, ``inf``, ``nan(0x7fc00001)``."""
    v = np.uint32(bits & 0xFFFFFFFF).view(np.float32)
    if np.isnan(v):
        return f"nan(0x{bits & 0xFFFFFFFF:08x})"
    return str(v)


def _json_num(x: float) -> float | str:
    x = float(x)
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _text(b: bytes) -> str:
    return b.decode("utf-8", errors="backslashreplace")


def _fmt_element(arr: np.ndarray, dtype_code: int) -> str:
    """One decoded element as text, keeping NaN payloads and signed zeros visible."""
    v = arr.reshape(-1)[0]
    info = DTYPES[dtype_code]
    if info.is_float and not np.iscomplexobj(arr):
        f = float(v)
        if math.isnan(f):
            raw = arr.reshape(-1)[:1].view(np.uint8) if info.bits >= 8 else None
            payload = "" if raw is None else "(0x" + bytes(raw[::-1]).hex() + ")"
            return "nan" + payload
        return str(v)
    if np.iscomplexobj(arr):
        return str(complex(v))
    if info.name == "bool":
        return str(bool(v))
    return str(int(v))


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


# ---------------------------------------------------------------------------- tensor data


def _elem_view(raw: np.ndarray, bits: int) -> np.ndarray:
    """An integer view with one entry per element (bitwise identity), for >= 8-bit types."""
    if bits == 8:
        return raw
    if bits in (16, 32, 64):
        return raw.view({16: np.uint16, 32: np.uint32, 64: np.uint64}[bits])
    if bits == 128:
        return raw.view(np.uint64).reshape(-1, 2)
    raise ValueError(bits)


def _codes(raw: np.ndarray, bits: int, count: int) -> np.ndarray:
    """Sub-byte elements as one uint8 code each (ONNX raw_data packing, low bits first)."""
    if bits == 4:
        out = np.empty(raw.size * 2, dtype=np.uint8)
        out[0::2] = raw & 0x0F
        out[1::2] = raw >> 4
        return out[:count]
    if bits == 2:
        out = np.empty(raw.size * 4, dtype=np.uint8)
        for i in range(4):
            out[i::4] = (raw >> (2 * i)) & 0x03
        return out[:count]
    unpacked = np.unpackbits(raw, bitorder="little")[: count * bits].reshape(count, bits)
    return np.packbits(unpacked, axis=1, bitorder="little").reshape(count)


class _DataStats:
    """Running facts about the differing elements of one tensor."""

    __slots__ = ("count", "first", "a_first", "b_first", "max_abs", "max_rel", "nonfinite")

    def __init__(self) -> None:
        self.count = 0
        self.first: int | None = None
        self.a_first: str = ""
        self.b_first: str = ""
        self.max_abs = 0.0
        self.max_rel = 0.0
        self.nonfinite = 0


def _chunk_elements(
    ra: np.ndarray, rb: np.ndarray, elem0: int, info, count_total: int, st: _DataStats
) -> None:
    """Element-level pass over one differing slice of bytes; ``elem0`` is its first element index."""
    bits = info.bits
    if bits >= 8:
        ea, eb = _elem_view(ra, bits), _elem_view(rb, bits)
        if bits == 128:
            mask = np.any(ea != eb, axis=1)
        else:
            mask = ea != eb
        va = ra.view(info.numpy)
        vb = rb.view(info.numpy)
    else:
        n = min(ra.size * 8 // bits, count_total - elem0)
        ca, cb = _codes(ra, bits, n), _codes(rb, bits, n)
        mask = ca != cb
        va = ca.view(info.numpy)
        vb = cb.view(info.numpy)
    cnt = int(np.count_nonzero(mask))
    if cnt == 0:
        return
    st.count += cnt
    if st.first is None:
        i = int(mask.argmax())
        st.first = elem0 + i
        st.a_first = _fmt_element(va[i : i + 1], info.code)
        st.b_first = _fmt_element(vb[i : i + 1], info.code)
    if info.is_float:
        _float_stats(va, vb, mask, cnt, info, st)


def _float_stats(va: np.ndarray, vb: np.ndarray, mask: np.ndarray, cnt: int, info, st: _DataStats) -> None:
    """Max abs/rel difference and non-finite count over the differing elements of one slice.

    When most elements differ it works on the whole slice (no gathers); equal
    elements then contribute a difference of 0. Types of 16 bits or less are
    widened to float32 (exact), wider ones to float64.
    """
    dense = cnt * 4 >= va.size
    if not dense:
        va, vb = va[mask], vb[mask]
    with np.errstate(all="ignore"):
        if np.iscomplexobj(va):
            xa, xb = va.astype(np.complex128), vb.astype(np.complex128)
            d = np.abs(xa - xb)
            mag = np.maximum(np.abs(xa), np.abs(xb))
        else:
            work = np.float32 if info.bits <= 16 else np.float64
            xa, xb = va.astype(work), vb.astype(work)
            d = np.abs(xa - xb)
            mag = np.maximum(np.abs(xa, out=xa), np.abs(xb, out=xb), out=xa)
        finite = np.isfinite(d)
        if not finite.all():
            bad = ~finite
            # NaN vs NaN (other payload) or inf vs inf of equal bits give NaN too: only count differing ones
            st.nonfinite += int(np.count_nonzero(bad & mask) if dense else np.count_nonzero(bad))
            np.copyto(d, 0, where=bad)
        if d.size:
            m = float(d.max())
            if m > st.max_abs:
                st.max_abs = m
            rel = np.divide(d, mag, out=np.zeros_like(d), where=mag > 0)
            r = float(rel.max())
            if r > st.max_rel:
                st.max_rel = r


_PAGE = mmap.PAGESIZE


def _release(t: Tensor, start: int, end: int) -> None:
    """Drop the mapped pages of bytes ``[start, end)`` of ``t`` from this process once compared.

    The page cache keeps them (a later read refaults at no IO cost), but the
    process's resident set stays bounded: diffing two 4 GiB files would
    otherwise leave 8 GiB of mapped pages counted in its RSS.
    """
    if t.storage is None or t.file_offset is None:
        return
    buf = t.storage.buffer()
    if not isinstance(buf, mmap.mmap) or not hasattr(buf, "madvise"):
        return
    lo = (t.file_offset + start) // _PAGE * _PAGE
    hi = min(t.file_offset + end, len(buf))
    if hi > lo:
        try:
            buf.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
        except (OSError, ValueError, AttributeError):  # not supported here: only the RSS figure suffers
            pass


# ---------------------------------------------------------------------------- the differ


class _Differ:
    def __init__(self, cancel: threading.Event | None, progress: Callable[[int, int], None] | None, total: int):
        self.cancel = cancel
        self.progress = progress
        self.total = total
        self.done = 0
        self.differences: list[Difference] = []
        self.equivalences: dict[str, None] = {}
        self.compared_tensors = 0
        self._eq = np.empty(CHUNK // 8, dtype=np.bool_)
        self.paths: tuple[str | None, str | None] = (None, None)

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
        node = DiffNode(label, where, EQUAL, a, b)
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

        def named(n: Node) -> bool:  # a name that identifies the node in both files
            return bool(n.name) and ca[n.name] <= 1 and cb[n.name] <= 1

        pairs: dict[int, Node] = {}  # id(a node) -> b node
        used_b: set[int] = set()
        by_name_b = {n.name: n for n in ord_b if named(n)}
        for n in ord_a:
            if named(n) and n.name in by_name_b:
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
        rest_a = [n for n in ord_a if id(n) not in pairs and not named(n)]
        rest_b = [n for n in ord_b if id(n) not in used_b and not named(n)]
        for n, m in zip(rest_a, rest_b):
            pairs[id(n)] = m
            used_b.add(id(m))

        def label_of(n: Node, side_count: Counter, other_count: Counter, index: int) -> str:
            if n.name and side_count[n.name] == 1 and other_count[n.name] <= 1:
                return f'["{n.name}"]'
            return f"[{index}]"

        for n in ord_a:
            lab = label_of(n, ca, cb, idx_a[id(n)])
            m = pairs.get(id(n))
            if m is None:
                self.removed(grp, lab, n, _node_summary(n))
            else:
                self.node(self.child(grp, lab, n, m), n, m)
        for m in ord_b:
            if id(m) not in used_b:
                self.added(grp, label_of(m, cb, ca, idx_b[id(m)]), m, _node_summary(m))
        # Stored order differing for matched nodes is an equivalence (dependency order is what counts).
        if pairs:
            seq = [idx_b[id(pairs[id(n)])] for n in stored_a if id(n) in pairs]
            if any(x > y for x, y in zip(seq, seq[1:])):
                self.equivalence(f"{parent.where or 'graph'}: nodes are stored in a different order "
                                 "(matched by name; order is not significant)")

    def node(self, nd: DiffNode, a: Node, b: Node) -> None:
        self.check_cancel()
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
        self.compared_tensors += 1
        if a.dtype == STRING:
            self.strings(nd, a, b)
        else:
            self.data(nd, a, b)

    def strings(self, nd: DiffNode, a: Tensor, b: Tensor) -> None:
        sa, sb = a.strings or (), b.strings or ()
        if sa == sb:
            return
        diffs = [i for i, (x, y) in enumerate(zip(sa, sb)) if x != y]
        first = diffs[0] if diffs else min(len(sa), len(sb))
        index = list(np.unravel_index(first, a.dims)) if a.dims and first < a.count else [first]
        xa = _text(sa[first]) if first < len(sa) else None
        xb = _text(sb[first]) if first < len(sb) else None
        detail = {"differing": len(diffs) + abs(len(sa) - len(sb)), "first_index": [int(i) for i in index]}
        self.add(nd, ".data", CHANGED, xa, xb, detail, a, b)

    def data(self, nd: DiffNode, a: Tensor, b: Tensor) -> None:
        info = DTYPES.get(a.dtype)
        ra, rb = a.raw(), b.raw()
        n = min(ra.size, rb.size)
        if ra.size != rb.size:  # impossible for valid documents (dims and dtype agree)
            self.add(nd, ".data", CHANGED, ra.size, rb.size, {"length": True}, a, b)
            return
        st: _DataStats | None = None
        eq = self._eq
        for start in range(0, n, CHUNK):
            self.check_cancel()
            for t in (a, b):
                if t.storage is not None:
                    t.storage.check()
            end = min(start + CHUNK, n)
            ca, cb = ra[start:end], rb[start:end]
            size = end - start
            if size % 8 == 0:
                out = eq[: size // 8]
                np.equal(ca.view(np.uint64), cb.view(np.uint64), out=out)
                same = bool(out.all())
            else:
                same = bool(np.array_equal(ca, cb))
            if not same:
                if st is None:
                    st = _DataStats()
                self.chunk_detail(ca, cb, start, info, a.count, st)
            _release(a, start, end)
            _release(b, start, end)
            self.done += size
            if self.progress is not None:
                self.progress(self.done, self.total)
        if st is None or st.count == 0:
            return
        first = st.first or 0
        index = [int(i) for i in np.unravel_index(first, a.dims)] if a.dims else []
        byte = first * info.bits // 8
        detail: dict[str, Any] = {"differing": st.count, "count": a.count, "first_index": index, "first_byte": byte}
        if info.is_float:
            detail["max_abs"] = _json_num(st.max_abs)
            detail["max_rel"] = _json_num(st.max_rel)
            if st.nonfinite:
                detail["nonfinite"] = st.nonfinite
        for side, t, own in (("a", a, self.paths[0]), ("b", b, self.paths[1])):
            # a file offset only where the bytes are a file's (not ONNX raw_data held in memory)
            path = getattr(t.storage, "path", None)
            if t.file_offset is not None and path is not None:
                detail[side + "_offset"] = t.file_offset + byte
                if own is None or os.path.abspath(path) != os.path.abspath(own):
                    detail[side + "_file"] = path
        self.add(nd, ".data", CHANGED, st.a_first, st.b_first, detail, a, b)

    def chunk_detail(self, ca: np.ndarray, cb: np.ndarray, start: int, info, count: int, st: _DataStats) -> None:
        """Element-level facts for one differing chunk, in bounded slices."""
        if info is None:
            st.count += int(np.count_nonzero(ca != cb))
            return
        for s in range(0, ca.size, SUBCHUNK):
            e = min(s + SUBCHUNK, ca.size)
            sa, sb = ca[s:e], cb[s:e]
            if np.array_equal(sa, sb):
                continue
            elem0 = (start + s) * 8 // info.bits
            _chunk_elements(sa, sb, elem0, info, count, st)


# ---------------------------------------------------------------------------- entry points


def _finish(node: DiffNode) -> str:
    """Set each node's status from its own differences and its children; return it."""
    if node.status in (ADDED, REMOVED):
        return node.status
    changed = bool(node.differences)
    for c in node.children:
        if _finish(c) != EQUAL:
            changed = True
    node.status = CHANGED if changed else EQUAL
    return node.status


def diff_models(
    ma: Model,
    mb: Model,
    *,
    cancel: threading.Event | None = None,
    progress: Callable[[int, int], None] | None = None,
    paths: tuple[str | None, str | None] = (None, None),
) -> DiffResult:
    """Compare two models (see the module docstring).

    ``paths`` (the files the models came from) only decide whether a data
    difference's file offset needs the name of the file it is in (``a_file``:
    ONNX external data).
    """
    total = sum(t.length for t in all_tensors(ma) if not t.is_string)
    d = _Differ(cancel, progress, total)
    d.paths = paths
    root = DiffNode("", "", EQUAL, ma, mb)
    d.model(root, ma, mb)
    _finish(root)
    if progress is not None:
        progress(total, total)
    return DiffResult(not d.differences, d.differences, list(d.equivalences), root, d.done)


def diff(
    doc_a: Document,
    doc_b: Document,
    *,
    cancel: threading.Event | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> DiffResult:
    """Compare two opened documents (OneModel or ONNX, in any combination)."""
    if doc_a.model is None or doc_b.model is None:
        raise ValueError("both documents need a model (open them in strict mode)")
    ma, mb, extra = doc_a.model, doc_b.model, []
    if "ort" in (doc_a.source, doc_b.source):  # what ONNX Runtime's converter changes without changing the model
        from .ort_equiv import normalize

        ma, mb, extra = normalize(doc_a, doc_b)
    result = diff_models(ma, mb, cancel=cancel, progress=progress, paths=(doc_a.path, doc_b.path))
    sources = {doc_a.source, doc_b.source}
    if "onnx" in sources and result.compared_bytes:
        extra.append("ONNX tensor payloads (typed fields or raw_data) are compared as raw bytes")
    if doc_a.external_files or doc_b.external_files:
        extra.append("ONNX external data is compared in place, as the bytes a data region would hold")
    return DiffResult(result.equal, result.differences, result.equivalences + extra, result.root,
                      result.compared_bytes)
