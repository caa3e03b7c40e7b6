"""The reading rules of spec section 3: definitions, references, dependency order, opsets, attribute refs.

:func:`resolve` runs them on any built model (the OneModel reader, the ONNX and ORT importers):
problems go to the reporter, ``Graph.order`` / ``Function.order`` are set.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import depsort
from .dtypes import AttrType
from .errors import Kind
from .reporter import LOCATE, Reporter
from .schema import Function, Graph, Model, Node, NodeColumns, NodeList, node_columns


class Stopped(Exception):
    """A background job's ``step`` said stop (:func:`resolve`, :func:`.builder.plain_nodes`)."""


def resolve(model: Model, report: Reporter, step=None) -> None:
    """Section 3's reading rules on a built model: names, opsets, dependency order. ``step()`` (a
    background job's) is asked between the parts of each graph (10^6 nodes: none over ~40 ms): True
    raises :class:`Stopped`."""
    Resolver(report, model, step).run()


def _scoped_attrs(node: Node) -> bool:
    """The node has an attribute that needs scope work: a subgraph or a function attribute ref."""
    for a in node.attributes:
        if a.ref or a.type == AttrType.GRAPH or a.type == AttrType.GRAPHS:
            return True
    return False


def _node_columns(nodes) -> tuple[NodeColumns | None, dict]:
    """(a NodeList's :class:`NodeColumns`, else None; {index: node} including every node whose attributes may hold
    a subgraph or a ref), without building a NodeList's other records (those hold INT/INTS/FLOAT/FLOATS only)."""
    if type(nodes) is NodeList and nodes.columns is not None:
        return nodes.columns, nodes.built_records()
    return None, {i: n for i, n in enumerate(nodes) if n.attributes}


def _where_of(nodes):
    """``where_of(i)`` for a node list (a NodeList answers without building its records)."""
    if type(nodes) is NodeList:
        return nodes.where_of
    return lambda i: nodes[i].where


class _Defined:
    """The names a graph defines, for ``in``: its inputs and initializers (``defs``) and its node outputs
    (a set), without copying 10^6 output names into one set (~0.1 s)."""

    __slots__ = ("defs", "outputs")

    def __init__(self, defs: dict, outputs: set) -> None:
        self.defs = defs
        self.outputs = outputs

    def __contains__(self, name) -> bool:
        return name in self.defs or name in self.outputs


def _defined_in_order(columns: NodeColumns, defs: dict) -> _Defined | None:
    """Every name the graph defines (``defs``: its inputs and initializers, then the node outputs),
    when that proves the name rules have nothing to report on the nodes and the stored order is the
    dependency order: each input is ``""`` or defined before its node, each output is non-empty and
    defined nowhere else. None when that does not hold (:meth:`Resolver.define_outputs` and the
    inputs pass then find what is wrong)."""
    defined = columns.defined
    if len(defined) != columns.output_count or "" in defined or not defined.isdisjoint(defs):
        return None
    # an input that no earlier node defines must be "" or defined before every node (a set
    # difference with the dict: C-speed look-ups, not a generator over 10^5 weight names)
    if not columns.read_early.difference(defs) <= {""}:
        return None
    return _Defined(defs, defined)


def _domains(opsets) -> set:
    """Domains with an opset entry; ``""`` and ``"ai.onnx"`` stand for each other."""
    out = {o.domain for o in opsets}
    if out & {"", "ai.onnx"}:
        out |= {"", "ai.onnx"}
    return out


