"""ONNX import (every construct, typed fields, external data and its containment) and export."""

from __future__ import annotations

import os
import struct

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from onemodel_viewer import format as omf
from onemodel_viewer.format import dtypes as omdt
from onemodel_viewer.format.onnx import exporter as onnx_export, importer as onnx_import, wire as onnx_wire
from onemodel_viewer.format.onemodel import writer
from onemodel_viewer.format.dtypes import AttrType
from onemodel_viewer.format.errors import FormatError, Kind
from onemodel_viewer.format.schema import all_tensors
from onemodel_viewer.format.storage import BytesStorage, FileStorage

NAN_BITS = [0x7FC00001, 0x7F800001, 0xFFC12345, 0x80000000, 0x7F800000, 0xFF800000, 0x00000001]


def _model(nodes, inits=(), inputs=(), outputs=(), opsets=(("", 21),), **kw) -> onnx.ModelProto:
    g = helper.make_graph(list(nodes), "g", list(inputs), list(outputs), initializer=list(inits), **kw)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    m.ir_version = 10
    return m


def _save(tmp_path, m, name="m.onnx"):
    p = tmp_path / name
    p.write_bytes(m.SerializeToString())
    return p


def _float_attr(name, bits):
    a = onnx.AttributeProto(name=name, type=onnx.AttributeProto.FLOAT)
    a.MergeFromString(b"\x15" + struct.pack("<I", bits))
    return a


def test_float_attribute_bits_survive_import_and_export(tmp_path):
    node = helper.make_node("Custom", ["x"], ["y"], domain="t")
    for i, b in enumerate(NAN_BITS):
        node.attribute.append(_float_attr(f"f{i}", b))
    fl = onnx.AttributeProto(name="fl", type=onnx.AttributeProto.FLOATS)
    payload = struct.pack(f"<{len(NAN_BITS)}I", *NAN_BITS)
    fl.MergeFromString(b"\x3a" + bytes([len(payload)]) + payload)
    node.attribute.append(fl)
    m = _model([node], inputs=[helper.make_tensor_value_info("x", 1, [1])], outputs=[helper.make_tensor_value_info("y", 1, [1])],
               opsets=(("", 21), ("t", 1)))
    doc = onnx_import.import_onnx(_save(tmp_path, m))
    attrs = doc.model.graph.nodes[0].attributes
    assert [a.value for a in attrs[:-1]] == NAN_BITS
    assert attrs[-1].value == tuple(NAN_BITS) and attrs[-1].type == AttrType.FLOATS
    back = onnx_export.model_to_proto(doc.model)
    assert back.graph.node[0].attribute[0].SerializeToString() == m.graph.node[0].attribute[0].SerializeToString()
    again = onnx_import.import_proto(back)[0]
    assert [a.value for a in again.graph.nodes[0].attributes] == [a.value for a in attrs]


@pytest.mark.parametrize("code", sorted(c for c in omdt.DTYPES if c != 8))
def test_typed_fields_become_the_raw_data_layout(code):
    info = omdt.DTYPES[code]
    n = 5 if info.bits < 8 else 4
    if code == 9:
        vals = [True, False, True, True][:n]
    elif code in (14, 15):
        vals = np.array([1 + 2j, -3.5j, 0, 7], dtype=info.numpy)
    elif code in (21, 25):
        vals = [1, 0, 1, 2, 3][:n]
    elif code == 24:
        vals = [1.0, 2.0, 0.5, 4.0]
    else:
        vals = [1, -1, 0, 2, -2][:n] if code not in (2, 4, 12, 13) else [1, 2, 0, 3]
    typed = helper.make_tensor("t", code, [len(vals)], vals, raw=False)
    assert not typed.HasField("raw_data")
    model, problems, _f, _e = onnx_import.import_proto(_model([], [typed], outputs=[helper.make_tensor_value_info("t", code, [len(vals)])]))
    assert problems == []
    t = model.graph.initializers[0]
    expected = omdt.encode(numpy_helper.to_array(typed).reshape(-1), info)
    assert t.raw().tobytes() == expected and t.length == len(expected)


def test_float_data_keeps_nan_payloads():
    t = onnx.TensorProto(name="f", data_type=1, dims=[len(NAN_BITS)])
    t.MergeFromString(b"\x22" + bytes([4 * len(NAN_BITS)]) + struct.pack(f"<{len(NAN_BITS)}I", *NAN_BITS))
    model = onnx_import.import_proto(_model([], [t], outputs=[helper.make_tensor_value_info("f", 1, [7])]))[0]
    assert model.graph.initializers[0].raw().view("<u4").tolist() == NAN_BITS


def test_raw_data_is_kept_zero_copy():
    arr = np.arange(12, dtype=np.float32)
    model = onnx_import.import_proto(_model([], [numpy_helper.from_array(arr, "w")], outputs=[helper.make_tensor_value_info("w", 1, [12])]))[0]
    t = model.graph.initializers[0]
    assert isinstance(t.storage, BytesStorage)
    v = t.raw()
    assert not v.flags.writeable and not v.flags.owndata
    np.testing.assert_array_equal(t.values(), arr)


