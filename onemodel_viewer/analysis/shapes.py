"""Inferred value types: ONNX's own shape inference on the model's graph, without its weights.

:func:`infer_types` builds a weightless ModelProto (tensors of more than :data:`INLINE_BYTES` are
marked external data with no location, so no weight byte is copied; small ones -- shape and index
constants -- stay inline, since Reshape, Expand... read their values), runs
``onnx.shape_inference.infer_shapes`` (not strict: an op it cannot type is left untyped) and maps
the value_info it adds back onto the records' graphs. A Constant's output gets its tensor's type
(:func:`constant_output_type`, no onnx needed). No UI here.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from ..format.dtypes import AttrType
from ..format.schema import Graph, Model, Node, NodeList, SparseTensor, Tensor, Type
from ..helper_process import HelperProcess

__all__ = ["INLINE_BYTES", "VIEWER_MAX_NODES", "Inferred", "infer_types", "inference_helper", "infer_serialized", "weightless_proto", "constant_output_type", "type_from_proto"]

INLINE_BYTES = 1024
"""Tensors up to this many bytes keep their bytes in the proto (shape inference reads small constants)."""
VIEWER_MAX_NODES = 50_000
"""The viewer's ``max_nodes`` (the LLM bench models: ~10,000 nodes): the proto's serialization and parse
are single calls holding the interpreter, its UI thread's too (10^6 nodes: ~0.9 s each)."""


@dataclass(slots=True)
class Inferred:
    """Types shape inference gave, per graph (identity-keyed). Converted from the proto when asked
    (one :func:`type_from_proto` per value costs more than the inference itself on 10^4 nodes)."""

    protos: dict[int, object] = field(default_factory=dict)
    """id(graph) -> the inferred GraphProto (its value_info and outputs are read when asked)."""
    _names: dict[int, dict[str, int]] = field(default_factory=dict)
    graphs: dict[int, Graph] = field(default_factory=dict)
    error: str = ""
    """Why inference gave nothing (empty when it ran)."""
    skipped: str = ""
    """Why inference was not run (``max_nodes``), empty when it was."""
    _types: dict[tuple[int, str], Type | None] = field(default_factory=dict)

    def of(self, g: Graph, name: str) -> Type | None:
        """The inferred type of ``name`` in ``g`` (None: none inferred)."""
        if self.graphs.get(id(g)) is not g:
            return None
        key = (id(g), name)
        if key in self._types:
            return self._types[key]
        i = self.names(g).get(name)
        t = None
        if i is not None:
            gp = self.protos[id(g)]
            t = type_from_proto(gp.value_info[i].type if i >= 0 else gp.output[~i].type)
        self._types[key] = t
        return t

    def names(self, g: Graph) -> dict[str, int]:
        """Value name -> its place in graph ``g``'s inferred GraphProto: ``i`` for ``value_info[i]``, ``~j``
        for ``output[j]`` (indexed on first use; names only, ~3.5 ms per 10^4 values, the TypeProtos
        are read by :meth:`of`: reading them here too cost 3 ms more)."""
        idx = self._names.get(id(g))
        if idx is None:
            gp = self.protos.get(id(g)) if self.graphs.get(id(g)) is g else None
            if gp is None:
                return {}
            vi = gp.value_info
            idx = dict(zip([vp.name for vp in vi], range(len(vi))))
            for j, vp in enumerate(gp.output):
                idx.setdefault(vp.name, ~j)
            self._names[id(g)] = idx
        return idx

    @property
    def count(self) -> int:
        return sum(len(self.names(g)) for g in self.graphs.values())


def weightless_proto(model: Model):
    """``model`` as an ONNX ModelProto whose big tensors are marked external data with no location (no
    bytes copied; only for shape inference: onnx.checker or a loader would refuse them)."""
    from ..format.onnx.exporter import model_to_proto
    from ..format.schema import all_tensors

    # marked external with no location: their three external_data entries cost 3 ms per 2,000 tensors
    ext = {id(t): None for t in all_tensors(model) if not t.is_string and t.length > INLINE_BYTES}
    return model_to_proto(model, external=ext)


def type_from_proto(tp) -> Type | None:
    """A TypeProto as a :class:`Type` (None when it has no value set)."""
    which = tp.WhichOneof("value")
    if which in ("tensor_type", "sparse_tensor_type"):
        tt = getattr(tp, which)
        shape = None
        if tt.HasField("shape"):
            dims: list[int | str | None] = []
            for d in tt.shape.dim:
                w = d.WhichOneof("value")
                dims.append(d.dim_value if w == "dim_value" else d.dim_param if w == "dim_param" else None)
            shape = tuple(dims)
        return Type("tensor" if which == "tensor_type" else "sparse_tensor", elem=tt.elem_type, shape=shape)
    if which in ("sequence_type", "optional_type"):
        inner = getattr(tp, which).elem_type
        return Type("sequence" if which == "sequence_type" else "optional",
                    inner=type_from_proto(inner) if inner.WhichOneof("value") else None)
    if which == "map_type":
        mt = tp.map_type
        return Type("map", key=mt.key_type, inner=type_from_proto(mt.value_type) if mt.HasField("value_type") else None)
    if which == "opaque_type":
        return Type("opaque", domain=tp.opaque_type.domain, name=tp.opaque_type.name)
    return None


