"""What ONNX Runtime's converter changes without changing the model: equivalences for ``--diff`` with an ``.ort`` side.

``normalize(doc_a, doc_b)`` returns both models rewritten so that only real differences are left,
and the list of equivalences that applied (each a sentence for ``DiffResult.equivalences``).
Applied only when one side (or both) is an ``.ort`` file; the other side is brought to the form
ORT writes:

* ORT lists every domain it registers in the opset imports: an opset of the ORT side that the
  other side does not import and no node uses is dropped;
* ORT turns ``Constant`` nodes into initializers (``value_sparse`` into sparse initializers);
* ORT drops initializers no node (nor a subgraph, nor a graph output) reads, and in IR < 4 models
  (initializers listed as graph inputs) the graph inputs they back;
* ORT fills in default attribute values: an attribute missing on one side whose value is the
  operator schema's default (onnx's ``onnx.defs``; floats compared as values: -0.0 is 0.0) is added there;
* ORT reorders initializers (matched by name: stored order never counts) and may narrow sparse
  indices (INT64 to INT8/16/32): indices are compared as INT64 values;
* ORT keeps neither graph names, sparse indices' names, a sparse value's type (it stores a dense
  tensor type) nor the order of ``metadata_props``; it keeps a type for every value
  (``node_args``): value_info entries only the ORT side has are not differences, nor the type it
  gives to a graph output (a subgraph's, mostly) that the other side leaves untyped.

Records are rebuilt with ``dataclasses.replace`` and the :mod:`..format.schema` constructors; new
tensor bytes live in a ``BytesStorage``. Never imports a UI toolkit.
"""

from __future__ import annotations

import struct
from dataclasses import replace

from ...format.dtypes import DTYPES, STRING, AttrType, DataType
from ...format.schema import Attribute, Graph, Model, SparseTensor, Tensor, Type, bits_from_float
from ...format.storage import BytesStorage

__all__ = ["normalize"]

_INT64 = 7


def normalize(doc_a, doc_b) -> tuple[Model, Model, list[str]]:
    ma, mb = doc_a.model, doc_b.model
    ort_a, ort_b = doc_a.source == "ort", doc_b.source == "ort"
    eq: dict[str, None] = {}
    if not ort_a:
        ma = _like_ort(ma, eq)
    if not ort_b:
        mb = _like_ort(mb, eq)
    ma, mb = _pair_model(ma, mb, ort_a, ort_b, eq)
    return ma, mb, list(eq)


# -- one side, alone: what the converter does to a graph


def _like_ort(m: Model, eq: dict) -> Model:
    return replace(m, graph=_graph_like_ort(m.graph, eq, m, outer=frozenset()))


def _graph_like_ort(g: Graph, eq: dict, m: Model, outer: frozenset) -> Graph:
    inits = list(g.initializers)
    sparse = list(g.sparse_initializers)
    kept: list = []
    kept_index: list[int] = []
    for i, n in enumerate(g.nodes):
        if n.op == "Constant" and n.domain in ("", "ai.onnx") and len(n.outputs) == 1 and len(n.attributes) == 1:
            made = _constant(n, n.outputs[0])
            if made is not None:
                (sparse if isinstance(made, SparseTensor) else inits).append(made)
                eq["ONNX Runtime turns Constant nodes into initializers"] = None
                continue
        kept.append(n)
        kept_index.append(i)
    nodes = tuple(_node_subgraphs(n, eq, m) for n in kept)
    used = set(o.name for o in g.outputs)
    if m.ir_version >= 4:  # an initializer that is also a graph input is an overridable input: kept
        used.update(v.name for v in g.inputs)
    for n in nodes:
        used.update(n.inputs)
        for a in n.attributes:
            for sub in a.graphs():
                used.update(_free_names(sub))
    before = len(inits) + len(sparse)
    dropped = {t.name for t in inits if t.name not in used} | {s.name for s in sparse if s.name not in used}
    inits = [t for t in inits if t.name in used]
    sparse = [s for s in sparse if s.name in used]
    if len(inits) + len(sparse) != before:
        eq["ONNX Runtime drops initializers that nothing reads"] = None
    inputs = g.inputs
    if dropped and m.ir_version < 4 and any(v.name in dropped for v in inputs):
        inputs = tuple(v for v in inputs if v.name not in dropped)
        eq["ONNX Runtime drops the graph inputs that are initializers it drops (IR < 4: initializers are listed as inputs)"] = None
    order = None
    if g.order is not None:
        pos = {old: new for new, old in enumerate(kept_index)}
        order = tuple(pos[i] for i in g.order if i in pos)
    return replace(g, nodes=nodes, initializers=tuple(inits), sparse_initializers=tuple(sparse), order=order, inputs=inputs)


