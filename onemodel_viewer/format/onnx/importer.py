"""ONNX -> schema records.

:func:`import_onnx` loads an ONNX file (without its external data) and converts
every construct into the records of :mod:`.schema`; tensor bytes stay where
they are: ``raw_data`` is kept as the bytes object protobuf hands out (or, for
graph initializers, a view of the file: :func:`.onnx_wire.strip_initializer_data`),
typed fields (``float_data``, ``int32_data``...) are re-encoded into the
``raw_data`` layout, and external data becomes a zero-copy view of the external
file, after its location has been checked to stay inside the model's folder.

Decisions (see the README format notes):

* an external ``location`` that is absolute, contains ``..``, resolves
  (symlinks included) outside the model's folder (the Hugging Face cache
  layout excepted), names the model file itself or a file with more than one
  hard link is **Malformed** at ``<tensor>.external_data.location`` and is
  never opened; a missing or unreadable external file (a FIFO, a folder) is
  **Io**; a range past its end is **Malformed** at ``.offset``; an offset or
  length that is not plain ASCII digits is **Malformed** at ``.offset`` /
  ``.length``; a length not matching dims and dtype is **InvalidModel**
  (rules in :mod:`.onnx_external`); problems about a weights file carry its
  location in ``file``;
* a key repeated in ``external_data`` is a ``duplicate-key`` finding (the last
  one is used, as onnx does); a ``checksum`` that is not the SHA-1 of the
  location's file is a ``checksum-mismatch`` finding; every resolved external
  tensor is listed in the document's ``extra``
  (:class:`.onnx_external.ExternalFacts`) for the layout report;
* unparseable protobuf is **Malformed** at ``onnx``;
* fields the format cannot carry (``metadata_props`` of graphs/nodes/values,
  a value's ``doc_string``,
  ``denotation``, ``quantization_annotation``, function ``value_info``,
  ``training_info``, ``configuration``, node ``device_configurations``) are
  dropped with a ``dropped-field`` finding; a negative ``dim_value`` becomes an
  unknown dimension with a ``negative-dim`` finding (CLARIFICATIONS).

numpy and onnx are imported inside functions only.
"""

from __future__ import annotations

import math
import os
import stat
import sys
from typing import TYPE_CHECKING, Iterable

from ..document import Document
from ..dtypes import DTYPES, STRING, AttrType, DataType
from ..errors import Finding, FormatError, Kind, Problem
from ..onemodel.header import MAX_COUNT
from .external import ExternalFacts, ExternalRef, locate, parse_digits, sha1_of, unsafe_location
from .wire import DATA_LOCATION_EXTERNAL, float_bits, strip_initializer_data
from ..schema import (
    Attribute,
    Function,
    Graph,
    Model,
    Node,
    OperatorSet,
    SparseTensor,
    Tensor,
    Type,
    ValueInfo,
    bits_from_float,
)
from ..storage import BytesStorage, FileStorage

if TYPE_CHECKING:  # pragma: no cover
    import onnx

