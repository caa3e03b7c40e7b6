"""The detail pane's ONNX Runtime lines for an ``.ort`` file, and the bytes the hex pane shows for a record.

Pure (no Textual). :class:`OrtDetail` adds, below the lines every format gets: for the model, the
format version and which ONNX Runtime releases read it; for a node, its execution provider,
since-version, node index and type, formal input counts, implicit inputs and the kernel type-string
entry of its op id; for an initializer, its payload (offset, length, offset mod 64 / 4096, whether it
is aligned to its element size so ONNX Runtime can use it in place); for a graph, its saved runtime
optimizations. It also describes the ``ort`` entries of :mod:`.ort_entries`. Everything from the file
(op ids, providers, names) goes through :func:`.safe.safe_text`.

:func:`ort_span` gives the bytes of a record's flatbuffer table (a node, the model, a string tensor,
a kernel entry) or of the version string, so selecting them moves the hex pane there.
"""

from __future__ import annotations

import re
from typing import Any

from rich.text import Text

from ...format.dtypes import DTYPES
from ...format.ort.facts import FORMAT_VERSIONS, FormatVersion
from ...format.schema import Graph, walk_graphs
from ..widgets.entries import Entry
from .entries import KERNELS, arg_text
from ..widgets.safe import human_size, safe_text

Line = tuple[Text, Any]
NODE_TYPES = {0: "Primitive", 1: "Fused"}
MAX_LINKS = 16
"""Nodes listed per kernel entry or optimization record."""
EMPTY_NODE_INDEX = 0xFFFFFFFF
"""A runtime optimization's node index for an optional slot with no node (ORT's ``NodesToOptimizeIndices``)."""


def _kv(key: str, value: Text | str, link: Any = None, width: int = 10) -> Line:
    t = Text(key.ljust(width), style="bold")
    t.append_text(value if isinstance(value, Text) else Text(value))
    return t, link


def _head(title: str = "ONNX Runtime") -> Line:
    return Text(title, style="bold underline"), None


def _release(r) -> str:
    return f"{r[0]}.{r[1]}"


def _ranges(rs) -> str:
    return ", ".join(_release(lo) + (" and later" if hi is None else "" if hi == lo else "-" + _release(hi)) for lo, hi in rs)


def ort_span(doc, entry: Entry) -> tuple[int, int] | None:
    """(start, length) of the bytes to show for ``entry`` in an ``.ort`` file's hex pane, None if no such bytes."""
    facts = doc.extra if doc is not None and doc.source == "ort" else None
    if facts is None or not hasattr(facts, "table_span"):
        return None
    if entry.kind == "ort":
        what = entry.obj[0]
        if what == "version" and facts.version_offset is not None:
            return facts.version_offset, 5 + len(facts.version.encode("utf-8", "replace"))
        if what in ("summary", "bytes"):
            return (0, min(8, doc.size)) if doc.size else None
    return facts.table_span(entry.where) if entry.where else None


