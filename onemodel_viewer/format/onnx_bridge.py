"""ONNX <-> schema records, both ways.

:func:`import_onnx` loads an ONNX file (without its external data) and converts
every construct into the records of :mod:`.schema`; tensor bytes stay where
they are: ``raw_data`` is kept as the bytes object protobuf hands out, typed
fields (``float_data``, ``int32_data``...) are re-encoded into the ``raw_data``
layout, and external data becomes a zero-copy view of the external file, after
its location has been checked to stay inside the model's folder.

:func:`model_to_proto` / :func:`export_onnx` go the other way: ``raw_data``
for every tensor (``string_data`` for strings), float attributes rebuilt from
their bit patterns so NaN payloads and -0.0 survive, and weights moved to an
external ``<dst>.data`` file (streamed) when they would not fit in a protobuf.

Decisions (see the report / README format notes):

* an external ``location`` that is absolute, contains ``..``, resolves
  (symlinks included) outside the model's folder, or names a file with more
  than one hard link is **Malformed** at
  ``<tensor>.external_data.location`` and is never opened; a missing or
  unreadable external file is **Io**; a range past its end is **Malformed**;
  a length not matching dims and dtype is **InvalidModel**;
* unparseable protobuf is **Malformed** at ``onnx``;
* fields the format cannot carry (``metadata_props`` of graphs/nodes/values,
  a value's ``doc_string``,
  ``denotation``, ``quantization_annotation``, function ``value_info``,
  ``training_info``, ``configuration``, node ``device_configurations``) are
  dropped with a ``dropped-field`` finding; a negative ``dim_value`` becomes an
  unknown dimension with a ``negative-dim`` finding (CLARIFICATIONS);
* export of a model whose ONNX file would nest protobuf messages more than
  :data:`PROTO_DEPTH_LIMIT` deep (graphs in attributes, types in types) is
  **Unsupported** at the deepest record's ``where``, refused before anything is
  written (CLARIFICATIONS): every protobuf decoder would reject the file.

numpy and onnx are imported inside functions only.
"""

from __future__ import annotations

import itertools
import math
import os
import stat
import struct
from typing import TYPE_CHECKING, Container, Iterable, Iterator

from .document import Document
from .dtypes import DTYPES, STRING
from .errors import Finding, FormatError, Kind, Problem
from .header import MAX_COUNT
from .schema import (
    Attribute,
    AttrType,
    Function,
    Graph,
    Model,
    Node,
    OperatorSet,
    SparseTensor,
    Tensor,
    Type,
    ValueInfo,
    all_tensors,
    bits_from_float,
)
from .storage import BytesStorage, FileStorage

if TYPE_CHECKING:  # pragma: no cover
    import onnx

__all__ = ["import_onnx", "import_proto", "model_to_proto", "export_onnx", "proto_depth", "PROTO_LIMIT", "PROTO_DEPTH_LIMIT",
           "EXTERNAL_THRESHOLD"]

PROTO_LIMIT = 2_000_000_000
"""Tensor bytes above which :func:`export_onnx` moves weights to external data (protobuf caps a message at 2 GiB)."""
PROTO_DEPTH_LIMIT = 100
"""Submessages a protobuf decoder opens inside a ModelProto at most: the default recursion limit of upb
(``onnx.load``) and of C++ protobuf (``onnx.checker``, ONNX Runtime). A file nested deeper is unreadable."""
EXTERNAL_THRESHOLD = 1024
"""Tensors of at least this many bytes go to the external file when weights are external (onnx's own default)."""

_EXTERNAL = 1  # TensorProto.EXTERNAL


# ---------------------------------------------------------------------------------------------
# Protobuf wire helpers: exact float bit patterns
# ---------------------------------------------------------------------------------------------


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise ValueError("varint too long")