_GRAPH_ATTRS = frozenset((int(AttrType.GRAPH), int(AttrType.GRAPHS)))


def _nodes_with_graphs(nodes) -> list[tuple[int, Node]]:
    """(index, node) of the nodes with a graph-valued attribute, found on the records alone: the proto is
    touched only for these (indexing every node with attributes cost ~9 ms on 10^4 nodes)."""
    if type(nodes) is NodeList and not nodes.built:
        indexed = nodes.built_records().items()
    else:
        indexed = enumerate(nodes)
    out = []
    for i, n in indexed:
        for a in n.attributes:  # a loop, not any(): a generator per node cost 3 ms more on 10^4 nodes
            if a.type in _GRAPH_ATTRS:
                out.append((i, n))
                break
    return out


def _pair(g: Graph, gp, out: Inferred, cancel: threading.Event | None) -> None:
    """Keep ``gp``'s inferred value types under ``g``; recurse into subgraphs (matched by position)."""
    if cancel is not None and cancel.is_set():
        return
    out.protos[id(g)] = gp
    out.graphs[id(g)] = g
    if len(g.nodes) != len(gp.node):
        return
    for i, n in _nodes_with_graphs(g.nodes):
        npb = gp.node[i]
        if len(npb.attribute) != len(n.attributes):
            continue
        for a, ap in zip(n.attributes, npb.attribute):
            subs = a.graphs()
            if not subs:
                continue
            sub_protos = [ap.g] if ap.HasField("g") else list(ap.graphs)
            for sg, sgp in zip(subs, sub_protos):
                _pair(sg, sgp, out, cancel)


def infer_serialized(model_bytes: bytes) -> bytes:
    """``infer_shapes`` on a serialized ModelProto, serialized (run in the helper process)."""
    from onnx import onnx_cpp2py_export as C

    return C.shape_inference.infer_shapes(model_bytes, False, False, False)


_HELPER: HelperProcess | None = None
_HELPER_LOCK = threading.Lock()


def inference_helper() -> HelperProcess:
    """The process's shape-inference helper (started on first use, its onnx import done while the
    caller goes on; one for the whole process, reused by every request and every document)."""
    global _HELPER
    with _HELPER_LOCK:
        if _HELPER is None:
            _HELPER = HelperProcess(preload=("onnx.onnx_cpp2py_export", __name__), nice=10)  # background work
        return _HELPER


def _infer_in_helper(mp, cancel: threading.Event | None):
    """``infer_shapes`` in the helper process: onnx's C++ inference holds the GIL for its whole run
    (~0.3 s on 10^4 nodes), which would freeze the viewer's UI thread for as long."""
    import onnx

    out = inference_helper().call(f"{__name__}:infer_serialized", mp.SerializeToString(), cancel)
    return onnx.ModelProto.FromString(out)


def infer_types(model: Model, cancel: threading.Event | None = None, *, isolate: bool = False,
                max_nodes: int | None = None) -> Inferred:
    """Run ONNX shape inference on ``model`` without its weights; never raises (the error is kept).

    ``isolate``: run onnx's inference in the helper process (:func:`inference_helper`; the viewer
    does: it holds the GIL throughout, so in a thread it would stop the UI thread). ``max_nodes``:
    not run (:attr:`Inferred.skipped` says so) on a main graph of more nodes.
    """
    out = Inferred()
    n = len(model.graph.nodes)
    if max_nodes is not None and n > max_nodes:
        out.skipped = f"not run on {n:,} nodes (more than {max_nodes:,})"
        return out
    try:
        from onnx import shape_inference

        mp = weightless_proto(model)
        if cancel is not None and cancel.is_set():
            out.error = "cancelled"
            return out
        if isolate:
            inferred = _infer_in_helper(mp, cancel)
        else:
            inferred = shape_inference.infer_shapes(mp, check_type=False, strict_mode=False, data_prop=False)
    except Exception as e:  # a model onnx cannot take (diagnose-mode leftovers, deep nesting, a bad op)
        out.error = f"{type(e).__name__}: {e}"
        return out
    try:
        _pair(model.graph, inferred.graph, out, cancel)
    except Exception as e:  # pragma: no cover - a record/proto mismatch: keep what was paired
        out.error = f"{type(e).__name__}: {e}"
    return out


def constant_output_type(n: Node) -> Type | None:
    """The type of a Constant node's output: its tensor's dtype and dims."""
    if n.op != "Constant" or n.domain not in ("", "ai.onnx"):
        return None
    from .params import constant_tensor

    held = constant_tensor(n)
    if isinstance(held, Tensor):
        return Type("tensor", elem=held.dtype, shape=tuple(held.dims))
    if isinstance(held, SparseTensor):
        return Type("sparse_tensor", elem=held.values.dtype, shape=tuple(held.dims))
    if held is not None:
        code, count, _ = held
        attr = next((a.name for a in n.attributes if not a.ref), "")
        return Type("tensor", elem=code, shape=(count,) if attr.endswith("s") else ())
    return None
