"""Which nodes read each value, including nodes inside If/Loop/Scan bodies that read it from an enclosing graph.

A graph's own readers come from the caller's producer/consumer facts (``facts.of(graph)`` with
``consumers``, ``producer`` and ``initializer``: :class:`~.facts.Facts`; one walk per
graph, already done for the main graph by the time anyone asks). This module adds the other
kind: a node in a subgraph that names a value its own graph does not define reads it from the
nearest enclosing graph that does (ONNX scoping; a subgraph's input, initializer or node output
of the same name shadows the outer one).

:class:`UsedBy` walks only the nodes that hold subgraphs (``nodes_with_contents``: a lazy node
list is not built for it) and every node of the subgraphs.

Function bodies are scopes too (:meth:`UsedBy.function_uses`): a value of a function (one of
its inputs or a body node's output) is read by the body's nodes and by nodes inside their
subgraphs; the function's callers are not resolved. No UI here.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Protocol

from ..format.schema import Function, Graph, Model, Node, nodes_with_contents

__all__ = ["Use", "UsedBy"]


class _GraphFacts(Protocol):  # pragma: no cover - typing only
    producer: dict[str, int]
    consumers: dict[str, list[int]]
    initializer: dict[str, Any]


class _Facts(Protocol):  # pragma: no cover - typing only
    def of(self, g: Graph) -> _GraphFacts: ...


@dataclass(frozen=True, slots=True)
class Use:
    """One node reading a value."""

    node: Node
    graph: Graph | None
    """The graph holding ``node`` (None: the body of :attr:`function`)."""
    via: Node | None = None
    """For a read from an enclosing graph: the node of the value's own graph whose subgraph holds
    ``node`` (an If, Loop, Scan...); None for a direct read."""
    depth: int = 0
    """0: a node of the value's own graph; 1: in a subgraph of one of its nodes; 2: one deeper..."""
    function: Function | None = None
    """The function whose value is read (its body node, or a node inside that node's subgraph); None
    for a graph's value."""

    @property
    def where(self) -> str:
        return self.node.where


class UsedBy:
    """Readers of every value of a model: ``uses(graph, name)``.

    Built once by :meth:`build` (call it off the UI thread; ``cancel`` stops it, leaving
    :attr:`complete` False). Direct readers are asked of ``facts`` on each call.
    """

    def __init__(self, model: Model, facts: _Facts) -> None:
        self.model = model
        self.facts = facts
        self._outer: dict[tuple[int, str], list[Use]] = {}
        self._graphs: dict[int, Graph] = {}
        self._functions: dict[int, tuple[Function, dict[str, list[Use]]]] = {}
        self.complete = False
        self._lock = threading.Lock()

    # -------------------------------------------------------------- building
    def build(self, cancel: threading.Event | None = None) -> "UsedBy":
        with self._lock:
            if self.complete:
                return self
            self._outer.clear()
            self._functions.clear()
            self._cancel = cancel
            self._scope(self.model.graph, top=True)
            for f in self.model.functions:
                self._function_scope(f)
            self.complete = not (cancel is not None and cancel.is_set())
        return self

    def _scope(self, g: Graph, *, top: bool) -> dict[str, list[Use]]:
        """Reads inside ``g``'s subgraphs (at any depth) of names ``g`` does not define: for the caller.

        Reads of names ``g`` defines are recorded in :attr:`_outer` under ``g``. ``top``: ``g`` is the
        main graph (its nodes are not all walked: only those holding subgraphs).
        """
        self._graphs[id(g)] = g
        free: dict[str, list[Use]] = {}
        cancel = self._cancel
        if cancel is not None and cancel.is_set():
            return free
        f = self.facts.of(g)
        local_inputs = {v.name for v in g.inputs}
        local_inputs.update(s.name for s in g.sparse_initializers)

        def defined(name: str) -> bool:
            return name in f.producer or name in f.initializer or name in local_inputs

        if not top:
            # direct reads in this subgraph of names it does not define
            for n in g.nodes:
                for x in n.inputs:
                    if x and not defined(x):
                        free.setdefault(x, []).append(Use(n, g, None, 0))
        for n in nodes_with_contents(g.nodes):
            for a in n.attributes:
                for sub in a.graphs():
                    inner = self._scope(sub, top=False)
                    for name, uses in inner.items():
                        deeper = [Use(u.node, u.graph, n, u.depth + 1) for u in uses]
                        if defined(name):
                            self._outer.setdefault((id(g), name), []).extend(deeper)
                        else:  # read from further out: depth counted from g, via set by the graph defining it
                            free.setdefault(name, []).extend(deeper)
        return free

    def _function_scope(self, f: Function) -> None:
        """Readers of ``f``'s values: its body's nodes, then nodes inside their subgraphs."""
        readers: dict[str, list[Use]] = {}
        for n in f.nodes:
            for x in n.inputs:
                if x:
                    readers.setdefault(x, []).append(Use(n, None, None, 0, f))
        defined = set(f.inputs)
        defined.update(o for n in f.nodes for o in n.outputs if o)
        for n in f.nodes:
            for a in n.attributes:
                for sub in a.graphs():
                    for name, uses in self._scope(sub, top=False).items():
                        if name in defined:  # else: a name nothing in the function defines
                            readers.setdefault(name, []).extend(Use(u.node, u.graph, n, u.depth + 1, f) for u in uses)
        self._functions[id(f)] = (f, readers)

    # -------------------------------------------------------------- queries
    def function_uses(self, f: Function, name: str) -> list[Use]:
        """Every reader of ``name`` (an input of ``f`` or a body node's output): the body's nodes
        first (stored order), then nodes inside their subgraphs (each with the body node holding it)."""
        hit = self._functions.get(id(f))
        return list(hit[1].get(name, ())) if hit is not None and hit[0] is f else []

    def outer(self, g: Graph, name: str) -> list[Use]:
        """Readers of ``name`` (defined in ``g``) inside subgraphs of ``g``'s nodes, at any depth."""
        return list(self._outer.get((id(g), name), ())) if self._graphs.get(id(g)) is g else []

    def uses(self, g: Graph, name: str) -> list[Use]:
        """Every reader of ``name`` as defined in ``g``: ``g``'s own nodes first (stored order), then
        the nodes inside subgraphs (each with the node of ``g`` holding it)."""
        f = self.facts.of(g)
        out = [Use(g.nodes[i], g, None, 0) for i in f.consumers.get(name, ())]
        out.extend(self.outer(g, name))
        return out

    def count(self, g: Graph, name: str) -> int:
        return len(self.facts.of(g).consumers.get(name, ())) + len(self._outer.get((id(g), name), ()))

