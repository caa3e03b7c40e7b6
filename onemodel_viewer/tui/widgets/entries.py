"""What the structure tree shows: one :class:`Entry` per tree item, children made on demand.

Pure (no Textual): the tree widget asks an entry for its children only when the
user expands it, so a model with 100,000 nodes opens as fast as a tiny one.
Big lists are split into groups of :data:`CHUNK` items. Every entry knows the
``where`` path of its record, which is how problems, search results and detail
links find their way back into the tree (:func:`path_to`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

from rich.text import Text

from ...analysis.facts import Facts
from ...format.document import HEADER_FIELDS, Document
from ...format.dtypes import AttrType
from ...format.schema import Attribute, Function, Graph, Model, Node, SparseTensor, Tensor
from .formatters import attribute_value_text, count_label, graph_label, node_label, tensor_label, value_label
from .safe import safe_text

_MODEL_KEYS = {"producer": "producer_name", "format version": "version", "ir_version": "ir_version",
               "model_version": "model_version", "domain": "domain", "doc": "doc"}
"""The manifest key of each field row of the model (a OneModel file's)."""
CHUNK = 1000
"""Lists longer than this are shown as groups of this many items."""


@dataclass(eq=False)
class Entry:
    """One tree item: a record (or a group of records) and how to list its children."""

    kind: str
    """``model``, ``graph``, ``node``, ``tensor``, ``sparse``, ``value``, ``function``, ``attribute``,
    ``problem``, ``finding``, ``meta``, ``group``, ``ort`` (:mod:`.ort_entries`)."""
    label: Text
    obj: Any = None
    where: str = ""
    """Manifest path of the record (groups: their list's path)."""
    graph: Graph | None = None
    """The graph this record lives in (nodes, values, tensors)."""
    function: Function | None = None
    """The function this record lives in (function nodes)."""
    index_range: tuple[int, int] | None = None
    """Groups of a chunked list: indices ``[lo, hi)`` they hold."""
    children: Callable[[], list["Entry"]] | None = field(default=None, repr=False)
    """Makes the children; None for a leaf."""
    key: str = ""
    """What a top-level group holds (``problems``, ``findings``, ``functions``): how the app finds it
    again; empty for the other entries."""

    @property
    def expandable(self) -> bool:
        return self.children is not None

    def covers(self, where: str) -> bool:
        """True when ``where`` is this entry's record or something inside it."""
        if not self.where:
            return False
        if not where.startswith(self.where):
            return False
        rest = where[len(self.where):]
        if rest and rest[0] not in ".[":
            return False
        if self.index_range is not None:
            m = re.match(r"\[(\d+)\]", rest)
            if not m:
                return False
            lo, hi = self.index_range
            return lo <= int(m.group(1)) < hi
        return True


# ----------------------------------------------------------------------------- children

def _chunked(where: str, items: Sequence, make: Callable[[int, Any], Entry], name: str) -> list[Entry]:
    if len(items) <= CHUNK:
        return [make(i, x) for i, x in enumerate(items)]
    groups = []
    for lo in range(0, len(items), CHUNK):
        hi = min(len(items), lo + CHUNK)
        groups.append(
            Entry(
                "group",
                Text(f"{name} {lo:,}–{hi - 1:,}"),
                where=where,
                index_range=(lo, hi),
                children=(lambda lo=lo, hi=hi: [make(i, items[i]) for i in range(lo, hi)]),
            )
        )
    return groups


class EntryFactory:
    """Builds the entries of one document."""

    def __init__(self, doc: Document, facts: Facts | None = None) -> None:
        self.doc = doc
        self.facts = facts or Facts()

    # -- top level
    def root(self) -> list[Entry]:
        doc = self.doc
        out: list[Entry] = []
        if doc.header is not None:
            out.append(self.header_entry())
        m = doc.model
        if m is not None:
            out.append(self.model_entry(m))
        if doc.source == "ort":  # what ONNX Runtime adds: format version, kernel table, optimizations
            from ..ort.entries import ort_entry

            ort = ort_entry(doc, Entry)
            if ort is not None:
                out.append(ort)
        if m is not None:
            out.append(self.graph_entry(m.graph, "graph"))
            if m.functions:
                out.append(
                    Entry("group", count_label("functions", len(m.functions)), where=m.where + ".functions",
                          key="functions", children=lambda: [self.function_entry(f) for f in m.functions])
                )
        out.append(self.problems_entry())
        out.append(self.findings_entry())
        return out

    def problems_entry(self) -> Entry:
        """The ``problems (N)`` group of the document's current problems."""
        doc = self.doc
        return Entry("group", count_label("problems", len(doc.problems)), where="", key="problems",
                     children=(lambda: [self.problem_entry(p) for p in doc.problems]) if doc.problems else None)

    def findings_entry(self) -> Entry:
        """The ``findings (N)`` group of the document's current findings."""
        doc = self.doc
        return Entry("group", count_label("findings", len(doc.findings)), where="", key="findings",
                     children=(lambda: [self.finding_entry(f) for f in doc.findings]) if doc.findings else None)

    def header_entry(self) -> Entry:
        h = self.doc.header
        lab = Text("header", style="bold")
        lab.append("  64 B", style="dim")

        def kids() -> list[Entry]:
            out = []
            for name, off, size in HEADER_FIELDS:
                val = getattr(h, name)
                t = Text(name + " ", style="dim")
                if isinstance(val, bytes):
                    t.append_text(safe_text(val.decode("latin-1"), limit=20))
                else:
                    t.append(f"{val:,}")
                out.append(Entry("header", t, obj=(name, off, size, val), where=f"header.{name}"))
            return out

        return Entry("group", lab, obj=h, where="header", children=kids)

    def model_entry(self, m: Model) -> Entry:
        lab = Text("model", style="bold")
        lab.append(f"  ir {m.ir_version}", style="dim")
        default = [o.version for o in m.opsets if o.domain in ("", "ai.onnx")]
        if default:
            lab.append(f" · opset {default[0]}", style="dim")
        if m.producer_name:
            lab.append(" · ", style="dim")
            lab.append_text(safe_text(m.producer_name, style="dim", limit=30))

        def kids() -> list[Entry]:
            out = []
            facts = [("producer", m.producer_name + (" " + m.producer_version if m.producer_version else ""))]
            if self.doc.source == "onemodel":  # the OneModel format's own version (an .ort has its own: its group)
                facts.append(("format version", str(m.format_version)))
            facts += [("ir_version", str(m.ir_version)), ("model_version", str(m.model_version))]
            if m.domain:
                facts.append(("domain", m.domain))
            if m.doc:
                facts.append(("doc", m.doc))
            onemodel = self.doc.source == "onemodel"
            for k, v in facts:
                t = Text(k + " ", style="dim")
                t.append_text(safe_text(v, limit=80))
                # a OneModel field's own path: its bytes in the hex pane, and what edit mode's E edits
                where = f"{m.where}.{_MODEL_KEYS[k]}" if onemodel and m.where == "manifest" else m.where
                out.append(Entry("meta", t, obj=(k, v), where=where))
            ops = list(m.opsets)
            out.append(Entry("group", count_label("opsets", len(ops)), where=m.where + ".opsets",
                             children=(lambda: [self._opset_entry(i, o, m.where + ".opsets") for i, o in enumerate(ops)])
                             if ops else None))
            md = list(m.metadata)
            out.append(Entry("group", count_label("metadata", len(md)), where=m.where + ".metadata",
                             children=(lambda: [self._meta_entry(i, kv, m.where + ".metadata") for i, kv in enumerate(md)])
                             if md else None))
            return out

        return Entry("model", lab, obj=m, where=m.where, children=kids)

    def _opset_entry(self, i: int, o, base: str) -> Entry:
        t = safe_text(o.domain or "ai.onnx", limit=60)
        t.append(f" {o.version}", style="cyan")
        return Entry("meta", t, obj=o, where=f"{base}[{i}]")

    def _meta_entry(self, i: int, kv: tuple[str, str], base: str) -> Entry:
        t = safe_text(kv[0], style="bold", limit=50)
        t.append(" = ", style="dim")
        t.append_text(safe_text(kv[1], limit=80))
        return Entry("meta", t, obj=kv, where=f"{base}[{i}]")

    # -- graphs
    def graph_entry(self, g: Graph, prefix: str = "graph", function: Function | None = None) -> Entry:
        def kids() -> list[Entry]:
            gw = g.where
            out = []

            def vals(name: str, items: tuple) -> Entry:
                return Entry("group", count_label(name, len(items)), where=f"{gw}.{name}",
                             children=(lambda: _chunked(f"{gw}.{name}", list(items),
                                                        lambda i, v: Entry("value", value_label(v), obj=v,
                                                                           where=v.where, graph=g), name))
                             if items else None)

            out.append(vals("inputs", g.inputs))
            out.append(vals("outputs", g.outputs))
            out.append(vals("value_info", g.value_info))
            inits = list(g.initializers)
            out.append(Entry("group", count_label("initializers", len(inits)), where=f"{gw}.initializers",
                             children=(lambda: _chunked(f"{gw}.initializers", inits,
                                                        lambda i, t: self.tensor_entry(t, g), "initializers"))
                             if inits else None))
            sp = list(g.sparse_initializers)
            out.append(Entry("group", count_label("sparse_initializers", len(sp)), where=f"{gw}.sparse_initializers",
                             children=(lambda: _chunked(f"{gw}.sparse_initializers", sp,
                                                        lambda i, s: self.sparse_entry(s, g), "sparse"))
                             if sp else None))
            nodes = g.nodes  # a reader NodeList is built when the group is opened, not now
            out.append(Entry("group", count_label("nodes", len(nodes)), where=f"{gw}.nodes",
                             children=(lambda: self._node_list(g, nodes, f"{gw}.nodes")) if nodes else None))
            return out

        return Entry("graph", graph_label(g, prefix), obj=g, where=g.where, graph=g, function=function, children=kids)

    def _node_list(self, g: Graph | None, nodes: Sequence[Node], where: str, function: Function | None = None) -> list[Entry]:
        f = self.facts.quick(g) if g is not None else None  # a big graph's, once known: labels never wait
        types = f.types if f is not None else None
        return _chunked(where, nodes, lambda i, n: self.node_entry(n, g, types, function), "nodes")

    def node_entry(self, n: Node, g: Graph | None, types: dict | None = None, function: Function | None = None) -> Entry:
        def kids() -> list[Entry]:
            out = []
            for a in n.attributes:
                out.extend(self.attribute_children(a, g, function))
            return out

        has_kids = any(a.graphs() or a.tensors() for a in n.attributes)
        return Entry("node", node_label(n, types), obj=n, where=n.where, graph=g, function=function,
                     children=kids if has_kids else None)

    def attribute_children(self, a: Attribute, g: Graph | None, function: Function | None = None) -> list[Entry]:
        out = []
        graphs = a.graphs()
        for k, sub in enumerate(graphs):
            pre = a.name if len(graphs) == 1 else f"{a.name}[{k}]"
            out.append(self.graph_entry(sub, pre + ": graph", function))
        if a.type in (AttrType.SPARSE_TENSOR, AttrType.SPARSE_TENSORS) and a.value is not None:
            sps = (a.value,) if a.type == AttrType.SPARSE_TENSOR else tuple(a.value)
            for s in sps:
                out.append(self.sparse_entry(s, g, prefix=a.name + ": "))
        else:
            for t in a.tensors():
                out.append(self.tensor_entry(t, g, prefix=a.name + ": "))
        return out

    def tensor_entry(self, t: Tensor, g: Graph | None, prefix: str = "") -> Entry:
        return Entry("tensor", tensor_label(t, prefix), obj=t, where=t.where, graph=g)

    def sparse_entry(self, s: SparseTensor, g: Graph | None, prefix: str = "") -> Entry:
        lab = Text(prefix, style="dim")
        lab.append_text(safe_text(s.name or "(unnamed)", style="bold", limit=60))
        lab.append(" sparse " + s.values.type_str().split("[")[0] + "[" + ",".join(map(str, s.dims)) + "]", style="cyan")
        lab.append(f" {s.values.count:,} values", style="dim")
        return Entry("sparse", lab, obj=s, where=s.where, graph=g,
                     children=lambda: [self.tensor_entry(s.values, g, "values: "),
                                       self.tensor_entry(s.indices, g, "indices: ")])

    # -- functions
    def function_entry(self, f: Function) -> Entry:
        lab = Text("function ", style="bold")
        if f.domain:
            lab.append_text(safe_text(f.domain, limit=40))
            lab.append(":")
        lab.append_text(safe_text(f.name, limit=60))
        lab.append(f"  {len(f.nodes):,} nodes", style="dim")

        def kids() -> list[Entry]:
            out = []
            if f.nodes:
                out.append(Entry("group", count_label("nodes", len(f.nodes)), where=f.where + ".nodes",
                                 children=lambda: self._node_list(None, list(f.nodes), f.where + ".nodes", f)))
            if f.attribute_defaults:
                out.append(Entry("group", count_label("attribute_defaults", len(f.attribute_defaults)),
                                 where=f.where + ".attribute_defaults",
                                 children=lambda: [self.attribute_entry(a, f) for a in f.attribute_defaults]))
            return out

        return Entry("function", lab, obj=f, where=f.where, function=f, children=kids)

    def attribute_entry(self, a: Attribute, f: Function | None) -> Entry:
        lab = safe_text(a.name, style="bold", limit=50)
        lab.append(" = ", style="dim")
        lab.append_text(attribute_value_text(a, limit=60))
        sub = self.attribute_children(a, None, f)
        return Entry("attribute", lab, obj=a, where=a.where, function=f, children=(lambda: sub) if sub else None)

    # -- problems
    def problem_entry(self, p) -> Entry:
        lab = Text(str(p.kind), style="bold red")
        lab.append(" ")
        lab.append_text(safe_text(p.where, style="yellow", limit=80))
        lab.append(" ")
        lab.append_text(safe_text(p.message, limit=200))
        return Entry("problem", lab, obj=p, where="")

    def finding_entry(self, f) -> Entry:
        lab = Text(f.code, style="bold yellow")
        lab.append(" ")
        lab.append_text(safe_text(f.where, style="dim", limit=80))
        lab.append(" ")
        lab.append_text(safe_text(f.message, limit=200))
        return Entry("finding", lab, obj=f, where="")


def path_to(roots: list[Entry], where: str, *, expand: Callable[[Entry], list[Entry]]) -> list[Entry]:
    """The chain of entries from a root to the deepest one covering ``where``.

    ``expand(entry)`` returns an entry's (cached) children. Returns [] when no root covers ``where``.
    """
    chain: list[Entry] = []
    level = roots
    while True:
        best = None
        for e in level:
            if e.covers(where) and (best is None or len(e.where) > len(best.where) or
                                    (len(e.where) == len(best.where) and e.index_range is not None)):
                best = e
        if best is None:
            return chain
        chain.append(best)
        if best.where == where and best.kind != "group":
            return chain
        if not best.expandable:
            return chain
        level = expand(best)


def row_keys(entries: Sequence[Entry]) -> list[tuple]:
    """What makes an entry the same row as one of another read of the file, for each of ``entries`` (one
    list of children): its record's path (kind, ``where``, group range, top-level key), a problem or finding
    by its kind, where and message, a row without a path by its text; the n-th of equal ones counted."""
    seen: dict[tuple, int] = {}
    out = []
    for e in entries:
        if e.kind in ("problem", "finding"):
            rec = e.obj
            key: tuple = (e.kind, str(getattr(rec, "kind", getattr(rec, "code", ""))), rec.where, rec.message)
        else:
            key = (e.kind, e.where, e.key, e.index_range, "" if e.where else e.label.plain)
        n = seen.get(key, 0)
        seen[key] = n + 1
        out.append((key, n))
    return out
