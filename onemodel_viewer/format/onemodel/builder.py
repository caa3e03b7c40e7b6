"""The builder: the manifest's JSON values -> schema records (spec section 2), strict or diagnose.

Every check calls the reporter and carries on with a safe default, so diagnose mode builds
whatever part of the model is sound. Tensors and typed field access: :mod:`.builder_tensor`.

Graphs of ``bulk_nodes`` nodes or more get a :class:`~.schema.NodeList`: every node is checked
at open, but the records of nodes whose attributes hold only numbers (INT, INTS, FLOAT, FLOATS)
are built on the first read of the list. A builder made with ``defer=True`` (the viewer's first
screen) leaves even that check to :meth:`Builder.check_deferred`.
"""

from __future__ import annotations

import operator

from .builder_tensor import ABSENT, I64_MAX, I64_MIN, MAX_LEVEL, U32_MAX, TensorBuilder
from ..dtypes import AttrType
from ..errors import Kind
from ..reporter import Reporter
from ..rules import Stopped
from ..schema import (
    Attribute,
    Function,
    Graph,
    Model,
    Node,
    NodeColumns,
    NodeList,
    OperatorSet,
    Type,
    ValueInfo,
)
from ..storage import Storage

_node_fields = operator.itemgetter("name", "op", "domain", "overload", "inputs", "outputs", "attributes")
_GRAPH_ARRAYS = ("inputs", "outputs", "value_info", "initializers", "sparse_initializers", "nodes")


def is_int64(v) -> bool:
    return type(v) is int and I64_MIN <= v <= I64_MAX


def is_float_bits(v) -> bool:
    """A FLOAT attribute's value: the 32-bit pattern as an unsigned integer."""
    return type(v) is int and 0 <= v <= U32_MAX


def all_int64(v) -> bool:
    if type(v) is not list:
        return False
    for x in v:  # a loop, not all() over a generator: 2-4 values (perm, axes) 0.6 -> 0.3 µs
        if type(x) is not int or not I64_MIN <= x <= I64_MAX:
            return False
    return True


def all_float_bits(v) -> bool:
    if type(v) is not list:
        return False
    for x in v:
        if type(x) is not int or not 0 <= x <= U32_MAX:
            return False
    return True


NUMBER_RULES = {
    int(AttrType.INT): is_int64, int(AttrType.FLOAT): is_float_bits,
    int(AttrType.INTS): all_int64, int(AttrType.FLOATS): all_float_bits,
}
"""The attribute types whose value is numbers only, each with the test of a sound value (the one rule
for both the builder and :func:`plain_nodes`)."""


def numbers_only(attributes: list) -> bool:
    """Every attribute is ``{name, type, value}`` with a sound INT, FLOAT, INTS or FLOATS value, and
    nothing else the builder reports or builds: any ``doc`` a string, any ``ref`` empty (other
    writers write both at their defaults)."""
    for a in attributes:
        if type(a) is not dict:
            return False
        if len(a) != 3 and not (type(a.get("doc", "")) is str and a.get("ref", "") == ""):
            return False
        t = a.get("type")
        sound = NUMBER_RULES.get(t) if type(t) is int else None
        if sound is None or type(a.get("name")) is not str or not sound(a.get("value")):
            return False
    return True


STEP_NODES = 4096
""":func:`plain_nodes` asks its ``step`` after each run of this many nodes (10^6 nodes: ~4 ms a run)."""


