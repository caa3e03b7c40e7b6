"""ONNX -> OneModel -> ONNX for every ONNX backend-test model and every generated model.

For each source: import, write (twice: identical bytes), read back with the strict
reader, check every tensor's bytes against ``numpy_helper.to_array`` of the source
tensor in the raw_data layout, export back to ONNX and compare with the source up to
representation (typed fields become raw_data; fields the format cannot carry are
ignored, see ``DROPPED``).
"""

from __future__ import annotations

import filecmp
import glob
import importlib.util
import os

import numpy as np
import onnx
import pytest
from google.protobuf.descriptor import FieldDescriptor
from onnx import numpy_helper

from onemodel_viewer import format as omf
from onemodel_viewer.format import dtypes as omdt
from onemodel_viewer.format.onnx import exporter as onnx_export, wire as onnx_wire
from onemodel_viewer.format.onemodel import writer
from onemodel_viewer.format.schema import all_tensors

HERE = os.path.dirname(os.path.abspath(__file__))
VALID = os.path.join(HERE, "..", "testdata", "valid")
BACKEND = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
BACKEND_MODELS = sorted(glob.glob(os.path.join(BACKEND, "*", "*", "model.onnx")) + glob.glob(os.path.join(BACKEND, "light", "*.onnx")))
GENERATED = sorted(glob.glob(os.path.join(VALID, "*.onnx")))

DROPPED = {"metadata_props", "denotation", "quantization_annotation", "training_info", "configuration", "device_configurations"}
"""ONNX fields the OneModel format has no place for (the importer reports them as findings)."""
DROPPED_IN = {("onnx.FunctionProto", "value_info"), ("onnx.ValueInfoProto", "doc_string")}


def _float_fields(msg, field: int) -> list[int]:
    return onnx_wire.fixed32_fields(msg.SerializeToString(), field)


def _tensor(t: onnx.TensorProto, base: str) -> dict:
    out = {"name": t.name, "data_type": t.data_type, "dims": list(t.dims), "doc_string": t.doc_string}
    if t.data_type == onnx.TensorProto.STRING:
        out["strings"] = list(t.string_data)
        return out
    if t.data_location == onnx.TensorProto.EXTERNAL:
        onnx.external_data_helper.load_external_data_for_tensor(t, base)
    info = omdt.DTYPES[t.data_type]
    if not t.HasField("raw_data") and t.data_type in (1, 14) and len(t.float_data):
        out["data"] = np.asarray(_float_fields(t, 4), dtype="<u4").tobytes()  # exact bits (to_array quiets sNaN)
    else:
        out["data"] = omdt.encode(numpy_helper.to_array(t).reshape(-1), info)
    return out


def normalize(msg, base: str):
    """A plain structure of ``msg`` that ignores representation: default values, typed vs raw data, dropped fields."""
    full = msg.DESCRIPTOR.full_name
    if full == "onnx.TensorProto":
        return _tensor(msg, base)
    if full == "onnx.TensorShapeProto.Dimension":
        which = msg.WhichOneof("value")
        if which == "dim_value" and msg.dim_value < 0:
            return None
        return (which, getattr(msg, which)) if which else None
    out = {}
    for fd, value in msg.ListFields():
        if fd.name in DROPPED or (full, fd.name) in DROPPED_IN:
            continue
        if full == "onnx.AttributeProto" and fd.name == "f":
            out["f"] = _float_fields(msg, 2)[-1]
            continue
        if full == "onnx.AttributeProto" and fd.name == "floats":
            out["floats"] = _float_fields(msg, 7)
            continue
        if fd.is_repeated:
            v = [normalize(x, base) if fd.type == FieldDescriptor.TYPE_MESSAGE else x for x in value]
            if v:
                out[fd.name] = v
        elif fd.type == FieldDescriptor.TYPE_MESSAGE:
            v = normalize(value, base)
            if v != {} or full != "onnx.ValueInfoProto":  # an empty TypeProto is no type
                out[fd.name] = v
        elif value not in ("", 0, b""):
            out[fd.name] = value
    return out


