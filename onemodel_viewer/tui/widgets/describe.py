"""Detail text for each kind of record: lines of :class:`Text`, each with an optional link.

Pure (no Textual). A link is a ``where`` path (or an ``("offset", n)`` tuple) the app
follows when the line is chosen. Values from the file go through :func:`safe_text`.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from rich.text import Text

from ...analysis.facts import Facts
from ...format.document import Document
from ...format.dtypes import name_of
from ...format.schema import Function, Graph, Model, Node, SparseTensor, Tensor, ValueInfo
from ...format.spec_rules import rule_of
from ..hex.bytemap import FileMaps
from .entries import Entry
from .info_bar import file_name
from .formatters import attr_type_name, attribute_value_text, float_bits_text, join_texts, tensor_summary  # noqa: F401 (float_bits_text: re-exported)
from .safe import human_size, safe_text

Link = Any
"""A ``where`` string, ``("offset", n)``, or None."""
Line = tuple[Text, Link]

LIST_PREVIEW = 16
MAX_IO = 200
"""Operands listed per node side in the detail pane."""


def _t(s: str, style: str = "") -> Text:
    return Text(s, style=style)


def kv(key: str, value: Text | str, link: Link = None, width: int = 10) -> Line:
    t = Text(key.ljust(width), style="bold")
    t.append_text(value if isinstance(value, Text) else Text(value))
    return t, link


def opset_version(model: Model | None, function: Function | None, domain: str) -> int | None:
    """The operator set version for ``domain`` (``""`` and ``ai.onnx`` are the same)."""
    norm = "" if domain in ("", "ai.onnx") else domain
    sets = list(function.opsets) if function is not None and function.opsets else []
    if model is not None:
        sets += list(model.opsets)
    for o in sets:
        if ("" if o.domain in ("", "ai.onnx") else o.domain) == norm:
            return o.version
    return None


class Describer:
    """Makes detail lines for entries of one document."""

    def __init__(self, doc: Document, facts: Facts, sharing=None, maps: FileMaps | None = None) -> None:
        self.doc = doc
        self.facts = facts
        self.sharing = sharing
        """Callable(tensor) -> list of other tensors sharing bytes (from the byte map)."""
        self.maps = maps
        """The document's byte maps, for an external tensor's weights file (the viewer's, shared with the
        hex pane; made on first use when not given)."""
        self._parents: dict[int, Graph] | None = None
        self._ort = None
        """The ``.ort`` lines (:class:`.ort_detail.OrtDetail`), made for an ``.ort`` document on first use."""
        self.extra: Callable[[Entry], list[Line]] | None = None
        """More lines for an entry (the viewer's insight: used-by, parameters, inferred types)."""
        self.infer: Callable[[Graph | None, str], tuple[Any, str]] | None = None
        """(type, how) for a value without a declared type: shape inference, a Constant's tensor."""

    # -- graph nesting, for outer-scope names
    def parent_of(self, g: Graph) -> Graph | None:
        if self._parents is None:
            self._parents = {}
            m = self.doc.model
            if m is not None:
                roots = [m.graph]
                for f in m.functions:
                    for n in f.nodes:
                        for a in n.attributes:
                            roots.extend(a.graphs())
                stack = [(r, None) for r in roots]
                while stack:
                    cur, parent = stack.pop()
                    if parent is not None:
                        self._parents[id(cur)] = parent
                    for n in cur.nodes:
                        for a in n.attributes:
                            for sub in a.graphs():
                                stack.append((sub, cur))
        return self._parents.get(id(g))

    def lookup(self, g: Graph | None, name: str):
        """(graph, facts) of the nearest graph around ``g`` defining or declaring ``name``."""
        depth = 0
        while g is not None and depth < 1000:
            f = self.facts.quick(g)
            if f is None:  # a big graph's facts are still being computed (the pane is drawn again then)
                return None, None
            if name in f.producer or name in f.types or name in f.value_where:
                return g, f
            g = self.parent_of(g)
            depth += 1
        return None, None

    # -- entry points
    def describe(self, e: Entry) -> list[Line]:
        lines = self._describe(e) if e.kind != "ort" else []
        if self.doc.source == "ort":  # what ONNX Runtime adds (tui/ort/detail.py)
            if self._ort is None:
                from ..ort.detail import OrtDetail

                self._ort = OrtDetail(self.doc)
            lines.extend(self._ort.lines(e))
        if self.extra is not None:
            lines.extend(self.extra(e))
        return lines

    def _describe(self, e: Entry) -> list[Line]:
        k = e.kind
        if k == "node":
            return self.node(e.obj, e.graph, e.function)
        if k == "tensor":
            return self.tensor(e.obj)
        if k == "sparse":
            return self.sparse(e.obj)
        if k == "value":
            return self.value(e.obj, e.graph)
        if k == "graph":
            return self.graph(e.obj)
        if k == "model":
            return self.model(e.obj)
        if k == "function":
            return self.function(e.obj)
        if k == "attribute":
            return [kv("attribute", safe_text(e.obj.name, style="bold")), kv("type", attr_type_name(e.obj.type)),
                    kv("value", attribute_value_text(e.obj, limit=2000))]
        if k in ("problem", "finding"):
            return self.problem(e.obj, k)
        if k == "header":
            name, off, size, val = e.obj
            shown = safe_text(val.decode("latin-1"), limit=40) if isinstance(val, bytes) else Text(f"{val:,} (0x{val:x})")
            return [kv("field", Text("header." + name, style="bold"), width=8), kv("value", shown, width=8),
                    kv("offset", f"{off} .. {off + size - 1} ({size} bytes)", ("offset", off), width=8)]
        if k == "meta":
            return [(e.label.copy(), None)]
        return [(e.label.copy(), None)]

    def node(self, n: Node, g: Graph | None, function: Function | None) -> list[Line]:
        m = self.doc.model
        head = safe_text(n.op, style="bold")
        head.append("  ")
        head.append_text(safe_text(n.name or "(unnamed)"))
        head.append("   ")
        head.append_text(safe_text(n.domain or "ai.onnx", style="dim"))
        ver = opset_version(m, function, n.domain)
        head.append(f" {ver}" if ver is not None else " (no opset)", style="dim" if ver is not None else "red")
        if n.overload:
            head.append(" overload ", style="dim")
            head.append_text(safe_text(n.overload))
        lines: list[Line] = [(head, None)]
        if n.doc:
            lines.append(kv("doc", safe_text(n.doc, limit=400)))
        facts = self.facts.quick(g) if g is not None else None
        pending = g is not None and facts is None
        if pending:
            lines.append((Text("producers and consumers: being worked out (the links follow)", style="dim italic"), None))
        for label, all_names, is_input in (("in", n.inputs, True), ("out", n.outputs, False)):
            names = all_names[:MAX_IO]
            if len(all_names) > MAX_IO:
                lines.append(kv(label, Text(f"{len(all_names):,} operands; the first {MAX_IO} follow", style="yellow"), width=5))
            for j, name in enumerate(names):
                key = label if j == 0 else ""
                if not name:
                    lines.append(kv(key, Text("(omitted)", style="dim"), width=5))
                    continue
                vg, vf = self.lookup(g, name) if g is not None else (None, None)
                t = safe_text(name, limit=60)
                ty = vf.types.get(name) if vf is not None else None
                how = ""
                if ty is None and self.infer is not None:
                    ty, how = self.infer(vg or g, name)
                if ty is not None:
                    t.append("  ")
                    t.append(str(ty), style="cyan italic" if how else "cyan")
                    if how:
                        t.append(" (inferred)" if how == "inferred" else " (constant)", style="dim")
                init = vf.initializer.get(name) if vf is not None else None
                if init is not None and not init.is_string:
                    t.append(f"  {human_size(init.length)}", style="dim")
                    if init.file_offset is not None:
                        t.append(f" @0x{init.file_offset:x}", style="dim")
                link = None
                if pending:
                    lines.append(kv(key, t, None, width=5))
                elif is_input:
                    if vf is not None and name in vf.producer:
                        p = vg.nodes[vf.producer[name]]
                        t.append(" ← ", style="dim")
                        t.append_text(safe_text(p.op, style="green", limit=30))
                        t.append(" ")
                        t.append_text(safe_text(p.name, limit=40))
                        link = p.where
                    elif init is not None:
                        t.append(" ← initializer", style="dim")
                        link = init.where
                    elif vf is not None and name in vf.value_where:
                        t.append(" ← input", style="dim")
                        link = vf.value_where[name]
                    elif function is not None and name in function.inputs:
                        t.append(" ← function input", style="dim")
                    else:
                        t.append(" ← undefined", style="red")
                    if vg is not None and vg is not g:
                        t.append(" (outer scope)", style="dim")
                    lines.append(kv(key, t, link, width=5))
                else:
                    cons = facts.consumers.get(name, []) if facts is not None else []
                    if cons:
                        first = g.nodes[cons[0]]
                        t.append(" → ", style="dim")
                        t.append_text(safe_text(first.op, style="green", limit=30))
                        t.append(" ")
                        t.append_text(safe_text(first.name, limit=40))
                        link = first.where
                        if len(cons) > 1:
                            t.append(f" (+{len(cons) - 1})", style="dim")
                    elif g is not None and any(o.name == name for o in g.outputs):
                        t.append(" → graph output", style="dim")
                    lines.append(kv(key, t, link, width=5))
                    for c in cons[1:8]:
                        other = g.nodes[c]
                        t2 = Text("   → ", style="dim")
                        t2.append_text(safe_text(other.op, style="green", limit=30))
                        t2.append(" ")
                        t2.append_text(safe_text(other.name, limit=40))
                        lines.append(kv("", t2, other.where, width=5))
        if n.attributes:
            lines.append((Text("attributes", style="bold underline"), None))
            for a in n.attributes[:MAX_IO]:
                t = safe_text(a.name, style="bold", limit=40)
                t.append(" = ", style="dim")
                t.append_text(attribute_value_text(a))
                link = None
                if a.tensors():
                    link = a.tensors()[0].where
                elif a.graphs():
                    link = a.graphs()[0].where
                lines.append((t, link))
        return lines

    def tensor(self, t: Tensor) -> list[Line]:
        lines: list[Line] = [(safe_text(t.name or "(unnamed)", style="bold"), None)]
        lines.append(kv("dtype", Text(f"{name_of(t.dtype)} (code {t.dtype})", style="cyan")))
        lines.append(kv("dims", "[" + ", ".join(map(str, t.dims)) + "]" + ("  (scalar)" if not t.dims else "")))
        lines.append(kv("count", f"{t.count:,}"))
        if t.is_string:
            lines.append(kv("strings", f"{len(t.strings or ()):,}"))
        else:
            lines.append(kv("bytes", f"{t.length:,} ({human_size(t.length)})"))
            path = getattr(t.storage, "path", None)
            external = path is not None and os.path.abspath(path) != os.path.abspath(self.doc.path)
            if external:
                lines.extend(self.external_lines(t, path))
            elif t.file_offset is not None and t.storage is not None and path is None and self.doc.storage is None:
                lines.append(kv("file", Text("(in memory: decoded from typed ONNX fields)", style="dim")))
            if t.file_offset is not None and not external:
                lines.append(kv("offset", f"0x{t.file_offset:x} ({t.file_offset:,}) in file", ("offset", t.file_offset)))
                if self.doc.source == "onemodel":
                    lines.append(kv("data.off", f"0x{t.offset:x} ({t.offset:,}) in data region"))
                    end = t.file_offset + t.length
                    lines.append(kv("end", f"0x{end:x} ({end:,})", ("offset", max(t.file_offset, end - 1))))
                al = t.file_offset & -t.file_offset if t.file_offset else 1 << 63
                aligned = Text("64-byte aligned", style="green") if t.file_offset % 64 == 0 else \
                    Text(f"NOT 64-aligned (offset % 64 = {t.file_offset % 64})", style="red")
                if t.file_offset % 64 == 0 and t.file_offset:
                    aligned.append(f" (aligned to {min(al, 1 << 30):,})", style="dim")
                lines.append(kv("align", aligned))
        if t.doc:
            lines.append(kv("doc", safe_text(t.doc, limit=400)))
        if self.sharing is not None and not t.is_string and t.length:
            # an external tensor shares bytes only with tensors of its own weights file
            others = self.external_sharing(t, path) if external else self.sharing(t)
            if others:
                lines.append((Text(f"shares bytes with {len(others)} tensor(s)", style="yellow"), None))
                for o in others[:16]:
                    s = Text("  ")
                    s.append_text(safe_text(o.name or "(unnamed)", limit=60))
                    s.append(f"  @0x{o.file_offset:x} +{o.length:,}", style="dim")
                    lines.append((s, o.where))
        lines.append((Text("s: statistics", style="dim"), None))
        return lines

    def external_lines(self, t: Tensor, path: str) -> list[Line]:
        """file (the location as written in the model), offset, end and alignment of an ONNX external tensor."""
        from ...format.onnx.external import ExternalFacts

        facts = self.doc.extra
        loc = None
        if isinstance(facts, ExternalFacts):
            loc = next((r.location for r in facts.refs if r.where == t.where), None)
        name = safe_text(loc if loc is not None else os.path.basename(path), limit=200)
        if loc is not None and os.path.basename(path) != os.path.basename(loc):
            name.append(f"  -> {os.path.basename(path)}", style="dim")
        lines = [kv("file", name)]
        off = t.file_offset
        if off is None:
            return lines
        end = off + t.length
        lines.append(kv("offset", f"0x{off:x} ({off:,}) in that file"))
        lines.append(kv("end", f"0x{end:x} ({end:,}) in that file"))
        if off == 0:
            aligned = Text("offset 0 (aligned to anything)", style="green")
        else:
            low = off & -off
            aligned = Text(f"aligned to {min(low, 1 << 30):,}" + ("" if low < 1 << 30 else "+"),
                           style="green" if off % 64 == 0 else "red")
            if off % 64:
                aligned.append(f" (NOT 64-aligned: offset % 64 = {off % 64})", style="red")
        lines.append(kv("align", aligned))
        return lines

    def external_sharing(self, t: Tensor, path: str) -> list[Tensor]:
        """Tensors of the same weights file whose bytes overlap ``t``'s (one map per file, built once)."""
        if self.maps is None:
            self.maps = FileMaps(self.doc)
        known = self.maps.external(t)
        return known[1].sharing(t) if known is not None else []

    def sparse(self, s: SparseTensor) -> list[Line]:
        lines: list[Line] = [(safe_text(s.name or "(unnamed)", style="bold"), None)]
        lines.append(kv("dims", "[" + ", ".join(map(str, s.dims)) + "]"))
        lines.append(kv("values", tensor_summary(s.values), s.values.where))
        lines.append(kv("indices", tensor_summary(s.indices), s.indices.where))
        return lines

    def value(self, v: ValueInfo, g: Graph | None) -> list[Line]:
        lines: list[Line] = [(safe_text(v.name or "(unnamed)", style="bold"), None)]
        lines.append(kv("type", Text(str(v.type) if v.type is not None else "(not declared)", style="cyan")))
        f = self.facts.quick(g) if g is not None else None
        if g is not None and f is None:
            lines.append((Text("producer and readers: being worked out", style="dim italic"), None))
        if g is not None and f is not None:
            if v.name in f.producer:
                p = g.nodes[f.producer[v.name]]
                t = safe_text(p.op, style="green")
                t.append(" ")
                t.append_text(safe_text(p.name))
                lines.append(kv("from", t, p.where))
            if v.name in f.initializer:
                init = f.initializer[v.name]
                lines.append(kv("init", tensor_summary(init), init.where))
            for c in f.consumers.get(v.name, [])[:32]:
                p = g.nodes[c]
                t = safe_text(p.op, style="green")
                t.append(" ")
                t.append_text(safe_text(p.name))
                lines.append(kv("to", t, p.where))
        return lines

    def graph(self, g: Graph) -> list[Line]:
        lines: list[Line] = [(Text("graph ", style="bold") + safe_text(g.name or "(unnamed)"), None)]
        for k, n in (("inputs", len(g.inputs)), ("outputs", len(g.outputs)), ("value_info", len(g.value_info)),
                     ("initializers", len(g.initializers)), ("sparse", len(g.sparse_initializers)),
                     ("nodes", len(g.nodes))):
            lines.append(kv(k, f"{n:,}", width=14))
        total = sum(t.length for t in g.initializers)
        lines.append(kv("init bytes", human_size(total), width=14))
        if g.doc:
            lines.append(kv("doc", safe_text(g.doc, limit=400), width=14))
        f = self.facts.quick(g)  # a big graph's: from the background job (counting here built every node)
        ops = f.ops if f is not None else {}
        if f is None:
            lines.append((Text("operators: being counted", style="dim italic"), None))
        if ops:
            lines.append((Text("operators", style="bold underline"), None))
            for op, c in sorted(ops.items(), key=lambda x: (-x[1], x[0]))[:24]:
                lines.append((Text(f"{c:>8,}  ") + safe_text(op, limit=60), None))
        return lines

    def model(self, m: Model) -> list[Line]:
        doc = self.doc
        lines: list[Line] = [(Text("model", style="bold"), None)]
        lines.append(kv("file", safe_text(file_name(doc.path), limit=200)))
        lines.append(kv("source", doc.source))
        lines.append(kv("size", f"{doc.size:,} ({human_size(doc.size)})"))
        lines.append(kv("ir", str(m.ir_version)))
        lines.append(kv("producer", safe_text((m.producer_name + " " + m.producer_version).strip() or "-")))
        if m.domain:
            lines.append(kv("domain", safe_text(m.domain)))
        lines.append(kv("version", str(m.model_version)))
        for o in m.opsets:
            lines.append(kv("opset", safe_text(o.domain or "ai.onnx") + Text(f" {o.version}", style="cyan")))
        for k, v in m.metadata:
            lines.append(kv("meta", safe_text(k, style="bold", limit=60) + Text(" = ") + safe_text(v, limit=200)))
        if doc.header is not None:
            h = doc.header
            lines.append((Text("header", style="bold underline"), ("offset", 0)))
            for name in ("version", "flags", "manifest_offset", "manifest_length", "data_offset", "data_length",
                         "file_length", "reserved"):
                val = getattr(h, name)
                lines.append(kv(name, f"{val:,} (0x{val:x})", width=16))
        if m.doc:
            lines.append(kv("doc", safe_text(m.doc, limit=1000)))
        return lines

    def function(self, f: Function) -> list[Line]:
        lines: list[Line] = [(Text("function ", style="bold") + safe_text(f.domain + ":" + f.name), None)]
        if f.overload:
            lines.append(kv("overload", safe_text(f.overload)))
        lines.append(kv("inputs", join_texts((safe_text(x, limit=40) for x in f.inputs), 400)))
        lines.append(kv("outputs", join_texts((safe_text(x, limit=40) for x in f.outputs), 400)))
        lines.append(kv("attrs", join_texts((safe_text(x, limit=40) for x in f.attribute_names), 400)))
        for a in f.attribute_defaults:
            lines.append(kv("default", safe_text(a.name, style="bold") + Text(" = ") + attribute_value_text(a), a.where))
        for o in f.opsets:
            lines.append(kv("opset", safe_text(o.domain or "ai.onnx") + Text(f" {o.version}", style="cyan")))
        lines.append(kv("nodes", f"{len(f.nodes):,}"))
        if f.doc:
            lines.append(kv("doc", safe_text(f.doc, limit=400)))
        return lines

    def problem(self, p, kind: str) -> list[Line]:
        head = Text(str(getattr(p, "kind", getattr(p, "code", ""))), style="bold red" if kind == "problem" else "bold yellow")
        lines: list[Line] = [(head, None)]
        lines.append(kv("where", safe_text(p.where, limit=400), p.where or None))
        if p.offset is not None:
            lines.append(kv("offset", f"0x{p.offset:x} ({p.offset:,})", ("offset", p.offset)))
        lines.append(kv("message", safe_text(p.message, limit=2000)))
        if kind == "problem" and hasattr(p, "kind"):
            rule = rule_of(p)  # the same section and id as --check's "rule:" line
            if rule is not None:
                lines.append(kv("rule", rule.label()))
                lines.append(kv("requires", rule.summary))
        return lines

