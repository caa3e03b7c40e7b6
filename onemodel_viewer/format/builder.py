"""The builder: the manifest's JSON values -> schema records (spec section 2), strict or diagnose.

Every check calls the reporter and carries on with a safe default, so diagnose mode builds
whatever part of the model is sound. Tensors and typed field access: :mod:`.builder_tensor`.

Graphs of ``bulk_nodes`` nodes or more get a :class:`~.schema.NodeList`: every node is checked
at open, but the records of nodes whose attributes hold only numbers (INT, INTS, FLOAT, FLOATS)
are built on the first read of the list.
"""

from __future__ import annotations

import operator

from .builder_tensor import ABSENT, I64_MAX, I64_MIN, MAX_LEVEL, U32_MAX, TensorBuilder, fast_constructor
from .errors import Kind
from .reporter import Reporter
from .schema import Attribute, AttrType, Function, Graph, Model, Node, NodeList, OperatorSet, Type, ValueInfo
from .storage import Storage

_join = "".join
_attr_fields = operator.itemgetter("name", "type", "value")
_node_fields = operator.itemgetter("name", "op", "domain", "overload", "inputs", "outputs", "attributes")
_get_inputs = operator.itemgetter("inputs")
_get_outputs = operator.itemgetter("outputs")
_get_domain = operator.itemgetter("domain")
_GRAPH_ARRAYS = ("inputs", "outputs", "value_info", "initializers", "sparse_initializers", "nodes")

_Node = fast_constructor(Node)
_ValueInfo = fast_constructor(ValueInfo)
_Type = fast_constructor(Type)
_Attribute = fast_constructor(Attribute)
_Graph = fast_constructor(Graph)


