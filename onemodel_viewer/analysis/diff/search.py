"""Search over both models of a diff: the diff viewer's ``/``.

No UI here. Each side's names are searched with its own :class:`~.search.SearchIndex`; a match is
reported once per diff entry (a record found in A and in B is one match), by the entry's ``where``
in the diff tree, with the side(s) it was found in.
"""

from __future__ import annotations

import threading

from ...format.document import Document
from .result import ADDED, CHANGED, REMOVED, DiffNode
from ..search import SearchIndex

MARK = {ADDED: "+", REMOVED: "-", CHANGED: "~"}
"""The diff tree's marker of a status (``=`` for equal)."""


def entries_by_record(root: DiffNode | None) -> tuple[dict[str, DiffNode], dict[str, DiffNode]]:
    """A's and B's records (by their own ``where``: ``manifest.graph.nodes[3]``, ``onnx.graph...``) to
    the diff entries showing them."""
    out: tuple[dict[str, DiffNode], dict[str, DiffNode]] = ({}, {})
    for dn in root.walk() if root is not None else ():
        for side, rec in enumerate((dn.a, dn.b)):
            where = getattr(rec, "where", "")
            if isinstance(where, str) and where:
                out[side].setdefault(where, dn)
    return out


class DiffSearchIndex:
    """Names of nodes, tensors and values of both documents, each match mapped to its diff entry."""

    def __init__(self, a: Document, b: Document, root: DiffNode | None,
                 cancel: threading.Event | None = None) -> None:
        self.sides = (SearchIndex(a, cancel), SearchIndex(b, cancel))
        self._by_record = entries_by_record(root)

    def matches(self, query: str) -> list[tuple[str, str, str]]:
        """(diff where, marker and description, what matched and where) of each matching entry,
        A's matches first, then those only in B."""
        found: dict[int, list] = {}
        order: list[int] = []
        for side, index in enumerate(self.sides):
            for where, desc, why in index.matches(query):
                dn = self._by_record[side].get(where)
                if dn is None:
                    continue
                hit = found.get(id(dn))
                if hit is None:
                    found[id(dn)] = [dn, desc, why, "AB"[side]]
                    order.append(id(dn))
                elif "AB"[side] not in hit[3]:
                    hit[3] += "AB"[side]
        out = []
        for k in order:
            dn, desc, why, sides = found[k]
            where = "in A and B" if sides == "AB" else f"in {sides} only" if dn.status in (ADDED, REMOVED) else f"in {sides}"
            out.append((dn.where, f"{MARK.get(dn.status, '=')} {desc}", f"{why}, {where}"))
        return out