__all__ = ["import_onnx", "import_proto"]


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
        self.locations: dict[str, str] = {}
        """Resolved path -> the location first written for it."""
        self.located: dict[str, tuple[str | None, str]] = {}
        """Location -> what :func:`locate` said of it (resolved once: 1,875 external tensors of the 1 GiB
        benchmark model name one file, and resolving each took ~0.1 s of the 0.36 s import)."""
        self.refs: list[ExternalRef] = []
        self.sha1: dict[str, str] = {}
        self.checked: set[tuple[str, str]] = set()

    # -- reporting
    def problem(self, kind: Kind, where: str, message: str, offset: int | None = None, file: str | None = None) -> None:
        if self.strict:
            raise FormatError(kind, where, offset, message, file)
        self.problems.append(Problem(kind, where, offset, message, file))

    def facts(self) -> ExternalFacts:
        return ExternalFacts(tuple(self.refs), tuple((loc, full, self.storages[full].size) for full, loc in self.locations.items()))

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
        if tp.data_location == DATA_LOCATION_EXTERNAL:
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

        from ..dtypes import encode

        if info.code in (DataType.FLOAT, DataType.COMPLEX64):  # float_data: keep exact bit patterns (NaN payloads)
            bits = float_bits(tp.float_data, tp, 4)
            need = math.prod(tp.dims) * (2 if info.code == DataType.COMPLEX64 else 1)
            if len(bits) != need:
                raise ValueError(f"{len(bits)} values for {need}")
            return np.asarray(bits, dtype="<u4").tobytes()
        arr = numpy_helper.to_array(tp)
        return encode(arr, info)

    def external(self, tp, name, dtype, dims, doc, expected: int, where: str) -> Tensor:
        def empty() -> Tensor:  # made only when returned (1G: 2,458 tensors 24.5 -> 23.4 ms CPU)
            return Tensor(name, dtype, dims, doc, where=where)

        w = where + ".external_data"
        kv: dict[str, str] = {}
        for i, e in enumerate(tp.external_data):
            key, value = self.text(e.key, f"{w}[{i}].key"), self.text(e.value, f"{w}[{i}].value")
            if key in kv:  # onnx keeps the last one; a reader that keeps the first reads other bytes
                self.findings.append(Finding("duplicate-key", f"{w}[{i}]", None,
                                             f"external data key {key!r} is repeated; the last value, {value!r}, is used"))
            kv[key] = value
        loc = kv.get("location", "")
        if unsafe_location(loc):
            self.problem(Kind.MALFORMED, w + ".location", f"external data location {loc!r} is absolute, empty or leaves the model's folder")
            return empty()
        offset = parse_digits(kv.get("offset", "0"))
        if offset is None:
            self.problem(Kind.MALFORMED, w + ".offset", f"external data offset {kv['offset']!r} is not plain decimal digits")
            return empty()
        length = parse_digits(kv["length"]) if "length" in kv else expected
        if length is None:
            self.problem(Kind.MALFORMED, w + ".length", f"external data length {kv['length']!r} is not plain decimal digits")
            return empty()
        if length != expected:
            self.problem(Kind.INVALID_MODEL, w + ".length", f"{length} bytes of external data, {expected} expected from dims and dtype")
            return empty()
        if loc not in self.located:
            self.located[loc] = locate(self.path, loc)
        full, why = self.located[loc]
        if full is None:
            self.problem(Kind.MALFORMED, w + ".location", why, file=loc)
            return empty()
        storage = self.storages.get(full)
        if storage is None:
            try:
                st = os.stat(full)
            except OSError as e:
                self.problem(Kind.IO, w + ".location", f"cannot open external data {loc!r}: {e.strerror or e}", file=loc)
                return empty()
            if not stat.S_ISREG(st.st_mode):
                self.problem(Kind.IO, w + ".location", f"external data {loc!r} is not a regular file", file=loc)
                return empty()
            if st.st_nlink > 1:  # a hard link may be a way out of the folder that realpath cannot see
                self.problem(Kind.MALFORMED, w + ".location", f"external data {loc!r} has {st.st_nlink} hard links; refused", file=loc)
                return empty()
            try:
                storage = FileStorage(full)
            except FormatError as e:
                self.problem(Kind.IO, w + ".location", f"cannot read external data {loc!r}: {e.message}", file=loc)
                return empty()
            self.storages[full] = storage
            self.locations[full] = loc
        if offset + length > storage.size:
            self.problem(Kind.MALFORMED, w + ".offset", f"external data range {offset}+{length} outside {loc!r} ({storage.size} bytes)",
                         offset, file=loc)
            return empty()
        if "checksum" in kv:
            self.checksum(kv["checksum"], full, loc, w)
        self.refs.append(ExternalRef(where, name, loc, full, offset, length))
        if length == 0:
            return empty()
        return Tensor(name, dtype, dims, doc, 0, length, offset, storage, where=where)

    def checksum(self, want: str, full: str, loc: str, w: str) -> None:
        """``checksum-mismatch`` when the SHA-1 of the location's file is not ``want`` (computed once per file)."""
        have = self.sha1.get(full)
        if have is None:
            have = self.sha1[full] = sha1_of(full) or ""
        if have != want.strip().lower() and (full, want) not in self.checked:
            self.checked.add((full, want))
            self.findings.append(Finding("checksum-mismatch", w + ".checksum", None,
                                         f"{loc!r} has SHA-1 {have or '(unreadable)'}, the model says {want!r}", loc))

    def sparse(self, sp, where: str) -> SparseTensor:
        values = self.tensor(sp.values, where + ".values")
        indices = self.tensor(sp.indices, where + ".indices")
        dims = tuple(sp.dims)
        count = 1
        for d in dims:  # bounded as the OneModel reader's: a 10^5-dim product is never built
            if count < MAX_COUNT and d >= 0:
                count *= d
        if count >= MAX_COUNT and 0 not in dims:  # the OneModel reader (and writer) refuse it too
            self.problem(Kind.UNSUPPORTED, where + ".dims", "element count is 2^60 or more")
        return SparseTensor(values, indices, dims, where)

    # -- attributes, nodes, graphs
    def attr(self, ap, where: str) -> Attribute:
        t, w = ap.type, where + ".value"
        name, doc = ap.name, ap.doc_string
        if name.__class__ is not str or doc.__class__ is not str:  # not valid UTF-8 (location strings built only then)
            name, doc = self.text(name, where + ".name"), self.text(doc, where + ".doc")
        if ap.ref_attr_name:
            return Attribute(name, t, None, self.text(ap.ref_attr_name, where + ".ref"), doc, where)
        if t == AttrType.UNDEFINED:
            t = _infer_attr_type(ap)
            if t == AttrType.UNDEFINED:
                self.problem(Kind.MALFORMED, where + ".type", "attribute without a type")
                return Attribute(name, AttrType.UNDEFINED, None, "", doc, where)
        v: object
        if t == AttrType.FLOAT:
            v = float_bits([ap.f], ap, 2)[-1] if ap.f != ap.f else bits_from_float(ap.f)
        elif t == AttrType.INT:
            v = ap.i
        elif t == AttrType.STRING:
            v = ap.s
        elif t == AttrType.TENSOR:
            v = self.tensor(ap.t, w)
        elif t == AttrType.GRAPH:
            v = self.graph(ap.g, w)
        elif t == AttrType.FLOATS:
            v = float_bits(ap.floats, ap, 7)
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
        if len(np_.metadata_props) or len(np_.device_configurations):
            self.dropped(np_, ("metadata_props", "device_configurations"), where)
        attributes = np_.attribute  # read once: each read of a repeated field makes a container (10^4 nodes: 54.8 -> 53.5 ms)
        attrs = tuple([self.attr(a, f"{where}.attributes[{i}]") for i, a in enumerate(attributes)]) if len(attributes) else ()
        op, name, domain, overload, doc = np_.op_type, np_.name, np_.domain, np_.overload, np_.doc_string
        inputs, outputs = tuple(np_.input[:]), tuple(np_.output[:])  # a slice is ~40% faster to take than iterating the container
        try:  # every text valid UTF-8 (str, not bytes): no per-field check, no location strings (~40% of the node's time)
            "".join((op, name, domain, overload, doc, *inputs, *outputs))
        except TypeError:
            return self.node_checked(np_, attrs, where)
        return Node(op, name, domain, overload, doc, inputs, outputs, attrs, where)

    def node_checked(self, np_, attrs: tuple[Attribute, ...], where: str) -> Node:
        """A node with a text that is not valid UTF-8: each one checked and reported where it is."""
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
        if mp.ir_version < 3:  # unset (0) or older than OneModel's minimum (section 2.1): nothing could write it
            self.problem(Kind.INVALID_MODEL, "onnx.ir_version", f"ir_version {mp.ir_version} is below 3")
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
    model, imp = _convert(mp, os.fspath(path), mode, raw_spans, raw_storage)
    return model, imp.problems, imp.findings, tuple(imp.storages)


