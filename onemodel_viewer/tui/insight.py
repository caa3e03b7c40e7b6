"""Model insight for the viewer: used-by, parameter counts and inferred types, computed off the UI thread.

:class:`Insight` belongs to one document. Its work runs in a worker thread (the viewer's background job, after the
first screen; or a thread of its own on the first request) that builds, one after the other, the used-by map of the
whole model (``analysis/usedby.py``), the parameter counts (``analysis/params.py``) and ONNX shape inference
(``analysis/shapes.py``, not on graphs over ``VIEWER_MAX_NODES``); each result is posted back with
``call_from_thread`` and the detail pane is redrawn. Until a result is there the detail pane
says it is being computed; the UI never waits for it.

It also supplies the detail pane's extra lines (:meth:`Insight.lines`, hooked into the
:class:`~.describe.Describer`) and :class:`InsightActions`, the app's actions for the new
keys and screens (a mixin: the bindings themselves are in ``app.py``).
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Iterable

from rich.text import Text
from textual.app import App, SystemCommand
from textual.worker import get_current_worker

from ..analysis.facts import Facts
from ..format.document import Document
from ..format.schema import Function, Graph, Node, SparseTensor, Tensor, Type, ValueInfo
from .widgets.entries import Entry
from .widgets.safe import human_size, safe_str, safe_text

if TYPE_CHECKING:  # imported when used, not at start (there: ~8 ms of the imports)
    from ..analysis.params import ParamCounts
    from ..analysis.shapes import Inferred
    from ..analysis.usedby import Use, UsedBy

USED_BY_SHOWN = 12
"""Readers listed in the detail pane (the ``u`` screen lists them all)."""


def use_text(u: Use) -> Text:
    """``Slice name  (in If 'x' then_branch)`` for one reader."""
    t = safe_text(u.node.op, style="green", limit=30)
    t.append(" ")
    t.append_text(safe_text(u.node.name or "(unnamed)", limit=50))
    if u.via is not None:
        t.append("  (inside ", style="dim")
        t.append_text(safe_text(u.via.op, style="dim", limit=20))
        t.append(" ", style="dim")
        t.append_text(safe_text(u.via.name or "(unnamed)", style="dim", limit=30))
        if u.graph.name:
            t.append(" · ", style="dim")
            t.append_text(safe_text(u.graph.name, style="dim", limit=30))
        if u.depth > 1:
            t.append(f", {u.depth} levels down", style="dim")
        t.append(")", style="dim")
    return t


class Insight:
    """Used-by, parameter counts and inferred types of one document, built in one worker thread."""

    def __init__(self, app: App, doc: Document, facts: Facts, *, held: bool = False) -> None:
        self.app = app
        """The viewer (``tui/app.OneModelApp``: not imported here, it imports this module)."""
        self.doc = doc
        self.facts = facts
        self.used_by: UsedBy | None = None
        """Complete used-by map, once built."""
        self.params: dict[int, tuple[Graph, ParamCounts]] = {}
        self.model_params: ParamCounts | None = None
        self.inferred: Inferred | None = None
        self.errors: dict[str, str] = {}
        """step -> message, when a step failed (diagnose-mode leftovers): shown, never raised."""
        self._started = False
        self.held = held
        """True: :meth:`start` does nothing, the work waits for :meth:`run` (the viewer's background job runs it after
        its first screen, one task after the other: a second busy thread made the first screen and keys wait)."""
        self.cancel = threading.Event()

    # ------------------------------------------------------------------ the worker
    def start(self) -> None:
        """Start the worker (once; not while :attr:`held`)."""
        if self._started or self.held or self.doc.model is None:
            return
        self._started = True
        self.app.run_worker(self._work, thread=True, group="insight", exclusive=False, exit_on_error=False,
                            name="insight")

    def run(self, cancel: threading.Event | None = None) -> None:
        """Do the work now, in the calling worker thread (once); ``cancel``, if given, becomes :attr:`cancel`."""
        if self._started or self.doc.model is None:
            return
        self._started = True
        self.cancel = cancel if cancel is not None else self.cancel
        self._work()

    def _work(self) -> None:
        from ..analysis.shapes import inference_helper
        from ..analysis.usedby import UsedBy
        worker = get_current_worker()
        model = self.doc.model
        assert model is not None
        inference_helper().start()  # its start and onnx import overlap the used-by and counting steps

        def stop() -> bool:
            return worker.is_cancelled or self.cancel.is_set()

        steps = (("used-by", lambda: UsedBy(model, self.facts).build(self.cancel)),
                 ("params", lambda: self._count(model)),
                 ("inferred", lambda: self._infer(model)))
        for name, step in steps:
            if stop():
                return
            try:
                result = step()
            except Exception as e:  # broken leftovers of a diagnose open: say so, stay up
                result, err = None, f"{type(e).__name__}: {e}"
            else:
                err = ""
            if stop():
                return
            try:
                self.app.call_from_thread(self._done, name, result, err)
            except Exception:  # app shutting down
                return

    def _count(self, model) -> tuple[ParamCounts, dict[int, tuple[Graph, ParamCounts]]]:
        from ..analysis.params import count_graph, count_model
        from ..format.schema import walk_graphs

        per: dict[int, tuple[Graph, ParamCounts]] = {}
        for g in walk_graphs(model.graph):
            per[id(g)] = (g, count_graph(g, cancel=self.cancel))
        return count_model(model, self.cancel), per

    def _infer(self, model) -> Inferred:
        from ..analysis.shapes import VIEWER_MAX_NODES, infer_types
        inf = infer_types(model, self.cancel, isolate=True, max_nodes=VIEWER_MAX_NODES)  # onnx's C++ would hold the GIL
        inf.names(model.graph)  # index the main graph's types here, not on the UI thread
        return inf

    def _done(self, step: str, result: Any, err: str) -> None:
        if self.app.document is not self.doc:
            return  # reloaded meanwhile
        if err:
            self.errors[step] = err
        elif step == "used-by":
            self.used_by = result
        elif step == "params":
            self.model_params, self.params = result
        elif step == "inferred":
            self.inferred = result
            if result.error:
                self.errors[step] = result.error
        self.app.refresh_detail()

    # ------------------------------------------------------------------ lookups
    def uses(self, g: Graph, name: str) -> list[Use] | None:
        """Every reader (None while the subgraph part is being computed: then only direct ones are known)."""
        if self.used_by is None:
            return None
        return self.used_by.uses(g, name)

    def function_uses(self, f: Function, name: str) -> list[Use] | None:
        """Readers of a value of function ``f`` (None while the used-by map is being built)."""
        return None if self.used_by is None else self.used_by.function_uses(f, name)

    def direct_uses(self, g: Graph, name: str) -> list[Use]:
        from ..analysis.usedby import Use
        f = self.facts.quick(g)  # a big graph's facts still being computed: none yet, never a wait
        return [] if f is None else [Use(g.nodes[i], g, None, 0) for i in f.consumers.get(name, ())]

    def infer_type(self, g: Graph | None, name: str) -> tuple[Type | None, str]:
        """(type, how) for a value without a declared type: ``constant`` or ``inferred``; (None, "")."""
        if g is None:
            return None, ""
        self.start()
        f = self.facts.quick(g)
        if f is None:  # a big graph's facts are still being computed: no type yet, never a wait
            return None, ""
        i = f.producer.get(name)
        if i is not None:
            n = g.nodes[i]
            if n.op == "Constant":
                from ..analysis.shapes import constant_output_type
                t = constant_output_type(n)
                if t is not None:
                    return t, "constant"
        inf = self.inferred
        if inf is not None:
            t = inf.of(g, name)
            if t is not None:
                return t, "inferred"
        return None, ""

    def graph_params(self, g: Graph) -> ParamCounts | None:
        hit = self.params.get(id(g))
        return hit[1] if hit is not None and hit[0] is g else None

    # ------------------------------------------------------------------ detail lines
    def lines(self, e: Entry) -> list[tuple[Text, Any]]:
        """Extra detail lines for ``e`` (used-by, parameters, inferred type)."""
        try:
            return self._lines(e)
        except Exception as ex:  # a leftover record of a broken file: a line, never a traceback
            return [(Text(f"insight unavailable: {safe_str(str(ex), 120)}", style="red"), None)]

    def _lines(self, e: Entry) -> list[tuple[Text, Any]]:
        if self.doc.model is None:
            return []
        self.start()
        k, g = e.kind, e.graph
        if k == "tensor" and isinstance(e.obj, Tensor) and g is not None and any(t is e.obj for t in g.initializers):
            return self._used_by_lines(g, e.obj.name)
        if k == "sparse" and isinstance(e.obj, SparseTensor) and g is not None:
            return self._used_by_lines(g, e.obj.name)
        if k == "value" and isinstance(e.obj, ValueInfo) and g is not None:
            out = []
            if e.obj.type is None:
                ty, how = self.infer_type(g, e.obj.name)
                out.append(self._inferred_line(ty, how))
            out.extend(self._used_by_lines(g, e.obj.name, inner_only=True))  # direct readers: the "to" lines
            return out
        if k == "node" and isinstance(e.obj, Node) and g is not None:
            return self._node_subgraph_readers(g, e.obj)
        if k == "node" and isinstance(e.obj, Node) and isinstance(e.function, Function):
            return self._function_lines(e.function, [o for o in e.obj.outputs if o])
        if k == "function" and isinstance(e.obj, Function):
            return self._function_lines(e.obj, list(e.obj.inputs))
        if k == "graph" and isinstance(e.obj, Graph):
            return self._params_lines(self.graph_params(e.obj), "parameters (this graph and its subgraphs)")
        if k == "model":
            return self._params_lines(self.model_params, "parameters (whole model)")
        return []

    def _inferred_line(self, ty: Type | None, how: str) -> tuple[Text, Any]:
        t = Text("inferred".ljust(10), style="bold")
        if ty is not None:
            t.append(str(ty), style="cyan italic")
            t.append("  (Constant's tensor)" if how == "constant" else "  (ONNX shape inference)", style="dim")
        elif self.inferred is None and "inferred" not in self.errors:
            t.append("computing…", style="dim")
        elif "inferred" in self.errors:
            t.append("shape inference failed: ", style="yellow")
            t.append_text(safe_text(self.errors["inferred"], limit=120))
        else:  # inference ran (or was skipped on a big graph)
            t.append(f"shape inference {self.inferred.skipped}" if self.inferred.skipped else "(shape inference gives no type)", style="dim")
        return t, None

    def _used_by_lines(self, g: Graph, name: str, *, inner_only: bool = False) -> list[tuple[Text, Any]]:
        uses = self.uses(g, name)
        pending = uses is None
        if uses is None:
            uses = self.direct_uses(g, name)
        inner = sum(1 for u in uses if u.via is not None)
        head = Text("used by".ljust(10), style="bold")
        if not uses:
            head.append("no node" + (" (subgraphs: computing…)" if pending else ""), style="dim" if pending else "yellow")
            return [(head, None)]
        head.append(f"{len(uses):,} node{'s' if len(uses) != 1 else ''}")
        if inner:
            head.append(f" ({inner:,} inside subgraphs)", style="dim")
        if pending:
            head.append("  (subgraph readers: computing…)", style="dim")
        lines = [(head, None)]
        listed = [u for u in uses if u.via is not None] if inner_only else uses
        for u in listed[:USED_BY_SHOWN]:
            t = Text("  → ", style="dim")
            t.append_text(use_text(u))
            lines.append((t, u.where))
        if len(listed) > USED_BY_SHOWN:
            lines.append((Text(f"  … {len(listed) - USED_BY_SHOWN:,} more: u lists them all", style="dim"), None))
        return lines

    def _function_lines(self, f: Function, names: list[str]) -> list[tuple[Text, Any]]:
        """``used by`` for values of function ``f``: its body's readers and those inside their subgraphs."""
        lines: list[tuple[Text, Any]] = []
        for name in names:
            head = Text("used by".ljust(10), style="bold")
            head.append_text(safe_text(name, limit=60))
            uses = self.function_uses(f, name)
            if uses is None:
                head.append("  computing…", style="dim")
                lines.append((head, None))
                continue
            inner = sum(1 for u in uses if u.via is not None)
            head.append(f"  {len(uses):,} node{'s' if len(uses) != 1 else ''} of the function"
                        + (f" ({inner:,} inside subgraphs)" if inner else ""), style="dim" if uses else "yellow")
            lines.append((head, None))
            for u in uses[:USED_BY_SHOWN]:
                t = Text("  → ", style="dim")
                t.append_text(use_text(u))
                lines.append((t, u.where))
            if len(uses) > USED_BY_SHOWN:
                lines.append((Text(f"  … {len(uses) - USED_BY_SHOWN:,} more: u lists them all", style="dim"), None))
        return lines

    def _node_subgraph_readers(self, g: Graph, n: Node) -> list[tuple[Text, Any]]:
        ub = self.used_by
        lines: list[tuple[Text, Any]] = []
        if ub is None:
            return [(Text("readers inside subgraphs: computing…", style="dim"), None)] if self._has_subgraphs() else []
        for o in n.outputs:
            if not o:
                continue
            outer = ub.outer(g, o)
            if not outer:
                continue
            h = Text("read inside subgraphs: ", style="bold")
            h.append_text(safe_text(o, limit=60))
            h.append(f" ({len(outer):,})", style="dim")
            lines.append((h, None))
            for u in outer[:USED_BY_SHOWN]:
                t = Text("  → ", style="dim")
                t.append_text(use_text(u))
                lines.append((t, u.where))
        return lines

    def _has_subgraphs(self) -> bool:
        from ..format.schema import nodes_with_contents

        m = self.doc.model
        return m is not None and any(a.graphs() for n in nodes_with_contents(m.graph.nodes) for a in n.attributes)

    def _params_lines(self, c: ParamCounts | None, title: str) -> list[tuple[Text, Any]]:
        lines: list[tuple[Text, Any]] = [(Text(title, style="bold underline"), None)]
        if c is None:
            err = self.errors.get("params")
            lines.append((Text("counting failed: " + safe_str(err, 120), style="yellow") if err
                          else Text("counting…", style="dim"), None))
            return lines
        t = Text(f"{c.elements:,} parameters", style="bold")
        t.append(f" · {human_size(c.bytes)} · {c.tensors:,} tensors", style="dim")
        lines.append((t, None))
        for src in ("initializer", "constant", "sparse", "attribute"):
            s = c.by_source.get(src)
            if s is not None:
                lines.append((Text(f"  {src:<12}{s.elements:>14,}  {human_size(s.bytes):>10}  {s.tensors:,} tensors"), None))
        for dt, s in sorted(c.by_dtype.items(), key=lambda kv: -kv[1].bytes)[:8]:
            lines.append((Text(f"  {dt:<12}{s.elements:>14,}  {human_size(s.bytes):>10}", style="cyan"), None))
        for nbytes, count, name, ty, where in c.largest[:3]:
            t = Text("  largest ", style="dim")
            t.append_text(safe_text(name or "(unnamed)", limit=40))
            t.append(f"  {ty}  {human_size(nbytes)}", style="dim")
            lines.append((t, where or None))
        lines.append((Text("P: parameter counts by dtype, largest tensors", style="dim"), None))
        return lines


