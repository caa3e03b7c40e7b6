"""A prepared ModelProto (:mod:`.prepare`) as ORT tables (:class:`.tables.Table`), as ONNX Runtime saves it.

Per graph: initializers, every value's ``node_args`` entry (its type: declared, inferred, the
initializer's own, or the enclosing graph's for an outer-scope name), nodes (name, doc, domain,
since-version, index, op type, inputs, outputs, attributes, ``input_arg_counts`` per formal input,
implicit inputs of subgraph-holding nodes), ``max_node_index``, the edges between nodes of the
graph (one ``NodeEdge`` per node), inputs, outputs and sparse initializers. Tensor bytes become
:class:`.tables.Payload` objects: the source record's storage range, or bytes held in the proto.
Every operator's schema goes into the kernel type-string table (:mod:`.kernel_types`). Values of
one graph with the same type share one ``TypeInfo`` table (flatbuffers allows a table many referrers;
the ``node_args`` entries of one graph are placed together, before any type: offsets stay forward).
"""

from __future__ import annotations

from ..errors import FormatError, Kind
from ..schema import Tensor
from .fbs import ENUMS
from .expand import body_input_types, tensor_type_proto
from .fp16_casts import needs_inserted_casts
from .formal_inputs import input_arg_counts, onnx_domain, schema_for
from .kernel_types import op_id, resolver_table
from .prepare import MARKER
from .tables import Payload, Table

__all__ = ["ORT_VERSION", "build"]

ORT_VERSION = "6"
"""``kOrtModelVersion`` of ONNX Runtime 1.16 up to 1.32 (the wheel's ``ort_format_version.h``)."""

_DIM = ENUMS["DimensionValueType"]
_TYPE = ENUMS["TypeInfoValue"]
_STRING = 8


def _dims_table(dims) -> Table:
    out = []
    for d in dims:
        if d.HasField("dim_value"):
            v = Table("DimensionValue", dim_type=_DIM["VALUE"], dim_value=d.dim_value)
        elif d.HasField("dim_param"):
            v = Table("DimensionValue", dim_type=_DIM["PARAM"], dim_param=d.dim_param)
        else:
            v = Table("DimensionValue", dim_type=_DIM["UNKNOWN"])
        out.append(Table("Dimension", value=v, denotation=d.denotation or None))
    return Table("Shape", dim=out)


def type_table(tp) -> Table | None:
    """A TypeProto as a ``TypeInfo`` table; None for kinds the ORT format has no place for
    (optional, sparse tensor, opaque) or an unset type."""
    which = tp.WhichOneof("value")
    den = tp.denotation or None
    if which == "tensor_type":
        tt = tp.tensor_type
        shape = _dims_table(tt.shape.dim) if tt.HasField("shape") else None
        return Table("TypeInfo", denotation=den, value_type=_TYPE["tensor_type"],
                     value=(_TYPE["tensor_type"], Table("TensorTypeAndShape", elem_type=tt.elem_type, shape=shape)))
    if which == "sequence_type":
        inner = type_table(tp.sequence_type.elem_type) if tp.sequence_type.HasField("elem_type") else None
        return Table("TypeInfo", denotation=den, value_type=_TYPE["sequence_type"],
                     value=(_TYPE["sequence_type"], Table("SequenceType", elem_type=inner)))
    if which == "map_type":
        mt = tp.map_type
        inner = type_table(mt.value_type) if mt.HasField("value_type") else None
        return Table("TypeInfo", denotation=den, value_type=_TYPE["map_type"],
                     value=(_TYPE["map_type"], Table("MapType", key_type=mt.key_type, value_type=inner)))
    return None


def _tensor_type(elem: int, dims) -> Table:
    shape = Table("Shape", dim=[Table("Dimension", value=Table("DimensionValue", dim_type=_DIM["VALUE"], dim_value=d))
                                for d in dims])
    return Table("TypeInfo", value_type=_TYPE["tensor_type"],
                 value=(_TYPE["tensor_type"], Table("TensorTypeAndShape", elem_type=elem, shape=shape)))