def plain_nodes(raw: list, step=None) -> tuple[list[int], NodeColumns] | None:
    """(the nodes to build now, the :class:`~.schema.NodeColumns` of all), or None when some node
    is not stored as writers store it. ``step()`` (a background job's) is asked between runs of
    :data:`STEP_NODES` nodes: True raises :class:`Stopped`.

    A node is stored so when all seven fields of section 4 are there with their JSON types (and
    any ``doc`` is a string), and its inputs and outputs are strings: the builder then reports
    nothing about it but what its attributes hold. Nodes whose attributes are not
    :func:`numbers_only` are built now.
    """
    # One pass over the nodes that also collects what the reading rules read (the domains, and the
    # sets of schema.node_columns, its steps inline): a pass over 10^6 parsed nodes is a cache
    # miss a node (a second pass for the sets: 1.64 -> 1.87 s CPU for 10^6 nodes, alternating)
    eager: list[int] = []
    domains: set[str] = set()
    add_dom = domains.add
    defined: set[str] = set()
    read_early: set[str] = set()
    define, define_one, read = defined.update, defined.add, read_early.add
    count = 0
    join = "".join
    try:
        for lo in range(0, len(raw), STEP_NODES):
            if lo and step is not None and step():
                raise Stopped
            for i, o in enumerate(raw[lo:lo + STEP_NODES], lo):
                name, op, domain, overload, inputs, outputs, attributes = _node_fields(o)
                if not (
                    type(op) is str and type(name) is str and type(domain) is str and type(overload) is str
                    and type(inputs) is list and type(outputs) is list and type(attributes) is list
                    and (len(o) == 7 or type(o.get("doc", "")) is str)
                ):
                    return None
                join(inputs)  # TypeError: not all strings (one C call a list, inline: 10^4 nodes 6.5 -> 5.8 ms)
                join(outputs)
                if attributes and not numbers_only(attributes):
                    eager.append(i)
                for x in inputs:
                    if x not in defined:
                        read(x)
                n = len(outputs)
                if n == 1:  # most nodes: set.add, not set.update of a list (10^4 nodes 3.2 -> 2.65 ms for the sets)
                    define_one(outputs[0])
                else:
                    define(outputs)
                count += n
                add_dom(domain)
    except (KeyError, TypeError):  # a field missing, a node not an object, an input or output not a string
        return None
    # the per-node lists only when the reading rules need them (the proof fails): 1G open 28.0 -> 25.6 ms, alternating
    return eager, NodeColumns(lambda: _node_lists(raw), domains, defined, count, read_early)


def _node_lists(raw: list) -> tuple[list, list, list]:
    """Each plain node's inputs, outputs and domain (:attr:`.schema.NodeColumns.lists`)."""
    return [o["inputs"] for o in raw], [o["outputs"] for o in raw], [o["domain"] for o in raw]


class _Deferred:
    """A bulk node list whose check waits for :meth:`Builder.check_deferred`."""

    __slots__ = ("raw", "where", "level", "at_p", "at_f", "nodes", "fresh", "checked")

    def __init__(self, raw: list, where: str, level: int, at_p: int, at_f: int) -> None:
        self.raw, self.where, self.level = raw, where, level
        self.at_p, self.at_f = at_p, at_f
        """How many problems and findings were reported before the list (its own go there)."""
        self.nodes: NodeList | None = None
        self.fresh: dict[int, Node] = {}
        """Records the check built, for the list to take (a record built before the check stays)."""
        self.checked = False


