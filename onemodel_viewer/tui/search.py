"""The viewer's search: ``/`` finds nodes, tensors and values by name or op, ``n``/``N`` go through
the matches, ``f`` lists them all.

:class:`SearchActions` is mixed into the viewer app (``tui/app.py``, which holds the bindings). The
index is :class:`~onemodel_viewer.analysis.search.SearchIndex`, built by the app's background job
after the first screen (:meth:`SearchActions._prepare_search`) or, when a search comes first, on
the spot.
"""

from __future__ import annotations

import threading
from typing import Iterable

from textual.app import SystemCommand

from ..analysis.facts import Facts
from ..analysis.search import SearchIndex
from ..format.document import Document
from .widgets.safe import safe_str

__all__ = ["SearchActions", "SearchIndex"]


class SearchActions:
    """Search state and actions of the viewer app (a mixin: ``self`` is the app, which has ``reveal(where)``)."""

    MATCH_KEYS = "f: all matches"
    """The keys named in a match's toast (the diff viewer binds others)."""

    def _reset_search(self) -> None:
        """No index, no matches (a new document)."""
        self.search_matches: list[tuple[str, str]] = []
        self.match_index = -1
        self._search_index: SearchIndex | None = None

    def _prepare_search(self, doc: Document, facts: Facts, cancel: threading.Event | None = None) -> None:
        """Build the main graph's facts (producers, consumers, types: the node list and the detail pane
        need them) and the search index off the UI thread, so opening the nodes and `/` answer at once."""
        cancelled = cancel.is_set if cancel is not None else lambda: False
        if doc.model is None or doc is not self.document or cancelled():
            return
        facts.of(doc.model.graph)
        if doc is not self.document or cancelled():
            return
        index = SearchIndex(doc, cancel)
        if cancelled():  # the index may be incomplete
            return
        try:
            self.call_from_thread(self._set_search_index, doc, index)
        except Exception:  # app shutting down
            pass

    def _set_search_index(self, doc: Document, index: "SearchIndex") -> None:
        if doc is self.document and self._search_index is None:
            self._search_index = index

    def action_search(self) -> None:
        from .widgets.prompt import Prompt

        def done(text: str | None) -> None:
            if text:
                self.search(text)

        self.push_screen(Prompt("Search nodes, tensors, values (name or op)", "e.g. MatMul or layers.3"), done)

    def search(self, query: str) -> int:
        """Find ``query``; jump to the first match. Returns the number of matches."""
        if self._search_index is None:
            self._search_index = self._make_search_index()
            if self._search_index is None:
                return 0
        found = self._search_index.matches(query)
        self.search_matches = [(w, d) for w, d, _ in found]
        self._search_why = [why for _, _, why in found]
        self._search_query = query
        self.match_index = -1
        if not self.search_matches:
            self.notify(f"no match for {safe_str(query, 40)}", severity="warning", markup=False)
            return 0
        self.action_next_match(1)
        return len(self.search_matches)

    def _make_search_index(self):
        """The index a search asks (anything with ``matches(query)``), built now; None: nothing to search."""
        return SearchIndex(self.document) if self.document is not None else None

    def action_next_match(self, step: int) -> None:
        if not self.search_matches:
            self.notify("no search: press / to search", markup=False)
            return
        self._go_to_match((self.match_index + step) % len(self.search_matches))

    def _go_to_match(self, index: int) -> None:
        self.match_index = index
        where, desc = self.search_matches[index]
        self.reveal(where)
        why = getattr(self, "_search_why", [])
        hit = f" ({safe_str(why[index], 60)})" if index < len(why) else ""
        self.notify(f"match {index + 1}/{len(self.search_matches)}: {safe_str(desc, 60)}{hit} · {self.MATCH_KEYS}",
                    timeout=3, markup=False)

    def action_search_results(self) -> None:
        """``f``: the last search's matches in a list; Enter goes to one."""
        if not self.search_matches:
            self.notify("no search: press / to search", markup=False)
            return
        from .screens.search_results import SearchResults

        why = getattr(self, "_search_why", [])
        rows = [(w, d, why[i] if i < len(why) else "") for i, (w, d) in enumerate(self.search_matches)]

        def done(index: int | None) -> None:
            if index is not None and 0 <= index < len(self.search_matches):
                self._go_to_match(index)

        self.push_screen(SearchResults(getattr(self, "_search_query", ""), rows, self.match_index), done)

    def search_commands(self) -> Iterable[SystemCommand]:
        """The command palette's search entries."""
        yield SystemCommand("Search", "Search nodes, tensors and values (/)", self.action_search)
        yield SystemCommand("Search results", "Every match of the last search (f)", self.action_search_results)