def test_every_type_kind_and_dims(tmp_path):
    doc = omf.open(os.path.join(os.path.dirname(__file__), "..", "testdata", "valid", "types.onnx"))
    ins = {v.name: v.type for v in doc.model.graph.inputs}
    assert str(ins["seq"]) == "sequence<float[?,3]>"
    assert ins["opt"].kind == "optional" and ins["opt"].inner.shape == (2,)
    assert ins["map"].kind == "map" and ins["map"].key == 8
    assert ins["sparse_in"].kind == "sparse_tensor"
    assert (ins["opaque_in"].domain, ins["opaque_in"].name) == ("test.types", "Handle")
    assert ins["nested"].inner.inner.inner.inner.shape == ("batch", 4)
    assert ins["unknown_rank"].shape is None and ins["scalar"].shape == ()
    assert ins["neg_dim"].shape == (2, None)
    assert [(f.code, f.where) for f in doc.findings] == [
        ("negative-dim", "onnx.graph.inputs[8].type.shape[1]"), ("negative-dim", "onnx.graph.outputs[8].type.shape[1]")]
    assert doc.model.graph.value_info[0].type is None


def test_every_attribute_type():
    doc = omf.open(os.path.join(os.path.dirname(__file__), "..", "testdata", "valid", "attributes.onnx"))
    types = {a.type for a in doc.model.graph.nodes[0].attributes}
    assert types == set(range(1, 15))
    a = {x.name: x for x in doc.model.graph.nodes[0].attributes}
    assert a["s"].value == b"bytes \xff\x00" and a["i"].value == -(1 << 62)
    assert a["tensors"].value[1].dtype == 22 and a["tensors"].value[1].values().tolist() == [-8, 0, 7]
    assert a["sparse_tensor"].value.dims == (4,)
    assert a["g"].value.nodes[0].where == "onnx.graph.nodes[0].attributes[0].value.nodes[0]"


def test_functions_refs_and_defaults():
    doc = omf.open(os.path.join(os.path.dirname(__file__), "..", "testdata", "valid", "functions.onnx"))
    f = doc.model.functions[0]
    assert f.name == "ScaledAdd" and f.domain == "local.fn" and f.attribute_names == ("unused",)
    assert [(a.name, a.type) for a in f.attribute_defaults] == [("alpha", 1), ("bias", 4)]
    ref = f.nodes[0].attributes[0]
    assert ref.ref == "alpha" and ref.value is None and ref.type == AttrType.FLOAT
    assert f.attribute_defaults[1].value.values().tolist() == [1.0, 2.0]


def test_unparseable_protobuf_is_malformed(tmp_path):
    p = tmp_path / "bad.onnx"
    p.write_bytes(b"\x0a\xff\xff\xff\xff\x0f garbage")
    with pytest.raises(FormatError) as e:
        onnx_import.import_onnx(p)
    assert (e.value.kind, e.value.where) == (Kind.MALFORMED, "onnx")


def test_missing_file_is_io(tmp_path):
    with pytest.raises(FormatError) as e:
        onnx_import.import_onnx(tmp_path / "nope.onnx")
    assert e.value.kind is Kind.IO


def test_raw_data_length_mismatch_is_invalid_model(tmp_path):
    t = onnx.TensorProto(name="w", data_type=1, dims=[3], raw_data=b"\x00" * 8)
    m = _model([], [t], outputs=[helper.make_tensor_value_info("w", 1, [3])])
    with pytest.raises(FormatError) as e:
        onnx_import.import_onnx(_save(tmp_path, m))
    assert (e.value.kind, e.value.where) == (Kind.INVALID_MODEL, "onnx.graph.initializers[0].raw_data")
    doc = onnx_import.import_onnx(_save(tmp_path, m), mode="diagnose")
    assert [(p.kind, p.where) for p in doc.problems] == [(Kind.INVALID_MODEL, "onnx.graph.initializers[0].raw_data")]
    assert doc.model.graph.initializers[0].storage is None


def test_unknown_dtype_is_unsupported(tmp_path):
    t = onnx.TensorProto(name="w", data_type=77, dims=[1], raw_data=b"\x00")
    with pytest.raises(FormatError) as e:
        onnx_import.import_onnx(_save(tmp_path, _model([], [t])))
    assert (e.value.kind, e.value.where) == (Kind.UNSUPPORTED, "onnx.graph.initializers[0].dtype")


def test_undefined_name_follows_the_reading_rules(tmp_path):
    m = _model([helper.make_node("Relu", ["nope"], ["y"], name="r")], outputs=[helper.make_tensor_value_info("y", 1, [1])])
    with pytest.raises(FormatError) as e:
        onnx_import.import_onnx(_save(tmp_path, m))
    assert (e.value.kind, e.value.where) == (Kind.INVALID_MODEL, "onnx.graph.nodes[0].inputs[0]")


def test_onnx_graph_output_named_empty_is_invalid_model(tmp_path):
    """An ONNX graph output named "" was imported (and converted) silently: rule 2 holds for ONNX files too."""
    m = _model([helper.make_node("Dropout", ["x"], ["y", ""])], inputs=[helper.make_tensor_value_info("x", 1, [1])],
               outputs=[helper.make_tensor_value_info("y", 1, [1]), helper.make_tensor_value_info("", 1, [1])])
    p = _save(tmp_path, m)
    with pytest.raises(FormatError) as e:
        onnx_import.import_onnx(p)
    assert (e.value.kind, e.value.where) == (Kind.INVALID_MODEL, "onnx.graph.outputs[1].name")
    doc = onnx_import.import_onnx(p, mode="diagnose")
    assert [(x.kind, x.where) for x in doc.problems] == [(Kind.INVALID_MODEL, "onnx.graph.outputs[1].name")]