def _node_subgraphs(n, eq: dict, m: Model):
    if not any(a.type in (AttrType.GRAPH, AttrType.GRAPHS) for a in n.attributes):
        return n
    attrs = []
    for a in n.attributes:
        if a.type == AttrType.GRAPH and a.value is not None:
            a = replace(a, value=_graph_like_ort(a.value, eq, m, frozenset()))
        elif a.type == AttrType.GRAPHS and a.value is not None:
            a = replace(a, value=tuple(_graph_like_ort(x, eq, m, frozenset()) for x in a.value))
        attrs.append(a)
    return replace(n, attributes=tuple(attrs))


def _free_names(g: Graph) -> set[str]:
    """Every name a graph's nodes read (a superset of its outer-scope references)."""
    out: set[str] = set()
    for n in g.nodes:
        out.update(n.inputs)
        for a in n.attributes:
            for sub in a.graphs():
                out.update(_free_names(sub))
    return out


def _bytes_tensor(name: str, dtype: int, dims: tuple, data: bytes, where: str) -> Tensor:
    if not data:
        return Tensor(name, dtype, dims, where=where)
    return Tensor(name, dtype, dims, "", 0, len(data), 0, BytesStorage(data, where), where=where)


def _constant(n, name: str):
    a = n.attributes[0]
    v, w = a.value, n.where
    if a.name == "value" and isinstance(v, Tensor):
        return replace(v, name=name)
    if a.name == "sparse_value" and isinstance(v, SparseTensor):
        return replace(v, values=replace(v.values, name=name))
    if a.name == "value_float":
        return _bytes_tensor(name, 1, (), struct.pack("<I", v), w)
    if a.name == "value_floats":
        return _bytes_tensor(name, 1, (len(v),), struct.pack(f"<{len(v)}I", *v), w)
    if a.name == "value_int":
        return _bytes_tensor(name, _INT64, (), struct.pack("<q", v), w)
    if a.name == "value_ints":
        return _bytes_tensor(name, _INT64, (len(v),), struct.pack(f"<{len(v)}q", *v), w)
    if a.name == "value_string":
        return Tensor(name, STRING, (), strings=(v,), where=w)
    if a.name == "value_strings":
        return Tensor(name, STRING, (len(v),), strings=tuple(v), where=w)
    return None


# -- both sides together


def _pair_model(ma: Model, mb: Model, ort_a: bool, ort_b: bool, eq: dict) -> tuple[Model, Model]:
    used = _domains(ma.graph) | _domains(mb.graph)
    doms_a = {o.domain for o in ma.opsets}
    doms_b = {o.domain for o in mb.opsets}

    def trim(m: Model, is_ort: bool, other: set) -> Model:
        if not is_ort:
            return m
        keep = tuple(o for o in m.opsets if o.domain in other or o.domain in used or o.domain in ("", "ai.onnx"))
        if len(keep) != len(m.opsets):
            eq["ONNX Runtime lists every domain it registers in the opset imports (unused ones are not compared)"] = None
        return replace(m, opsets=keep)

    ma, mb = trim(ma, ort_a, doms_b), trim(mb, ort_b, doms_a)
    if sorted(ma.metadata) == sorted(mb.metadata) and ma.metadata != mb.metadata:
        eq["ONNX Runtime does not keep the order of metadata_props"] = None
        ma, mb = replace(ma, metadata=tuple(sorted(ma.metadata))), replace(mb, metadata=tuple(sorted(mb.metadata)))
    ga, gb = _pair_graph(ma.graph, mb.graph, ma, mb, ort_a, ort_b, eq)
    return replace(ma, graph=ga), replace(mb, graph=gb)