class OrtDetail:
    """ORT lines for the entries of one ``.ort`` document (indexes made on first use)."""

    def __init__(self, doc) -> None:
        self.doc = doc
        self.facts = doc.extra
        self._nodes_of_kernel: dict[str, list] | None = None
        self._node_at_index: dict[tuple[str, int], str] | None = None
        self._node_of_where: dict[str, Any] | None = None
        self._kinds: dict[str, int] | None = None

    # -- entry point
    def lines(self, e: Entry) -> list[Line]:
        f = self.facts
        if f is None or not hasattr(f, "kernel_type_strs"):
            return []
        if e.kind == "ort":
            what, rec = e.obj
            if what == "kernel":
                return self.kernel(rec)
            if what == "optimization":
                return self.optimization(rec)
            return {"summary": self.summary, "version": self.version, "bytes": self.byte_map}[what]()
        if e.kind == "node":
            return self.node(e.obj)
        if e.kind == "tensor":
            return self.tensor(e.obj)
        if e.kind == "model":
            return [_head()] + self.version_lines()
        if e.kind == "graph":
            return self.graph(e.obj)
        return []

    # -- the file
    def version_lines(self) -> list[Line]:
        f = self.facts
        v = safe_text(f.version or "(missing)", style="cyan", limit=20)
        link = ("offset", f.version_offset) if f.version_offset is not None else None
        lines = [_kv("format", v, link)]
        info: FormatVersion | None = FORMAT_VERSIONS.get(f.version)
        if info is None:
            lines.append(_kv("readers", Text("no ONNX Runtime release known here reads this version", style="red")))
            return lines
        first, last = info.written
        lines.append(_kv("adds", info.change))
        lines.append(_kv("written", f"by ONNX Runtime {_release(first)}" + (" and later" if last is None else
                                                                           "" if last == first else "-" + _release(last))))
        lines.append(_kv("read by", f"full builds {_ranges(info.full)}{info.note}"))
        minimal = Text(f"minimal builds {_ranges(info.minimal)}")
        if info.minimal != info.full:
            minimal.append("  (refused by later minimal builds)", style="yellow")
        lines.append(_kv("", minimal))
        return lines

    def summary(self) -> list[Line]:
        f = self.facts
        lines: list[Line] = [(Text("ONNX Runtime flatbuffer (.ort)", style="bold"), None)]
        lines.extend(self.version_lines())
        lines.append(_kv("kernels", f"{len(f.kernel_type_strs):,} op ids in the kernel type-string table"))
        lines.append(_kv("optimized", f"{len(f.runtime_optimizations):,} saved runtime optimization records"))
        lines.append(_kv("payloads", f"{len(f.payloads):,} initializer payloads, "
                                     f"{human_size(sum(p.length for p in f.payloads))}"))
        lines.extend(self.byte_map()[1:])
        return lines

    def version(self) -> list[Line]:
        return [(Text("ORT format version", style="bold"), None)] + self.version_lines()

    def byte_map(self) -> list[Line]:
        f = self.facts
        if self._kinds is None:  # one pass over the spans (~10^6 in a large file), then kept
            kinds: dict[str, int] = {}
            for s in f.spans:
                kinds[s[2]] = kinds.get(s[2], 0) + 1
            self._kinds = kinds
        kinds = self._kinds
        lines: list[Line] = [(Text("byte map", style="bold"), None)]
        lines.append(_kv("objects", " · ".join(f"{k} {n:,}" for k, n in sorted(kinds.items())) or "none"))
        lines.append(_kv("tables", f"{f.tables_visited:,} visited"))
        unowned = sum(n for _s, n in f.unowned)
        lines.append(_kv("unowned", f"{unowned:,} bytes in {len(f.unowned):,} runs (l: the layout lists them)"))
        return lines

    # -- kernels and optimizations
    def kernel(self, k) -> list[Line]:
        head = safe_text(k.op_id or "(no op id)", style="bold", limit=200)
        lines: list[Line] = [(head, None)]
        domain, _, rest = (k.op_id or "").partition(":")
        op, _, since = rest.partition(":")
        lines.append(_kv("op", safe_text(op or "?") + Text("  ") + safe_text(domain or "ai.onnx", style="dim")
                         + Text(f"  since {since or '?'}", style="dim")))
        for name, args in k.args:
            lines.append(_kv("type str", safe_text(name, style="cyan", limit=40) + Text(f"  {arg_text(args) or '(no args)'}")))
        users = self.nodes_of_kernel().get(k.op_id, [])
        lines.append(_kv("nodes", f"{len(users):,} use this kernel entry"))
        for n in users[:MAX_LINKS]:
            t = Text("  ")
            t.append_text(safe_text(n.op, style="green", limit=30))
            t.append(" ")
            t.append_text(safe_text(n.name or "(unnamed)", limit=60))
            lines.append((t, n.where))
        return lines

    def optimization(self, r) -> list[Line]:
        lines: list[Line] = [(safe_text(r.optimizer or "(no optimizer)", style="bold"), None)]
        lines.append(_kv("action", safe_text(r.action_id or "-", limit=200)))
        lines.append(_kv("graph", safe_text(r.graph, style="dim", limit=200), r.graph))
        if r.produced_op_ids:
            lines.append(_kv("produces", Text(", ").join(safe_text(x, limit=60) for x in r.produced_op_ids[:32])))
        lines.append(_kv("nodes", f"{len(r.node_indices):,} node indices"))
        at = self.node_at_index()
        for i in r.node_indices[:MAX_LINKS]:
            if i == EMPTY_NODE_INDEX:
                lines.append((Text("  (empty: an optional slot with no node)", style="dim"), None))
                continue
            where = at.get((r.graph, i))
            node = self.node_record(where) if where else None
            t = Text(f"  node {i} ")
            if node is None:
                t.append("(no such node)", style="red")
            else:
                t.append_text(safe_text(node.op, style="green", limit=30))
                t.append(" ")
                t.append_text(safe_text(node.name or "(unnamed)", limit=60))
            lines.append((t, where if node is not None else None))
        return lines

    def node_record(self, where: str):
        """The node at ``where`` (every graph's nodes, indexed on first use)."""
        if self._node_of_where is None:
            self._node_of_where = {n.where: n for nodes in self.nodes_of_kernel().values() for n in nodes}
        return self._node_of_where.get(where)

    def nodes_of_kernel(self) -> dict[str, list]:
        """op id (``domain:op:since``) -> the nodes using it, every graph."""
        if self._nodes_of_kernel is None:
            out: dict[str, list] = {}
            m = self.doc.model
            for g in walk_graphs(m.graph) if m is not None else ():
                for n in g.nodes:
                    nf = self.facts.node(n.where)
                    if nf is not None:
                        out.setdefault(f"{n.domain}:{n.op}:{nf.since_version}", []).append(n)
            self._nodes_of_kernel = out
        return self._nodes_of_kernel

    def node_at_index(self) -> dict[tuple[str, int], str]:
        """(graph where, ORT node index) -> the node's where."""
        if self._node_at_index is None:
            out = {}
            for where, nf in self.facts.nodes.items():
                m = re.fullmatch(r"(.*)\.nodes\[\d+\]", where)
                if m:
                    out[(m.group(1), nf.index)] = where
            self._node_at_index = out
        return self._node_at_index

    # -- records every format has
    def node(self, n) -> list[Line]:
        nf = self.facts.node(n.where)
        if nf is None:
            return []
        lines = [_head()]
        lines.append(_kv("provider", safe_text(nf.execution_provider or "(none assigned)", style="" if nf.execution_provider else "dim")))
        lines.append(_kv("since", Text(f"{nf.since_version}", style="cyan") + Text("  (the operator version its kernel implements)", style="dim")))
        lines.append(_kv("index", f"{nf.index:,} · {NODE_TYPES.get(nf.node_type, f'type {nf.node_type}')}"))
        if nf.input_arg_counts:
            lines.append(_kv("arg counts", Text("[" + ", ".join(map(str, nf.input_arg_counts)) + "]")
                             + Text("  (operands per formal input)", style="dim"), width=11))
        if nf.implicit_inputs:
            t = Text(", ").join(safe_text(x, limit=40) for x in nf.implicit_inputs[:32])
            lines.append(_kv("implicit", t))
        op_id = f"{n.domain}:{n.op}:{nf.since_version}"
        ks = self.facts.kernel_type_strs
        i = next((j for j, k in enumerate(ks) if k.op_id == op_id), None)
        if i is not None:
            t = safe_text(op_id, limit=80)
            for name, args in ks[i].args[:6]:
                t.append("  ")
                t.append_text(safe_text(name, style="cyan", limit=20))
                t.append(f": {arg_text(args)}", style="dim")
            lines.append(_kv("kernel", t, f"{KERNELS}[{i}]"))
        elif ks:
            lines.append(_kv("kernel", safe_text(op_id, limit=80) + Text("  not in the kernel type-string table", style="yellow")))
        span = self.facts.table_span(n.where)
        if span is not None:
            lines.append(_kv("table", f"0x{span[0]:x} +{span[1]:,} bytes", ("offset", span[0])))
        return lines

    def tensor(self, t) -> list[Line]:
        p = self.facts.payload(t.where)
        if p is None:
            span = self.facts.table_span(t.where)
            return [] if span is None else [_head(), _kv("table", f"0x{span[0]:x} +{span[1]:,} bytes", ("offset", span[0]))]
        info = DTYPES.get(p.dtype)
        size = min(8, max(1, (info.bits if info else 8) // 8))
        lines = [_head()]
        lines.append(_kv("payload", f"0x{p.offset:x} ({p.offset:,}) +{p.length:,} bytes", ("offset", p.offset)))
        lines.append(_kv("mod", Text(f"64: {p.mod64}", style="green" if p.mod64 == 0 else "yellow")
                         + Text(" · ") + Text(f"4096: {p.mod4096:,}", style="green" if p.mod4096 == 0 else "dim")))
        if p.in_place:
            lines.append(_kv("in place", Text(f"yes: aligned to its element size ({size} bytes)", style="green")))
        else:
            lines.append(_kv("in place", Text(f"no: offset % {size} = {p.offset % size}; a strict-alignment reader copies it "
                                              "(numpy reads it unaligned here, no copy)", style="yellow")))
        return lines

    def graph(self, g: Graph) -> list[Line]:
        recs = [r for r in self.facts.runtime_optimizations if r.graph == g.where]
        if not recs:
            return []
        lines = [_head("saved runtime optimizations")]
        for r in recs[:MAX_LINKS]:
            t = safe_text(r.optimizer, style="bold", limit=40)
            t.append(" ")
            t.append_text(safe_text(r.action_id, limit=60))
            t.append(f"  {len(r.node_indices):,} nodes", style="dim")
            lines.append((t, None))
        return lines