def test_onnx_subgraph_output_named_empty_is_invalid_model(tmp_path):
    """The same in an If branch of an ONNX file."""
    branch = helper.make_graph([helper.make_node("Identity", ["x"], ["b"])], "then", [],
                               [helper.make_tensor_value_info("", 1, [1])])
    node = helper.make_node("If", ["c"], ["r"], then_branch=branch)
    m = _model([node], inputs=[helper.make_tensor_value_info("c", TP.BOOL, []), helper.make_tensor_value_info("x", 1, [1])],
               outputs=[helper.make_tensor_value_info("r", 1, [1])])
    with pytest.raises(FormatError) as e:
        onnx_import.import_onnx(_save(tmp_path, m))
    assert (e.value.kind, e.value.where) == (Kind.INVALID_MODEL, "onnx.graph.nodes[0].attributes[0].value.outputs[0].name")


# ---------------------------------------------------------------------------------------------
# external data


def _ext_model(location: str, offset=0, length=64, dims=(16,)):
    t = onnx.TensorProto(name="w", data_type=1, dims=list(dims))
    t.data_location = TP.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return _model([], [t], outputs=[helper.make_tensor_value_info("w", 1, list(dims))])


def test_external_data_is_a_zero_copy_file_view(tmp_path):
    arr = np.arange(16, dtype=np.float32)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "w.bin").write_bytes(b"\x01" * 128 + arr.tobytes())
    doc = onnx_import.import_onnx(_save(tmp_path, _ext_model("sub/w.bin", 128)))
    t = doc.model.graph.initializers[0]
    assert isinstance(t.storage, FileStorage) and t.file_offset == 128
    np.testing.assert_array_equal(t.values(), arr)
    assert doc.external_files == (os.path.realpath(tmp_path / "sub" / "w.bin"),)
    # converting copies the external bytes into the data region
    out = tmp_path / "m.onemodel"
    writer.write(doc.model, out)
    back = omf.open(out)
    np.testing.assert_array_equal(back.model.graph.initializers[0].values(), arr)
    back.close()


@pytest.mark.parametrize("location", ["../outside.bin", "sub/../../outside.bin", "/etc/passwd", "..\\outside.bin", ""])
def test_external_location_leaving_the_folder_is_refused(tmp_path, location):
    d = tmp_path / "model"
    d.mkdir()
    (tmp_path / "outside.bin").write_bytes(bytes(64))
    with pytest.raises(FormatError) as e:
        onnx_import.import_onnx(_save(d, _ext_model(location)))
    assert (e.value.kind, e.value.where) == (Kind.MALFORMED, "onnx.graph.initializers[0].external_data.location")


def test_external_symlink_escaping_the_folder_is_refused(tmp_path):
    d = tmp_path / "model"
    d.mkdir()
    (tmp_path / "secret.bin").write_bytes(bytes(64))
    os.symlink(tmp_path / "secret.bin", d / "w.bin")
    with pytest.raises(FormatError) as e:
        onnx_import.import_onnx(_save(d, _ext_model("w.bin")))
    assert (e.value.kind, e.value.where) == (Kind.MALFORMED, "onnx.graph.initializers[0].external_data.location")
    # a symlink that stays inside the folder is fine
    (d / "real.bin").write_bytes(bytes(64))
    os.symlink(d / "real.bin", d / "inside.bin")
    doc = onnx_import.import_onnx(_save(d, _ext_model("inside.bin")))
    assert doc.model.graph.initializers[0].length == 64


def test_external_missing_file_is_io(tmp_path):
    with pytest.raises(FormatError) as e:
        onnx_import.import_onnx(_save(tmp_path, _ext_model("missing.bin")))
    assert (e.value.kind, e.value.where) == (Kind.IO, "onnx.graph.initializers[0].external_data.location")


def test_external_not_a_regular_file_is_io(tmp_path):
    (tmp_path / "dir.bin").mkdir()
    with pytest.raises(FormatError) as e:
        onnx_import.import_onnx(_save(tmp_path, _ext_model("dir.bin")))
    assert e.value.kind is Kind.IO


def test_external_range_past_the_end_is_malformed(tmp_path):
    (tmp_path / "w.bin").write_bytes(bytes(100))
    with pytest.raises(FormatError) as e:
        onnx_import.import_onnx(_save(tmp_path, _ext_model("w.bin", offset=64)))
    assert (e.value.kind, e.value.where) == (Kind.MALFORMED, "onnx.graph.initializers[0].external_data.offset")


def test_external_length_not_matching_dims_is_invalid_model(tmp_path):
    (tmp_path / "w.bin").write_bytes(bytes(100))
    with pytest.raises(FormatError) as e:
        onnx_import.import_onnx(_save(tmp_path, _ext_model("w.bin", length=60)))
    assert (e.value.kind, e.value.where) == (Kind.INVALID_MODEL, "onnx.graph.initializers[0].external_data.length")


def test_external_problems_collected_in_diagnose_mode(tmp_path):
    doc = onnx_import.import_onnx(_save(tmp_path, _ext_model("../x.bin")), mode="diagnose")
    assert [(p.kind, p.where) for p in doc.problems] == [(Kind.MALFORMED, "onnx.graph.initializers[0].external_data.location")]
    assert doc.model.graph.initializers[0].storage is None


# ---------------------------------------------------------------------------------------------
# export


def test_export_with_external_data_streams_weights(tmp_path):
    src = os.path.join(os.path.dirname(__file__), "..", "testdata", "valid", "showcase.onemodel")
    doc = omf.open(src)
    dst = tmp_path / "out.onnx"
    onnx_export.export_onnx(doc.model, dst, external=True)
    assert (tmp_path / "out.onnx.data").exists()
    back = onnx_import.import_onnx(dst)
    assert back.external_files
    a = {t.name: t for t in all_tensors(doc.model)}
    b = {t.name: t for t in all_tensors(back.model)}
    assert a.keys() == b.keys()
    for name, t in a.items():
        assert t.raw().tobytes() == b[name].raw().tobytes(), name
        if t.length >= onnx_export.EXTERNAL_THRESHOLD:
            assert isinstance(b[name].storage, FileStorage)
    m = onnx.load(str(dst), load_external_data=True)  # onnx itself can read what we wrote
    w = [t for t in m.graph.initializer if t.name == "lm_head.weight"][0]
    assert numpy_helper.to_array(w).tobytes() == a["lm_head.weight"].raw().tobytes()
    doc.close()