def _domains(g: Graph) -> set[str]:
    out = set()
    for n in g.nodes:
        out.add(n.domain)
        for a in n.attributes:
            for sub in a.graphs():
                out |= _domains(sub)
    return out


def _pair_graph(ga: Graph, gb: Graph, ma: Model, mb: Model, ort_a: bool, ort_b: bool, eq: dict) -> tuple[Graph, Graph]:
    if ort_a != ort_b and ga.name != gb.name:  # ORT keeps no graph name (the reader makes one up)
        eq["ONNX Runtime does not keep graph names"] = None
        ga, gb = (replace(ga, name=gb.name), gb) if ort_a else (ga, replace(gb, name=ga.name))
    # value_info: ORT has an entry for every value
    if ort_a and not ort_b:
        ga = _trim_value_info(ga, gb, eq)
    if ort_b and not ort_a:
        gb = _trim_value_info(gb, ga, eq)
    ga, gb = _pair_io_types(ga, gb, eq), _pair_io_types(gb, ga, eq)
    if ort_a != ort_b:
        ga, gb = (_untyped_outputs(ga, gb, eq), gb) if ort_a else (ga, _untyped_outputs(gb, ga, eq))
        ga, gb = (_copy_docs(ga, gb, eq), gb) if ort_a else (ga, _copy_docs(gb, ga, eq))
    if [t.name for t in ga.initializers] != [t.name for t in gb.initializers] and \
            sorted(t.name for t in ga.initializers) == sorted(t.name for t in gb.initializers):
        eq["initializers are stored in a different order (ONNX Runtime reorders them)"] = None
    ga, gb = _pair_sparse(ga, gb, eq)
    ga, gb = _pair_nodes(ga, gb, ma, mb, ort_a, ort_b, eq)
    return ga, gb


def _copy_docs(g_ort: Graph, other: Graph, eq: dict) -> Graph:
    """ORT drops initializers' doc strings: an empty one is compared as the other side's."""
    docs = {t.name: t.doc for t in other.initializers if t.doc}
    inits = []
    for t in g_ort.initializers:
        if not t.doc and docs.get(t.name):
            eq["ONNX Runtime does not keep initializers' doc strings"] = None
            t = replace(t, doc=docs[t.name])
        inits.append(t)
    return replace(g_ort, initializers=tuple(inits))


def _untyped_outputs(g_ort: Graph, other: Graph, eq: dict) -> Graph:
    """ORT types every value, a (subgraph) output the source leaves untyped too: that type is not compared."""
    untyped = {v.name for v in other.outputs if v.type is None}
    if not untyped:
        return g_ort
    outs = []
    for v in g_ort.outputs:
        if v.name in untyped and v.type is not None:
            eq["ONNX Runtime gives a type to the graph outputs the source leaves untyped (subgraph outputs)"] = None
            v = replace(v, type=None)
        outs.append(v)
    return replace(g_ort, outputs=tuple(outs))


def _trim_value_info(g_ort: Graph, other: Graph, eq: dict) -> Graph:
    names = {v.name for v in other.value_info}
    keep = tuple(v for v in g_ort.value_info if v.name in names)
    if len(keep) != len(g_ort.value_info):
        eq["ONNX Runtime keeps a type for every value (node_args): value_info only it has is not compared"] = None
    return replace(g_ort, value_info=keep)