class Builder(TensorBuilder):
    """Builds a :class:`~.schema.Model` from the parsed manifest; ``missing_arrays``: graph arrays read as empty."""

    def __init__(
        self, report: Reporter, data_offset: int | None, data_length: int | None, storage: Storage | None, bulk_nodes: int,
    ) -> None:
        super().__init__(report, data_offset, data_length, storage)
        self.bulk_nodes = bulk_nodes

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
            graph = _Graph(where="manifest.graph")
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
        return _Graph(
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
            return _ValueInfo(name="", type=None, where=w)
        name = o.get("name", ABSENT)
        if type(name) is not str:
            name = self.req_str(o, "name", w)
        t = o.get("type", ABSENT)
        typ = None if t is ABSENT else self.type(t, f"{w}.type", type_level)
        return _ValueInfo(name=name, type=typ, where=w)

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
            return _Type(kind=kind, elem=elem, shape=dims, where=w)
        if kind == "sequence" or kind == "optional":
            inner = self.inner(o, "inner", w, level)
            return _Type(kind=kind, inner=inner, where=w)
        if kind == "map":
            key = self.req_int(o, "key", w)
            inner = self.inner(o, "inner", w, level)
            return _Type(kind=kind, key=key or 0, inner=inner, where=w)
        if kind == "opaque":
            return _Type(kind=kind, domain=self.opt_str(o, "domain", w), name=self.opt_str(o, "name", w), where=w)
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

        Graphs of ``bulk_nodes`` nodes or more whose every node is sound on the fast path get a
        :class:`NodeList`: every node is checked now exactly as :meth:`node` would check it, but
        only the nodes whose attributes hold more than numbers (tensors, graphs, strings, types,
        refs) are built now; the rest when the list is first read (a record costs more than its
        check). Anything doubtful: every node built now through :meth:`node`, which reports it.
        """
        n = len(raw)
        node = self.node
        if n >= self.bulk_nodes:
            eager_at = self.sound_nodes(raw)
            if eager_at is not None:
                eager = {i: node(raw[i], f"{w}[{i}]", level) for i in eager_at}
                columns = (list(map(_get_inputs, raw)), list(map(_get_outputs, raw)), list(map(_get_domain, raw)))
                return NodeList(n, lambda i: node(raw[i], f"{w}[{i}]", level), eager, w, columns)
        return tuple([node(x, f"{w}[{i}]", level) for i, x in enumerate(raw)])

    @staticmethod
    def sound_nodes(raw: list) -> list[int] | None:
        """Indices of the nodes to build now, or None when some node is not sound on :meth:`node`'s fast path.

        A node may wait when all seven fields have their JSON types, its inputs and outputs are
        strings, and each attribute is exactly {name, type, value} with an INT, INTS, FLOAT or
        FLOATS value that :meth:`attr_value` accepts; a node with any other attribute is built now.
        """
        eager: list[int] = []
        i = -1
        for o in raw:
            i += 1
            try:
                name, op, domain, overload, inputs, outputs, attrs = _node_fields(o)
            except (KeyError, TypeError):
                return None
            if not (
                type(op) is str and type(name) is str and type(domain) is str and type(overload) is str
                and type(inputs) is list and type(outputs) is list and type(attrs) is list
            ):
                return None
            if len(o) != 7 and type(o.get("doc", "")) is not str:
                return None
            try:
                _join(inputs)
                _join(outputs)
            except TypeError:
                return None
            for a in attrs:
                if type(a) is not dict or len(a) != 3:
                    break
                try:
                    an, at, av = _attr_fields(a)
                except KeyError:
                    break
                if type(an) is not str or type(at) is not int:
                    break
                if at == 2:
                    if not (type(av) is int and I64_MIN <= av <= I64_MAX):
                        break
                elif at == 7:
                    if type(av) is not list:
                        break
                    for x in av:
                        if not (type(x) is int and I64_MIN <= x <= I64_MAX):
                            break
                    else:
                        continue
                    break
                elif at == 1:
                    if not (type(av) is int and 0 <= av <= U32_MAX):
                        break
                elif at == 6:
                    if type(av) is not list:
                        break
                    for x in av:
                        if not (type(x) is int and 0 <= x <= U32_MAX):
                            break
                    else:
                        continue
                    break
                else:
                    break
            else:
                continue
            eager.append(i)
        return eager

    def node(self, o, w: str, level: int) -> Node:
        # Fast path: every field present with the right JSON type (what writers emit: section 4
        # always writes these seven), fetched in one C call.
        try:
            name, op, domain, overload, inputs, outputs, attrs = _node_fields(o)
        except (KeyError, TypeError):
            pass
        else:
            doc = "" if len(o) == 7 else o.get("doc", "")
            if (
                type(op) is str and type(name) is str and type(domain) is str and type(overload) is str
                and type(doc) is str and type(inputs) is list and type(outputs) is list and type(attrs) is list
            ):
                try:
                    _join(inputs)
                    _join(outputs)
                except TypeError:
                    pass
                else:
                    if attrs:
                        attributes = tuple([self.attribute(a, f"{w}.attributes[{i}]", level) for i, a in enumerate(attrs)])
                    else:
                        attributes = ()
                    return _Node(op, name, domain, overload, doc, tuple(inputs), tuple(outputs), attributes, w)
        return self.node_slow(o, w, level)

    def node_slow(self, o, w: str, level: int) -> Node:
        if type(o) is not dict:
            self.wrong(w, o, "a Node (an object)")
            return _Node(op="", where=w)
        op = self.req_str(o, "op", w)
        name = self.opt_str(o, "name", w)
        domain = self.opt_str(o, "domain", w)
        overload = self.opt_str(o, "overload", w)
        doc = self.opt_str(o, "doc", w)
        inputs = self.str_list(o, "inputs", w)
        outputs = self.str_list(o, "outputs", w)
        attributes = tuple(
            [self.attribute(a, f"{w}.attributes[{i}]", level) for i, a in enumerate(self.opt_list(o, "attributes", w))]
        )
        return _Node(
            op=op, name=name, domain=domain, overload=overload, doc=doc,
            inputs=inputs, outputs=outputs, attributes=attributes, where=w,
        )

    def attribute(self, o, w: str, level: int) -> Attribute:
        # Fast path: exactly {name, type, value} (no doc, no ref) with a known type code.
        try:
            name, t, value = _attr_fields(o)
        except (KeyError, TypeError):
            pass
        else:
            if len(o) == 3 and type(name) is str and type(t) is int and 1 <= t <= 14:
                if t == 2 and type(value) is int and I64_MIN <= value <= I64_MAX:
                    return _Attribute(name, 2, value, "", "", w)
                return _Attribute(name, t, self.attr_value(t, value, f"{w}.value", level), "", "", w)
        return self.attribute_slow(o, w, level)

    def attribute_slow(self, o, w: str, level: int) -> Attribute:
        if type(o) is not dict:
            self.wrong(w, o, "an Attribute (an object)")
            return _Attribute(name="", type=0, where=w)
        get = o.get
        name = get("name", ABSENT)
        if type(name) is not str:
            name = self.req_str(o, "name", w)
        t = get("type", ABSENT)
        if not (type(t) is int and I64_MIN <= t <= I64_MAX):
            t = self.req_int(o, "type", w)
            if t is None:
                return _Attribute(name=name, type=0, where=w)
        doc = get("doc", "")
        if type(doc) is not str:
            doc = self.opt_str(o, "doc", w)
        ref = get("ref", "")
        if type(ref) is not str:
            ref = self.opt_str(o, "ref", w)
        if not 0 <= t <= 14:
            self.bad(Kind.UNSUPPORTED, f"{w}.type", f"unknown attribute type {t}")
            return _Attribute(name=name, type=t, ref=ref, doc=doc, where=w)
        value = get("value", ABSENT)
        if ref:
            if value is not ABSENT:
                self.bad(Kind.MALFORMED, f"{w}.value", "an attribute with a 'ref' must not have a 'value'")
            return _Attribute(name=name, type=t, value=None, ref=ref, doc=doc, where=w)
        if t == 0:
            self.bad(Kind.MALFORMED, f"{w}.type", "attribute type 0 (undefined) without a 'ref'")
            return _Attribute(name=name, type=t, doc=doc, where=w)
        if value is ABSENT:
            self.req_missing(w, "value", AttrType(t).name)
            return _Attribute(name=name, type=t, doc=doc, where=w)
        return _Attribute(name=name, type=t, value=self.attr_value(t, value, f"{w}.value", level), ref="", doc=doc, where=w)

    def attr_value(self, t: int, v, w: str, level: int):
        if t == 2:  # INT
            return v if self.int_ok(v, w) else None
        if t == 1:  # FLOAT
            if type(v) is int and 0 <= v <= U32_MAX:
                return v
            if type(v) is int:
                self.bad(Kind.MALFORMED, w, f"float bits {v} outside 0..2^32-1")
            else:
                self.wrong(w, v, "an unsigned integer (the float's bits)")
            return None
        if t == 3:  # STRING
            return self.b64(v, w)
        if t == 4:  # TENSOR
            return self.tensor(v, w)
        if t == 5:  # GRAPH
            return self.sub_graph(v, w, level + 1)
        if t == 13:  # TYPE_PROTO
            return self.type(v, w, level + 1)
        if t == 11:  # SPARSE_TENSOR
            return self.sparse(v, w)
        if type(v) is not list:
            self.wrong(w, v, "an array")
            return None
        if t == 7:  # INTS
            out = tuple(v)
            for x in out:
                if not (type(x) is int and I64_MIN <= x <= I64_MAX):
                    return tuple(x if self.int_ok(x, f"{w}[{i}]") else 0 for i, x in enumerate(out))
            return out
        if t == 6:  # FLOATS
            out = tuple(v)
            for x in out:
                if not (type(x) is int and 0 <= x <= U32_MAX):
                    res = []
                    for i, y in enumerate(out):
                        if type(y) is int and 0 <= y <= U32_MAX:
                            res.append(y)
                        else:
                            if type(y) is int:
                                self.bad(Kind.MALFORMED, f"{w}[{i}]", f"float bits {y} outside 0..2^32-1")
                            else:
                                self.wrong(f"{w}[{i}]", y, "an unsigned integer (the float's bits)")
                            res.append(0)
                    return tuple(res)
            return out
        if t == 8:  # STRINGS
            return tuple(self.b64(x, f"{w}[{i}]") or b"" for i, x in enumerate(v))
        if t == 9:  # TENSORS
            return tuple(self.tensor(x, f"{w}[{i}]") for i, x in enumerate(v))
        if t == 10:  # GRAPHS
            return tuple(g for g in (self.sub_graph(x, f"{w}[{i}]", level + 1) for i, x in enumerate(v)) if g is not None)
        if t == 12:  # SPARSE_TENSORS
            return tuple(s for s in (self.sparse(x, f"{w}[{i}]") for i, x in enumerate(v)) if s is not None)
        if t == 14:  # TYPE_PROTOS
            return tuple(x for x in (self.type(x, f"{w}[{i}]", level + 1) for i, x in enumerate(v)) if x is not None)
        raise AssertionError(t)  # pragma: no cover - 0..14 handled above

    def sub_graph(self, v, w: str, level: int) -> Graph | None:
        if level > MAX_LEVEL:
            self.too_deep(w, "graph")
            return None
        if not self.obj(v, w, "a Graph"):
            return None
        return self.graph(v, w, level)