def test_export_refuses_a_source_as_destination(tmp_path):
    arr = np.arange(300, dtype=np.float32)
    (tmp_path / "w.bin").write_bytes(arr.tobytes())
    m = _ext_model("w.bin", length=1200, dims=(300,))
    doc = onnx_import.import_onnx(_save(tmp_path, m))
    with pytest.raises(FormatError) as e:
        onnx_export.export_onnx(doc.model, tmp_path / "w.bin")
    assert e.value.kind is Kind.IO
    assert (tmp_path / "w.bin").read_bytes() == arr.tobytes()
    # the .data file beside the destination must not be a source either
    os.link(tmp_path / "w.bin", tmp_path / "x.onnx.data")
    with pytest.raises(FormatError):
        onnx_export.export_onnx(doc.model, tmp_path / "x.onnx", external=True)
    assert (tmp_path / "w.bin").read_bytes() == arr.tobytes()
    assert not (tmp_path / "x.onnx").exists()


def test_dropped_fields_are_findings(tmp_path):
    m = _model([helper.make_node("Relu", ["x"], ["y"], name="r")], inputs=[helper.make_tensor_value_info("x", 1, [1])],
               outputs=[helper.make_tensor_value_info("y", 1, [1])])
    p = m.graph.node[0].metadata_props.add()
    p.key, p.value = "k", "v"
    m.graph.input[0].type.denotation = "IMAGE"
    doc = onnx_import.import_onnx(_save(tmp_path, m))
    assert sorted((f.code, f.where) for f in doc.findings) == [
        ("dropped-field", "onnx.graph.inputs[0].type.denotation"), ("dropped-field", "onnx.graph.nodes[0].metadata_props")]


def test_invalid_utf8_text_is_malformed(tmp_path):
    """upb hands out bytes for a string field that is not UTF-8: a bytes name once reached json.dumps."""
    m = _model([helper.make_node("Relu", ["x"], ["y"], name="NAMEX")], inputs=[helper.make_tensor_value_info("x", 1, [1])],
               outputs=[helper.make_tensor_value_info("y", 1, [1])])
    p = tmp_path / "m.onnx"
    p.write_bytes(m.SerializeToString().replace(b"NAMEX", b"NA\xffEX"))
    with pytest.raises(FormatError) as e:
        onnx_import.import_onnx(p)
    assert (e.value.kind, e.value.where) == (Kind.MALFORMED, "onnx.graph.nodes[0].name")
    doc = onnx_import.import_onnx(p, mode="diagnose")
    assert doc.model.graph.nodes[0].name == "NA\ufffdEX"
    assert [(q.kind, q.where) for q in doc.problems] == [(Kind.MALFORMED, "onnx.graph.nodes[0].name")]


@pytest.mark.parametrize("field, where", [
    ("input", "onnx.graph.nodes[0].inputs[0]"), ("output", "onnx.graph.nodes[0].outputs[0]"),
    ("op", "onnx.graph.nodes[0].op"), ("doc", "onnx.graph.nodes[0].doc"),
    ("attr", "onnx.graph.nodes[0].attributes[0].name"), ("attrdoc", "onnx.graph.nodes[0].attributes[0].doc"),
])
def test_invalid_utf8_in_any_node_text_is_malformed_where_it_is(tmp_path, field, where):
    """Node and attribute texts are checked in one go when all are valid; a bad one must still be found and placed."""
    node = helper.make_node("Relu", ["XIN"], ["YOUT"], name="n", doc_string="NDOC", alpha=1.0)
    node.attribute[0].name, node.attribute[0].doc_string = "ATTRX", "ADOCX"
    m = _model([node], inputs=[helper.make_tensor_value_info("XIN", 1, [1])], outputs=[helper.make_tensor_value_info("YOUT", 1, [1])])
    token = {"input": b"XIN", "output": b"YOUT", "op": b"Relu", "doc": b"NDOC", "attr": b"ATTRX", "attrdoc": b"ADOCX"}[field]
    data = m.SerializeToString()
    p = tmp_path / "m.onnx"
    p.write_bytes(data.replace(token, token[:1] + b"\xff" + token[2:], 1))  # the graph is written nodes first
    doc = onnx_import.import_onnx(p, mode="diagnose")
    assert [(q.kind, q.where) for q in doc.problems][:1] == [(Kind.MALFORMED, where)]
    with pytest.raises(FormatError) as e:
        onnx_import.import_onnx(p)
    assert (e.value.kind, e.value.where) == (Kind.MALFORMED, where)