class Builder:
    """One model's tables. ``sources``: the records a marker in the proto points at."""

    def __init__(self, mp, sources: list[Tensor]) -> None:
        self.mp = mp
        self.sources = sources
        self.opsets = {onnx_domain(o.domain): o.version for o in mp.opset_import}
        self.ops: dict[str, object] = {}
        self.cast_only: list[str] = []  # float16 nodes ONNX Runtime's CPU build runs only through its own casts

    # tensors ------------------------------------------------------------------------------------
    def tensor(self, t, where: str) -> Table:
        fields = dict(name=t.name, doc_string=t.doc_string or None, dims=list(t.dims), data_type=t.data_type)
        if t.data_type == _STRING:
            fields["string_data"] = list(t.string_data)
            return Table("Tensor", **fields)
        ext = {e.key: e.value for e in t.external_data}
        if ext.get("location") == MARKER:
            rec = self.sources[int(ext["offset"])]
            fields["raw_data"] = Payload(rec.length, (rec.storage, rec.file_offset), rec.where or where)
        elif t.HasField("raw_data") or not _typed_fields(t):
            fields["raw_data"] = Payload(len(t.raw_data), bytes(t.raw_data), where)
        else:  # values in float_data, int32_data... (a tensor onnx made): as raw little-endian bytes
            from onnx import numpy_helper

            try:
                data = numpy_helper.to_array(t).tobytes()
            except Exception as e:
                raise FormatError(Kind.UNSUPPORTED, where, None, f"cannot turn the tensor's typed values into bytes: {e}") from e
            fields["raw_data"] = Payload(len(data), data, where)
        return Table("Tensor", **fields)

    def sparse(self, s, where: str) -> Table:
        return Table("SparseTensor", values=self.tensor(s.values, where + ".values"),
                     indices=self.tensor(s.indices, where + ".indices"), dims=list(s.dims))

    # attributes -----------------------------------------------------------------------------------
    def attribute(self, a, where: str, scope: dict, node=None) -> tuple[Table, list[str]]:
        """The attribute's table and the outer-scope names its subgraphs read."""
        t = a.type
        f: dict = dict(name=a.name, doc_string=a.doc_string or None, type=t)
        implicit: list[str] = []
        if t == 1:
            f["f"] = a.f
        elif t == 2:
            f["i"] = a.i
        elif t == 3:
            f["s"] = a.s
        elif t == 4:
            f["t"] = self.tensor(a.t, where + ".t")
        elif t == 5:
            f["g"], implicit = self.graph(a.g, where + ".g", scope, body_input_types(node, a.name, a.g, scope))
        elif t == 6:
            f["floats"] = list(a.floats)
        elif t == 7:
            f["ints"] = list(a.ints)
        elif t == 8:
            f["strings"] = list(a.strings)
        elif t == 9:
            f["tensors"] = [self.tensor(x, f"{where}.tensors[{i}]") for i, x in enumerate(a.tensors)]
        elif t == 10:
            graphs = []
            for i, g in enumerate(a.graphs):
                gt, imp = self.graph(g, f"{where}.graphs[{i}]", scope)
                graphs.append(gt)
                implicit.extend(imp)
            f["graphs"] = graphs
        else:
            raise FormatError(Kind.UNSUPPORTED, where, None,
                              f"attribute {a.name!r} of type {t} (sparse tensors, type protos) has no form ONNX Runtime's writer saves")
        return Table("Attribute", **f), implicit

    # graphs -------------------------------------------------------------------------------------
    def graph(self, g, where: str, outer: dict, given: dict | None = None) -> tuple[Table, list[str]]:
        """The graph's table and the names it reads from enclosing graphs (in first-use order).
        ``given``: types of body inputs the source leaves undeclared, from the holding node (Loop, Scan)."""
        types = dict(outer)
        types.update(given or {})
        for vi in (*g.value_info, *g.input, *g.output):
            if vi.HasField("type"):
                types[vi.name] = vi.type
        defined = {vi.name for vi in g.input}
        init_types = {}
        for t in g.initializer:
            defined.add(t.name)
            init_types[t.name] = t
        for s in g.sparse_initializer:
            defined.add(s.values.name)
            init_types[s.values.name] = s  # dims on the sparse tensor: typed below
        for name, t in init_types.items():  # an initializer's type is its own (subgraphs read it too)
            if name not in types:
                types[name] = tensor_type_proto(t.data_type if hasattr(t, "data_type") else t.values.data_type, t.dims)
        producer: dict[str, tuple[int, int]] = {}
        for i, n in enumerate(g.node):
            for k, o in enumerate(n.output):
                if o:
                    producer[o] = (i, k)
                    defined.add(o)
        nodes, all_inputs = [], []
        for i, n in enumerate(g.node):
            nw = f"{where}.nodes[{i}]"
            attrs, implicit = [], []
            for a in n.attribute:
                at, imp = self.attribute(a, f"{nw}.attributes.{a.name}", types, n)
                attrs.append(at)
                implicit.extend(imp)
            implicit = list(dict.fromkeys(implicit))
            schema = schema_for(n.op_type, n.domain, self.opsets, nw)
            self.ops.setdefault(op_id(onnx_domain(n.domain), n.op_type, schema.since_version), schema)
            if needs_inserted_casts(n, types):
                self.cast_only.append((n.op_type, nw))
            nodes.append(Table("Node", name=n.name, doc_string=n.doc_string or None, domain=n.domain,
                               since_version=schema.since_version, index=i, op_type=n.op_type, type=0,
                               inputs=list(n.input), outputs=list(n.output), attributes=attrs,
                               input_arg_counts=input_arg_counts(schema, len(n.input), nw),
                               implicit_inputs=implicit))
            all_inputs.append((list(n.input) + implicit))
        edges = [(set(), set()) for _ in g.node]
        for i, names in enumerate(all_inputs):
            for j, name in enumerate(names):
                src = producer.get(name)
                if src is not None:
                    edges[i][0].add((src[0], src[1], j))
                    edges[src[0]][1].add((i, src[1], j))
        node_edges = [Table("NodeEdge", node_index=i, input_edges=sorted(ins), output_edges=sorted(outs))
                      for i, (ins, outs) in enumerate(edges)]
        order = [vi.name for vi in g.input] + list(init_types)
        for n, names in zip(g.node, all_inputs):
            order += names
            order += list(n.output)
        order += [vi.name for vi in g.output]
        node_args = []
        shared: dict = {}  # one TypeInfo table per distinct type of this graph (referred to by every value of it)
        for name in dict.fromkeys(order):
            if not name:  # an omitted optional input or output: ONNX Runtime keeps an untyped "" value
                node_args.append(Table("ValueInfo", name=""))
                continue
            tp = types.get(name)
            tt = None
            if tp is not None:
                key = tp.SerializeToString()
                tt = shared.get(key)
                if tt is None:
                    tt = shared[key] = type_table(tp)
            if tt is None and name in init_types:
                it = init_types[name]
                elem = it.data_type if hasattr(it, "data_type") else it.values.data_type
                key = (elem, tuple(it.dims))
                tt = shared.get(key)
                if tt is None:
                    tt = shared[key] = _tensor_type(elem, it.dims)
            if tt is None:
                raise FormatError(Kind.UNSUPPORTED, where, None,
                                  f"value {name!r} has no type (none declared, none from onnx shape inference): ONNX Runtime "
                                  "refuses an untyped value in an .ort file")
            node_args.append(Table("ValueInfo", name=name, type=tt))
        reads = [x for names in all_inputs for x in names] + [vi.name for vi in g.output]
        implicit_here = [x for x in dict.fromkeys(reads) if x and x not in defined]
        table = Table(
            "Graph",
            initializers=[self.tensor(t, f"{where}.initializers[{k}]") for k, t in enumerate(g.initializer)],
            node_args=node_args, nodes=nodes, max_node_index=len(nodes), node_edges=node_edges,
            inputs=[vi.name for vi in g.input], outputs=[vi.name for vi in g.output],
            sparse_initializers=[self.sparse(s, f"{where}.sparse_initializers[{k}]") for k, s in enumerate(g.sparse_initializer)] or None,
        )
        return table, implicit_here

    def model(self) -> Table:
        mp = self.mp
        graph, _ = self.graph(mp.graph, "graph", {})
        model = Table(
            "Model", ir_version=mp.ir_version,
            opset_import=[Table("OperatorSetId", domain=o.domain, version=o.version) for o in mp.opset_import],
            producer_name=mp.producer_name or None, producer_version=mp.producer_version or None,
            domain=mp.domain or None, model_version=mp.model_version, doc_string=mp.doc_string or None,
            graph=graph, graph_doc_string=mp.graph.doc_string or None,
            metadata_props=[Table("StringStringEntry", key=p.key, value=p.value) for p in mp.metadata_props] or None,
        )
        return Table("InferenceSession", ort_version=ORT_VERSION, model=model, kernel_type_str_resolver=resolver_table(self.ops))


def _typed_fields(t) -> bool:
    return bool(t.float_data or t.int32_data or t.int64_data or t.double_data or t.uint64_data)


def build(mp, sources: list[Tensor], warn=None) -> Table:
    """The ``InferenceSession`` table of the prepared proto ``mp``. ``warn`` hears of float16 nodes ONNX
    Runtime's CPU build will not load from an ``.ort`` (:mod:`.fp16_casts`)."""
    b = Builder(mp, sources)
    root = b.model()
    if b.cast_only and warn is not None:
        n = len(b.cast_only)
        ops = sorted({op for op, _w in b.cast_only})
        shown = ", ".join(ops[:4]) + (f" and {len(ops) - 4} more" if len(ops) > 4 else "")
        warn(f"{n} float16 node{'s' if n != 1 else ''} of {shown} (first: {b.cast_only[0][1]}): ONNX Runtime's CPU build "
             "runs them only via casts it adds loading an .onnx; it may refuse this .ort")
    return root