def _convert(mp, path: str, mode: str, raw_spans, raw_storage) -> tuple[Model, "_Importer"]:
    imp = _Importer(path, mode, raw_spans, raw_storage)
    try:
        model = imp.model(mp)
        _resolve(model, imp)
    except RecursionError as e:
        raise FormatError(Kind.UNSUPPORTED, "onnx", None, "the model is nested too deeply") from e
    return model, imp


def _resolve(model: Model, imp: _Importer) -> None:
    """Section 3's reading rules, as for a OneModel file: names, opsets, dependency order (``Graph.order``)."""
    from ..reporter import Reporter
    from ..rules import resolve

    report = Reporter(imp.strict)
    resolve(model, report)
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


_PROTO_MODULE = []
"""onnx's generated protobuf module, once loaded on its own (:func:`_model_proto_class`)."""


def _model_proto_class():
    """onnx's ``ModelProto``, without importing the onnx package when nothing has yet.

    ``import onnx`` costs ~0.19 CPU-s (its helpers pull in json_format, asyncio, importlib.metadata);
    its generated module alone ~0.015 s, and gives the same class (one descriptor pool: a later
    ``import onnx`` adds the identical file again, which protobuf accepts, and finds this class).
    """
    loaded = sys.modules.get("onnx")
    if loaded is not None:
        return loaded.ModelProto
    if not _PROTO_MODULE:
        import importlib.util

        try:
            spec = importlib.util.find_spec("onnx")
            folder = spec.submodule_search_locations[0] if spec and spec.submodule_search_locations else None
            gen = importlib.util.spec_from_file_location("onnx.onnx_ml_pb2", os.path.join(folder, "onnx_ml_pb2.py")) if folder else None
            module = importlib.util.module_from_spec(gen)
            gen.loader.exec_module(module)
        except Exception:  # any other layout of the onnx package: import it whole
            import onnx

            return onnx.ModelProto
        _PROTO_MODULE.append(module)
    return _PROTO_MODULE[0].ModelProto


def _import(path: str, mode: str) -> Document:
    storage = FileStorage(path)  # FormatError(Io) when it cannot be read; mapped when >= 1 MiB
    size = storage.size
    buf = storage.buffer()
    stripped = strip_initializer_data(buf)
    data, spans = stripped if stripped is not None else (storage.read(0, size), {})
    mp = _model_proto_class()()
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
        model, imp = _convert(mp, path, mode, spans, storage)
    except FormatError:
        raise
    except RecursionError as e:
        raise FormatError(Kind.UNSUPPORTED, "onnx", None, "the model is nested too deeply") from e
    return Document(path, "onnx", size, model=model, problems=imp.problems, findings=imp.findings,
                    external_files=tuple(imp.storages), extra=imp.facts())