def test_import_does_not_load_the_onnx_package(tmp_path):
    """``import onnx`` cost ~0.07 CPU-s of each ONNX open (~0.19 s with numpy): only its protobuf module is needed.

    A later ``import onnx`` must still work and give the same class (the file is added to the pool twice).
    """
    import subprocess
    import sys

    m = _model([helper.make_node("Relu", ["x"], ["y"], name="r")], inputs=[helper.make_tensor_value_info("x", 1, [2])],
               outputs=[helper.make_tensor_value_info("y", 1, [2])], inits=[numpy_helper.from_array(np.ones(2, np.float32), "w")])
    path = _save(tmp_path, m)
    code = (
        "import sys\n"
        "from onemodel_viewer.format.onnx import importer as onnx_import\n"
        f"d = onnx_import.import_onnx({str(path)!r})\n"
        "assert 'onnx' not in sys.modules, 'onnx imported'\n"
        "import onnx\n"
        f"assert onnx.load({str(path)!r}).graph.node[0].op_type == 'Relu'\n"
        f"again = onnx_import.import_onnx({str(path)!r}).model\n"
        "assert [(n.op, n.inputs, n.outputs) for n in again.graph.nodes] == [('Relu', ('x',), ('y',))]\n"
        "assert again.graph.initializers[0].dims == (2,)\n"
        "print(d.model.graph.nodes[0].op, len(d.model.graph.initializers))\n"
    )
    root = os.path.join(os.path.dirname(__file__), "..")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": root})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["Relu", "1"]


def test_container_type_without_element_type_becomes_unknown(tmp_path):
    """A sequence type with no elem_type once reached the manifest without its required ``inner``."""
    vi = onnx.ValueInfoProto(name="s")
    vi.type.sequence_type.SetInParent()
    m = _model([helper.make_node("Identity", ["s"], ["y"], name="i")], inputs=[vi], outputs=[helper.make_tensor_value_info("y", 1, [1])])
    doc = onnx_import.import_onnx(_save(tmp_path, m))
    assert doc.model.graph.inputs[0].type is None
    assert [(f.code, f.where) for f in doc.findings] == [("incomplete-type", "onnx.graph.inputs[0].type")]
    writer.write(doc.model, tmp_path / "m.onemodel")
    assert omf.open(tmp_path / "m.onemodel").model.graph.inputs[0].type is None


def test_mutated_onnx_files_raise_only_format_errors(tmp_path):
    """Byte-mutated models: import raises FormatError or gives a model that writes and reads back strictly."""
    import random

    valid = os.path.join(os.path.dirname(__file__), "..", "testdata", "valid")
    sources = [open(os.path.join(valid, n), "rb").read() for n in
               ("attributes.onnx", "subgraphs.onnx", "functions.onnx", "types.onnx", "sparse.onnx", "typed.onnx")]
    rng = random.Random(1234)
    p, q = tmp_path / "m.onnx", tmp_path / "m.onemodel"
    written = 0
    for _ in range(300):
        b = bytearray(rng.choice(sources))
        for _ in range(rng.randint(1, 3)):
            k = rng.randrange(len(b))
            b[k] = rng.randrange(256)
        p.write_bytes(bytes(b))
        onnx_import.import_onnx(p, mode="diagnose") if rng.random() < 0.3 else None
        try:
            doc = onnx_import.import_onnx(p)
            writer.write(doc.model, q)
        except FormatError:
            continue
        omf.open(q).close()
        written += 1
    assert written > 20


def test_diagnose_never_raises_format_errors(tmp_path):
    p = tmp_path / "bad.onnx"
    p.write_bytes(b"\x0a\xff\xff\xff\xff\x0f garbage")
    doc = onnx_import.import_onnx(p, mode="diagnose")
    assert doc.model is None and [(q.kind, q.where) for q in doc.problems] == [(Kind.MALFORMED, "onnx")]
    doc = onnx_import.import_onnx(tmp_path / "missing.onnx", mode="diagnose")
    assert doc.model is None and doc.problems[0].kind is Kind.IO


def test_inline_raw_data_is_a_view_of_the_onnx_file(tmp_path):
    """Graph initializers' raw_data is not parsed into memory: tensors are views of the (mapped) file."""
    src = os.path.join(os.path.dirname(__file__), "..", "testdata", "valid", "showcase.onnx")
    blob = open(src, "rb").read()
    doc = onnx_import.import_onnx(src)
    reference = onnx.load(src)
    for t, tp in zip(doc.model.graph.initializers, reference.graph.initializer):
        assert isinstance(t.storage, FileStorage) and t.storage.mapped
        assert blob[t.file_offset : t.file_offset + t.length] == tp.raw_data == t.raw().tobytes()
    # the file is now a source: converting onto it is refused
    with pytest.raises(FormatError):
        writer.write(doc.model, src)
    assert open(src, "rb").read() == blob


def test_unusual_wire_layout_falls_back_to_plain_parsing(tmp_path):
    """A tensor with raw_data twice (protobuf: the last one wins) is left to protobuf itself."""
    first, last = np.arange(4, dtype=np.float32).tobytes(), np.arange(4, 8, dtype=np.float32).tobytes()
    tensor = onnx.TensorProto(name="w", data_type=1, dims=[4]).SerializeToString()
    tensor += b"\x4a\x10" + first + b"\x4a\x10" + last  # TensorProto field 9 (raw_data) twice
    out = helper.make_tensor_value_info("w", 1, [4]).SerializeToString()
    graph = b"\x2a" + bytes([len(tensor)]) + tensor + b"\x62" + bytes([len(out)]) + out  # initializer, output
    blob = b"\x08\x0a" + b"\x3a" + bytes([len(graph)]) + graph + b"\x42\x02\x10\x15"  # ir 10, graph, opset 21
    assert onnx.ModelProto.FromString(blob).graph.initializer[0].raw_data == last
    assert onnx_wire.strip_raw_data(blob) is None
    p = tmp_path / "dup.onnx"
    p.write_bytes(blob)
    doc = onnx_import.import_onnx(p)
    assert doc.model.graph.initializers[0].values().tolist() == [4.0, 5.0, 6.0, 7.0]