def _pair_io_types(g: Graph, other: Graph, eq: dict) -> Graph:
    """A sparse value's type that ORT stores as a dense tensor type: compared as the other side's."""
    types = {v.name: v.type for v in (*other.inputs, *other.outputs)}

    def fix(vs):
        out = []
        for v in vs:
            t = types.get(v.name)
            if t is not None and v.type is not None and t.kind == "sparse_tensor" and v.type.kind == "tensor" \
                    and (t.elem, t.shape) == (v.type.elem, v.type.shape):
                eq["ONNX Runtime stores a sparse value's type as a dense tensor type"] = None
                v = replace(v, type=Type("sparse_tensor", elem=t.elem, shape=t.shape, where=v.type.where))
            out.append(v)
        return tuple(out)

    return replace(g, inputs=fix(g.inputs), outputs=fix(g.outputs))


def _pair_sparse(ga: Graph, gb: Graph, eq: dict) -> tuple[Graph, Graph]:
    by_b = {s.name: s for s in gb.sparse_initializers}
    new_a, new_b = [], {}
    for s in ga.sparse_initializers:
        o = by_b.get(s.name)
        if o is not None:
            s, o = _pair_indices(s, o, eq)
            new_b[o.name] = o
        new_a.append(s)
    sb = tuple(new_b.get(s.name, s) for s in gb.sparse_initializers)
    return replace(ga, sparse_initializers=tuple(new_a)), replace(gb, sparse_initializers=sb)


_INTEGERS = frozenset((DataType.UINT8, DataType.INT8, DataType.UINT16, DataType.INT16, DataType.INT32, DataType.INT64,
                       DataType.UINT32, DataType.UINT64))
"""Index dtypes ONNX Runtime may narrow sparse indices to."""

def _pair_indices(a: SparseTensor, b: SparseTensor, eq: dict) -> tuple[SparseTensor, SparseTensor]:
    ia, ib = a.indices, b.indices
    if ia.name != ib.name and (not ia.name or not ib.name):
        eq["ONNX Runtime does not keep sparse indices' names"] = None
        name = ia.name or ib.name
        ia, ib = replace(ia, name=name), replace(ib, name=name)
    if (ia.dtype != ib.dtype or ia.dims != ib.dims) and {ia.dtype, ib.dtype} <= _INTEGERS:
        wa, wb = _widen(ia, a.dims), _widen(ib, b.dims)
        if wa is not None and wb is not None:
            eq["ONNX Runtime narrows sparse indices and makes them linear (compared as linear INT64 positions)"] = None
            ia, ib = wa, wb
    return replace(a, indices=ia), replace(b, indices=ib)


def _widen(t: Tensor, dense: tuple) -> Tensor | None:
    """Indices as linear INT64 positions (ORT writes [NNZ] linear indices; ONNX also allows [NNZ, rank])."""
    import numpy as np

    info = DTYPES.get(t.dtype)
    if info is None or t.is_string:
        return None
    try:
        vals = t.values().astype(np.int64)
        if vals.ndim == 2 and dense and vals.shape[1] == len(dense):
            vals = np.ravel_multi_index(tuple(vals.T), dense).astype(np.int64)
    except Exception:  # noqa: BLE001 - a tensor without bytes, or out-of-range indices: compare as it is
        return None
    return _bytes_tensor(t.name, _INT64, (int(vals.shape[0]),), vals.astype("<i8").tobytes(), t.where)


# -- attribute defaults