class Resolver:
    """Section 3's reading rules over a built model; sets each graph's and function's ``order``."""

    def __init__(self, report: Reporter, model: Model, step=None) -> None:
        self.report = report
        self.model = model
        self.domains = _domains(model.opsets)
        self.step = step

    def pause(self) -> None:
        """Ask the step (if any); raise :class:`Stopped` when it says stop."""
        if self.step is not None and self.step():
            raise Stopped

    def bad(self, kind: Kind, where: str, message: str) -> None:
        self.report(kind, where, LOCATE, message)

    def run(self) -> None:
        self.graph(self.model.graph, (), None, self.domains)
        for f in self.model.functions:
            self.function(f)

    def function(self, f: Function) -> None:
        domains = self.domains | _domains(f.opsets)
        attr_names = set(f.attribute_names) | {a.name for a in f.attribute_defaults}
        defs: dict[str, int] = {}
        for i, name in enumerate(f.inputs):
            if name == "":  # CLARIFICATIONS: "" never names a value, so it cannot be defined either
                self.bad(Kind.INVALID_MODEL, f"{f.where}.inputs[{i}]", "a function input named '' defines no value")
                continue
            if name in defs:
                self.bad(Kind.INVALID_MODEL, f"{f.where}.inputs[{i}]", f"{name!r} is defined twice")
            defs[name] = -1
        where_of = _where_of(f.nodes)
        producer, defs = self.define_outputs([n.outputs for n in f.nodes], where_of, defs)
        deps = []
        for node in f.nodes:
            used = self.node_refs(node, defs, (), attr_names, domains, None)
            deps.append([producer[x] for x in used if x in producer])
        # Rule 3 holds in a function body as in a graph: the stable dependency order, a cycle an error.
        in_order = all(p < i for i, ps in enumerate(deps) for p in ps)
        self.set_order(f, None if in_order else deps, where_of, "function nodes")
        for a in f.attribute_defaults:
            for sub in a.graphs():
                self.graph(sub, (defs,), attr_names, domains)
        for i, name in enumerate(f.outputs):
            if name == "":  # as for a graph output (rule 2): the empty name defines nothing
                self.bad(Kind.INVALID_MODEL, f"{f.where}.outputs[{i}]", "a function output named '' names no defined value")
            elif name not in defs:
                self.bad(Kind.INVALID_MODEL, f"{f.where}.outputs[{i}]", f"function output {name!r} is not defined")

    def define_outputs(self, outputs: Sequence, where_of, defs: dict) -> tuple[dict[str, int], dict]:
        """Define each node's outputs (``outputs[i]``: node i's output names; ``where_of(i)``: node i's
        where) after the names of ``defs``; return ({output name: index of the node that defines it},
        every definition: ``defs`` itself, or a new dict)."""
        producer = {o: i for i, outs in enumerate(outputs) for o in outs}
        if len(producer) == sum(map(len, outputs)) and "" not in producer and producer.keys().isdisjoint(defs):
            # every output distinct, non-empty and new: nothing to report. A copy of the node outputs
            # plus the few inputs and initializers, not 10^6 inserts into defs (1M outputs: 418 -> 57 ms)
            merged = dict(producer)
            merged.update(defs)
            return producer, merged
        producer = {}
        for i, outs in enumerate(outputs):
            for j, out in enumerate(outs):
                if out == "":
                    continue
                if out in defs:
                    self.bad(Kind.INVALID_MODEL, f"{where_of(i)}.outputs[{j}]", f"{out!r} is already defined in this graph")
                    continue
                defs[out] = i
                producer[out] = i
        return producer, defs

    def node_refs(self, node: Node, defs: dict, outer: tuple, attr_names, domains, free: set | None) -> set:
        """Check a node's inputs, attribute refs, subgraphs and domain; return producers' names it reads."""
        used: set = set()
        for j, x in enumerate(node.inputs):
            if x == "":
                continue
            if x in defs:
                used.add(x)
                continue
            for scope in outer:
                if x in scope:
                    if free is not None:
                        free.add(x)
                    break
            else:
                self.bad(Kind.INVALID_MODEL, f"{node.where}.inputs[{j}]", f"input {x!r} is not defined in this graph or an enclosing one")
        for k, a in enumerate(node.attributes):
            if a.ref:
                if attr_names is None:
                    self.bad(Kind.INVALID_MODEL, f"{a.where}.ref", f"attribute reference {a.ref!r} outside a function")
                elif a.ref not in attr_names:
                    self.bad(Kind.INVALID_MODEL, f"{a.where}.ref", f"the function has no attribute {a.ref!r}")
            if a.type == AttrType.GRAPH or a.type == AttrType.GRAPHS:
                for sub in a.graphs():
                    sub_free = self.graph(sub, (defs, *outer), attr_names, domains)
                    for x in sub_free:
                        if x in defs:
                            used.add(x)
                        elif free is not None:
                            free.add(x)
        if node.domain not in domains:
            self.bad(Kind.INVALID_MODEL, f"{node.where}.domain", f"domain {node.domain!r} has no entry in opsets")
        return used

    def graph(self, g: Graph, outer: tuple, attr_names, domains) -> set:
        """Resolve ``g`` inside the scopes ``outer`` (innermost first); set ``g.order``; return free names."""
        defs: dict[str, int] = {}
        inputs: set = set()
        for vi in g.inputs:
            if vi.name == "":  # CLARIFICATIONS: "" never names a value, so it cannot be defined either
                self.bad(Kind.INVALID_MODEL, f"{vi.where}.name", "a graph input named '' defines no value")
                continue
            if vi.name in defs:
                self.bad(Kind.INVALID_MODEL, f"{vi.where}.name", f"{vi.name!r} is already defined in this graph")
                continue
            defs[vi.name] = -1
            inputs.add(vi.name)
        attached: set = set()
        for t in g.initializers:
            self.define_init(t.name, t.where, ".name", defs, inputs, attached)
        for s in g.sparse_initializers:
            self.define_init(s.values.name, s.where, ".values.name", defs, inputs, attached)
        self.pause()  # after the initializers (10^5: ~30 ms)
        nodes = g.nodes
        columns, with_attrs = _node_columns(nodes)
        lists = None
        if columns is not None:
            domain_set = columns.domains
        else:
            lists = [n.inputs for n in nodes], [n.outputs for n in nodes], [n.domain for n in nodes]
            domain_set = set(lists[2])
        where_of = _where_of(nodes)
        free: set = set()
        flagged = {i for i, nd in with_attrs.items() if _scoped_attrs(nd)}
        if not flagged and columns is None:
            columns = node_columns(*lists)
        proven = None if flagged else _defined_in_order(columns, defs)
        self.pause()
        if proven is not None:
            # nothing to report about names and the stored order is the dependency order: no
            # producer map (10^6 nodes: define_outputs and the inputs pass 1.7 s -> this proof 0.5 s,
            # its sets collected in the builder's pass over the nodes)
            defs, producer, in_order = proven, {}, True
        else:
            lists = lists or columns.lists()
            ins_col, outs_col = lists[0], lists[1]
            producer, defs = self.define_outputs(outs_col, where_of, defs)
            # One pass over every input: an input not defined here flags its node for the per-node walk
            # (which reports in node order, or finds it in an enclosing graph); an input defined by this
            # node or a later one means the nodes are not stored in dependency order. Typical graphs
            # flag only the nodes with subgraphs/refs.
            if depsort.available(len(ins_col)):  # in arrays, the sort in C (depsort's docstring)
                arrays = depsort.inputs_pass(ins_col, defs, flagged)
                in_order = arrays[2]
            else:
                arrays = None
                dget = defs.get
                in_order = True
                for i, ins in enumerate(ins_col):
                    for x in ins:
                        p = dget(x)
                        if p is None:
                            if x:
                                flagged.add(i)
                        elif p >= i:
                            in_order = False
        bad_domains = domain_set.difference(domains)
        if bad_domains:
            lists = lists or columns.lists()
            flagged.update(i for i, d in enumerate(lists[2]) if d in bad_domains)
        implicit: dict[int, list[int]] = {}
        for i in sorted(flagged):
            node = with_attrs.get(i) or nodes[i]  # a NodeList builds that one record
            used = self.node_refs(node, defs, outer, attr_names, domains, free)
            extra = [producer[x] for x in used.difference(node.inputs) if x in producer]
            if extra:
                implicit[i] = extra
        # In order when no node reads a value produced at or after its own position (the pass
        # above), counting the values a node's subgraphs read from this graph.
        pget = producer.get
        if in_order:
            for i, extra in implicit.items():
                if max(extra) >= i:
                    in_order = False
                    break
        deps: list | depsort.Deps = []
        if not in_order and arrays is not None:
            deps = depsort.deps(arrays[0], arrays[1], len(nodes), implicit)
        elif not in_order:
            for i, ins in enumerate(lists[0]):
                ps = [p for p in map(pget, ins) if p is not None]
                ps.extend(implicit.get(i, ()))
                deps.append(ps)
        for vi in g.outputs:
            x = vi.name
            if x in defs:
                continue
            if x == "":  # rule 2: "" as an omitted operand is for node operands only; it defines nothing
                self.bad(Kind.INVALID_MODEL, f"{vi.where}.name", "a graph output named '' names no defined value")
                continue
            for scope in outer:
                if x in scope:
                    free.add(x)
                    break
            else:
                self.bad(Kind.INVALID_MODEL, f"{vi.where}.name", f"graph output {x!r} is not defined")
        self.pause()
        self.set_order(g, None if in_order else deps, where_of, "nodes")
        return free

    def define_init(self, name: str, where: str, field: str, defs: dict, inputs: set, attached: set) -> None:
        """Define an initializer's ``name`` (its name string: ``where + field``, made only to report)."""
        if name == "":  # CLARIFICATIONS: "" never names a value (an initializer of no value)
            self.bad(Kind.INVALID_MODEL, where + field, "an initializer named '' defines no value")
            return
        if name in inputs and name not in attached:
            attached.add(name)
            return
        if name in defs:
            self.bad(Kind.INVALID_MODEL, where + field, f"{name!r} is already defined in this graph")
            return
        defs[name] = -1

    def set_order(self, owner: Graph | Function, deps: list | None, where_of, what: str) -> None:
        """Set ``owner.order``: the stored order when ``deps`` is None (known to be in order), else the
        stable dependency order of ``deps`` (:meth:`topo` reports a cycle), with an ``out-of-order``
        finding at the first node it moved."""
        n = len(owner.nodes)
        if deps is None:
            order = tuple(range(n))
        else:
            order, cyclic = self.topo(owner, deps)
            if not cyclic and order != tuple(range(n)):
                first = next(i for i in range(n) if order[i] != i)
                self.report.finding(
                    "out-of-order", where_of(first), LOCATE, f"{what} are not stored in dependency order (the reader sorts them)",
                )
        object.__setattr__(owner, "order", order)

    def topo(self, g: Graph | Function, deps: list) -> tuple[tuple[int, ...], bool]:
        """Kahn's algorithm with a min-heap: the stable dependency order; a cycle is reported."""
        import heapq  # lazily: only for graphs stored out of dependency order
        n = len(deps)
        if isinstance(deps, depsort.Deps):  # the same order, from compiled code
            order, _ = deps.order()
            return self.finish_topo(g, deps, order)
        indeg = [0] * n
        consumers: list[list[int]] = [[] for _ in range(n)]
        for i, ps in enumerate(deps):
            for p in ps:
                indeg[i] += 1
                consumers[p].append(i)
        heap = [i for i in range(n) if indeg[i] == 0]
        heapq.heapify(heap)
        order: list[int] = []
        while heap:
            i = heapq.heappop(heap)
            order.append(i)
            for c in consumers[i]:
                indeg[c] -= 1
                if indeg[c] == 0:
                    heapq.heappush(heap, c)
        return self.finish_topo(g, deps, order)

    def finish_topo(self, g: Graph | Function, deps, order: list[int]) -> tuple[tuple[int, ...], bool]:
        """:meth:`topo`'s result from the nodes Kahn's algorithm could order: fewer than all is a cycle (reported)."""
        n = len(deps)
        if len(order) < n:
            done = set(order)
            stuck = [i for i in range(n) if i not in done]
            # Every stuck node has a stuck producer: walk producers until one repeats to find a
            # node on a cycle (not merely downstream of one); report the cycle's first node.
            stuck_set = set(stuck)
            seen: dict[int, int] = {}
            path: list[int] = []
            cur = stuck[0]
            while cur not in seen:
                seen[cur] = len(path)
                path.append(cur)
                cur = next(p for p in deps[cur] if p in stuck_set)
            cycle = path[seen[cur]:]
            # named in data-flow order (the walk went from consumer to producer), the first repeated
            flow = cycle[::-1]
            k = flow.index(min(cycle))
            flow = flow[k:] + flow[:k]
            names = [g.nodes[i].name or f"nodes[{i}]" for i in flow[:8]]
            ring = " → ".join(names + ([f"… {len(flow) - 8} more"] if len(flow) > 8 else []) + [names[0]])
            self.bad(
                Kind.INVALID_MODEL, _where_of(g.nodes)(min(cycle)),
                f"the nodes form a cycle of {len(cycle)} node{'s' if len(cycle) != 1 else ''} ({ring}); "
                f"{len(stuck)} node{'s' if len(stuck) != 1 else ''} cannot be ordered",
            )
            order.extend(stuck)
            return tuple(order), True
        return tuple(order), False
