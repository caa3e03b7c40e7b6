"""Unscoped names (``Conv_12``, ``Relu_3``): a scope's many direct nodes grouped into connected stretches.

A stretch is a run of nodes, in dependency order, each reading the one before it through a value
nobody else reads: it ends at a branch point (a value read by several nodes, a node reading several
values of the run). Consecutive stretches are then merged (a long one cut) so that a scope shows at
most about :data:`MAX_ROWS` rows; a merged group of more than that is split again, one level down.
So 860 unscoped nodes read as ~50 rows, 10^6 as four levels of at most ~50. No UI here.
"""

from __future__ import annotations

from ..facts import GraphFacts
from .rows import Row

__all__ = ["MAX_ROWS", "split_flat", "chains"]

MAX_ROWS = 48
"""A scope with more direct nodes than this is shown as stretches (at most about this many)."""


def chains(row: Row, gf: GraphFacts) -> list[tuple[int, int]]:
    """[start, end) spans of ``row.nodes`` that are connected stretches between branch points."""
    g = row.graph
    assert g is not None
    nodes, producer, consumers = g.nodes, gf.producer, gf.consumers
    out: list[tuple[int, int]] = []
    start = 0
    prev = -1
    for k, i in enumerate(row.nodes):
        joined = False
        if prev >= 0:
            fed = [x for x in nodes[i].inputs if x and producer.get(x) == prev]
            outs = nodes[prev].outputs
            if len(fed) == 1 and len(outs) == 1 and consumers.get(fed[0]) == [i]:
                others = [x for x in nodes[i].inputs if x and x != fed[0] and x in producer]
                joined = not others
        if not joined and k:
            out.append((start, k))
            start = k
        prev = i
    if row.nodes:
        out.append((start, len(row.nodes)))
    return out


def _label(row: Row, a: int, b: int) -> str:
    nodes = row.graph.nodes  # type: ignore[union-attr]
    first, last = nodes[row.nodes[a]], nodes[row.nodes[b - 1]]
    x, y = first.name or first.op, last.name or last.op
    return x if b - a == 1 else f"{x} … {y}"


def split_flat(row: Row, gf: GraphFacts, limit: int = MAX_ROWS) -> None:
    """Replace ``row``'s direct nodes by ``stretch`` rows when it has more than ``limit`` of them."""
    total = len(row.nodes)
    if total <= limit or row.graph is None:
        return
    target = -(-total // limit)
    groups: list[tuple[int, int]] = []
    start = None
    for a, b in chains(row, gf):
        while b - a > target:  # a long chain: cut into pieces
            if start is not None:
                groups.append((start, a))
                start = None
            groups.append((a, a + target))
            a += target
        if start is None:
            start = a
        if b - start >= target:
            groups.append((start, b))
            start = None
    if start is not None:
        groups.append((start, total))
    for a, b in groups:
        s = Row("stretch", _label(row, a, b), row.graph, row.nodes[a:b], row.pos[a:b], first=row.pos[a])
        split_flat(s, gf, limit)
        row.children.append(s)
    row.nodes, row.pos = [], []