class Builder(TensorBuilder):
    """Builds a :class:`~.schema.Model` from the parsed manifest; ``missing_arrays``: graph arrays read as empty."""

    def __init__(
        self, report: Reporter, data_offset: int | None, data_length: int | None, storage: Storage | None, bulk_nodes: int,
        defer: bool = False,
    ) -> None:
        super().__init__(report, data_offset, data_length, storage)
        self.bulk_nodes = bulk_nodes
        self.deferred: list[_Deferred] | None = [] if defer else None
        """Bulk node lists not checked yet, each with the counts of problems and findings reported before
        it (where its own go); None: every list is checked when built."""

    def model(self, o: dict, header_version: int) -> Model | None:
        w = "manifest"
        fmt = o.get("format", ABSENT)
        if fmt is ABSENT:
            self.req_missing(w, "format", "a string")
        elif fmt != "onemodel" or type(fmt) is not str:
            if type(fmt) is str:
                self.bad(Kind.MALFORMED, "manifest.format", f"format is {fmt!r}, not 'onemodel'")
            else:
                self.wrong("manifest.format", fmt, "a string")
        version = self.req_int(o, "version", w)
        if version is not None and version != header_version:
            self.bad(Kind.MALFORMED, "manifest.version", f"manifest version {version} differs from the header's {header_version}")
        ir = self.req_int(o, "ir_version", w)
        if ir is not None and ir < 3:
            self.bad(Kind.INVALID_MODEL, "manifest.ir_version", f"ir_version {ir} is below 3")
        producer_name = self.opt_str(o, "producer_name", w)
        producer_version = self.opt_str(o, "producer_version", w)
        domain = self.opt_str(o, "domain", w)
        doc = self.opt_str(o, "doc", w)
        model_version = self.opt_int(o, "model_version", w)
        opsets = self.opsets(o, w)
        metadata = []
        for i, m in enumerate(self.opt_list(o, "metadata", w)):
            mw = f"manifest.metadata[{i}]"
            if self.obj(m, mw, "a metadata entry"):
                metadata.append((self.req_str(m, "key", mw), self.req_str(m, "value", mw)))
        g = o.get("graph", ABSENT)
        if g is ABSENT:
            self.req_missing(w, "graph", "a Graph")
            graph = None
        elif self.obj(g, "manifest.graph", "a Graph"):
            graph = self.graph(g, "manifest.graph", 1)
        else:
            graph = None
        functions = tuple(
            self.function(f, f"manifest.functions[{i}]") for i, f in enumerate(self.opt_list(o, "functions", w))
        )
        if graph is None:
            graph = Graph(where="manifest.graph")
        return Model(
            ir_version=ir if ir is not None else 0,
            graph=graph,
            format_version=version if version is not None else header_version,
            producer_name=producer_name,
            producer_version=producer_version,
            domain=domain,
            doc=doc,
            model_version=model_version,
            opsets=opsets,
            metadata=tuple(metadata),
            functions=tuple(f for f in functions if f is not None),
        )

    def opsets(self, o: dict, w: str) -> tuple[OperatorSet, ...]:
        out = []
        for i, e in enumerate(self.opt_list(o, "opsets", w)):
            ew = f"{w}.opsets[{i}]"
            if self.obj(e, ew, "an operator set"):
                d = self.opt_str(e, "domain", ew)
                v = self.req_int(e, "version", ew)
                out.append(OperatorSet(d, v if v is not None else 0))
        return tuple(out)

    def function(self, o, w: str) -> Function | None:
        if not self.obj(o, w, "a Function"):
            return None
        name = self.req_str(o, "name", w)
        domain = self.opt_str(o, "domain", w)
        overload = self.opt_str(o, "overload", w)
        doc = self.opt_str(o, "doc", w)
        inputs = self.str_list(o, "inputs", w)
        outputs = self.str_list(o, "outputs", w)
        attribute_names = self.str_list(o, "attribute_names", w)
        defaults = tuple(
            self.attribute(a, f"{w}.attribute_defaults[{i}]", 1) for i, a in enumerate(self.opt_list(o, "attribute_defaults", w))
        )
        nodes = tuple(self.node(n, f"{w}.nodes[{i}]", 1) for i, n in enumerate(self.opt_list(o, "nodes", w)))
        opsets = self.opsets(o, w)
        return Function(
            name=name, domain=domain, overload=overload, doc=doc, inputs=inputs, outputs=outputs,
            attribute_names=attribute_names, attribute_defaults=defaults, nodes=nodes, opsets=opsets, where=w,
        )

    def graph(self, o: dict, w: str, level: int) -> Graph:
        """``o`` is a dict; ``level`` its nesting level (checked by the caller)."""
        get = o.get
        name = get("name", "")
        if type(name) is not str:
            name = self.opt_str(o, "name", w)
        doc = get("doc", "")
        if type(doc) is not str:
            doc = self.opt_str(o, "doc", w)
        arrays = []
        for key in _GRAPH_ARRAYS:
            v = get(key, ABSENT)
            if type(v) is list:
                arrays.append(v)
            elif v is ABSENT:
                self.missing_arrays.append(f"{w}.{key}")
                arrays.append([])
            else:
                self.wrong(f"{w}.{key}", v, "an array")
                arrays.append([])
        ins, outs, vinfo, inits, sparse, nodes = arrays
        tl = level + 1
        vi = self.value_info
        return Graph(
            name=name,
            doc=doc,
            inputs=tuple([vi(x, f"{w}.inputs[{i}]", tl) for i, x in enumerate(ins)]),
            outputs=tuple([vi(x, f"{w}.outputs[{i}]", tl) for i, x in enumerate(outs)]),
            value_info=tuple([vi(x, f"{w}.value_info[{i}]", tl) for i, x in enumerate(vinfo)]),
            initializers=tuple([self.tensor(x, f"{w}.initializers[{i}]") for i, x in enumerate(inits)]),
            sparse_initializers=tuple(
                [s for s in (self.sparse(x, f"{w}.sparse_initializers[{i}]") for i, x in enumerate(sparse)) if s is not None]
            ),
            nodes=self.nodes(nodes, f"{w}.nodes", level),
            order=None,
            where=w,
        )

    def value_info(self, o, w: str, type_level: int) -> ValueInfo:
        if type(o) is not dict:
            self.wrong(w, o, "a TypedName (an object)")
            return ValueInfo(name="", type=None, where=w)
        name = o.get("name", ABSENT)
        if type(name) is not str:
            name = self.req_str(o, "name", w)
        t = o.get("type", ABSENT)
        typ = None if t is ABSENT else self.type(t, f"{w}.type", type_level)
        return ValueInfo(name=name, type=typ, where=w)

    def type(self, o, w: str, level: int) -> Type | None:
        if level > MAX_LEVEL:
            self.too_deep(w, "type")
            return None
        if type(o) is not dict:
            self.wrong(w, o, "a Type (an object)")
            return None
        get = o.get
        kind = get("kind", ABSENT)
        if type(kind) is not str:
            if kind is ABSENT:
                self.req_missing(w, "kind", "a string")
            else:
                self.wrong(f"{w}.kind", kind, "a string")
            return None
        if kind == "tensor" or kind == "sparse_tensor":
            elem = get("elem", ABSENT)
            if not (type(elem) is int and I64_MIN <= elem <= I64_MAX):
                elem = self.req_int(o, "elem", w) or 0
            shape = get("shape", ABSENT)
            if shape is ABSENT:
                dims = None
            elif type(shape) is list:
                dims = tuple(shape)
                for d in dims:
                    tp = type(d)
                    if not ((tp is int and 0 <= d <= I64_MAX) or tp is str or d is None):
                        dims = self.shape_slow(dims, f"{w}.shape")
                        break
            else:
                self.wrong(f"{w}.shape", shape, "an array")
                dims = None
            return Type(kind=kind, elem=elem, shape=dims, where=w)
        if kind == "sequence" or kind == "optional":
            inner = self.inner(o, "inner", w, level)
            return Type(kind=kind, inner=inner, where=w)
        if kind == "map":
            key = self.req_int(o, "key", w)
            inner = self.inner(o, "inner", w, level)
            return Type(kind=kind, key=key or 0, inner=inner, where=w)
        if kind == "opaque":
            return Type(kind=kind, domain=self.opt_str(o, "domain", w), name=self.opt_str(o, "name", w), where=w)
        self.bad(Kind.UNSUPPORTED, f"{w}.kind", f"unknown type kind {kind!r}")
        return None

    def shape_slow(self, dims: tuple, w: str) -> tuple:
        out = []
        for i, d in enumerate(dims):
            tp = type(d)
            if tp is str or d is None:
                out.append(d)
            elif tp is int:
                if d < 0:
                    self.bad(Kind.INVALID_MODEL, f"{w}[{i}]", f"negative dimension {d}")
                    out.append(None)
                elif d > I64_MAX:
                    self.bad(Kind.MALFORMED, f"{w}[{i}]", f"integer {d} does not fit in 64 bits")
                    out.append(None)
                else:
                    out.append(d)
            else:
                self.wrong(f"{w}[{i}]", d, "an integer, a string or null")
                out.append(None)
        return tuple(out)

    def inner(self, o: dict, key: str, w: str, level: int) -> Type | None:
        v = o.get(key, ABSENT)
        if v is ABSENT:
            self.req_missing(w, key, "a Type")
            return None
        return self.type(v, f"{w}.{key}", level + 1)

    def nodes(self, raw: list, w: str, level: int):
        """A graph's nodes (``w``: the array's where): a lazily built :class:`NodeList`, or a tuple.

        Graphs of ``bulk_nodes`` nodes or more whose every node is stored as writers store it
        (:func:`plain_nodes`) get a :class:`NodeList`: every node is checked now, but only the
        nodes whose attributes hold more than sound numbers are built now (their checks need the
        records); the rest when the list is first read. Anything else: every node built now.
        """
        n = len(raw)
        if n >= self.bulk_nodes and self.deferred is not None:
            wait = _Deferred(raw, w, level, len(self.report.problems), len(self.report.findings))
            wait.nodes = NodeList(n, self._deferred_maker(wait), {}, w)
            self.deferred.append(wait)
            return wait.nodes
        if n >= self.bulk_nodes:
            plain = plain_nodes(raw)
            if plain is not None:
                eager_at, columns = plain
                node = self.node
                eager = {i: node(raw[i], f"{w}[{i}]", level) for i in eager_at}
                return NodeList(n, lambda i: node(raw[i], f"{w}[{i}]", level), eager, w, columns)
        return tuple([self.node(x, f"{w}[{i}]", level) for i, x in enumerate(raw)])

    def _deferred_maker(self, wait: _Deferred):
        """The record maker of a deferred list: before its check, a record (one the screen shows) is built
        by a builder whose reports are dropped (the check reports them again, in place, the manifest
        mapped: the same problems, order and offsets as an open that checks the list); after it, as usual."""
        node = self.node
        early = None
        raw, w, level, fresh = wait.raw, wait.where, wait.level, wait.fresh

        def make(i: int) -> Node:
            nonlocal early
            made = fresh.pop(i, None)  # the check's record: it reported its problems
            if made is not None:
                return made
            if wait.checked:
                return node(raw[i], f"{w}[{i}]", level)
            if early is None:
                early = self._quiet()
            return early.node(raw[i], f"{w}[{i}]", level)

        return make

    def _quiet(self) -> Builder:
        """A builder like this one whose reports go nowhere and whose node lists are checked when built."""
        return Builder(Reporter(False, 0), self.data_offset, self.data_length, self.storage, self.bulk_nodes)

    def check_deferred(self, step=None) -> bool:
        """Check the node lists :meth:`nodes` deferred, as it checks them when not deferring: the records
        of nodes with more than numbers built now (every record when some node is not stored as writers
        store it); their problems and findings go where the open would have put them. A record built
        before (one the screen showed) stays, and its problems are reported here, from a second build of
        its node. From then on the builder checks each list when it builds it. ``step()`` is asked before
        each list; False: it said stop.
        """
        deferred, self.deferred = self.deferred or [], None
        report = self.report
        problems, findings = report.problems, report.findings
        shift_p = shift_f = 0
        node = self.node
        for wait in deferred:
            if step is not None and step():
                return False
            raw, nodes, fresh, w, level = wait.raw, wait.nodes, wait.fresh, wait.where, wait.level
            report.problems, report.findings = [], []  # this list's own, put in place below in one step
            try:
                try:
                    plain = plain_nodes(raw, step)
                except Stopped:
                    return False
                if plain is not None:
                    eager_at, nodes.columns = plain
                for i in range(len(raw)) if plain is None else eager_at:
                    fresh[i] = node(raw[i], f"{w}[{i}]", level)  # its problems reported now, in order
                    nodes.node_at(i)  # the list takes it, or keeps the record built before
                    fresh.pop(i, None)
                if plain is None:
                    tuple(nodes)  # every record built (and checked), as the open builds such a list
                wait.checked = True
            finally:
                new_p, new_f = report.problems, report.findings
                report.problems, report.findings = problems, findings
                problems[wait.at_p + shift_p:wait.at_p + shift_p] = new_p
                findings[wait.at_f + shift_f:wait.at_f + shift_f] = new_f
                shift_p += len(new_p)
                shift_f += len(new_f)
        return True

    def node(self, o, w: str, level: int) -> Node:
        if type(o) is not dict:
            self.wrong(w, o, "a Node (an object)")
            return Node(op="", where=w)
        # each field: its check inline, the method only to report (the viewer builds 10^4 nodes: 35 -> 26 ms)
        get = o.get
        op = get("op")
        if type(op) is not str:
            op = self.req_str(o, "op", w)
        name, domain, overload, doc = get("name", ""), get("domain", ""), get("overload", ""), get("doc", "")
        if type(name) is not str:
            name = self.opt_str(o, "name", w)
        if type(domain) is not str:
            domain = self.opt_str(o, "domain", w)
        if type(overload) is not str:
            overload = self.opt_str(o, "overload", w)
        if type(doc) is not str:
            doc = self.opt_str(o, "doc", w)
        inputs = self.str_list(o, "inputs", w)
        outputs = self.str_list(o, "outputs", w)
        attributes = self.opt_list(o, "attributes", w)
        if attributes:
            attributes = tuple([self.attribute(a, f"{w}.attributes[{i}]", level) for i, a in enumerate(attributes)])
        else:
            attributes = ()
        return Node(op, name, domain, overload, doc, inputs, outputs, attributes, w)

    def attribute(self, o, w: str, level: int) -> Attribute:
        if type(o) is not dict:
            self.wrong(w, o, "an Attribute (an object)")
            return Attribute(name="", type=AttrType.UNDEFINED, where=w)
        get = o.get
        name, t, doc, ref = get("name"), get("type"), get("doc", ""), get("ref", "")
        if type(name) is not str:
            name = self.req_str(o, "name", w)
        if not is_int64(t):
            t = self.req_int(o, "type", w)
            if t is None:
                return Attribute(name=name, type=AttrType.UNDEFINED, where=w)
        if type(doc) is not str:
            doc = self.opt_str(o, "doc", w)
        if type(ref) is not str:
            ref = self.opt_str(o, "ref", w)
        if not 0 <= t <= 14:
            self.bad(Kind.UNSUPPORTED, f"{w}.type", f"unknown attribute type {t}")
            return Attribute(name=name, type=t, ref=ref, doc=doc, where=w)
        value = o.get("value", ABSENT)
        if ref:
            if value is not ABSENT:
                self.bad(Kind.MALFORMED, f"{w}.value", "an attribute with a 'ref' must not have a 'value'")
            return Attribute(name=name, type=t, value=None, ref=ref, doc=doc, where=w)
        if t == AttrType.UNDEFINED:
            self.bad(Kind.MALFORMED, f"{w}.type", "attribute type 0 (undefined) without a 'ref'")
            return Attribute(name=name, type=t, doc=doc, where=w)
        if value is ABSENT:
            self.req_missing(w, "value", AttrType(t).name)
            return Attribute(name=name, type=t, doc=doc, where=w)
        return Attribute(name, t, self.attr_value(t, value, f"{w}.value", level), "", doc, w)

    def attr_value(self, t: int, v, w: str, level: int):
        sound = NUMBER_RULES.get(t)
        if sound is not None:
            if sound(v):
                return tuple(v) if type(v) is list else v
            return self.bad_numbers(t, v, w)
        if t == AttrType.STRING:
            return self.b64(v, w)
        if t == AttrType.TENSOR:
            return self.tensor(v, w)
        if t == AttrType.GRAPH:
            return self.sub_graph(v, w, level + 1)
        if t == AttrType.TYPE_PROTO:
            return self.type(v, w, level + 1)
        if t == AttrType.SPARSE_TENSOR:
            return self.sparse(v, w)
        if type(v) is not list:
            self.wrong(w, v, "an array")
            return None
        if t == AttrType.STRINGS:
            return tuple(self.b64(x, f"{w}[{i}]") or b"" for i, x in enumerate(v))
        if t == AttrType.TENSORS:
            return tuple(self.tensor(x, f"{w}[{i}]") for i, x in enumerate(v))
        if t == AttrType.GRAPHS:
            return tuple(g for g in (self.sub_graph(x, f"{w}[{i}]", level + 1) for i, x in enumerate(v)) if g is not None)
        if t == AttrType.SPARSE_TENSORS:
            return tuple(s for s in (self.sparse(x, f"{w}[{i}]") for i, x in enumerate(v)) if s is not None)
        if t == AttrType.TYPE_PROTOS:
            return tuple(x for x in (self.type(x, f"{w}[{i}]", level + 1) for i, x in enumerate(v)) if x is not None)
        raise AssertionError(t)  # pragma: no cover - 0..14 handled by the caller

    def bad_numbers(self, t: int, v, w: str):
        """Report what :data:`NUMBER_RULES` refused in an INT, FLOAT, INTS or FLOATS value; the value read instead."""
        if t == AttrType.INT:
            self.int_ok(v, w)
            return None
        if t == AttrType.FLOAT:
            self.float_bits_ok(v, w)
            return None
        if type(v) is not list:
            self.wrong(w, v, "an array")
            return None
        element_ok = self.int_ok if t == AttrType.INTS else self.float_bits_ok
        return tuple(x if element_ok(x, f"{w}[{i}]") else 0 for i, x in enumerate(v))

    def float_bits_ok(self, v, w: str) -> bool:
        if is_float_bits(v):
            return True
        if type(v) is int:
            self.bad(Kind.MALFORMED, w, f"float bits {v} outside 0..2^32-1")
        else:
            self.wrong(w, v, "an unsigned integer (the float's bits)")
        return False

    def sub_graph(self, v, w: str, level: int) -> Graph | None:
        if level > MAX_LEVEL:
            self.too_deep(w, "graph")
            return None
        if not self.obj(v, w, "a Graph"):
            return None
        return self.graph(v, w, level)