def node_index(g: Graph, e: Entry) -> int | None:
    """The index of the node entry ``e`` in ``g.nodes`` (its where path ends with it; else a scan)."""
    nodes = g.nodes
    where_of = getattr(nodes, "where_of", None)
    head, _, tail = e.where.rpartition("[")
    if where_of is not None and head and tail.endswith("]") and tail[:-1].isdigit():
        i = int(tail[:-1])
        if i < len(nodes) and where_of(i) == e.where:
            return i
    if where_of is not None:
        return next((i for i in range(len(nodes)) if where_of(i) == e.where), None)
    return next((i for i, n in enumerate(nodes) if n is e.obj), None)


class InsightActions:
    """The app's actions for the insight keys (mixed into :class:`~.app.OneModelApp`)."""

    insight: Insight | None = None
    _neighbourhood_screen = None
    """The ``a`` screen, made on the first press and reused (``NeighbourhoodScreen``)."""

    # -- helpers
    def refresh_detail(self) -> None:
        """Describe the current entry again (a background result arrived), keeping the pane's cursor."""
        from .widgets.detail_pane import DetailPane

        cur = getattr(self, "current", None)
        if cur is None:
            return
        pane = self.query_one(DetailPane)  # type: ignore[attr-defined]
        keep = pane.highlighted
        pane.show(self.describer.describe(cur))  # type: ignore[attr-defined]
        if keep is not None and keep < pane.option_count:
            pane.highlighted = keep

    def _current(self, *kinds: str) -> Entry | None:
        e = getattr(self, "current", None)
        if e is None or (kinds and e.kind not in kinds):
            return None
        return e

    def _selected_tensor(self) -> Tensor | None:
        e = self._current("tensor", "sparse")
        if e is None:
            return None
        return e.obj.values if isinstance(e.obj, SparseTensor) else e.obj

    def _warn(self, msg: str) -> None:
        self.notify(msg, severity="warning", markup=False)  # type: ignore[attr-defined]

    # -- actions
    def action_used_by(self) -> None:
        from .screens.used_by import UsedByScreen

        e = self._current("tensor", "sparse", "value", "node", "function")
        ins = self.insight
        if e is not None and ins is not None and e.graph is None and isinstance(e.function, Function):
            self._function_used_by(ins, e)
            return
        if e is None or ins is None or e.graph is None or e.kind == "function":
            self._warn("select a value, an initializer or a node first")
            return
        names = [o for o in e.obj.outputs if o] if e.kind == "node" else [e.obj.name]
        rows: list[tuple[str, Use]] = []
        for name in names:
            uses = ins.uses(e.graph, name)
            if uses is None:
                uses = ins.direct_uses(e.graph, name)
                self.notify("readers inside subgraphs are still being computed", timeout=3)  # type: ignore[attr-defined]
            rows.extend((name, u) for u in uses)

        def done(where: str | None) -> None:
            if where:
                self.reveal(where)  # type: ignore[attr-defined]

        self.push_screen(UsedByScreen(names, rows), done)  # type: ignore[attr-defined]

    def _function_used_by(self, ins: Insight, e: Entry) -> None:
        """``u`` on a function (its inputs and outputs) or a node of its body (its outputs)."""
        from .screens.used_by import UsedByScreen

        f = e.function
        names = list(f.inputs) + list(f.outputs) if e.kind == "function" else [o for o in e.obj.outputs if o]
        if ins.used_by is None:
            ins.start()
            self._warn("the readers inside functions are still being computed; try again in a moment")
            return
        rows = [(name, u) for name in names for u in ins.function_uses(f, name) or ()]

        def done(where: str | None) -> None:
            if where:
                self.reveal(where)  # type: ignore[attr-defined]

        self.push_screen(UsedByScreen(names, rows), done)  # type: ignore[attr-defined]

    def action_parameters(self) -> None:
        from .screens.params import ParamsScreen

        ins = self.insight
        if ins is None or ins.doc.model is None:
            self._warn("no model to count")
            return
        ins.start()
        if ins.model_params is None:
            self._warn(ins.errors.get("params", "") or "still counting; try again in a moment")
            return
        graphs = [(g, c) for g, c in ins.params.values()]

        def done(where: str | None) -> None:
            if where:
                self.reveal(where)  # type: ignore[attr-defined]

        self.push_screen(ParamsScreen(ins.model_params, graphs), done)  # type: ignore[attr-defined]

    def action_operator_help(self) -> None:
        from ..analysis.opschema import schema_facts
        from .widgets.describe import opset_version
        from .screens.opschema import OpSchemaScreen

        e = self._current("node")
        if e is None:
            self._warn("select a node first")
            return
        doc = self.document  # type: ignore[attr-defined]
        ver = opset_version(doc.model, e.function, e.obj.domain)
        self.push_screen(OpSchemaScreen(e.obj, schema_facts(e.obj, ver)))  # type: ignore[attr-defined]

    def action_values(self) -> None:
        from .screens.values import ValuesScreen

        t = self._selected_tensor()
        if t is None:
            self._warn("select a tensor first")
            return
        self.push_screen(ValuesScreen(t))  # type: ignore[attr-defined]

    def action_neighbourhood(self) -> None:
        from .screens.neighbourhood import NeighbourhoodScreen

        e = self._current("node")
        if e is None or e.graph is None:
            self._warn("select a node of a graph first")
            return
        g = e.graph
        index = node_index(g, e)
        if index is None:
            self._warn("this node is not in its graph's node list")
            return

        def done(where: str | None) -> None:
            if where:
                self.reveal(where)  # type: ignore[attr-defined]

        screen = self._neighbourhood_screen
        if screen is None:  # one instance, installed: a new screen per press took ~270 ms to compose and mount
            screen = self._neighbourhood_screen = NeighbourhoodScreen(g, index, self.facts, self.insight)
            self.install_screen(screen, "insight-neighbourhood")  # type: ignore[attr-defined]
        else:
            screen.show_node(g, index, self.facts, self.insight)
        self.push_screen(screen, done)  # type: ignore[attr-defined]

    def action_toggle_inspector(self) -> None:
        from .hex.byte_inspector import ByteInspector

        bi = self.query_one(ByteInspector)  # type: ignore[attr-defined]
        bi.toggle_class("hidden")
        self.query_one("#right").set_class(not bi.has_class("hidden"), "-inspecting")  # type: ignore[attr-defined]
        if not bi.has_class("hidden"):
            self.update_inspector()

    def update_inspector(self) -> None:
        from .hex.byte_inspector import ByteInspector
        from .hex.hex_view import HexView

        bi = self.query_one(ByteInspector)  # type: ignore[attr-defined]
        if bi.has_class("hidden"):
            return
        hexv = self.query_one(HexView)  # type: ignore[attr-defined]
        bi.show_at(hexv.storage, hexv.bytemap, hexv.cursor)

    def action_export_npy(self) -> None:
        from .widgets.prompt import Prompt

        t = self._selected_tensor()
        if t is None:
            self._warn("select a tensor first")
            return
        base = "".join(c if c.isalnum() or c in "._-" else "_" for c in (t.name or "tensor"))[:80] or "tensor"

        def done(path: str | None) -> None:
            if path:
                self._export(t, path)

        self.push_screen(Prompt("Write the tensor to a .npy file", "path", value=base + ".npy",  # type: ignore[attr-defined]
                                hint=f"{t.type_str()} · exotic dtypes: raw bits or widened ints (said after)"), done)

    def _export(self, t: Tensor, path: str) -> None:
        doc = self.document  # type: ignore[attr-defined]

        def work() -> None:
            from ..analysis.npyexport import ExportError, export_npy

            try:
                note = export_npy(t, path, source=doc.path)
                msg, sev = f"wrote {safe_str(os.path.abspath(path), 120)}" + (f": {note}" if note else ""), "information"
            except (ExportError, OSError, ValueError) as e:
                msg, sev = f"not written: {safe_str(str(e), 200)}", "error"
            except Exception as e:  # a core bug or a file changed on disk: a message, not a crash
                msg, sev = f"not written: {type(e).__name__}: {safe_str(str(e), 200)}", "error"
            try:
                self.call_from_thread(self.notify, msg, severity=sev, timeout=8, markup=False)  # type: ignore[attr-defined]
            except Exception:
                pass

        self.run_worker(work, thread=True, group="export", exit_on_error=False)  # type: ignore[attr-defined]

    def action_copy(self, what: str) -> None:
        """Copy the selected record's name or where path to the clipboard (OSC 52), exactly as in the file."""
        e = getattr(self, "current", None)
        if e is None:
            self._warn("nothing selected")
            return
        if what == "where":
            text = e.where
        else:
            obj = e.obj
            text = getattr(obj, "name", None) if not isinstance(obj, tuple) else None
            if not isinstance(text, str) or (not text and e.kind != "node"):
                self._warn("this record has no name")
                return
        self.copy_text(text, what)

    def copy_text(self, text: str, what: str) -> None:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            self._warn("cannot copy: not valid UTF-8")
            return
        self.copy_to_clipboard(text)  # type: ignore[attr-defined]
        self.notify(f"copied {what}: {safe_str(text, 80)}", timeout=3, markup=False)  # type: ignore[attr-defined]

    def insight_commands(self) -> Iterable[SystemCommand]:
        yield SystemCommand("Used by", "Every node reading the selected value, subgraphs included (u)", self.action_used_by)
        yield SystemCommand("Neighbourhood", "Producers and consumers of the selected node, drawn (a)", self.action_neighbourhood)
        yield SystemCommand("Parameters", "Parameter counts by dtype, largest tensors (P)", self.action_parameters)
        yield SystemCommand("Operator help", "The selected node's ONNX schema (o)", self.action_operator_help)
        yield SystemCommand("Tensor values", "A grid of the selected tensor's values (v)", self.action_values)
        yield SystemCommand("Export .npy", "Write the selected tensor to a .npy file (e)", self.action_export_npy)
        yield SystemCommand("Byte inspector", "Decode the bytes under the hex cursor (i)", self.action_toggle_inspector)
        yield SystemCommand("Copy name", "Copy the selected record's name (y)", lambda: self.action_copy("name"))
        yield SystemCommand("Copy where", "Copy the selected record's where path (Y)", lambda: self.action_copy("where"))