def test_export_external_without_big_tensors_writes_no_data_file(tmp_path):
    doc = omf.open(os.path.join(os.path.dirname(__file__), "..", "testdata", "valid", "sparse.onemodel"))
    onnx_export.export_onnx(doc.model, tmp_path / "s.onnx", external=True)
    assert os.listdir(tmp_path) == ["s.onnx"]
    onnx.checker.check_model(onnx.load(str(tmp_path / "s.onnx")))


def test_external_hard_link_is_refused(tmp_path):
    """A hard link inside the folder can point at any file the user can read: refused like a symlink escape."""
    d = tmp_path / "model"
    d.mkdir()
    (tmp_path / "secret.bin").write_bytes(bytes(64))
    os.link(tmp_path / "secret.bin", d / "w.bin")
    with pytest.raises(FormatError) as e:
        onnx_import.import_onnx(_save(d, _ext_model("w.bin")))
    assert (e.value.kind, e.value.where) == (Kind.MALFORMED, "onnx.graph.initializers[0].external_data.location")


# ---------------------------------------------------------------------------------------------
# export: protobuf nesting depth (issue 11.7)
#
# upb (onnx.load) and C++ protobuf (onnx.checker, ONNX Runtime) decode at most 100 submessages inside a
# ModelProto (ModelProto = depth 0). Graph nesting: GraphProto > NodeProto > AttributeProto > GraphProto,
# 3 per level, so the main graph is at 1 and the graph of level L at 3L-2; type nesting: TypeProto >
# Sequence > TypeProto, 2 per level, a graph input's type at 3, its k-th inner type at 3+2k, then
# TypeProto.Tensor +1, TensorShapeProto +2, Dimension +3.


def _proto_depth_oracle(msg, d=0) -> int:
    """The deepest submessage of a built (never parsed) protobuf message, by its descriptor."""
    best = d
    for fd, v in msg.ListFields():
        if fd.message_type is not None:
            for x in (v if fd.is_repeated else (v,)):
                best = max(best, _proto_depth_oracle(x, d + 1))
    return best


def _decodes(mp) -> bool:
    try:
        onnx.load_from_string(mp.SerializeToString())
    except Exception:  # google.protobuf.message.DecodeError: Exceeded upb_DecodeOptions_MaxDepth
        return False
    return True


def _open_manifest(tmp_path, m, data=b"", name="deep.onemodel"):
    from test_reader_util import pack, write

    return omf.open(write(tmp_path, pack(m, data), name))


def _graph_chain(levels: int, leaf_nodes: list) -> dict:
    """A main graph (level 1) and ``levels - 1`` graphs nested in If attributes; the innermost holds ``leaf_nodes``."""
    from test_reader_util import graph, model, node

    inner = graph(nodes=leaf_nodes)
    for level in range(levels - 1, 0, -1):
        inner = graph(nodes=[node("If", [], [f"o{level}"], attributes=[{"name": "then_branch", "type": 5, "value": inner}])])
    return model(inner)


def _graph_path(levels: int) -> str:
    return "manifest.graph" + ".nodes[0].attributes[0].value" * (levels - 1)


def _type_chain(sequences: int, shape) -> dict:
    from test_reader_util import graph, model, node

    t: dict = {"kind": "tensor", "elem": 1}
    if shape is not None:
        t["shape"] = shape
    for _ in range(sequences):
        t = {"kind": "sequence", "inner": t}
    return model(graph(inputs=[{"name": "x", "type": t}], nodes=[node("Identity", ["x"], ["y"])], outputs=[{"name": "y"}]))


def _assert_refused(tmp_path, doc, depth: int, where: str, external: bool = False) -> None:
    ext = {id(t): ("m.onnx.data", 0, t.length) for t in all_tensors(doc.model)} if external else {}
    assert onnx_export.proto_depth(doc.model, ext) == (depth, where)
    assert not _decodes(onnx_export.model_to_proto(doc.model, external=ext))  # the refusal is right, not cautious
    with pytest.raises(FormatError) as e:
        onnx_export.export_onnx(doc.model, tmp_path / "out" / "m.onnx", external=external)
    assert (e.value.kind, e.value.where, e.value.offset) == (Kind.UNSUPPORTED, where, None)
    assert f"{depth} deep" in e.value.message and "100" in e.value.message
    assert os.listdir(tmp_path / "out") == []  # nothing written, no temporary file left


def _assert_exports(tmp_path, doc, depth: int, **kw) -> None:
    dst = tmp_path / "out" / "m.onnx"
    onnx_export.export_onnx(doc.model, dst, **kw)
    back = onnx.load(str(dst))
    assert _proto_depth_oracle(back) == depth
    again = onnx_import.import_onnx(dst)
    assert onnx_export.proto_depth(again.model)[0] == depth
    again.close()


@pytest.fixture
def out(tmp_path):
    (tmp_path / "out").mkdir()
    return tmp_path / "out"


def test_export_graph_nesting_boundary(tmp_path, out):
    """--export wrote ONNX nested past protobuf's decoding depth (exit 0, unreadable by onnx.load and by
    this project). 34 graph levels with an empty innermost graph are 100 messages deep: exported and
    loaded; a node in that graph is 101: refused (Unsupported at that node) before writing."""
    from test_reader_util import node

    doc = _open_manifest(tmp_path, _graph_chain(34, []))
    assert onnx_export.proto_depth(doc.model) == (100, _graph_path(34))
    _assert_exports(tmp_path, doc, 100)
    doc.close()
    (out / "m.onnx").unlink()
    doc = _open_manifest(tmp_path, _graph_chain(34, [node("Relu", [], ["leaf"])]))
    _assert_refused(tmp_path, doc, 101, _graph_path(34) + ".nodes[0]")
    doc.close()


