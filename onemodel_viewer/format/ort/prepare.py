"""The model as ONNX Runtime would save it, before any byte is laid out: a weightless ModelProto.

:func:`prepare` turns the records into an ``onnx.ModelProto`` whose large tensors carry no bytes
(a marker in ``external_data`` points back at the record: :data:`MARKER`, ``offset`` = its index in
the returned list), then does what ONNX Runtime's converter does to a model the ORT format cannot
hold: model-local functions are inlined (``onnx.inliner``), Constant nodes become initializers
(sparse ones sparse initializers) and initializers nothing reads are left out, in every graph;
each is said in a warning. Last, onnx shape
inference types the values the source does not declare (small integer tensors keep their bytes in
the proto so that shapes computed from them are known).
"""

from __future__ import annotations

import struct
from typing import Callable

from ..dtypes import STRING
from ..errors import FormatError, Kind
from ..schema import Model, Tensor, all_tensors
from .expand import expand_function_ops

__all__ = ["MARKER", "INLINE_BYTES", "prepare"]

MARKER = "\x00onemodel-view:source-tensor"
"""``external_data`` location of a tensor whose bytes stay in the source (its index is the offset)."""
INLINE_BYTES = 64 * 1024
"""Integer tensors up to this size, and any of up to 64 bytes (Resize's scales), are copied into the proto
(shape inference reads them); every other tensor's bytes stay in the source until copied to the output."""
_SHAPE_DTYPES = frozenset((2, 3, 4, 5, 6, 7, 12, 13))  # the integer types


def _proto(model: Model):
    from ..onnx.exporter import model_to_proto

    tensors: list[Tensor] = []
    external: dict[int, tuple[str, int, int] | None] = {}
    for t in all_tensors(model):
        if t.dtype == STRING or id(t) in external:
            continue
        if t.length and (t.storage is None or t.file_offset is None):
            raise FormatError(Kind.INVALID_MODEL, t.where, None, "tensor has no bytes")
        if t.length > INLINE_BYTES or (t.dtype not in _SHAPE_DTYPES and t.length > 64):
            external[id(t)] = (MARKER, len(tensors), t.length)
            tensors.append(t)
    return model_to_proto(model, external=external), tensors


def _tensor_of_constant(node, attr):
    """The tensor a Constant's value attribute means (named after the node's output), or a SparseTensorProto."""
    import onnx
    from onnx import TensorProto

    out = node.output[0]
    t = TensorProto()
    name = attr.name
    if name == "value":
        t.CopyFrom(attr.t)
    elif name == "sparse_value":
        s = onnx.SparseTensorProto()
        s.CopyFrom(attr.sparse_tensor)
        s.values.name = out
        return s
    elif name == "value_float":
        t.data_type, t.raw_data = TensorProto.FLOAT, struct.pack("<f", attr.f)
    elif name == "value_floats":
        t.data_type, t.raw_data = TensorProto.FLOAT, struct.pack(f"<{len(attr.floats)}f", *attr.floats)
        t.dims.append(len(attr.floats))
    elif name == "value_int":
        t.data_type, t.raw_data = TensorProto.INT64, struct.pack("<q", attr.i)
    elif name == "value_ints":
        t.data_type, t.raw_data = TensorProto.INT64, struct.pack(f"<{len(attr.ints)}q", *attr.ints)
        t.dims.append(len(attr.ints))
    elif name == "value_string":
        t.data_type = TensorProto.STRING
        t.string_data.append(attr.s)
    elif name == "value_strings":
        t.data_type = TensorProto.STRING
        t.string_data.extend(attr.strings)
        t.dims.append(len(attr.strings))
    else:
        return None
    t.name = out
    return t