def _fixed32_fields(buf: bytes, field: int) -> list[int]:
    """Every 32-bit value of ``field`` (fixed32 or packed) in a serialized message, in order."""
    out: list[int] = []
    pos, n = 0, len(buf)
    while pos < n:
        key, pos = _varint(buf, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            _, pos = _varint(buf, pos)
        elif wt == 1:
            pos += 8
        elif wt == 5:
            if num == field:
                out.append(struct.unpack_from("<I", buf, pos)[0])
            pos += 4
        elif wt == 2:
            ln, pos = _varint(buf, pos)
            if num == field:
                out.extend(struct.unpack_from(f"<{ln // 4}I", buf, pos))
            pos += ln
        else:
            raise ValueError(f"unexpected wire type {wt}")
    return out


def _float_bits(values, proto, field: int) -> tuple[int, ...]:
    """Bit patterns of a float field; re-read from the wire only when a NaN may have been quieted."""
    vals = list(values)
    if not any(v != v for v in vals):
        return tuple(bits_from_float(v) for v in vals)
    return tuple(_fixed32_fields(proto.SerializeToString(), field))


def _fields(buf, start: int, end: int):
    """(field number, wire type, field start, value start, value end) of each field in ``buf[start:end]``."""
    pos = start
    while pos < end:
        fs = pos
        key, pos = _varint(buf, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            _, ve = _varint(buf, pos)
            vs = pos
        elif wt == 1:
            vs, ve = pos, pos + 8
        elif wt == 5:
            vs, ve = pos, pos + 4
        elif wt == 2:
            ln, vs = _varint(buf, pos)
            ve = vs + ln
        else:
            raise ValueError(f"wire type {wt}")
        if ve > end or num == 0:
            raise ValueError("field past the end of its message")
        pos = ve
        yield num, wt, fs, vs, ve


def _strip_initializer_data(buf) -> tuple[bytes, dict[int, tuple[int, int]]] | None:
    """The model bytes without the graph initializers' raw_data, and where each raw_data lies in ``buf``.

    Lets the importer parse a model of any size in little memory and map its
    weights in place. None when the bytes are anything but plain (a repeated
    singular field, groups, truncation): the caller then parses them as they are.
    """
    try:
        top = list(_fields(buf, 0, len(buf)))
        graphs = [f for f in top if f[0] == 7]
        if len(graphs) != 1 or graphs[0][1] != 2:
            return None
        _n, _w, _fs, gs, ge = graphs[0]
        graph = bytearray()
        spans: dict[int, tuple[int, int]] = {}
        index = 0
        for num, wt, fs, vs, ve in _fields(buf, gs, ge):
            if num == 5 and wt == 2:
                tfields = list(_fields(buf, vs, ve))
                raws = [f for f in tfields if f[0] == 9]
                if len(raws) > 1 or (raws and raws[0][1] != 2):
                    return None
                if raws:
                    stripped = b"".join(buf[f[2]:f[4]] for f in tfields if f[0] != 9)
                    spans[index] = (raws[0][3], raws[0][4] - raws[0][3])
                    graph += b"\x2a" + _varint_bytes(len(stripped)) + stripped
                else:
                    graph += buf[fs:ve]
                index += 1
            else:
                graph += buf[fs:ve]
        head = b"".join(buf[f[2]:f[4]] for f in top if f[0] != 7)
        return head + b"\x3a" + _varint_bytes(len(graph)) + bytes(graph), spans
    except (ValueError, IndexError):
        return None


def _varint_bytes(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


# ---------------------------------------------------------------------------------------------
# Import
# ---------------------------------------------------------------------------------------------


def _unsafe_location(loc: str) -> bool:
    if not loc or "\x00" in loc:
        return True
    if os.path.isabs(loc) or loc.startswith(("/", "\\")) or (len(loc) > 1 and loc[1] == ":"):
        return True
    parts = loc.replace("\\", "/").split("/")
    return ".." in parts


class _Importer:
    def __init__(self, path: str, mode: str, raw_spans=None, raw_storage=None) -> None:
        self.raw_spans: dict[int, tuple[int, int]] = raw_spans or {}
        self.raw_storage = raw_storage
        self.path = path
        self.base = os.path.dirname(os.path.abspath(path))
        self.strict = mode == "strict"
        self.problems: list[Problem] = []
        self.findings: list[Finding] = []
        self.storages: dict[str, FileStorage] = {}

    # -- reporting
    def problem(self, kind: Kind, where: str, message: str, offset: int | None = None) -> None:
        if self.strict:
            raise FormatError(kind, where, offset, message)
        self.problems.append(Problem(kind, where, offset, message))

    def text(self, value, where: str) -> str:
        """A protobuf string field: upb hands out ``bytes`` when the stored text is not valid UTF-8."""
        if value.__class__ is str:
            return value
        self.problem(Kind.MALFORMED, where, "text is not valid UTF-8")
        return bytes(value).decode("utf-8", "replace")

    def texts(self, values, where: str) -> tuple[str, ...]:
        out = tuple(values)
        if all(v.__class__ is str for v in out):
            return out
        return tuple(self.text(v, f"{where}[{i}]") for i, v in enumerate(out))

    def opsets(self, items, where: str) -> tuple[OperatorSet, ...]:
        return tuple(OperatorSet(self.text(o.domain, f"{where}[{i}].domain"), o.version) for i, o in enumerate(items))

    def dropped(self, proto, fields: Iterable[str], where: str) -> None:
        for f in fields:
            present = len(getattr(proto, f)) > 0
            if present:
                self.findings.append(Finding("dropped-field", f"{where}.{f}", None, f"ONNX field {f} has no place in the OneModel format and is not kept"))

    # -- types
    def type(self, tp, where: str) -> Type | None:
        kind = tp.WhichOneof("value")
        if tp.denotation:
            self.dropped(tp, ("denotation",), where)
        if kind is None:
            return None
        if kind in ("tensor_type", "sparse_tensor_type"):
            tt = getattr(tp, kind)
            shape = None
            if tt.HasField("shape"):
                dims: list[int | str | None] = []
                for i, d in enumerate(tt.shape.dim):
                    which = d.WhichOneof("value")
                    if which == "dim_value":
                        if d.dim_value < 0:
                            self.findings.append(
                                Finding("negative-dim", f"{where}.shape[{i}]", None, f"dim_value {d.dim_value} written as unknown")
                            )
                            dims.append(None)
                        else:
                            dims.append(d.dim_value)
                    elif which == "dim_param":
                        dims.append(self.text(d.dim_param, f"{where}.shape[{i}]"))
                    else:
                        dims.append(None)
                    if d.denotation:
                        self.dropped(d, ("denotation",), f"{where}.shape[{i}]")
                shape = tuple(dims)
            return Type("tensor" if kind == "tensor_type" else "sparse_tensor", elem=tt.elem_type, shape=shape, where=where)
        if kind in ("sequence_type", "optional_type"):
            st = getattr(tp, kind)
            inner = self.type(st.elem_type, where + ".inner") if st.HasField("elem_type") else None
            if inner is None:
                return self.incomplete(where)
            return Type("sequence" if kind == "sequence_type" else "optional", inner=inner, where=where)
        if kind == "map_type":
            mt = tp.map_type
            inner = self.type(mt.value_type, where + ".inner") if mt.HasField("value_type") else None
            if inner is None:
                return self.incomplete(where)
            return Type("map", key=mt.key_type, inner=inner, where=where)
        if kind == "opaque_type":
            ot = tp.opaque_type
            return Type("opaque", domain=self.text(ot.domain, where + ".domain"), name=self.text(ot.name, where + ".name"), where=where)
        self.problem(Kind.UNSUPPORTED, where + ".kind", f"unsupported type kind {kind}")
        return None

    def incomplete(self, where: str) -> None:
        """A sequence/optional/map type without its element type: the format needs one, so the type is unknown."""
        self.findings.append(Finding("incomplete-type", where, None, "a container type without its element type is kept as unknown"))
        return None

    def vi(self, v, where: str) -> ValueInfo:
        self.dropped(v, ("metadata_props", "doc_string"), where)
        t = self.type(v.type, where + ".type") if v.HasField("type") else None
        return ValueInfo(self.text(v.name, where + ".name"), t, where)

    # -- tensors
    def tensor(self, tp, where: str, span: tuple[int, int] | None = None) -> Tensor:
        name, dtype, doc = self.text(tp.name, where + ".name"), tp.data_type, self.text(tp.doc_string, where + ".doc")
        dims = tuple(tp.dims)
        self.dropped(tp, ("metadata_props",), where)
        bad = False
        for i, d in enumerate(dims):
            if d < 0:
                self.problem(Kind.INVALID_MODEL, f"{where}.dims[{i}]", f"negative dimension {d}")
                bad = True
        info = DTYPES.get(dtype)
        if info is None:
            self.problem(Kind.UNSUPPORTED, where + ".dtype", f"unsupported dtype code {dtype}")
            bad = True
        if tp.HasField("segment"):
            self.problem(Kind.UNSUPPORTED, where + ".segment", "segmented tensors are not supported")
            bad = True
        if bad:
            return Tensor(name, dtype, tuple(max(d, 0) for d in dims), doc, where=where)
        count = math.prod(dims)
        if count >= MAX_COUNT:
            self.problem(Kind.UNSUPPORTED, where + ".dims", "element count is 2^60 or more")
            return Tensor(name, dtype, dims, doc, where=where)
        if dtype == STRING:
            strings = tuple(tp.string_data)
            if len(strings) != count:
                self.problem(Kind.INVALID_MODEL, where + ".string_data", f"{len(strings)} strings for {count} elements")
            return Tensor(name, dtype, dims, doc, strings=strings, where=where)
        expected = info.byte_length(count)
        if tp.data_location == _EXTERNAL:
            return self.external(tp, name, dtype, dims, doc, expected, where)
        if tp.data_location != 0:
            self.problem(Kind.UNSUPPORTED, where + ".data_location", f"unknown data_location {tp.data_location}")
            return Tensor(name, dtype, dims, doc, where=where)
        if span is not None:  # raw_data left in the file: a view of it
            off, ln = span
            if ln != expected:
                self.problem(Kind.INVALID_MODEL, where + ".raw_data", f"{ln} bytes of raw_data, {expected} expected from dims and dtype", off)
                return Tensor(name, dtype, dims, doc, where=where)
            if expected == 0:
                return Tensor(name, dtype, dims, doc, where=where)
            return Tensor(name, dtype, dims, doc, 0, expected, off, self.raw_storage, where=where)
        if tp.HasField("raw_data"):
            raw = tp.raw_data
            if len(raw) != expected:
                self.problem(Kind.INVALID_MODEL, where + ".raw_data", f"{len(raw)} bytes of raw_data, {expected} expected from dims and dtype")
                return Tensor(name, dtype, dims, doc, where=where)
            if expected == 0:
                return Tensor(name, dtype, dims, doc, where=where)
            return Tensor(name, dtype, dims, doc, 0, expected, 0, BytesStorage(raw, where), where=where)
        if expected == 0:
            return Tensor(name, dtype, dims, doc, where=where)
        try:
            raw = self.typed_bytes(tp, info)
        except FormatError:
            raise
        except Exception as e:  # numpy_helper raises ValueError/TypeError on a count mismatch
            self.problem(Kind.INVALID_MODEL, where, f"typed data does not match dims and dtype: {e}")
            return Tensor(name, dtype, dims, doc, where=where)
        if len(raw) != expected:
            self.problem(Kind.INVALID_MODEL, where, f"typed data gives {len(raw)} bytes, {expected} expected")
            return Tensor(name, dtype, dims, doc, where=where)
        return Tensor(name, dtype, dims, doc, 0, expected, 0, BytesStorage(raw, where), where=where)

    def typed_bytes(self, tp, info) -> bytes:
        """The raw_data layout of a tensor stored in typed fields."""
        import numpy as np
        from onnx import numpy_helper

        from .dtypes import encode

        if info.code in (1, 14):  # float_data: keep exact bit patterns (NaN payloads)
            bits = _float_bits(tp.float_data, tp, 4)
            need = math.prod(tp.dims) * (2 if info.code == 14 else 1)
            if len(bits) != need:
                raise ValueError(f"{len(bits)} values for {need}")
            return np.asarray(bits, dtype="<u4").tobytes()
        arr = numpy_helper.to_array(tp)
        return encode(arr, info)

    def external(self, tp, name, dtype, dims, doc, expected: int, where: str) -> Tensor:
        empty = Tensor(name, dtype, dims, doc, where=where)
        kv = {self.text(e.key, where + ".external_data"): self.text(e.value, where + ".external_data") for e in tp.external_data}
        loc = kv.get("location", "")
        w = where + ".external_data"
        if _unsafe_location(loc):
            self.problem(Kind.MALFORMED, w + ".location", f"external data location {loc!r} is absolute, empty or leaves the model's folder")
            return empty
        try:
            offset = int(kv.get("offset", "0"))
            length = int(kv["length"]) if "length" in kv else expected
        except ValueError:
            self.problem(Kind.MALFORMED, w, "external data offset/length is not an integer")
            return empty
        if offset < 0 or length < 0:
            self.problem(Kind.MALFORMED, w + ".offset", "negative external data offset or length")
            return empty
        if length != expected:
            self.problem(Kind.INVALID_MODEL, w + ".length", f"{length} bytes of external data, {expected} expected from dims and dtype")
            return empty
        base = os.path.realpath(self.base)
        full = os.path.realpath(os.path.join(base, loc))
        try:
            inside = os.path.commonpath([base, full]) == base and full != base
        except ValueError:
            inside = False
        if not inside:
            self.problem(Kind.MALFORMED, w + ".location", f"external data location {loc!r} resolves outside the model's folder")
            return empty
        storage = self.storages.get(full)
        if storage is None:
            try:
                st = os.stat(full)
            except OSError as e:
                self.problem(Kind.IO, w + ".location", f"cannot open external data {loc!r}: {e.strerror or e}")
                return empty
            if not stat.S_ISREG(st.st_mode):
                self.problem(Kind.IO, w + ".location", f"external data {loc!r} is not a regular file")
                return empty
            if st.st_nlink > 1:  # a hard link may be a way out of the folder that realpath cannot see
                self.problem(Kind.MALFORMED, w + ".location", f"external data {loc!r} has {st.st_nlink} hard links; refused")
                return empty
            try:
                storage = FileStorage(full)
            except FormatError as e:
                self.problem(Kind.IO, w + ".location", f"cannot read external data {loc!r}: {e.message}")
                return empty
            self.storages[full] = storage
        if offset + length > storage.size:
            self.problem(Kind.MALFORMED, w + ".offset", f"external data range {offset}+{length} outside {loc!r} ({storage.size} bytes)", offset)
            return empty
        if length == 0:
            return empty
        return Tensor(name, dtype, dims, doc, 0, length, offset, storage, where=where)

    def sparse(self, sp, where: str) -> SparseTensor:
        values = self.tensor(sp.values, where + ".values")
        indices = self.tensor(sp.indices, where + ".indices")
        return SparseTensor(values, indices, tuple(sp.dims), where)

    # -- attributes, nodes, graphs
    def attr(self, ap, where: str) -> Attribute:
        t, w = ap.type, where + ".value"
        name, doc = self.text(ap.name, where + ".name"), self.text(ap.doc_string, where + ".doc")
        if ap.ref_attr_name:
            return Attribute(name, t, None, self.text(ap.ref_attr_name, where + ".ref"), doc, where)
        if t == AttrType.UNDEFINED:
            t = _infer_attr_type(ap)
            if t == AttrType.UNDEFINED:
                self.problem(Kind.MALFORMED, where + ".type", "attribute without a type")
                return Attribute(name, 0, None, "", doc, where)
        v: object
        if t == AttrType.FLOAT:
            v = _float_bits([ap.f], ap, 2)[-1] if ap.f != ap.f else bits_from_float(ap.f)
        elif t == AttrType.INT:
            v = ap.i
        elif t == AttrType.STRING:
            v = ap.s
        elif t == AttrType.TENSOR:
            v = self.tensor(ap.t, w)
        elif t == AttrType.GRAPH:
            v = self.graph(ap.g, w)
        elif t == AttrType.FLOATS:
            v = _float_bits(ap.floats, ap, 7)
        elif t == AttrType.INTS:
            v = tuple(ap.ints)
        elif t == AttrType.STRINGS:
            v = tuple(ap.strings)
        elif t == AttrType.TENSORS:
            v = tuple(self.tensor(x, f"{w}[{i}]") for i, x in enumerate(ap.tensors))
        elif t == AttrType.GRAPHS:
            v = tuple(self.graph(x, f"{w}[{i}]") for i, x in enumerate(ap.graphs))
        elif t == AttrType.SPARSE_TENSOR:
            v = self.sparse(ap.sparse_tensor, w)
        elif t == AttrType.SPARSE_TENSORS:
            v = tuple(self.sparse(x, f"{w}[{i}]") for i, x in enumerate(ap.sparse_tensors))
        elif t == AttrType.TYPE_PROTO:
            v = self.type(ap.tp, w)
            if v is None:
                self.problem(Kind.UNSUPPORTED, w, "empty TypeProto attribute")
        elif t == AttrType.TYPE_PROTOS:
            v = tuple(x for x in (self.type(x, f"{w}[{i}]") for i, x in enumerate(ap.type_protos)) if x is not None)
        else:
            self.problem(Kind.UNSUPPORTED, where + ".type", f"unsupported attribute type {t}")
            v = None
        return Attribute(name, int(t), v, "", doc, where)

    def node(self, np_, where: str) -> Node:
        self.dropped(np_, ("metadata_props", "device_configurations"), where)
        attrs = tuple(self.attr(a, f"{where}.attributes[{i}]") for i, a in enumerate(np_.attribute))
        t = self.text
        return Node(t(np_.op_type, where + ".op"), t(np_.name, where + ".name"), t(np_.domain, where + ".domain"),
                    t(np_.overload, where + ".overload"), t(np_.doc_string, where + ".doc"), self.texts(np_.input, where + ".inputs"),
                    self.texts(np_.output, where + ".outputs"), attrs, where)

    def graph(self, gp, where: str, spans: dict[int, tuple[int, int]] | None = None) -> Graph:
        spans = spans or {}
        self.dropped(gp, ("quantization_annotation", "metadata_props"), where)
        return Graph(
            name=self.text(gp.name, where + ".name"),
            doc=self.text(gp.doc_string, where + ".doc"),
            inputs=tuple(self.vi(v, f"{where}.inputs[{i}]") for i, v in enumerate(gp.input)),
            outputs=tuple(self.vi(v, f"{where}.outputs[{i}]") for i, v in enumerate(gp.output)),
            value_info=tuple(self.vi(v, f"{where}.value_info[{i}]") for i, v in enumerate(gp.value_info)),
            initializers=tuple(self.tensor(t, f"{where}.initializers[{i}]", spans.get(i)) for i, t in enumerate(gp.initializer)),
            sparse_initializers=tuple(self.sparse(s, f"{where}.sparse_initializers[{i}]") for i, s in enumerate(gp.sparse_initializer)),
            nodes=tuple(self.node(n, f"{where}.nodes[{i}]") for i, n in enumerate(gp.node)),
            where=where,
        )

    def function(self, fp, where: str) -> Function:
        self.dropped(fp, ("value_info", "metadata_props"), where)
        return Function(
            name=self.text(fp.name, where + ".name"),
            domain=self.text(fp.domain, where + ".domain"),
            overload=self.text(fp.overload, where + ".overload"),
            doc=self.text(fp.doc_string, where + ".doc"),
            inputs=self.texts(fp.input, where + ".inputs"),
            outputs=self.texts(fp.output, where + ".outputs"),
            attribute_names=self.texts(fp.attribute, where + ".attribute_names"),
            attribute_defaults=tuple(self.attr(a, f"{where}.attribute_defaults[{i}]") for i, a in enumerate(fp.attribute_proto)),
            nodes=tuple(self.node(n, f"{where}.nodes[{i}]") for i, n in enumerate(fp.node)),
            opsets=self.opsets(fp.opset_import, where + ".opsets"),
            where=where,
        )

    def model(self, mp) -> Model:
        self.dropped(mp, ("training_info", "configuration"), "onnx")
        return Model(
            ir_version=mp.ir_version,
            graph=self.graph(mp.graph, "onnx.graph", self.raw_spans),
            producer_name=self.text(mp.producer_name, "onnx.producer_name"),
            producer_version=self.text(mp.producer_version, "onnx.producer_version"),
            domain=self.text(mp.domain, "onnx.domain"),
            doc=self.text(mp.doc_string, "onnx.doc"),
            model_version=mp.model_version,
            opsets=self.opsets(mp.opset_import, "onnx.opsets"),
            metadata=tuple((self.text(p.key, f"onnx.metadata[{i}].key"), self.text(p.value, f"onnx.metadata[{i}].value"))
                           for i, p in enumerate(mp.metadata_props)),
            functions=tuple(self.function(f, f"onnx.functions[{i}]") for i, f in enumerate(mp.functions)),
            where="onnx",
        )


def _infer_attr_type(ap) -> int:
    """ONNX before IR 4 may leave ``type`` unset: infer it from the one field that is set."""
    for field, t in (("f", 1), ("i", 2), ("s", 3), ("t", 4), ("g", 5), ("sparse_tensor", 11), ("tp", 13)):
        if ap.HasField(field):
            return t
    for field, t in (("floats", 6), ("ints", 7), ("strings", 8), ("tensors", 9), ("graphs", 10), ("sparse_tensors", 12), ("type_protos", 14)):
        if len(getattr(ap, field)):
            return t
    return 0


def import_proto(mp: "onnx.ModelProto", path: str = "model.onnx", mode: str = "strict", *, raw_spans=None,
                 raw_storage=None) -> tuple[Model, list[Problem], list[Finding], tuple[str, ...]]:
    """Convert a loaded ModelProto; external data is resolved against ``path``'s folder.

    ``raw_spans`` maps a graph initializer's index to the (offset, length) of its
    raw_data in ``raw_storage`` when the proto was parsed without it.
    """
    imp = _Importer(os.fspath(path), mode, raw_spans, raw_storage)
    try:
        model = imp.model(mp)
        _resolve(model, imp)
    except RecursionError as e:
        raise FormatError(Kind.UNSUPPORTED, "onnx", None, "the model is nested too deeply") from e
    return model, imp.problems, imp.findings, tuple(imp.storages)


def _resolve(model: Model, imp: _Importer) -> None:
    """Section 3's reading rules, as for a OneModel file: names, opsets, dependency order (``Graph.order``)."""
    from .reader import Reporter, _Resolver

    report = Reporter(imp.strict)
    _Resolver(report, model).run()
    imp.problems.extend(report.problems)
    imp.findings.extend(report.findings)


def import_onnx(path: str | os.PathLike, mode: str = "strict") -> Document:
    """Open an ONNX file as a :class:`Document` (source ``"onnx"``).

    ``strict`` raises the first problem as :class:`FormatError`; ``diagnose``
    never raises it: it collects problems (a tensor whose bytes cannot be used
    then has no storage; an unreadable or unparseable file gives a document
    with no model and that one problem).
    """
    if mode not in ("strict", "diagnose"):
        raise ValueError(f"mode must be 'strict' or 'diagnose', not {mode!r}")
    path = os.fspath(path)
    if mode == "strict":
        return _import(path, mode)
    try:
        return _import(path, mode)
    except FormatError as e:  # nothing sound could be read: a document holding the one problem
        try:
            size = os.path.getsize(path)
        except OSError:
            size = 0
        return Document(path, "onnx", size, problems=[e.problem])


def _import(path: str, mode: str) -> Document:
    import onnx

    storage = FileStorage(path)  # FormatError(Io) when it cannot be read; mapped when >= 1 MiB
    size = storage.size
    buf = storage.buffer()
    stripped = _strip_initializer_data(buf)
    data, spans = stripped if stripped is not None else (storage.read(0, size), {})
    mp = onnx.ModelProto()
    try:
        mp.ParseFromString(data)
    except Exception as e:  # google.protobuf.message.DecodeError and friends
        storage.close()
        raise FormatError(Kind.MALFORMED, "onnx", None, f"not a valid ONNX protobuf: {e}") from e
    del data, buf
    if not spans:
        storage.close()
    if not mp.HasField("graph"):
        problem = Problem(Kind.MALFORMED, "onnx.graph", None, "the ONNX model has no graph")
        if mode == "strict":
            raise FormatError.from_problem(problem)
        return Document(path, "onnx", size, problems=[problem])
    try:
        model, problems, findings, external = import_proto(mp, path, mode, raw_spans=spans, raw_storage=storage)
    except FormatError:
        raise
    except RecursionError as e:
        raise FormatError(Kind.UNSUPPORTED, "onnx", None, "the model is nested too deeply") from e
    return Document(path, "onnx", size, model=model, problems=problems, findings=findings, external_files=external)


# ---------------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------------


class _Exporter:
    def __init__(self, external: dict[int, tuple[str, int, int]] | None) -> None:
        self.external = external or {}

    def tensor(self, t: Tensor, tp) -> None:
        if self.tensor_meta(t, tp):
            tp.raw_data = t.storage.read(t.file_offset, t.length) if (t.length and t.storage is not None) else b""

    def tensor_meta(self, t: Tensor, tp) -> bool:
        """Every field but raw_data; True when raw_data is still to be set."""
        tp.name = t.name
        tp.data_type = t.dtype
        tp.dims.extend(t.dims)
        if t.doc:
            tp.doc_string = t.doc
        if t.dtype == STRING:
            tp.string_data.extend(t.strings or ())
            return False
        ext = self.external.get(id(t))
        if ext is not None:
            loc, off, ln = ext
            tp.data_location = _EXTERNAL
            for k, v in (("location", loc), ("offset", str(off)), ("length", str(ln))):
                e = tp.external_data.add()
                e.key, e.value = k, v
            return False
        return True

    def sparse(self, s: SparseTensor, sp) -> None:
        self.tensor(s.values, sp.values)
        self.tensor(s.indices, sp.indices)
        sp.dims.extend(s.dims)

    def type(self, t: Type, tp) -> None:
        k = t.kind
        if k in ("tensor", "sparse_tensor"):
            tt = tp.tensor_type if k == "tensor" else tp.sparse_tensor_type
            tt.elem_type = t.elem
            if t.shape is not None:
                tt.shape.SetInParent()
                for d in t.shape:
                    dim = tt.shape.dim.add()
                    if isinstance(d, int):
                        dim.dim_value = d
                    elif isinstance(d, str):
                        dim.dim_param = d
        elif k in ("sequence", "optional"):
            st = tp.sequence_type if k == "sequence" else tp.optional_type
            st.SetInParent()
            if t.inner is not None:
                self.type(t.inner, st.elem_type)
        elif k == "map":
            tp.map_type.key_type = t.key
            if t.inner is not None:
                self.type(t.inner, tp.map_type.value_type)
            else:
                tp.map_type.SetInParent()
        elif k == "opaque":
            tp.opaque_type.SetInParent()
            tp.opaque_type.domain = t.domain
            tp.opaque_type.name = t.name
        else:
            raise FormatError(Kind.UNSUPPORTED, t.where, None, f"unsupported type kind {k!r}")

    def vi(self, v: ValueInfo, vp) -> None:
        vp.name = v.name
        if v.type is not None:
            self.type(v.type, vp.type)

    def attr(self, a: Attribute, ap) -> None:
        ap.name = a.name
        ap.type = a.type
        if a.doc:
            ap.doc_string = a.doc
        if a.ref:
            ap.ref_attr_name = a.ref
            return
        t, v = a.type, a.value
        if v is None:
            return
        if t == AttrType.FLOAT:
            ap.MergeFromString(b"\x15" + struct.pack("<I", v))  # field 2, fixed32: the exact bits
        elif t == AttrType.INT:
            ap.i = v
        elif t == AttrType.STRING:
            ap.s = v
        elif t == AttrType.TENSOR:
            self.tensor(v, ap.t)
        elif t == AttrType.GRAPH:
            self.graph(v, ap.g)
        elif t == AttrType.FLOATS:
            if v:
                payload = struct.pack(f"<{len(v)}I", *v)
                ap.MergeFromString(b"\x3a" + _varint_bytes(len(payload)) + payload)  # field 7, packed
        elif t == AttrType.INTS:
            ap.ints.extend(v)
        elif t == AttrType.STRINGS:
            ap.strings.extend(v)
        elif t == AttrType.TENSORS:
            for x in v:
                self.tensor(x, ap.tensors.add())
        elif t == AttrType.GRAPHS:
            for x in v:
                self.graph(x, ap.graphs.add())
        elif t == AttrType.SPARSE_TENSOR:
            self.sparse(v, ap.sparse_tensor)
        elif t == AttrType.SPARSE_TENSORS:
            for x in v:
                self.sparse(x, ap.sparse_tensors.add())
        elif t == AttrType.TYPE_PROTO:
            self.type(v, ap.tp)
        elif t == AttrType.TYPE_PROTOS:
            for x in v:
                self.type(x, ap.type_protos.add())
        else:
            raise FormatError(Kind.UNSUPPORTED, a.where + ".type", None, f"unsupported attribute type {t}")

    def node(self, n: Node, np_) -> None:
        np_.op_type = n.op
        if n.name:
            np_.name = n.name
        if n.domain:
            np_.domain = n.domain
        if n.overload:
            np_.overload = n.overload
        if n.doc:
            np_.doc_string = n.doc
        np_.input.extend(n.inputs)
        np_.output.extend(n.outputs)
        for a in n.attributes:
            self.attr(a, np_.attribute.add())

    def graph(self, g: Graph, gp) -> None:
        gp.SetInParent()
        if g.name:
            gp.name = g.name
        if g.doc:
            gp.doc_string = g.doc
        for v in g.inputs:
            self.vi(v, gp.input.add())
        for v in g.outputs:
            self.vi(v, gp.output.add())
        for v in g.value_info:
            self.vi(v, gp.value_info.add())
        for t in g.initializers:
            self.tensor(t, gp.initializer.add())
        for s in g.sparse_initializers:
            self.sparse(s, gp.sparse_initializer.add())
        for n in g.nodes:
            self.node(n, gp.node.add())

    def function(self, f: Function, fp) -> None:
        fp.name = f.name
        if f.domain:
            fp.domain = f.domain
        if f.overload:
            fp.overload = f.overload
        if f.doc:
            fp.doc_string = f.doc
        fp.input.extend(f.inputs)
        fp.output.extend(f.outputs)
        fp.attribute.extend(f.attribute_names)
        for a in f.attribute_defaults:
            self.attr(a, fp.attribute_proto.add())
        for n in f.nodes:
            self.node(n, fp.node.add())
        for o in f.opsets:
            op = fp.opset_import.add()
            op.domain, op.version = o.domain, o.version

    def model(self, m: Model, mp) -> None:
        mp.ir_version = m.ir_version
        for o in m.opsets:
            op = mp.opset_import.add()
            op.domain, op.version = o.domain, o.version
        if m.producer_name:
            mp.producer_name = m.producer_name
        if m.producer_version:
            mp.producer_version = m.producer_version
        if m.domain:
            mp.domain = m.domain
        if m.model_version:
            mp.model_version = m.model_version
        if m.doc:
            mp.doc_string = m.doc
        self.graph(m.graph, mp.graph)
        for k, v in m.metadata:
            p = mp.metadata_props.add()
            p.key, p.value = k, v
        for f in m.functions:
            self.function(f, mp.functions.add())


_MESSAGE_ATTRS = frozenset({AttrType.TENSOR, AttrType.GRAPH, AttrType.TENSORS, AttrType.GRAPHS, AttrType.SPARSE_TENSOR,
                            AttrType.SPARSE_TENSORS, AttrType.TYPE_PROTO, AttrType.TYPE_PROTOS})
"""Attribute types whose value is written as submessages of the AttributeProto."""


def proto_depth(model: Model, external: Container[int] = frozenset()) -> tuple[int, str]:
    """How deep :func:`model_to_proto` nests protobuf messages, and the ``where`` of the first deepest one.

    The ModelProto is depth 0 and each submessage one more, exactly as the
    exporter writes them: a graph in a node attribute is 3 deeper than its graph
    (GraphProto > NodeProto > AttributeProto > GraphProto), a sequence, optional
    or map type 2 deeper than its type (TypeProto > Sequence > TypeProto), a
    tensor type's shape 2 and its dims 3 deeper (TypeProto > Tensor >
    TensorShapeProto > Dimension), an external tensor's entries 1 deeper.
    ``external`` holds ``id()`` of tensors written as external data. "First" is
    in the exporter's field order (a pre-order walk); the walk keeps its own
    stack: any nesting, never a RecursionError.
    """
    best, best_where = 0, model.where
    stack: list[tuple[int, Iterator]] = [(1, iter((model.graph, *model.functions)))]
    while stack:
        d, it = stack[-1]
        rec = next(it, None)
        if rec is None:
            stack.pop()
            continue
        if d > best:
            best, best_where = d, rec.where
        cls = rec.__class__
        if cls is Node:
            attrs = rec.attributes
            if attrs:
                if d + 1 > best:  # every attribute is one deeper; the first one is met first
                    best, best_where = d + 1, attrs[0].where
                nested = [a for a in attrs if a.type in _MESSAGE_ATTRS and a.value is not None and not a.ref]
                if nested:
                    stack.append((d + 1, iter(nested)))
        elif cls is Graph:
            stack.append((d + 1, itertools.chain(rec.inputs, rec.outputs, rec.value_info, rec.initializers,
                                                 rec.sparse_initializers, rec.nodes)))
        elif cls is Attribute:  # one whose value is messages
            v = rec.value
            stack.append((d + 1, iter(v if v.__class__ is tuple else (v,))))
        elif cls is ValueInfo:
            if rec.type is not None:
                stack.append((d + 1, iter((rec.type,))))
        elif cls is Type:
            w = rec.where
            if d + 1 > best:  # TypeProto.Tensor / Sequence / Optional / Map / Opaque
                best, best_where = d + 1, w
            if rec.kind in ("tensor", "sparse_tensor"):
                if rec.shape is not None and d + 2 > best:  # TensorShapeProto (present even when empty)
                    best, best_where = d + 2, w + ".shape"
                if rec.shape and d + 3 > best:  # Dimension
                    best, best_where = d + 3, w + ".shape[0]"
            elif rec.inner is not None:
                stack.append((d + 2, iter((rec.inner,))))
        elif cls is SparseTensor:
            stack.append((d + 1, iter((rec.values, rec.indices))))
        elif cls is Tensor:
            if id(rec) in external and d + 1 > best:  # StringStringEntryProto: location, offset, length
                best, best_where = d + 1, rec.where + ".data"
        elif cls is Function:
            stack.append((d + 1, itertools.chain(rec.attribute_defaults, rec.nodes)))
    return best, best_where


def _refuse_too_deep(model: Model, external: Container[int] = frozenset()) -> None:
    depth, where = proto_depth(model, external)
    if depth > PROTO_DEPTH_LIMIT:
        raise FormatError(Kind.UNSUPPORTED, where, None,
                          f"the ONNX file would nest protobuf messages {depth} deep here; protobuf decoders "
                          f"(onnx.load, onnx.checker, ONNX Runtime) stop at {PROTO_DEPTH_LIMIT}")


def model_to_proto(model: Model, *, external: dict[int, tuple[str, int, int]] | None = None) -> "onnx.ModelProto":
    """An ONNX ModelProto of ``model``: raw_data for every tensor (bytes copied into the proto).

    ``external`` maps ``id(tensor)`` to ``(location, offset, length)`` for
    tensors to reference as external data instead (see :func:`export_onnx`).
    """
    import onnx

    mp = onnx.ModelProto()
    _Exporter(external).model(model, mp)
    return mp


def export_onnx(model: Model, path: str | os.PathLike, *, sources: Iterable[str] = (), external: bool | None = None) -> None:
    """Write ``model`` as an ONNX file at ``path`` (temporary file + rename).

    When the tensors' bytes exceed :data:`PROTO_LIMIT` (or ``external=True``),
    every tensor of at least :data:`EXTERNAL_THRESHOLD` bytes is streamed into
    ``<path>.data`` beside it (64-byte aligned) and referenced as external data.
    Refuses a destination (or its ``.data``) that is a file the model reads, and
    a model nested deeper than protobuf decodes (:func:`proto_depth` over
    :data:`PROTO_DEPTH_LIMIT`: Unsupported), before anything is written.
    """
    from . import writer

    dst = os.fspath(path)
    srcs = set(sources) | writer.model_sources(model)
    tensors = [t for t in all_tensors(model) if t.dtype != STRING]
    for t in tensors:
        if t.length and (t.storage is None or t.file_offset is None):
            raise FormatError(Kind.INVALID_MODEL, t.where, None, "tensor has no bytes")
    total = sum(t.length for t in tensors)
    if external is None:
        external = total > PROTO_LIMIT
    data_path = dst + ".data"
    writer._refuse_sources(dst, srcs)
    if external and not any(t.length >= EXTERNAL_THRESHOLD for t in tensors):
        external = False  # nothing big enough to move: no empty .data file
    if not external:
        _refuse_too_deep(model)
        fds = writer._SourceFds()
        try:
            with writer.atomic_output(dst) as f:
                _stream_inline(model, f, fds)
        finally:
            fds.close()
        return
    writer._refuse_sources(data_path, srcs)
    location = os.path.basename(data_path)
    ext: dict[int, tuple[str, int, int]] = {}
    order: list[Tensor] = []
    cursor = 0
    for t in tensors:
        if t.length >= EXTERNAL_THRESHOLD and id(t) not in ext:
            off = (cursor + 63) // 64 * 64
            ext[id(t)] = (location, off, t.length)
            order.append(t)
            cursor = off + t.length
    _refuse_too_deep(model, ext)
    mp = model_to_proto(model, external=ext)
    try:
        blob = mp.SerializeToString()
    except Exception as e:
        raise FormatError(Kind.UNSUPPORTED, "onnx", None, f"cannot serialize the ONNX model: {e}") from e
    del mp
    fds = writer._SourceFds()
    try:
        with writer.atomic_output(dst) as fm:
            with writer.atomic_output(data_path) as fd:
                pos = 0
                for t in order:
                    off = ext[id(t)][1]
                    if off > pos:
                        writer._write_all(fd, bytes(off - pos))
                    writer.copy_storage_range(fd, t.storage, t.file_offset, t.length, fds)  # type: ignore[arg-type]
                    pos = off + t.length
            try:
                writer._write_all(fm, blob)
            except BaseException:
                try:
                    os.unlink(data_path)
                except OSError:
                    pass
                raise
    finally:
        fds.close()


def _stream_inline(model: Model, f, fds) -> None:
    """Serialize ``model`` as one ModelProto, streaming graph initializers' raw_data from storage.

    Protobuf allows a message's fields in any order, so the graph is written as
    its fields without initializers followed by one ``initializer`` field per
    tensor, whose ``raw_data`` (TensorProto field 9) is copied in chunks: memory
    stays bounded by the rest of the model, not by the weights.
    """
    import onnx
    from dataclasses import replace

    from . import writer

    bare = replace(model, graph=replace(model.graph, initializers=()))
    mp = model_to_proto(bare)
    graph_bytes = mp.graph.SerializeToString()
    mp.ClearField("graph")
    head = mp.SerializeToString()
    exp = _Exporter(None)
    parts = []
    graph_len = len(graph_bytes)
    for t in model.graph.initializers:
        tp = onnx.TensorProto()
        raw = exp.tensor_meta(t, tp)
        meta = tp.SerializeToString()
        n = t.length if raw else 0
        raw_head = b"\x4a" + _varint_bytes(n) if raw else b""  # field 9 (raw_data), length-delimited
        body = len(meta) + len(raw_head) + n
        parts.append((meta, raw_head, t, n, body))
        graph_len += 1 + len(_varint_bytes(body)) + body
    if len(head) + graph_len + 16 > (1 << 31) - 1:
        raise FormatError(Kind.UNSUPPORTED, "onnx", None, "the model is over 2 GiB: export it with external data")
    writer._write_all(f, head + b"\x3a" + _varint_bytes(graph_len))  # ModelProto field 7 (graph)
    writer._write_all(f, graph_bytes)
    for meta, raw_head, t, n, body in parts:
        writer._write_all(f, b"\x2a" + _varint_bytes(body) + meta + raw_head)  # GraphProto field 5 (initializer)
        if n:
            writer.copy_storage_range(f, t.storage, t.file_offset, n, fds)
