"""ORT flatbuffer (verified by :mod:`.verify`) -> the records of :mod:`..schema`, plus ORT's own facts.

The ORT-level rules, after the flatbuffer checks (``where`` is the schema field path from the
root table, ``offset`` the bytes at fault; CLARIFICATIONS.md, docs/formats/ort.md):

* ``InferenceSession.ort_version`` missing: Malformed; not a decimal version: Malformed; ``0``:
  Malformed (no such version); above 6: Unsupported. Versions 1-4: an ``ort-old-version`` finding.
* A missing required field (the model, its graph, a tensor's ``dims``, an initializer's or value's
  ``name``, a node's ``op_type``, an attribute's value, a sparse tensor's ``values``/``indices``,
  an opset's ``domain``): Malformed at ``<table>.<field>``, offset of the table.
* Tensors: ``data_type`` not an ONNX code: Unsupported; an ONNX code ORT cannot load (21 and up):
  read, with an ``ort-unloadable-dtype`` finding; a negative dim: InvalidModel at ``.dims[i]``;
  2^60 elements or more: Unsupported at ``.dims``; ``raw_data`` length not ``ceil(count * bits /
  8)``: InvalidModel at ``.raw_data``; string count not the element count: InvalidModel at
  ``.string_data``; ``raw_data`` on a string tensor / ``string_data`` on another: Malformed;
  ``external_data_offset`` set (not -1): Unsupported at ``.external_data_offset`` (ONNX Runtime's
  inference reader rejects it; the bytes are in a file no reader here opens).
* Graphs nest at most 64 deep (main graph = 1) and types 64 deep: Unsupported beyond.
* Text that is not UTF-8: Malformed (kept with replacement characters).

Records: ORT keeps no graph names: the main graph is named ``main``, a subgraph after its attribute
(ONNX requires a name; ``--diff`` treats graph names of an ``.ort`` side as not kept). Graph inputs and outputs are the ``node_args`` they name (an unknown name gets no
type); every other ``node_arg`` becomes ``value_info`` (ORT keeps a type for every value).
Attribute floats keep their bit patterns. Initializer tensors are views of the file's storage
(``file_offset`` = the payload offset, often only 4-byte aligned: numpy reads such views).
"""

from __future__ import annotations

import math

from ..dtypes import DTYPES, STRING, AttrType
from ..errors import Kind
from ..onemodel.header import MAX_COUNT
from ..schema import (
    Attribute,
    Graph,
    Model,
    Node,
    OperatorSet,
    SparseTensor,
    Tensor,
    Type,
    ValueInfo,
)
from .facts import OLD_VERSIONS, ORT_DTYPES, VERSIONS, KernelTypeStr, NodeFacts, Payload, RuntimeOptimization, in_place
from .fbs import TABLES

MAX_LEVEL = 64
"""Graphs (main graph = 1) and types open at once, as for OneModel files."""
LATEST_VERSION = 6

_VO = {t: {name: vo for name, vo, *_ in fields} for t, fields in TABLES.items()}
_EMPTY: dict = {}


def field_pos(buf, d: dict, table: str, name: str) -> int:
    """File offset of field ``name`` of a verified table ``d`` (its table's offset when absent)."""
    import struct

    vt = d["@vt"]
    vo = _VO[table][name]
    vsize = struct.unpack_from("<H", buf, vt)[0]
    fo = struct.unpack_from("<H", buf, vt + vo)[0] if vo < vsize else 0
    # a slot the verifier refused (the field lies past its table, even past the file): the table's offset
    return d["@"] + fo if fo and d["@"] + fo < len(buf) else d["@"]


def target_pos(buf, d: dict, table: str, name: str) -> int:
    """File offset of what the offset field ``name`` of ``d`` points to (the field's own when absent)."""
    import struct

    at = field_pos(buf, d, table, name)
    return at + struct.unpack_from("<I", buf, at)[0] if at != d["@"] else at


def _model_version(v: int) -> int:
    """ORT writes "no version" as INT64_MAX (``kNoVersion``); ONNX leaves the field 0."""
    return 0 if v == (1 << 63) - 1 else v


_VALUE_FIELD = {
    AttrType.STRING: "s", AttrType.TENSOR: "t", AttrType.GRAPH: "g", AttrType.FLOATS: "floats", AttrType.INTS: "ints",
    AttrType.STRINGS: "strings", AttrType.TENSORS: "tensors", AttrType.GRAPHS: "graphs",
}
"""The ORT Attribute field holding the value of each attribute type (besides f and i)."""

