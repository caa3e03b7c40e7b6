"""ONNX -> schema records.

:func:`import_onnx` loads an ONNX file (without its external data) and converts
every construct into the records of :mod:`.schema`; tensor bytes stay where
they are: ``raw_data`` of graph initializers and attribute tensors (a Constant
node's ``value``), in the graph and its subgraphs, is a view of the file
(:func:`.wire.strip_raw_data`; :mod:`.tensors`), typed fields (``float_data``, ``int32_data``...) are re-encoded into the
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

import os
import sys
from typing import TYPE_CHECKING, Iterable

from ..document import Document
from ..errors import Finding, FormatError, Kind, Problem
from ..schema import Attribute, Function, Graph, Model, Node, OperatorSet, Type, ValueInfo
from ..storage import FileStorage
from .attributes import AttributeDecoding
from .external import ExternalFacts, ExternalRef
from .tensors import TensorDecoding
from .wire import strip_raw_data

if TYPE_CHECKING:  # pragma: no cover
    import onnx

__all__ = ["import_onnx", "import_proto"]


class _Importer(TensorDecoding, AttributeDecoding):
    def __init__(self, path: str, mode: str, raw_spans=None, raw_storage=None) -> None:
        self.raw_spans: dict[str, tuple[int, int]] = raw_spans or {}
        """A tensor's ``where`` -> (offset, length) of its raw_data in ``raw_storage`` (left out of the parse)."""
        self.raw_storage = raw_storage
        self.path = path
        self.remote = "://" in path and getattr(raw_storage, "remote", False)
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

    def graph(self, gp, where: str) -> Graph:
        self.dropped(gp, ("quantization_annotation", "metadata_props"), where)
        return Graph(
            name=self.text(gp.name, where + ".name"),
            doc=self.text(gp.doc_string, where + ".doc"),
            inputs=tuple(self.vi(v, f"{where}.inputs[{i}]") for i, v in enumerate(gp.input)),
            outputs=tuple(self.vi(v, f"{where}.outputs[{i}]") for i, v in enumerate(gp.output)),
            value_info=tuple(self.vi(v, f"{where}.value_info[{i}]") for i, v in enumerate(gp.value_info)),
            initializers=tuple(self.tensor(t, f"{where}.initializers[{i}]") for i, t in enumerate(gp.initializer)),
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
            graph=self.graph(mp.graph, "onnx.graph"),
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


def import_proto(mp: "onnx.ModelProto", path: str = "model.onnx", mode: str = "strict", *, raw_spans=None,
                 raw_storage=None) -> tuple[Model, list[Problem], list[Finding], tuple[str, ...]]:
    """Convert a loaded ModelProto; external data is resolved against ``path``'s folder.

    ``raw_spans`` maps a tensor's ``where`` (``onnx.graph.initializers[0]``,
    ``onnx.graph.nodes[3].attributes[0].value``) to the (offset, length) of its raw_data in
    ``raw_storage`` when the proto was parsed without it (:func:`.wire.strip_raw_data`).
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


def import_onnx(path: str | os.PathLike, mode: str = "strict", storage=None) -> Document:
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
        return _import(path, mode, storage)
    try:
        return _import(path, mode, storage)
    except FormatError as e:  # nothing sound could be read: a document holding the one problem
        try:
            size = storage.size if storage is not None else os.path.getsize(path)
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


def _import(path: str, mode: str, storage=None) -> Document:
    if storage is None:  # a URL's storage comes open (:mod:`..remote`)
        storage = FileStorage(path)  # FormatError(Io) when it cannot be read; mapped when >= 1 MiB
    size = storage.size
    buf = storage.buffer()
    stripped = strip_raw_data(buf)
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