def _constants_to_initializers(graph, where: str) -> int:
    """Move every Constant node of ``graph`` and its subgraphs into initializers; how many moved."""
    import onnx

    moved = 0
    keep = []
    for i, node in enumerate(graph.node):
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            if len(node.output) != 1 or len(node.attribute) != 1:
                raise FormatError(Kind.INVALID_MODEL, f"{where}.nodes[{i}]", None,
                                  f"a Constant node needs one output and one value attribute, not {len(node.output)} and {len(node.attribute)}")
            value = _tensor_of_constant(node, node.attribute[0])
            if value is None:
                raise FormatError(Kind.UNSUPPORTED, f"{where}.nodes[{i}]", None,
                                  f"a Constant with attribute {node.attribute[0].name!r} has no ORT form")
            if isinstance(value, onnx.SparseTensorProto):
                graph.sparse_initializer.append(value)
            else:
                graph.initializer.append(value)
            moved += 1
            continue
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                moved += _constants_to_initializers(a.g, f"{where}.nodes[{i}].{a.name}")
            elif a.type == onnx.AttributeProto.GRAPHS:
                for j, g in enumerate(a.graphs):
                    moved += _constants_to_initializers(g, f"{where}.nodes[{i}].{a.name}[{j}]")
        keep.append(node)
    if moved:
        del graph.node[:]
        graph.node.extend(keep)
    return moved


def prepare(model: Model, warn: Callable[[str], None]):
    """``(ModelProto, source tensors)``: see the module docstring. ``warn`` receives one line per change."""
    import onnx

    mp, tensors = _proto(model)
    if mp.functions:
        names = ", ".join(sorted({f"{f.domain}:{f.name}" for f in mp.functions}))
        try:
            from onnx import inliner

            _add_attribute_defaults(mp)
            mp = inliner.inline_local_functions(mp)
        except Exception as e:  # onnx raises its own C++ errors: say which
            raise FormatError(Kind.UNSUPPORTED, "model.functions", None, f"onnx could not inline the local functions: {e}") from e
        del mp.functions[:]
        warn(f"model-local functions inlined (the .ort format has none, as ONNX Runtime's converter does): {names}")
    moved = _constants_to_initializers(mp.graph, "graph")
    if moved:
        warn(f"{moved} Constant node{'s' if moved != 1 else ''} made initializers (as ONNX Runtime's converter does)")
    dropped = sum(_drop_unused(g, mp.ir_version) for _k, g in _graphs(mp.graph))
    if dropped:
        warn(f"{dropped} initializer{'s' if dropped != 1 else ''} that nothing reads left out (as ONNX Runtime's converter does)")
    mp = _infer(mp, warn)
    expanded: list[str] = []
    for _round in range(4):  # an expansion may hold operators to expand in turn
        mp, names = expand_function_ops(mp)
        if not names:
            break
        expanded += names
        _constants_to_initializers(mp.graph, "graph")  # function bodies hold Constant nodes
        mp = _infer(mp, warn)
    if expanded:
        warn(f"{len(expanded)} node{'s' if len(expanded) != 1 else ''} of operators ONNX Runtime runs as their onnx "
             f"function expanded, as its converter does: {', '.join(sorted(set(expanded)))}")
    return mp, tensors


def _free_names(graph) -> set[str]:
    """Every name ``graph``'s nodes (and their subgraphs) read, and its outputs."""
    out = {v.name for v in graph.output}
    for n in graph.node:
        out.update(_reads(n))
    return out


def _drop_unused(graph, ir_version: int) -> int:
    """Leave out the initializers of ``graph`` nothing reads, as ONNX Runtime does when it loads a model: an
    initializer that is also a graph input stays (an overridable input) from IR 4 on; before IR 4 every
    initializer is listed as an input, and the input of a dropped one goes too. How many were left out."""
    used = _free_names(graph)
    inputs = {v.name for v in graph.input}
    if ir_version >= 4:
        used |= inputs
    drop = {t.name for t in graph.initializer if t.name not in used}
    drop |= {s.values.name for s in graph.sparse_initializer if s.values.name not in used}
    if not drop:
        return 0
    keep = [t for t in graph.initializer if t.name not in drop]
    del graph.initializer[:]
    graph.initializer.extend(keep)
    keep_s = [s for s in graph.sparse_initializer if s.values.name not in drop]
    del graph.sparse_initializer[:]
    graph.sparse_initializer.extend(keep_s)
    if ir_version < 4 and drop & inputs:
        keep_i = [v for v in graph.input if v.name not in drop]
        del graph.input[:]
        graph.input.extend(keep_i)
    return len(drop)


