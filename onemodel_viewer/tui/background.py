"""The viewer's background job: what needs the whole model, in one worker thread after the first screen.

:class:`BackgroundWork` is mixed into the viewer app (``tui/app.py``): the main graph's facts and
the search index (:meth:`~.search.SearchActions._prepare_search`), then, for a OneModel file, the
findings that need its bytes (:func:`~onemodel_viewer.analysis.layout.file_findings`), added to the
tree's findings group and the info bar when they arrive.
"""

from __future__ import annotations

import threading

from textual import work

from ..analysis.facts import Facts
from ..format.document import Document
from .info_bar import InfoBar
from .structure_tree import StructureTree

__all__ = ["BackgroundWork"]


class BackgroundWork:
    """The background job of the viewer app (a mixin: ``self`` is the app)."""

    def _start_background(self) -> None:
        """Work that needs the whole model (byte-level findings, the search index), in threads.

        Started once the first screen is on the terminal: before it, these threads take the
        interpreter from the UI thread (measured: first screen of the 10,000-node bench model
        ~0.84 s -> ~1.15 s when they started at mount).
        """
        doc = self.document
        if doc is None or doc.model is None:
            return
        self._background_cancel.set()  # the previous document's job, if it still runs
        self._background_cancel = cancel = threading.Event()
        self._background(doc, self.facts, cancel)

    @work(thread=True, exclusive=True, group="background", exit_on_error=False)
    def _background(self, doc: Document, facts: Facts, cancel: threading.Event) -> None:
        """One thread, one task after the other: each busy thread takes the interpreter from the UI
        thread every few milliseconds (measured on a 10^6-node model: three at once made a key press
        take ~2 s, one ~60 ms). ``cancel`` (set on quit and reload) stops it between and inside tasks."""
        # ``doc`` and ``facts`` are this document's: a reload replaces self.document/self.facts while
        # this thread runs on (it cannot be stopped), and its results must not land in the new ones
        self._prepare_search(doc, facts, cancel)
        if doc.source == "onemodel" and doc is self.document and not cancel.is_set():
            self._file_findings(doc, cancel)

    def _file_findings(self, doc: Document, cancel: threading.Event | None = None) -> None:
        """The findings that need the bytes (padding, unowned and shared bytes, canonical form): off the UI thread."""
        from ..analysis.layout import file_findings

        try:
            extra = file_findings(doc, cancel=cancel)
        except Exception:  # a changed file or a core bug: the open-time findings stay, the app stays up
            return
        if cancel is not None and cancel.is_set():  # scans given up half way: not findings to show
            return
        if extra:
            try:
                self.call_from_thread(self._add_findings, doc, extra)
            except Exception:  # app shutting down
                pass

    def _add_findings(self, doc: Document, extra: list) -> None:
        if doc is not self.document:
            return
        doc.findings.extend(extra)
        tree = self.query_one(StructureTree)
        old = next((e for e in tree.roots if e.key == "findings"), None)
        if old is not None:
            new = self.factory.findings_entry()
            old.label, old.children = new.label, new.children
            tree.refresh_entry(old)
        self.query_one("#infobar", InfoBar).show(self._info_parts())