@pytest.mark.parametrize("sequences,shape,depth,tail", [
    (48, None, 100, ""),  # TypeProto.Tensor of the innermost type (3 + 2*48) at 100
    (47, [1], 100, ".shape[0]"),  # its Dimension at 3 + 2*47 + 3
    (48, [], 101, ".shape"),  # the (empty) TensorShapeProto one deeper: an empty message counts
    (48, [1], 102, ".shape[0]"),
    (49, None, 102, ""),
])
def test_export_type_nesting_boundary(tmp_path, out, sequences, shape, depth, tail):
    """The same for types (TypeProto > Sequence > TypeProto ...): depth 100 exports and loads with onnx.load,
    101 and more is refused at the deepest type's path."""
    doc = _open_manifest(tmp_path, _type_chain(sequences, shape))
    where = "manifest.graph.inputs[0].type" + ".inner" * sequences + tail
    if depth <= 100:
        assert onnx_export.proto_depth(doc.model) == (depth, where)
        _assert_exports(tmp_path, doc, depth)
    else:
        _assert_refused(tmp_path, doc, depth, where)
    doc.close()


def test_export_external_data_entries_count(tmp_path, out):
    """A tensor at depth 100 exports inline; as external data its external_data entries are at 101: refused
    (nothing written, neither the .onnx nor its .data)."""
    from test_reader_util import node, tensor

    big = {"name": "t", "type": 4, "value": tensor("c", 1, [256], 0, 1024)}
    doc = _open_manifest(tmp_path, _graph_chain(33, [node("Constant", [], ["leaf"], attributes=[big])]), bytes(1024))
    where = _graph_path(33) + ".nodes[0].attributes[0].value"
    assert onnx_export.proto_depth(doc.model) == (100, where)
    _assert_exports(tmp_path, doc, 100)
    (out / "m.onnx").unlink()
    _assert_refused(tmp_path, doc, 101, where + ".data", external=True)
    doc.close()


@pytest.mark.parametrize("name", ["valid-nesting-64-graphs.onemodel", "valid-nesting-64-types.onemodel"])
def test_export_of_the_nesting_64_files_is_refused(tmp_path, out, name):
    """The hostile corpus' deepest valid files: 64 graph levels are 191 messages deep, 64 type levels 130."""
    doc = omf.open(os.path.join(os.path.dirname(__file__), "..", "testdata", "hostile", name))
    if "graphs" in name:
        depth, where = 191, "manifest.graph.nodes[5].attributes[0].value" + ".nodes[0].attributes[0].value" * 62 + ".outputs[0]"
    else:
        depth, where = 130, "manifest.graph.inputs[0].type" + ".inner" * 62 + ".shape[0]"
    _assert_refused(tmp_path, doc, depth, where)
    doc.close()


def test_proto_depth_matches_the_exported_messages_of_every_valid_file():
    """proto_depth follows model_to_proto exactly (inline and with every tensor external) on every bundled model."""
    root = os.path.join(os.path.dirname(__file__), "..", "testdata")
    names = [os.path.join(root, "valid", n) for n in sorted(os.listdir(os.path.join(root, "valid"))) if n.endswith((".onemodel", ".onnx"))]
    names += [os.path.join(root, "hostile", n) for n in sorted(os.listdir(os.path.join(root, "hostile"))) if n.startswith("valid-")]
    for path in names:
        doc = omf.open(path)
        ext = {id(t): ("x.data", 0, t.length) for t in all_tensors(doc.model) if t.dtype != 8}
        for e in ({}, ext):
            assert onnx_export.proto_depth(doc.model, e)[0] == _proto_depth_oracle(onnx_export.model_to_proto(doc.model, external=e)), path
        doc.close()


