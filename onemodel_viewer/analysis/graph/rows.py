"""The records of a scope outline: :class:`Row` (one row: a scope, stretch, node, subgraph, function
or folded run) and :class:`Outline` (a model's rows). Built by :mod:`.scopes`, folded by
:mod:`.folding`. No UI here."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...format.schema import Graph, Node
from ..facts import Facts, GraphFacts

__all__ = ["STEP", "Row", "Outline", "subtree_nodes"]

STEP = 4096
"""Nodes between two calls of a build's ``step``."""


@dataclass(eq=False, slots=True)
class Row:
    """One row of the outline: a scope, a stretch, a node, a subgraph, a function or a folded run."""

    kind: str
    """``root``, ``scope``, ``stretch`` (unscoped nodes, :mod:`.fallback`), ``node``, ``graph``
    (a subgraph, under its node), ``function``, ``unread`` or ``fold`` (:mod:`.folding`)."""
    label: str
    """The scope's own segment (``layers.0``), a node's name, a graph's attribute and name; from the file."""
    graph: Graph | None = None
    """The graph whose nodes :attr:`nodes` indexes."""
    nodes: list[int] = field(default_factory=list)
    """Indices (into ``graph.nodes``) of the nodes directly in this row (not rows of their own), in dependency order."""
    pos: list[int] = field(default_factory=list)
    """Dependency positions of :attr:`nodes` (parallel to it)."""
    children: list["Row"] = field(default_factory=list)
    first: int = -1
    """Dependency position of the row's first node in its graph (-1: none)."""
    count: int = 0
    """Nodes in the row, everything under it included (subgraph and function bodies too)."""
    ops: dict[str, int] = field(default_factory=dict)
    params: int = 0
    """Parameter elements (the tensors its nodes read or hold, as :mod:`..params` counts them)."""
    bytes: int = 0
    node: Node | None = None
    """``node`` rows: the node."""
    members: list["Row"] = field(default_factory=list)
    """``fold`` rows: the folded rows (also its children)."""
    odd: dict[int, str] = field(default_factory=dict)
    """``fold`` rows: member index -> how that member differs from the others."""
    differs: str = ""
    """A fold member: how it differs from its siblings (empty when it does not)."""
    own_params: int = 0
    own_bytes: int = 0
    ready: bool = False
    """Its children have been folded (:class:`.folding.Folder`)."""

    def first_node(self) -> tuple[Graph, int] | None:
        """(graph, node index) of the row's first node in dependency order, looking into its rows."""
        if self.kind == "fold":
            return self.members[0].first_node() if self.members else None
        best = (self.pos[0], self.nodes[0]) if self.nodes else None
        for c in self.children:
            if c.kind in ("graph", "function", "unread") or c.graph is not self.graph:
                continue
            hit = c.first_node()
            if hit is not None and (best is None or c.first < best[0]):
                best = (c.first, hit[1])
        return None if best is None or self.graph is None else (self.graph, best[1])

    def where(self) -> str:
        """``where`` of the row's first node (the viewer selects it), or of its graph; empty if none."""
        hit = self.first_node()
        if hit is not None:
            g, i = hit
            return g.nodes.where_of(i) if hasattr(g.nodes, "where_of") else g.nodes[i].where
        return self.graph.where if self.graph is not None else ""


@dataclass(eq=False, slots=True)
class Outline:
    """The outline of a model: :attr:`root`'s children are the top rows."""

    root: Row
    graph: Graph
    facts: GraphFacts
    cache: Facts | None = None
    """The facts of every graph the outline read (subgraphs and function bodies too)."""
    folded: bool = False
    folder: object = None
    """The :class:`.folding.Folder` that folded it (folds a row's children when first needed)."""

    def ensure_folded(self, row: Row) -> None:
        """Fold ``row``'s children if the outline is folded and they are not yet."""
        if self.folder is not None and not row.ready:
            self.folder.ensure(row)  # type: ignore[attr-defined]


def subtree_nodes(row: Row) -> list[tuple[int, int]]:
    """(position, node index) of every node of ``row`` in its own graph (its rows' too; not its
    subgraphs' or functions'), in dependency order."""
    out: list[tuple[int, int]] = list(zip(row.pos, row.nodes))
    stack = [c for c in (row.members if row.kind == "fold" else row.children) if c.graph is row.graph]
    while stack:
        r = stack.pop()
        out.extend(zip(r.pos, r.nodes))
        stack.extend(c for c in (r.members if r.kind == "fold" else r.children) if c.graph is row.graph)
    out.sort()
    return out
