"""The viewer's background job: what needs the whole model, in one worker thread after the first screen.

:class:`BackgroundWork` is mixed into the viewer app (``tui/app.py``): first what the viewer's open
left out (:func:`open_for_viewer`): for a big manifest, the checks of its node lists and the reading
rules (the verdict: the info bar says "checking…" instead of "valid" until then; what they find goes to
the problems group and the info bar, the cursor to the first problem if it has not moved, and the
tensors' byte ranges to the hex pane's map; the problems and layout screens opened meanwhile, which
said "checking…", are filled again; an edit's comparison waits for the checks:
:meth:`~BackgroundWork.wait_for_checks`), then the ``duplicate-key`` findings; then the main graph's
facts, the insight's used-by map, parameter counts and inferred types (:meth:`~.insight.Insight.run`), the
search index (:meth:`~.search.SearchActions._prepare_search`), then, for a OneModel file, the
findings that need its bytes (:func:`~onemodel_viewer.analysis.layout.onemodel.file_findings`), added to the
tree's findings group and the info bar when they arrive (which says "checking for findings…" until
the job ends).

The cyclic GC: the viewer (``run_viewer``) opens with the collector off; it stays off while this
job runs and is turned back on, with everything alive frozen, when the job ends. The job builds
millions of records that all stay alive: with the collector on, each full collection walked all of
them again, holding the interpreter (measured on a 10^6-node model: collections of 0.4-1.8 s, the
key presses waited that long).

Input first: while the UI thread answers a key or a click (:data:`INPUT_HOLD` after each), the job
waits at its next step (:class:`JobCancel`). Sharing the interpreter, every time the UI thread let
go of it (each turn of its event loop) it waited up to a switch interval to get it back from the
job: a key's answer, dozens of turns, took 100-250 ms on a 10^6-node model instead of ~30.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, NamedTuple

from textual import events, work

from ..analysis.facts import Facts
from ..format.document import Document
from ..process import favour_ui_thread, freeze_gc
from .hex.bytemap import ByteMap
from .hex.hex_view import HexView
from .widgets.info_bar import InfoBar, count_nodes, count_tensors
from .widgets.structure_tree import StructureTree

__all__ = ["BackgroundWork", "DEFER_BYTES", "INPUT_HOLD", "JobCancel", "OpenRest", "open_for_viewer"]

INPUT_HOLD = 0.15
"""Seconds the background job waits after each key or click (the answer is drawn meanwhile)."""
_INPUT = (events.Key, events.MouseDown, events.MouseScrollDown, events.MouseScrollUp)


KEEP_PARSE_BYTES = 16 << 20
"""Manifests under this many bytes keep the open's parse for a first edit (:attr:`BackgroundWork.edit_base_parse`:
~5x the manifest's bytes; a 10,000-node model's 2.3 MB: 11 MB)."""
DEFER_BYTES = 1 << 20
"""Manifests of at least this many bytes open with their node checks and reading rules left to the
background job (:func:`open_for_viewer`); a smaller one is checked whole before its first screen (~8 ms)."""


class OpenRest(NamedTuple):
    """What the viewer's open left to the background job."""

    parsed: Any
    """The open's parse while its duplicate keys are to be found, else None."""
    finish: Callable[..., bool] | None
    """The node checks and reading rules still to run (``finish`` of :func:`~..format.reader.open_deferred`), else None."""


def open_for_viewer(path: str) -> tuple[Document, OpenRest | None]:
    """A diagnose open that leaves ``duplicate-key`` to the background job (10^6 nodes: 0.24 s off the
    first screen) and, for a manifest of :data:`DEFER_BYTES` or more, the checks of its node lists and
    the reading rules (10^6 nodes: ~1 s); with what that job needs (None when nothing is left)."""
    from ..format.reader import open_deferred

    doc, parsed, finish = open_deferred(path)
    if finish is not None and (doc.manifest_span or (0, 0))[1] < DEFER_BYTES:
        finish()  # a small model's first screen shows its verdict
        finish = None
    if parsed is not None and parsed.checked_duplicates:
        parsed = None
    return doc, (OpenRest(parsed, finish) if parsed is not None or finish is not None else None)


class JobCancel(threading.Event):
    """The background job's cancel flag, and its steps: asked from the job's thread (the analysis loops
    ask ``is_set`` now and then: every few thousand nodes), it first waits while the UI answers input."""

    def __init__(self) -> None:
        super().__init__()
        self.input_until = 0.0
        """Monotonic time until which the job waits (set by the UI thread on input)."""

    def is_set(self) -> bool:
        if threading.current_thread() is not threading.main_thread():
            while not super().is_set() and (left := self.input_until - time.monotonic()) > 0:
                time.sleep(min(left, INPUT_HOLD))
        return super().is_set()