def _random_model(rng):
    """Records of every nesting construct (all attribute kinds, sparse tensors, map/optional/opaque types,
    function defaults), sized to land around protobuf's limit."""
    from onemodel_viewer.format.schema import Attribute, Function, Graph, Model, Node, OperatorSet, SparseTensor, Tensor, Type, ValueInfo

    def tensor_(w):
        return Tensor("t", 1, (0,), where=w)

    def type_(w, n):
        if n <= 0 or rng.random() < 0.15:
            k = rng.choice(["tensor", "sparse_tensor", "opaque"])
            if k == "opaque":
                return Type("opaque", domain="d", name="n", where=w)
            return Type(k, elem=1, shape=rng.choice([None, (), (1, "n", None)]), where=w)
        k = rng.choice(["sequence", "optional", "map"])
        return Type(k, key=7 if k == "map" else 0, inner=type_(w + ".inner", n - 1), where=w)

    def attr_(w, levels, spine=False):
        """``spine``: a GRAPH/GRAPHS attribute whose first graph nests ``levels - 1`` more levels (others: at most 1)."""
        kinds = [AttrType.INT, AttrType.TENSOR, AttrType.TENSORS, AttrType.SPARSE_TENSOR, AttrType.SPARSE_TENSORS,
                 AttrType.TYPE_PROTO, AttrType.TYPE_PROTOS] + [AttrType.GRAPH, AttrType.GRAPHS] * (levels > 0)
        t = rng.choice([AttrType.GRAPH, AttrType.GRAPHS] if spine else kinds)
        v = w + ".value"
        sub = levels - 1 if spine else min(levels - 1, 1)
        value = {
            AttrType.INT: lambda: 1,
            AttrType.TENSOR: lambda: tensor_(v),
            AttrType.TENSORS: lambda: (tensor_(v + "[0]"), tensor_(v + "[1]")),
            AttrType.SPARSE_TENSOR: lambda: SparseTensor(tensor_(v + ".values"), tensor_(v + ".indices"), (4,), v),
            AttrType.SPARSE_TENSORS: lambda: (SparseTensor(tensor_(v + "[0].values"), tensor_(v + "[0].indices"), (4,), v + "[0]"),),
            AttrType.TYPE_PROTO: lambda: type_(v, rng.randrange(0, 12)),
            AttrType.TYPE_PROTOS: lambda: (type_(v + "[0]", rng.randrange(0, 12)),),
            AttrType.GRAPH: lambda: graph_(v, sub),
            AttrType.GRAPHS: lambda: tuple(graph_(f"{v}[{i}]", sub if i == 0 else min(sub, 1)) for i in range(rng.randrange(1, 3))),
        }[t]()
        return Attribute("a", int(t), value, where=w)

    def graph_(w, levels):
        vis = tuple(ValueInfo("v", type_(f"{w}.inputs[{i}].type", rng.randrange(0, 10)) if rng.random() < 0.7 else None,
                              f"{w}.inputs[{i}]") for i in range(rng.randrange(0, 2)))
        inits = (tensor_(w + ".initializers[0]"),) if rng.random() < 0.3 else ()
        sparse = (SparseTensor(tensor_(w + ".sparse_initializers[0].values"), tensor_(w + ".sparse_initializers[0].indices"),
                               (4,), w + ".sparse_initializers[0]"),) if rng.random() < 0.2 else ()
        nodes = []
        spine = rng.randrange(2) if levels > 0 else -1
        for i in range(rng.randrange(0, 3) if levels == 0 else 2):
            nw = f"{w}.nodes[{i}]"
            n_attrs = rng.randrange(1 if i == spine else 0, 3)
            attrs = tuple(attr_(f"{nw}.attributes[{j}]", levels, i == spine and j == 0) for j in range(n_attrs))
            nodes.append(Node("Op", inputs=("v",), outputs=(f"o{i}",), attributes=attrs, where=nw))
        return Graph(inputs=vis, outputs=vis, initializers=inits, sparse_initializers=sparse, nodes=tuple(nodes), where=w)

    levels = rng.randrange(23, 32)
    functions = ()
    if rng.random() < 0.4:
        fw = "manifest.functions[0]"
        functions = (Function("F", attribute_defaults=(attr_(fw + ".attribute_defaults[0]", levels, True),),
                              nodes=(Node("Op", attributes=(attr_(fw + ".nodes[0].attributes[0]", levels, True),), where=fw + ".nodes[0]"),),
                              where=fw),)
    return Model(8, graph_("manifest.graph", levels), opsets=(OperatorSet("", 17),), functions=functions)


@pytest.mark.parametrize("seed", range(30))
def test_proto_depth_is_exact_and_protobuf_decodes_exactly_up_to_100(seed):
    """Random nesting around the limit: proto_depth equals the built ModelProto's depth, and the installed
    protobuf (onnx.load) decodes the serialized model if and only if that depth is at most 100."""
    import random

    rng = random.Random(seed)
    for _ in range(4):
        model = _random_model(rng)
        tensors = [t for t in all_tensors(model)]
        ext = {id(t): ("x.data", 0, 0) for t in tensors if rng.random() < 0.5}
        mp = onnx_export.model_to_proto(model, external=ext)
        depth = onnx_export.proto_depth(model, ext)[0]
        assert depth == _proto_depth_oracle(mp)
        assert _decodes(mp) == (depth <= onnx_export.PROTO_DEPTH_LIMIT), depth


def test_export_of_records_nested_past_the_python_stack_is_unsupported(tmp_path):
    """A model built in memory with 1,200 nested types (the recursive exporter raises RecursionError on it):
    Unsupported before the exporter runs."""
    from onemodel_viewer.format.schema import Graph, Model, Type, ValueInfo

    where, n = "manifest.graph.inputs[0].type", 1200
    t = Type("tensor", elem=1, where=where + ".inner" * n)
    for i in range(n - 1, -1, -1):
        t = Type("optional", inner=t, where=where + ".inner" * i)
    m = Model(8, Graph(inputs=(ValueInfo("x", t, "manifest.graph.inputs[0]"),), where="manifest.graph"))
    with pytest.raises(RecursionError):
        onnx_export.model_to_proto(m)
    assert onnx_export.proto_depth(m) == (3 + 2 * n + 1, where + ".inner" * n)
    with pytest.raises(FormatError) as e:
        onnx_export.export_onnx(m, tmp_path / "m.onnx")
    assert (e.value.kind, e.value.where) == (Kind.UNSUPPORTED, where + ".inner" * n)
    assert os.listdir(tmp_path) == []


def test_import_of_onnx_nested_past_protobuf_depth_is_malformed(tmp_path):
    """The import side needs no change: an ONNX file 101 messages deep is unparseable protobuf (Malformed at
    ``onnx``, as onnx.load refuses it too); 100 deep imports."""
    from test_reader_util import node

    for leaf, ok in (([], True), ([node("Relu", [], ["leaf"])], False)):
        doc = _open_manifest(tmp_path, _graph_chain(34, leaf))
        p = tmp_path / "deep.onnx"
        p.write_bytes(onnx_export.model_to_proto(doc.model).SerializeToString())
        doc.close()
        if ok:
            onnx_import.import_onnx(p).close()
        else:
            with pytest.raises(FormatError) as e:
                onnx_import.import_onnx(p)
            assert (e.value.kind, e.value.where) == (Kind.MALFORMED, "onnx")