class Importer:
    """Builds the model; ``report`` is a reader :class:`~..reader.Reporter`."""

    def __init__(self, report, buf, storage) -> None:
        self.report = report
        self.buf = buf
        self.storage = storage
        self.nodes: dict[str, NodeFacts] = {}
        self.payloads: list[Payload] = []
        self.optimizations: list[RuntimeOptimization] = []
        self.version = ""
        self.version_offset: int | None = None
        self.tables: dict[str, int] = {}
        """Schema path -> table offset of every model, graph, node, tensor and kernel entry imported."""

    # -- reporting helpers
    def bad(self, kind: Kind, where: str, offset, message: str) -> None:
        self.report(kind, where, offset, message)

    def finding(self, code: str, where: str, offset, message: str) -> None:
        self.report.finding(code, where, offset, message)

    def need(self, d: dict, key: str, table: str, where: str) -> bool:
        """True when required field ``key`` is there; a Malformed problem when absent (not when unreadable)."""
        if key in d:
            return True
        if key not in d.get("@bad", ()):
            self.bad(Kind.MALFORMED, f"{where}.{key}", d["@"], f"required field {table}.{key} is missing")
        return False

    def text(self, d: dict, key: str, table: str, where: str) -> str:
        v = d.get(key)
        if v is None:
            return ""
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError:
            self.bad(Kind.MALFORMED, f"{where}.{key}", target_pos(self.buf, d, table, key), "text is not valid UTF-8")
            return v.decode("utf-8", "replace")

    def texts(self, d: dict, key: str, where: str) -> tuple[str, ...]:
        out = []
        for i, v in enumerate(d.get(key) or ()):
            if v is None:
                out.append("")
                continue
            try:
                out.append(v.decode("utf-8"))
            except UnicodeDecodeError:
                self.bad(Kind.MALFORMED, f"{where}.{key}[{i}]", None, "text is not valid UTF-8")
                out.append(v.decode("utf-8", "replace"))
        return tuple(out)

    # -- the session
    def session(self, s: dict) -> Model | None:
        w = "InferenceSession"
        if self.need(s, "ort_version", "InferenceSession", w):
            self.version_offset = target_pos(self.buf, s, "InferenceSession", "ort_version")
            self.check_version(s["ort_version"], w + ".ort_version")
        if not self.need(s, "model", "InferenceSession", w):
            return None
        return self.model(s["model"], w + ".model")

    def check_version(self, raw: bytes, where: str) -> None:
        off = self.version_offset
        text = raw.decode("ascii", "replace")
        self.version = text
        if not (text.isascii() and text.isdigit()) or len(text) > 9:
            self.bad(Kind.MALFORMED, where, off, f"ORT format version {text!r} is not a decimal number")
        elif int(text) == 0:
            self.bad(Kind.MALFORMED, where, off, "ORT format version 0 does not exist")
        elif int(text) > LATEST_VERSION:
            self.bad(Kind.UNSUPPORTED, where, off, f"ORT format version {text} is newer than this reader's ({LATEST_VERSION})")
        elif text in OLD_VERSIONS:
            self.finding("ort-old-version", where, off, f"ORT format version {text}: {VERSIONS[text]}")

    def model(self, m: dict, w: str) -> Model | None:
        self.tables[w] = m["@"]
        opsets = []
        for i, o in enumerate(m.get("opset_import") or ()):
            ow = f"{w}.opset_import[{i}]"
            if o is None:
                continue
            if self.need(o, "domain", "OperatorSetId", ow):
                opsets.append(OperatorSet(self.text(o, "domain", "OperatorSetId", ow), o.get("version", 0)))
        metadata = []
        for i, e in enumerate(m.get("metadata_props") or ()):
            if e is not None:
                ew = f"{w}.metadata_props[{i}]"
                metadata.append((self.text(e, "key", "StringStringEntry", ew), self.text(e, "value", "StringStringEntry", ew)))
        if m.get("ir_version", 0) < 3:  # as OneModel (section 2.1) and ONNX: no model is written without one
            self.bad(Kind.INVALID_MODEL, w + ".ir_version", field_pos(self.buf, m, "Model", "ir_version"),
                     f"ir_version {m.get('ir_version', 0)} is below 3")
        if not self.need(m, "graph", "Model", w):
            return None
        graph = self.graph(m["graph"], w + ".graph", 1, doc=self.text(m, "graph_doc_string", "Model", w))
        return Model(
            ir_version=m.get("ir_version", 0), graph=graph,
            producer_name=self.text(m, "producer_name", "Model", w), producer_version=self.text(m, "producer_version", "Model", w),
            domain=self.text(m, "domain", "Model", w), doc=self.text(m, "doc_string", "Model", w),
            model_version=_model_version(m.get("model_version", 0)), opsets=tuple(opsets), metadata=tuple(metadata), where=w,
        )

    # -- graphs
    def graph(self, g: dict, w: str, level: int, doc: str = "", name: str = "main") -> Graph:
        self.tables[w] = g["@"]
        if level > MAX_LEVEL:
            self.bad(Kind.UNSUPPORTED, w, g["@"], f"graphs nested more than {MAX_LEVEL} deep")
            return Graph(where=w)
        args: dict[str, ValueInfo] = {}
        order: list[str] = []
        for i, a in enumerate(g.get("node_args") or ()):
            if a is None:
                continue
            aw = f"{w}.node_args[{i}]"
            if not self.need(a, "name", "ValueInfo", aw):
                continue
            arg = self.text(a, "name", "ValueInfo", aw)
            t = self.type(a["type"], aw + ".type", 1) if a.get("type") is not None else None
            if arg not in args:
                order.append(arg)
            args[arg] = ValueInfo(arg, t, aw)
        inputs = self.texts(g, "inputs", w)
        outputs = self.texts(g, "outputs", w)
        io = set(inputs) | set(outputs)
        inits = tuple(self.initializer(t, f"{w}.initializers[{i}]") for i, t in enumerate(g.get("initializers") or ()) if t is not None)
        sparse = tuple(s for s in (self.sparse(x, f"{w}.sparse_initializers[{i}]", True)
                                   for i, x in enumerate(g.get("sparse_initializers") or ()) if x is not None) if s is not None)
        nodes = tuple(self.node(n, f"{w}.nodes[{i}]", level) for i, n in enumerate(g.get("nodes") or ()) if n is not None)
        ro = g.get("runtime_optimizations")
        if ro is not None:
            self.runtime_optimizations(ro, w)
        return Graph(
            name=name, doc=doc,
            inputs=tuple(args.get(n) or ValueInfo(n, None, f"{w}.inputs[{i}]") for i, n in enumerate(inputs)),
            outputs=tuple(args.get(n) or ValueInfo(n, None, f"{w}.outputs[{i}]") for i, n in enumerate(outputs)),
            value_info=tuple(args[n] for n in order if n not in io),
            initializers=inits, sparse_initializers=sparse, nodes=nodes, where=w,
        )

    def runtime_optimizations(self, ro: dict, w: str) -> None:
        for entry in ro.get("records") or ():
            if entry is None:
                continue
            opt = (entry.get("optimizer_name") or b"").decode("utf-8", "replace")
            for r in entry.get("runtime_optimization_records") or ():
                if r is None:
                    continue
                nto = r.get("nodes_to_optimize_indices") or _EMPTY
                self.optimizations.append(RuntimeOptimization(
                    w, opt, (r.get("action_id") or b"").decode("utf-8", "replace"), tuple(nto.get("node_indices") or ()),
                    tuple((x or b"").decode("utf-8", "replace") for x in r.get("produced_op_ids") or ())))

    def type(self, t: dict, w: str, level: int) -> Type | None:
        if level > MAX_LEVEL:
            self.bad(Kind.UNSUPPORTED, w, t["@"], f"types nested more than {MAX_LEVEL} deep")
            return None
        v = t.get("value")
        if v is None:
            return None
        member = v["@type"]
        vw = w + ".value"
        if member == "TensorTypeAndShape":
            shape = None
            s = v.get("shape")
            if s is not None:
                dims: list = []
                for i, d in enumerate(s.get("dim") or ()):
                    dv = None if d is None else d.get("value")
                    if dv is None:
                        dims.append(None)
                        continue
                    dw = f"{vw}.shape.dim[{i}].value"
                    kind = dv.get("dim_type", 0)
                    if kind == 1:
                        x = dv.get("dim_value", 0)
                        if x < 0:
                            self.finding("negative-dim", dw + ".dim_value", dv["@"], f"dim_value {x} read as unknown")
                            x = None
                        dims.append(x)
                    elif kind == 2:
                        dims.append(self.text(dv, "dim_param", "DimensionValue", dw) if self.need(dv, "dim_param", "DimensionValue", dw) else None)
                    else:
                        dims.append(None)
                shape = tuple(dims)
            return Type("tensor", elem=v.get("elem_type", 0), shape=shape, where=w)
        if member == "SequenceType":
            if not self.need(v, "elem_type", "SequenceType", vw):
                return None
            inner = self.type(v["elem_type"], vw + ".elem_type", level + 1)
            return None if inner is None else Type("sequence", inner=inner, where=w)
        if not self.need(v, "value_type", "MapType", vw):  # MapType
            return None
        inner = self.type(v["value_type"], vw + ".value_type", level + 1)
        return None if inner is None else Type("map", key=v.get("key_type", 0), inner=inner, where=w)

    # -- nodes and attributes
    def node(self, n: dict, w: str, level: int) -> Node:
        self.tables[w] = n["@"]
        if self.need(n, "op_type", "Node", w):
            op = self.text(n, "op_type", "Node", w)
        else:
            op = ""
        attrs = tuple(a for a in (self.attribute(x, f"{w}.attributes[{i}]", level)
                                  for i, x in enumerate(n.get("attributes") or ()) if x is not None) if a is not None)
        self.nodes[w] = NodeFacts(w, n.get("index", 0), n.get("since_version", 0),
                                  self.text(n, "execution_provider_type", "Node", w), n.get("type", 0),
                                  tuple(n.get("input_arg_counts") or ()), self.texts(n, "implicit_inputs", w))
        return Node(op, self.text(n, "name", "Node", w), self.text(n, "domain", "Node", w), "",
                    self.text(n, "doc_string", "Node", w), self.texts(n, "inputs", w), self.texts(n, "outputs", w), attrs, w)

    def attribute(self, a: dict, w: str, level: int) -> Attribute | None:
        if not self.need(a, "name", "Attribute", w):
            return None
        name = self.text(a, "name", "Attribute", w)
        doc = self.text(a, "doc_string", "Attribute", w)
        t = a.get("type", 0)
        v: object = None
        if t == AttrType.FLOAT:
            v = a.get("f", 0)
        elif t == AttrType.INT:
            v = a.get("i", 0)
        elif t in _VALUE_FIELD:
            key = _VALUE_FIELD[t]
            if not self.need(a, key, "Attribute", w):
                return None
            raw = a[key]
            kw = f"{w}.{key}"
            if t == AttrType.TENSOR:
                v = self.tensor(raw, kw)
            elif t == AttrType.GRAPH:
                v = self.graph(raw, kw, level + 1, name=name)
            elif t == AttrType.TENSORS:
                v = tuple(self.tensor(x, f"{kw}[{i}]") for i, x in enumerate(raw) if x is not None)
            elif t == AttrType.GRAPHS:
                v = tuple(self.graph(x, f"{kw}[{i}]", level + 1, name=f"{name}_{i}") for i, x in enumerate(raw) if x is not None)
            elif t == AttrType.STRINGS:
                v = tuple(b"" if x is None else x for x in raw)
            else:
                v = tuple(raw) if isinstance(raw, tuple) else raw
        elif t == AttrType.UNDEFINED:
            self.bad(Kind.MALFORMED, w + ".type", field_pos(self.buf, a, "Attribute", "type"), "attribute without a type")
            return None
        else:
            self.bad(Kind.UNSUPPORTED, w + ".type", field_pos(self.buf, a, "Attribute", "type"),
                     f"attribute type {t} has no field in ORT's schema")
            return None
        return Attribute(name, int(t), v, "", doc, w)

    # -- tensors
    def initializer(self, t: dict, w: str) -> Tensor:
        self.need(t, "name", "Tensor", w)
        out = self.tensor(t, w)
        if out.file_offset is not None:
            self.payloads.append(Payload(w, out.name, out.dtype, out.file_offset, out.length,
                                         in_place(out.file_offset, out.dtype)))
        return out

    def sparse(self, s: dict, w: str, named: bool) -> SparseTensor | None:
        ok_v = self.need(s, "values", "SparseTensor", w)
        ok_i = self.need(s, "indices", "SparseTensor", w)
        if not (ok_v and ok_i):
            return None
        if named:
            self.need(s["values"], "name", "Tensor", w + ".values")
        values = self.tensor(s["values"], w + ".values")
        indices = self.tensor(s["indices"], w + ".indices")
        dims = tuple(s.get("dims") or ())
        count = 1
        for d in dims:  # bounded: as the OneModel reader, which refuses the written file otherwise
            if count < MAX_COUNT and d >= 0:
                count *= d
        if count >= MAX_COUNT and 0 not in dims:
            self.bad(Kind.UNSUPPORTED, w + ".dims", target_pos(self.buf, s, "SparseTensor", "dims"), "element count is 2^60 or more")
        return SparseTensor(values, indices, dims, w)

    def tensor(self, t: dict, w: str) -> Tensor:
        self.tables[w] = t["@"]
        buf = self.buf
        name = self.text(t, "name", "Tensor", w)
        doc = self.text(t, "doc_string", "Tensor", w)
        dtype = t.get("data_type", 0)
        if not self.need(t, "dims", "Tensor", w):
            return Tensor(name, dtype, (), doc, where=w)
        dims = t["dims"]
        dpos = target_pos(buf, t, "Tensor", "dims") + 4
        bad = False
        for i, d in enumerate(dims):
            if d < 0:
                self.bad(Kind.INVALID_MODEL, f"{w}.dims[{i}]", dpos + 8 * i, f"negative dimension {d}")
                bad = True
        info = DTYPES.get(dtype)
        if info is None:
            self.bad(Kind.UNSUPPORTED, w + ".data_type", field_pos(buf, t, "Tensor", "data_type"), f"unknown data type code {dtype}")
            bad = True
        elif dtype not in ORT_DTYPES:
            self.finding("ort-unloadable-dtype", w + ".data_type", field_pos(buf, t, "Tensor", "data_type"),
                         f"data type {dtype} ({info.name}) is not in ORT's TensorDataType: ONNX Runtime will not load this file")
        if bad:
            return Tensor(name, dtype, tuple(max(d, 0) for d in dims), doc, where=w)
        count = math.prod(dims)
        if count >= MAX_COUNT:
            self.bad(Kind.UNSUPPORTED, w + ".dims", dpos - 4, "element count is 2^60 or more")
            return Tensor(name, dtype, dims, doc, where=w)
        ext = t.get("external_data_offset", -1)
        if ext != -1:  # CLARIFICATIONS: Unsupported in every command (a finding left a "valid" tensor with no bytes)
            self.bad(Kind.UNSUPPORTED, w + ".external_data_offset", field_pos(buf, t, "Tensor", "external_data_offset"),
                     f"external_data_offset {ext}: the bytes are in a file this reader does not open (ONNX Runtime's "
                     "inference reader rejects it too)")
            return Tensor(name, dtype, dims, doc, where=w)
        if dtype == STRING:
            if "raw_data" in t:
                self.bad(Kind.MALFORMED, w + ".raw_data", target_pos(buf, t, "Tensor", "raw_data"), "a string tensor with raw_data")
            if not self.need(t, "string_data", "Tensor", w):
                return Tensor(name, dtype, dims, doc, where=w)
            strings = tuple(b"" if x is None else x for x in t["string_data"])
            if len(strings) != count:
                self.bad(Kind.INVALID_MODEL, w + ".string_data", target_pos(buf, t, "Tensor", "string_data"),
                         f"{len(strings)} strings for {count} elements")
            return Tensor(name, dtype, dims, doc, strings=strings, where=w)
        if "string_data" in t and t["string_data"]:
            self.bad(Kind.MALFORMED, w + ".string_data", target_pos(buf, t, "Tensor", "string_data"), "a non-string tensor with string_data")
        expected = info.byte_length(count)
        if "raw_data" not in t:
            if ext == -1:
                self.need(t, "raw_data", "Tensor", w)
            return Tensor(name, dtype, dims, doc, where=w)
        pos, n = t["raw_data"]
        if n != expected:
            self.bad(Kind.INVALID_MODEL, w + ".raw_data", pos - 4, f"{n} bytes of raw_data, {expected} expected from dims and dtype")
            return Tensor(name, dtype, dims, doc, where=w)
        if expected == 0:
            return Tensor(name, dtype, dims, doc, where=w)
        return Tensor(name, dtype, dims, doc, 0, expected, pos, self.storage, where=w)

    # -- the kernel table
    def kernel_type_strs(self, s: dict) -> tuple[KernelTypeStr, ...]:
        r = s.get("kernel_type_str_resolver")
        if r is None:
            return ()
        out = []
        for i, e in enumerate(r.get("op_kernel_type_str_args") or ()):
            if e is None:
                continue
            self.tables[f"InferenceSession.kernel_type_str_resolver.op_kernel_type_str_args[{i}]"] = e["@"]
            args = []
            for k in e.get("kernel_type_str_args") or ():
                if k is None:
                    continue
                pairs = tuple((x.get("arg_type", 0), x.get("index", 0)) for x in k.get("args") or () if x is not None)
                args.append(((k.get("kernel_type_str") or b"").decode("utf-8", "replace"), pairs))
            out.append(KernelTypeStr((e.get("op_id") or b"").decode("utf-8", "replace"), tuple(args)))
        return tuple(out)
