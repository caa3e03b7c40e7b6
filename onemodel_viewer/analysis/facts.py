"""Names in a graph: declared types, producers, consumers, initializers (built once per graph, on demand).

No UI here. The viewer builds the main graph's facts in a worker thread after the first screen
(the node list's types and the detail pane's producers/consumers need them); the used-by map
(:mod:`.usedby`) and the neighbourhood (:mod:`.neighbourhood`) read them through :meth:`Facts.of`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from ..format.schema import Graph, NodeList, Tensor

__all__ = ["QUICK_NODES", "Facts", "GraphFacts"]


@dataclass(eq=False)
class GraphFacts:
    """Names in one graph: declared types, producers and consumers (built once, on demand)."""

    types: dict[str, Any]
    """Value name -> declared :class:`Type` (or a tensor's type string)."""
    producer: dict[str, int]
    """Value name -> index of the node writing it."""
    consumers: dict[str, list[int]]
    """Value name -> indices of nodes reading it."""
    initializer: dict[str, Tensor]
    value_where: dict[str, str]
    """Value name -> ``where`` of its declaration (input/output/value_info/initializer)."""
    ops: dict[str, int] = field(default_factory=dict)
    """Operator name -> how many nodes run it."""


QUICK_NODES = 50_000
"""Graphs with fewer nodes get their facts on the spot from :meth:`Facts.quick` (10^4 nodes: ~10 ms)."""
STEP = 4096
"""Nodes between two calls of :meth:`Facts.of`'s ``step``."""


class Facts:
    """Cache of :class:`GraphFacts` per graph (identity-keyed)."""

    def __init__(self) -> None:
        self._cache: dict[int, tuple[Graph, GraphFacts]] = {}
        self._locks: dict[int, tuple[Graph, threading.Lock]] = {}
        self._guard = threading.Lock()

    def of(self, g: Graph, step: Callable[[], object] | None = None) -> GraphFacts:
        """The facts of ``g``, computed once (thread-safe: the viewer computes the main graph's in a
        worker after the first screen; a request for that graph meanwhile waits for that result, one
        for another graph does not). ``step`` is called every :data:`STEP` nodes while computing (the
        viewer's job waits there while the UI answers a key)."""
        hit = self._cache.get(id(g))
        if hit is not None and hit[0] is g:
            return hit[1]
        with self._guard:
            held = self._locks.get(id(g))
            if held is None or held[0] is not g:
                held = self._locks[id(g)] = (g, threading.Lock())
        with held[1]:
            hit = self._cache.get(id(g))
            if hit is not None and hit[0] is g:
                return hit[1]
            return self._compute(g, step)

    def known(self, g: Graph) -> GraphFacts | None:
        """The facts of ``g`` if computed already (never computes, never waits)."""
        hit = self._cache.get(id(g))
        return hit[1] if hit is not None and hit[0] is g else None

    def quick(self, g: Graph) -> GraphFacts | None:
        """The facts of ``g`` without a long wait (the UI thread's way): known ones, or computed now for
        a graph of fewer than :data:`QUICK_NODES` nodes; None for a big graph whose facts are not known
        yet (the viewer's background job computes them, then the detail pane is drawn again)."""
        hit = self.known(g)
        if hit is not None:
            return hit
        if len(g.nodes) >= QUICK_NODES:
            return None
        return self.of(g)

    def _compute(self, g: Graph, step: Callable[[], object] | None) -> GraphFacts:
        nodes = g.nodes
        if step is not None and type(nodes) is NodeList and not nodes.built:
            for start in range(0, len(nodes), STEP):  # the records built a step at a time
                for i in range(start, min(start + STEP, len(nodes))):
                    nodes.node_at(i)
                step()
        types: dict[str, Any] = {}
        where: dict[str, str] = {}
        init: dict[str, Tensor] = {}
        for t in g.initializers:
            types.setdefault(t.name, t.type_str())
            where.setdefault(t.name, t.where)
            init.setdefault(t.name, t)
        for s in g.sparse_initializers:
            types.setdefault(s.name, "sparse " + s.values.type_str())
            where.setdefault(s.name, s.where)
        for v in (*g.value_info, *g.outputs, *g.inputs):
            if v.type is not None:
                types[v.name] = v.type
            where[v.name] = v.where
        producer: dict[str, int] = {}
        consumers: dict[str, list[int]] = {}
        ops: dict[str, int] = {}
        for i, n in enumerate(nodes):
            if step is not None and not i % STEP:
                step()
            ops[n.op] = ops.get(n.op, 0) + 1
            for o in n.outputs:
                if o:
                    producer.setdefault(o, i)
            for x in n.inputs:
                if x:
                    consumers.setdefault(x, []).append(i)
        facts = GraphFacts(types, producer, consumers, init, where, ops)
        self._cache[id(g)] = (g, facts)
        return facts