class BackgroundWork:
    """The background job of the viewer app (a mixin: ``self`` is the app)."""

    background_gc_held = False
    """True while the GC stays off for the running job (turned on, frozen, when it ends)."""
    findings_pending = False
    """True from the document's first screen until its background job ends (the info bar says so):
    ``duplicate-key`` and the findings that need the bytes come from the job."""
    checks_pending = False
    """True while the document's node checks and reading rules wait for the job (its problems are not
    all known: the info bar says "checking…", not "valid")."""
    checks_failed = False
    """The job could not finish those checks (a changed file, a core bug): the verdict stays unknown."""
    first_selection = None
    """The entry the document's first screen selected (the cursor goes to the first problem found later
    while it is still there)."""
    unchecked_manifest: OpenRest | None = None
    """What the document's open left to the job (:func:`open_for_viewer`); the next job takes it."""
    background_running = False
    """True from the shown document's job's start to its end."""
    keep_gc_off = False
    """True while something else needs the GC off (an edit's re-read): the job's end then leaves it off."""
    edit_base_parse: tuple | None = None
    """(the document shown, its manifest's parse) once its job proved no key repeats, for a manifest under
    :data:`KEEP_PARSE_BYTES`: the edit session started on it splices its first edit into that parse
    instead of parsing the whole manifest again (one call no other thread can interrupt: 10-30 ms on 10,000 nodes)."""
    _checks_wait: tuple = (None, None)
    """(the document shown, a ``threading.Event`` set once its deferred checks have ended), for
    :meth:`wait_for_checks`; one tuple, replaced whole (read from worker threads)."""

    def expect_background(self, doc: Document) -> None:
        """A new document is shown: what its job will find is pending (the info bar says so)."""
        self.findings_pending = doc.source == "onemodel" and doc.model is not None
        rest = self.unchecked_manifest
        self.checks_pending, self.checks_failed = rest is not None and rest.finish is not None, False
        settled = threading.Event()
        if not self.checks_pending:
            settled.set()
        self._checks_wait = (doc, settled)

    def wait_for_checks(self, doc: Document, stop: Callable[[], bool]) -> bool:
        """From a worker thread: wait until ``doc``'s deferred checks have ended, letting the background
        job go on meanwhile (an edit's re-read holds it); at once when ``doc`` is not the document shown
        or had none waiting. ``stop()`` (asked every few ms) True gives up. True: ``doc.problems`` is
        complete (as far as the checks could go), False: given up."""
        while True:
            shown, settled = self._checks_wait
            if shown is not doc or settled.is_set():
                return True
            if stop():
                return False
            self.release_background()  # (a key pressed meanwhile holds it again, briefly)
            settled.wait(0.02)

    def verdict_note(self) -> str:
        """Why the problems listed may not be all of them (the info bar's ``unchecked``), or ''."""
        return "checks incomplete" if self.checks_failed else "checking…" if self.checks_pending else ""

    def _start_background(self, *, hold_gc: bool = False) -> bool:
        """Work that needs the whole model (facts, insight, the search index, byte-level findings), in one thread.

        Started once the first screen is on the terminal: before it, a busy thread takes the
        interpreter from the UI thread (measured: first screen of the 10,000-node bench model
        ~0.84 s -> ~1.15 s when it started at mount). ``hold_gc``: the caller paused the GC and
        leaves it off until the job ends (see the module docstring). Returns whether a job started.
        """
        doc = self.document
        if doc is None or doc.model is None:
            return False
        self._background_cancel.set()  # the previous document's job, if it still runs
        self._background_cancel = cancel = JobCancel()
        self.background_gc_held = self.background_gc_held or hold_gc
        self.background_running = True
        favour_ui_thread(True)
        # in a list the job empties: the worker keeps its arguments to its end, and the parse must go
        # before the node records are built (the raw nodes and the records together: ~1 GB more for 10^6)
        rest, self.unchecked_manifest = self.unchecked_manifest, None
        self.edit_base_parse = None  # an earlier document's
        shown, settled = self._checks_wait
        if shown is not doc or rest is None or rest.finish is None:
            settled = None
        self._background(doc, self.facts, cancel, [rest.finish if rest is not None else None,
                                                   rest.parsed if rest is not None else None], settled)
        del rest
        return True

    # the description: Textual's default is the repr of the arguments, and the repr of a document
    # walks its whole model (10^6 nodes: every node record built on the UI thread, ~9 s)
    @work(thread=True, exclusive=True, group="background", exit_on_error=False,
          description="background job: facts, insight, search index, findings")
    def _background(self, doc: Document, facts: Facts, cancel: threading.Event, unchecked: list,
                    settled: threading.Event | None = None) -> None:
        """One thread, one task after the other: each busy thread takes the interpreter from the UI
        thread every few milliseconds (measured on a 10^6-node model: three at once made a key press
        take ~2 s, one ~60 ms). ``cancel`` (set on quit and reload) stops it between and inside tasks.
        ``unchecked``: ``[the open's node checks (:attr:`OpenRest.finish`) or None, its parse (duplicate
        keys still to be found) or None]``, emptied by the first tasks; ``settled``: set once those checks
        have ended (run, failed or given up: :meth:`wait_for_checks`)."""
        # ``doc`` and ``facts`` are this document's: a reload replaces self.document/self.facts while
        # this thread runs on (it cannot be stopped), and its results must not land in the new ones
        try:
            finish = unchecked.pop(0)
            if finish is not None and doc is self.document and not cancel.is_set():
                self._finish_checks(doc, finish, cancel, settled)
            del finish
            if settled is not None:
                settled.set()
            parsed = unchecked.pop()
            if parsed is not None and doc is self.document and not cancel.is_set():
                self._duplicate_findings(doc, parsed, cancel)
                if (doc.keys_unique is True and not parsed.stdlib and doc.manifest_span is not None
                        and doc.manifest_span[1] < KEEP_PARSE_BYTES):
                    self.edit_base_parse = (doc, parsed.value)
            del parsed
            if doc.model is not None and doc is self.document and not cancel.is_set():
                facts.of(doc.model.graph, step=cancel.is_set)
                try:  # a big graph's detail was drawn without its links (Facts.quick): now with them
                    self.call_from_thread(self._facts_known, doc)
                except Exception:  # app shutting down
                    return
            insight = self.insight
            if insight is not None and insight.doc is doc and not cancel.is_set():
                insight.run(cancel)
            self._prepare_search(doc, facts, cancel)
            if doc.source in ("onemodel", "onnx") and doc is self.document and not cancel.is_set():
                self._file_findings(doc, cancel)
        finally:
            if settled is not None:
                settled.set()
            try:
                self.call_from_thread(self._background_ended, cancel)
            except Exception:  # app shutting down
                pass

    def _finish_checks(self, doc: Document, finish: Callable[..., bool], cancel: threading.Event,
                       settled: threading.Event | None = None) -> None:
        """The node checks and reading rules the open left (a piece at a time), then ``settled`` set and the UI told."""
        try:
            done = finish(cancel.is_set)
        except Exception:  # a changed file or a core bug: the app stays up, the verdict unknown
            done = False
        if settled is not None:
            settled.set()  # doc.problems complete: an edit's comparison waits for it (not for the UI)
        if cancel.is_set():  # (each is_set a step: it waits while a key is answered)
            return
        # what the checked nodes add: their subgraphs' nodes, the tensors of their attributes; and the
        # tensors' byte ranges, left out of the first screen's map (10^5 tensors: ~60 ms in one piece)
        counts = (count_tensors(doc), count_nodes(doc))
        if cancel.is_set():
            return
        tensor_map = ByteMap(doc)
        try:
            self.call_from_thread(self._checks_done, doc, done, counts, tensor_map)
        except Exception:  # app shutting down
            pass

    def _checks_done(self, doc: Document, done: bool, counts: tuple[int, int], tensor_map: ByteMap) -> None:
        """On the UI thread: the verdict, counts, groups and tensor colours once the node checks have run."""
        if doc is not self.document:
            return
        self.checks_pending, self.checks_failed = False, not done
        self._counts = (doc, *counts)
        hexv = self.query_one(HexView)
        if self.bytemap is not None:
            self.bytemap.spans = tensor_map.spans  # the same map object the panes hold, with every tensor
            if hexv.bytemap is self.bytemap:
                hexv.set_source(hexv.storage, hexv.bytemap)  # drawn again in the new colours
        self._refresh_group("problems", self.factory.problems_entry())
        self._refresh_group("findings", self.factory.findings_entry())
        self.query_one("#infobar", InfoBar).show(self._info_parts())
        if doc.problems and self.current is not None and self.current is self.first_selection:
            self._place_cursor(self.query_one(StructureTree).roots)  # not moved since: on the first problem
        self._screens_checked(doc)
        if not done:
            self.notify("the checks of this model's nodes stopped: its problems may not all be listed",
                        severity="error", timeout=8, markup=False)

    def _screens_checked(self, doc: Document) -> None:
        """The problems and layout screens opened while the checks ran (they said "checking…"): the
        problems listed again, the extents computed again."""
        from .screens.layout import LayoutScreen
        from .screens.problems import ProblemsScreen

        note = self.verdict_note()
        for screen in self.screen_stack:
            if isinstance(screen, ProblemsScreen) and screen.note:
                screen.show_records(list(doc.problems), list(doc.findings), note)
            elif isinstance(screen, LayoutScreen) and screen.note and screen.document is doc:
                screen.checks_ended(note)

    def _facts_known(self, doc: Document) -> None:
        if doc is self.document:
            self.refresh_detail()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, _INPUT):  # the job steps aside while this is answered
            self.hold_background(INPUT_HOLD)
        await super().on_event(event)  # type: ignore[misc]

    def hold_background(self, seconds: float) -> None:
        """The job waits at its next step for ``seconds`` (the UI thread draws something big meanwhile).
        Keep it short: a step can come while the job holds a graph's facts lock (``Facts.of``)."""
        cancel = self._background_cancel
        if isinstance(cancel, JobCancel):
            cancel.input_until = max(cancel.input_until, time.monotonic() + seconds)

    def release_background(self) -> None:
        """The job goes on at its next step (ends :meth:`hold_background`)."""
        cancel = self._background_cancel
        if isinstance(cancel, JobCancel):
            cancel.input_until = 0.0

    def _background_ended(self, cancel: threading.Event) -> None:
        """The job of ``cancel`` ended: the GC back on unless a newer job runs or :attr:`keep_gc_off`; no findings to come."""
        if cancel is self._background_cancel:
            self.background_running = False
            favour_ui_thread(self.keep_gc_off)  # an edit's re-read runs: it wants the UI favoured too
            if self.findings_pending and self.document is not None:
                self.findings_pending = False
                self.query_one("#infobar", InfoBar).show(self._info_parts())
        if self.background_gc_held and cancel is self._background_cancel:
            self.background_gc_held = False
            if not self.keep_gc_off:
                freeze_gc()

    def _duplicate_findings(self, doc: Document, parsed, cancel: threading.Event) -> None:
        """``duplicate-key`` of the open's parse ``parsed`` (the viewer's open leaves them to this job)."""
        from ..format.reader import duplicate_key_findings

        if doc.manifest_span is None or doc.storage is None:
            return
        mo, ml = doc.manifest_span
        try:
            doc.storage.check()
            with doc.storage.span(mo, ml) as data:  # the mapping's bytes (a remote file's: from its cache)
                found = duplicate_key_findings(data, mo, parsed, step=cancel.is_set)
        except Exception:  # a changed file or a core bug: the app stays up
            return
        if found is not None:  # looked for to the end (None: stopped)
            doc.keys_unique = not any(f.code == "duplicate-key" for f in found)
        self._post_findings(doc, found)

    def _file_findings(self, doc: Document, cancel: threading.Event | None = None) -> None:
        """The findings that need the bytes (padding, unowned and shared bytes, canonical form): off the UI thread."""
        from ..analysis.layout.onemodel import file_findings

        try:
            extra = file_findings(doc, cancel=cancel)
        except Exception:  # a changed file or a core bug: the open-time findings stay, the app stays up
            return
        if cancel is not None and cancel.is_set():  # scans given up half way: not findings to show
            return
        self._post_findings(doc, extra)

    def _post_findings(self, doc: Document, found: list) -> None:
        """From the job's thread: ``found`` added to ``doc``'s findings on the UI thread (none: nothing)."""
        if found:
            try:
                self.call_from_thread(self._add_findings, doc, found)
            except Exception:  # app shutting down
                pass

    def _add_findings(self, doc: Document, extra: list) -> None:
        if doc is not self.document:
            return
        doc.findings.extend(extra)
        self._refresh_group("findings", self.factory.findings_entry())
        self.query_one("#infobar", InfoBar).show(self._info_parts())

    def _refresh_group(self, key: str, new) -> None:
        """The tree's top-level group ``key`` (``problems``, ``findings``) takes the label and children of ``new``."""
        tree = self.query_one(StructureTree)
        old = next((e for e in tree.roots if e.key == key), None)
        if old is not None:
            old.label, old.children = new.label, new.children
            tree.refresh_entry(old)