def first_difference(a, b, path="model"):
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: only in {'exported' if k in b else 'source'}"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {a!r:.80} vs {b!r:.80}"


def _source_tensors(mp: onnx.ModelProto):
    """Source TensorProtos in section 1.3 order (mirrors schema.all_tensors)."""

    def graph(g):
        yield from g.initializer
        for s in g.sparse_initializer:
            yield s.values
            yield s.indices
        for n in g.node:
            yield from attrs(n.attribute)

    def attrs(items):
        for a in items:
            if a.ref_attr_name:
                continue
            if a.type == onnx.AttributeProto.TENSOR:
                yield a.t
            elif a.type == onnx.AttributeProto.TENSORS:
                yield from a.tensors
            elif a.type == onnx.AttributeProto.SPARSE_TENSOR:
                yield a.sparse_tensor.values
                yield a.sparse_tensor.indices
            elif a.type == onnx.AttributeProto.SPARSE_TENSORS:
                for s in a.sparse_tensors:
                    yield s.values
                    yield s.indices
            if a.type == onnx.AttributeProto.GRAPH:
                yield from graph(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    yield from graph(g)

    yield from graph(mp.graph)
    for f in mp.functions:
        for n in f.node:
            yield from attrs(n.attribute)
        yield from attrs(f.attribute_proto)


def _id(path: str) -> str:
    return os.path.relpath(path, BACKEND if path.startswith(BACKEND) else VALID)


def test_backend_models_are_there():
    assert len(BACKEND_MODELS) >= 140, "the onnx package's backend test data is missing"
    assert len(GENERATED) >= 10


@pytest.mark.parametrize("src", BACKEND_MODELS + GENERATED, ids=_id)
def test_round_trip(src, tmp_path):
    doc = omf.open(src)
    assert doc.source == "onnx"
    dst = tmp_path / "m.onemodel"
    writer.write(doc.model, dst)
    writer.write(doc.model, tmp_path / "again.onemodel")
    assert filecmp.cmp(dst, tmp_path / "again.onemodel", shallow=False), "the writer is not deterministic"
    back = omf.open(dst)  # strict: raises on any problem
    assert back.source == "onemodel" and back.problems == []

    source = onnx.load(src, load_external_data=False)
    base = os.path.dirname(src)
    src_tensors = list(_source_tensors(source))
    got = list(all_tensors(back.model))
    assert len(got) == len(src_tensors)
    for s, t in zip(src_tensors, got):
        n = _tensor(s, base)
        assert (t.name, t.dtype, list(t.dims)) == (n["name"], n["data_type"], n["dims"])
        if t.dtype == 8:
            assert list(t.strings) == n["strings"], t.where
        else:
            assert t.raw().tobytes() == n["data"], t.where

    onnx_export.export_onnx(back.model, tmp_path / "back.onnx")  # the streamed serializer
    exported = onnx.load(str(tmp_path / "back.onnx"))
    assert exported == onnx_export.model_to_proto(back.model)
    d = first_difference(normalize(source, base), normalize(exported, base))
    assert d is None, d
    back.close()
    doc.close()


def test_generate_is_byte_identical(tmp_path):
    """``python testdata/generate.py`` must reproduce the committed files exactly."""
    spec = importlib.util.spec_from_file_location("generate", os.path.join(HERE, "..", "testdata", "generate.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    names = gen.generate(str(tmp_path))
    committed = sorted(os.listdir(VALID))
    assert sorted(names) == committed
    for name in names:
        assert filecmp.cmp(tmp_path / name, os.path.join(VALID, name), shallow=False), name


def test_testdata_is_small():
    total = sum(os.path.getsize(os.path.join(VALID, n)) for n in os.listdir(VALID))
    assert total < 5_000_000
    showcase = os.path.getsize(os.path.join(VALID, "showcase.onemodel"))
    assert (1 << 20) <= showcase <= 2_000_000, "showcase should be memory-mapped (>= 1 MiB) and small"