def _pair_nodes(ga: Graph, gb: Graph, ma: Model, mb: Model, ort_a: bool, ort_b: bool, eq: dict) -> tuple[Graph, Graph]:
    def key(n):  # a node by its name, or by the values it makes when unnamed
        return n.name or ("", *n.outputs)

    by_key_b = {key(n): n for n in gb.nodes}
    if len(by_key_b) != len(gb.nodes):
        return ga, gb
    nodes_a, repl_b = [], {}
    for n in ga.nodes:
        o = by_key_b.get(key(n))
        if o is None or o.op != n.op:
            nodes_a.append(n)
            continue
        n2, o2 = _fill_defaults(n, o, ma, eq), _fill_defaults(o, n, mb, eq)
        # subgraphs, pairwise by attribute name
        sub_b = {a.name: a for a in o2.attributes}
        attrs_a, attrs_b = [], dict(sub_b)
        for a in n2.attributes:
            x = sub_b.get(a.name)
            if x is not None and a.type == x.type == AttrType.GRAPH and a.value is not None and x.value is not None:
                sa, sb = _pair_graph(a.value, x.value, ma, mb, ort_a, ort_b, eq)
                a, attrs_b[a.name] = replace(a, value=sa), replace(x, value=sb)
            attrs_a.append(a)
        nodes_a.append(replace(n2, attributes=tuple(attrs_a)))
        repl_b[key(o)] = replace(o2, attributes=tuple(attrs_b[a.name] for a in o2.attributes))
    return replace(ga, nodes=tuple(nodes_a)), replace(gb, nodes=tuple(repl_b.get(key(n), n) for n in gb.nodes))


def _fill_defaults(n, other, m: Model, eq: dict):
    """``n`` with the attributes ``other`` has and ``n`` lacks added, when they hold the schema's default."""
    have = {a.name for a in n.attributes}
    missing = [a for a in other.attributes if a.name not in have]
    if not missing:
        return n
    defaults = _schema_defaults(n.op, n.domain, m)
    added = []
    for a in missing:
        d = defaults.get(a.name)
        if d is not None and d.type == a.type and _same_default(d, a):
            added.append(replace(a, where=n.where + f".attributes[{a.name}]"))
    if not added:
        return n
    eq["ONNX Runtime fills in default attribute values (onnx operator schemas)"] = None
    return replace(n, attributes=n.attributes + tuple(added))


def _same_default(d: Attribute, a: Attribute) -> bool:
    """``a`` holds the schema default ``d``: floats as values (ORT's schemas give ``ai.onnx.ml``'s
    LabelEncoder ``default_float`` 0.0 where onnx's say -0.0), the rest exactly."""
    if d.value == a.value:
        return True
    if d.type == AttrType.FLOAT and isinstance(a.value, int) and isinstance(d.value, int):
        return a.float_value == d.float_value
    if d.type == AttrType.FLOATS and isinstance(a.value, tuple) and isinstance(d.value, tuple):
        return a.float_value == d.float_value
    return False


def _schema_defaults(op: str, domain: str, m: Model) -> dict[str, Attribute]:
    try:
        import onnx.defs
    except ImportError:  # pragma: no cover - onnx is a dependency
        return {}
    dom = "" if domain == "ai.onnx" else domain
    version = next((o.version for o in m.opsets if (o.domain or "") in (dom, "ai.onnx" if dom == "" else dom)), None)
    try:
        schema = onnx.defs.get_schema(op, version, dom) if version is not None else onnx.defs.get_schema(op, dom)
    except Exception:  # noqa: BLE001 - no such operator: no defaults
        return {}
    out = {}
    for name, attr in schema.attributes.items():
        d = attr.default_value
        if d is None or not d.name:
            continue
        t = d.type
        if t == AttrType.FLOAT:
            v: object = bits_from_float(d.f)
        elif t == AttrType.INT:
            v = d.i
        elif t == AttrType.STRING:
            v = d.s
        elif t == AttrType.FLOATS:
            v = tuple(bits_from_float(x) for x in d.floats)
        elif t == AttrType.INTS:
            v = tuple(d.ints)
        elif t == AttrType.STRINGS:
            v = tuple(d.strings)
        else:
            continue
        out[name] = Attribute(name, int(t), v)
    return out