def _add_attribute_defaults(mp) -> None:
    """Give each call of a model-local function the function's attribute defaults it omits
    (``onnx.inliner`` leaves a reference to an omitted attribute empty instead of using the default)."""
    defaults = {(f.domain, f.name): list(f.attribute_proto) for f in mp.functions}
    bodies = [f.node for f in mp.functions] + [g.node for _k, g in _graphs(mp.graph)]
    for nodes in bodies:
        for n in nodes:
            have = {a.name for a in n.attribute}
            for a in defaults.get((n.domain, n.op_type), ()):
                if a.name not in have:
                    n.attribute.append(a)


def _graphs(graph, key=()):
    """``(key, graph)`` for ``graph`` and every graph nested in its nodes' attributes, pre-order; the key
    (holding node's outputs and name, attribute, position) does not depend on the order of the nodes."""
    yield key, graph
    for n in graph.node:
        for a in n.attribute:
            if a.HasField("g"):
                yield from _graphs(a.g, key + ((tuple(n.output), n.name, a.name, -1),))
            for j, g in enumerate(a.graphs):
                yield from _graphs(g, key + ((tuple(n.output), n.name, a.name, j),))


def _infer(mp, warn):
    """``mp`` with onnx's inferred value types added. Sparse initializers are dense tensors to ONNX
    Runtime (onnx would type them sparse): inference sees them as declared dense values instead."""
    import onnx

    sparse = {k: list(g.sparse_initializer) for k, g in _graphs(mp.graph)}
    work = onnx.ModelProto()
    work.CopyFrom(mp)
    for _k, g in reversed(list(_graphs(work.graph))):  # onnx infers in the stored order: ONNX Runtime's is a dependency order
        _sort_nodes(g)
    if any(sparse.values()):
        for k, g in _graphs(work.graph):
            ss = sparse[k]
            del g.sparse_initializer[:]
            for s in ss:
                g.value_info.append(onnx.helper.make_tensor_value_info(s.values.name, s.values.data_type, list(s.dims)))
    try:
        work = onnx.shape_inference.infer_shapes(work, check_type=False, strict_mode=False, data_prop=False)
    except Exception as e:  # an op onnx cannot type is skipped; a model it cannot read at all: types stay declared ones
        warn(f"onnx shape inference failed, only declared types are written: {e}")
        return mp
    inferred = dict(_graphs(work.graph))
    for k, g in _graphs(mp.graph):  # the inferred types, onto the stored order
        g2 = inferred[k]
        del g.value_info[:]
        g.value_info.extend(g2.value_info)
        for old, new in ((g.output, g2.output),):
            for a, b in zip(old, new):
                if not a.HasField("type") and b.HasField("type"):
                    a.type.CopyFrom(b.type)
    if any(sparse.values()):
        for k, g in _graphs(mp.graph):
            names = {s.values.name for s in sparse[k]}
            keep = [v for v in g.value_info if v.name not in names]
            del g.value_info[:]
            g.value_info.extend(keep)
    return mp


def _reads(node) -> list[str]:
    """The names ``node`` reads: its inputs and whatever its subgraphs read from outside themselves."""
    out = list(node.input)
    for a in node.attribute:
        for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
            inner = {v.name for v in g.input} | {t.name for t in g.initializer} | {o for n in g.node for o in n.output}
            out += [x for n in g.node for x in _reads(n) if x not in inner]
            out += [v.name for v in g.output if v.name not in inner]
    return out


def _sort_nodes(graph) -> None:
    """Reorder ``graph.node`` so producers come first (stable; cycles left in place at the end)."""
    nodes = list(graph.node)
    producer = {o: i for i, n in enumerate(nodes) for o in n.output if o}
    deps = [{producer[x] for x in _reads(n) if x in producer and producer[x] != i} for i, n in enumerate(nodes)]
    if all(d < i for i, ds in enumerate(deps) for d in ds):
        return
    done, order = set(), []
    pending = list(range(len(nodes)))
    while pending:
        rest = [i for i in pending if not deps[i] <= done]
        ready = [i for i in pending if deps[i] <= done]
        if not ready:
            order += rest
            break
        order += ready
        done.update(ready)
        pending = rest
    del graph.node[:]
    graph.node.extend(nodes[i] for i in order)
