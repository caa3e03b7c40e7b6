"""A node's graph neighbourhood: its producers ``up`` levels up and consumers ``down`` levels down,
laid out in layers (a simple layered layout: one layer per distance, boxes in first-seen order),
with fan-outs folded. No UI here; ``tui/screens/neighbourhood.py`` draws it.

Producers and consumers come from the caller's facts (``facts.of(graph)``: ``producer``,
``consumers``, ``initializer``, ``types``) and, for readers inside subgraphs, from a
:class:`~.usedby.UsedBy` (those edges are marked ``subgraph``). Graph inputs, initializers and
graph outputs appear as boxes of their own kind. Work is bounded by the boxes drawn: a value
read by 10,000 nodes costs one fold box, not 10,000.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..format.schema import Graph, Node

__all__ = ["Box", "Edge", "Neighbourhood", "neighbourhood", "FOLD"]

FOLD = 6
"""Boxes shown per fan-out (one parent's producers or consumers) before the rest are folded."""
LAYER_MAX = 24
"""Boxes per layer at most (the rest folded)."""


@dataclass(slots=True)
class Box:
    id: int
    kind: str
    """``node``, ``input`` (graph input), ``init`` (initializer), ``output`` (graph output), ``fold``."""
    op: str
    """Node op / ``input`` / ``initializer`` / ``output`` / ``N more``."""
    name: str
    where: str
    level: int
    """0 for the centre; negative: producers, positive: consumers."""
    node: Node | None = None
    graph: Graph | None = None
    folded: int = 0
    """For a fold box: how many boxes it stands for."""


@dataclass(frozen=True, slots=True)
class Edge:
    src: int
    dst: int
    value: str
    type: str
    """The value's type as text ("" when unknown)."""
    subgraph: bool = False
    """The reader is a node inside a subgraph of ``dst``'s... (a read from an enclosing graph)."""


@dataclass(slots=True)
class Neighbourhood:
    centre: int
    levels: dict[int, list[int]] = field(default_factory=dict)
    """level -> box ids, left to right."""
    boxes: dict[int, Box] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)

    def edges_in(self, box: int) -> list[Edge]:
        return [e for e in self.edges if e.dst == box]

    def edges_out(self, box: int) -> list[Edge]:
        return [e for e in self.edges if e.src == box]

    def neighbours(self, box: int, direction: int) -> list[int]:
        """Boxes joined to ``box`` one level up (-1) or down (+1), in layer order."""
        lvl = self.boxes[box].level + direction
        joined = {e.src for e in self.edges if e.dst == box} | {e.dst for e in self.edges if e.src == box}
        return [b for b in self.levels.get(lvl, []) if b in joined]


def _type_text(types: dict[str, Any], name: str, infer) -> str:
    t = types.get(name)
    if t is None and infer is not None:
        t = infer(name)
    return "" if t is None else str(t)


def neighbourhood(g: Graph, index: int, facts, *, up: int = 1, down: int = 1, used_by=None,
                  infer=None, fold: int = FOLD) -> Neighbourhood:
    """The neighbourhood of node ``index`` of ``g``.

    ``facts.of(g)`` gives producers/consumers; ``used_by`` (optional, a built UsedBy) adds readers
    inside subgraphs; ``infer(name)`` (optional) types values without a declared type.
    """
    f = facts.of(g)
    nodes = g.nodes
    out_names = {v.name for v in g.outputs}
    input_where = {v.name: v.where for v in g.inputs}
    nb = Neighbourhood(centre=0)
    seen: dict[tuple, int] = {}

    def box(key: tuple, make) -> tuple[int, bool]:
        b = seen.get(key)
        if b is not None:
            return b, False
        b = len(nb.boxes)
        nb.boxes[b] = make(b)
        seen[key] = b
        nb.levels.setdefault(nb.boxes[b].level, []).append(b)
        return b, True

    def node_box(i: int, level: int, graph: Graph = g) -> tuple[int, bool]:
        n = graph.nodes[i]
        return box(("n", id(graph), i), lambda b: Box(b, "node", n.op, n.name, n.where, level, n, graph))

    centre, _ = node_box(index, 0)
    nb.centre = centre

    def room(level: int) -> bool:
        return len(nb.levels.get(level, ())) < LAYER_MAX

    def fold_box(level: int, count: int, what: str, where: str) -> int:
        b = len(nb.boxes)
        nb.boxes[b] = Box(b, "fold", f"{count:,} more", what, where, level, folded=count)
        nb.levels.setdefault(level, []).append(b)
        return b

    # producers, level by level
    frontier = [centre]
    for level in range(-1, -up - 1, -1):
        nxt: list[int] = []
        for b in frontier:
            bx = nb.boxes[b]
            if bx.kind != "node" or bx.graph is not g:
                continue
            ins = [x for x in bx.node.inputs if x]
            shown = 0
            for k, x in enumerate(ins):
                if shown >= fold or not room(level):
                    fold_box(level, len(ins) - k, f"inputs of {bx.name or bx.op}", bx.where)
                    nb.edges.append(Edge(nb.levels[level][-1], b, "…", ""))
                    break
                ty = _type_text(f.types, x, infer)
                if x in f.producer:
                    src, new = node_box(f.producer[x], level)
                elif x in f.initializer:
                    t = f.initializer[x]
                    src, new = box(("i", x), lambda bb: Box(bb, "init", "initializer", x, t.where, level))
                elif x in input_where:
                    src, new = box(("in", x), lambda bb: Box(bb, "input", "input", x, input_where[x], level))
                else:
                    src, new = box(("u", x), lambda bb: Box(bb, "input", "outer/undefined", x,
                                                            f.value_where.get(x, "") if hasattr(f, "value_where") else "", level))
                nb.edges.append(Edge(src, b, x, ty))
                shown += 1
                if new:
                    nxt.append(src)
        frontier = nxt
    # consumers, level by level
    frontier = [centre]
    for level in range(1, down + 1):
        nxt = []
        for b in frontier:
            bx = nb.boxes[b]
            if bx.kind != "node" or bx.graph is not g:
                continue
            for x in (o for o in bx.node.outputs if o):
                ty = _type_text(f.types, x, infer)
                readers = f.consumers.get(x, [])
                outer = used_by.outer(g, x) if used_by is not None else []
                total = len(readers) + len(outer) + (1 if x in out_names else 0)
                shown = 0
                for i in readers:
                    if shown >= fold or not room(level):
                        break
                    dst, new = node_box(i, level)
                    nb.edges.append(Edge(b, dst, x, ty))
                    shown += 1
                    if new:
                        nxt.append(dst)
                for u in outer:
                    if shown >= fold or not room(level):
                        break
                    key = ("s", id(u.node))
                    dst, new = box(key, lambda bb, u=u: Box(bb, "node", u.node.op, u.node.name, u.node.where, level,
                                                            u.node, u.graph))
                    nb.edges.append(Edge(b, dst, x, ty, subgraph=True))
                    shown += 1
                if x in out_names and shown < fold and room(level):
                    v = next(v for v in g.outputs if v.name == x)
                    dst, _ = box(("o", x), lambda bb: Box(bb, "output", "output", x, v.where, level))
                    nb.edges.append(Edge(b, dst, x, ty))
                    shown += 1
                if total > shown:
                    fb = fold_box(level, total - shown, f"readers of {x}", bx.where)
                    nb.edges.append(Edge(b, fb, x, ty))
        frontier = nxt
    return nb
