"""Hostile ONNX inputs: external-data containment and unparseable protobuf.

An ONNX model names its external weight files itself; a hostile model must not make the viewer
read files outside the model's folder (absolute paths, ``..``, symlinks), nor crash on garbage.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from onemodel_viewer import format as omf  # noqa: E402
from onemodel_viewer.format import FormatError, Kind  # noqa: E402


def _model_with_external(folder: Path, location: str, length: int = 16, offset: int = 0) -> Path:
    t = TensorProto()
    t.name = "w"
    t.data_type = TensorProto.FLOAT
    t.dims.extend([4])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    p = folder / "model.onnx"
    p.write_bytes(m.SerializeToString())
    return p


def _first_problem(path: Path):
    with pytest.raises(FormatError) as info:
        omf.open(path).close()
    doc = omf.open(path, mode="diagnose")
    assert doc.problems[0] == info.value.problem
    return info.value


@pytest.fixture
def secret(tmp_path):
    s = tmp_path / "secret.bin"
    s.write_bytes(b"S" * 64)
    d = tmp_path / "models"
    d.mkdir()
    return s, d


def test_external_absolute_path_refused(secret):
    s, d = secret
    e = _first_problem(_model_with_external(d, str(s)))
    assert (e.kind, e.where) == (Kind.MALFORMED, "onnx.graph.initializers[0].external_data.location")


@pytest.mark.parametrize("loc", ["../secret.bin", "sub/../../secret.bin", "..\\secret.bin"])
def test_external_dotdot_refused(secret, loc):
    s, d = secret
    e = _first_problem(_model_with_external(d, loc))
    assert (e.kind, e.where) == (Kind.MALFORMED, "onnx.graph.initializers[0].external_data.location")


def test_external_symlink_escape_refused(secret):
    s, d = secret
    os.symlink(s, d / "link.bin")
    e = _first_problem(_model_with_external(d, "link.bin"))
    assert (e.kind, e.where) == (Kind.MALFORMED, "onnx.graph.initializers[0].external_data.location")


def test_external_symlinked_dir_escape_refused(secret, tmp_path):
    s, d = secret
    os.symlink(tmp_path, d / "up")
    e = _first_problem(_model_with_external(d, "up/secret.bin"))
    assert e.kind is Kind.MALFORMED


def test_external_hard_link_refused(secret):
    """A hard link inside the folder to a file outside it: realpath cannot see it; st_nlink > 1 is refused."""
    s, d = secret
    os.link(s, d / "hard.bin")
    e = _first_problem(_model_with_external(d, "hard.bin"))
    assert (e.kind, e.where) == (Kind.MALFORMED, "onnx.graph.initializers[0].external_data.location")


def test_external_missing_is_io(secret):
    s, d = secret
    e = _first_problem(_model_with_external(d, "nope.bin"))
    assert e.kind is Kind.IO


def test_external_range_past_end(secret):
    s, d = secret
    (d / "w.bin").write_bytes(b"\0" * 8)
    e = _first_problem(_model_with_external(d, "w.bin"))
    assert e.kind is Kind.MALFORMED


def test_external_directory_is_io(secret):
    s, d = secret
    (d / "dir.bin").mkdir()
    e = _first_problem(_model_with_external(d, "dir.bin"))
    assert e.kind is Kind.IO


def test_external_inside_folder_reads(secret):
    s, d = secret
    import numpy as np

    (d / "w.bin").write_bytes(np.arange(4, dtype="<f4").tobytes())
    doc = omf.open(_model_with_external(d, "w.bin"))
    assert doc.model.graph.initializers[0].values().tolist() == [0.0, 1.0, 2.0, 3.0]
    doc.close()


@pytest.mark.parametrize(("blob", "where", "offset"), [
    (b"\x0a\xff\xff\xff\xff\x0f", "header.magic", 0),  # not taken for ONNX: read as a OneModel file
    (b"\x08" * 64, "onnx.graph", None),
    (bytes(range(256)) * 4, "onnx", None),
], ids=["bad-length", "varints", "bytes"])
def test_garbage_onnx_is_clean(tmp_path, blob, where, offset):
    """Garbage named .onnx: one Malformed problem at the exact place, the same from --check, no traceback."""
    p = tmp_path / "garbage.onnx"
    p.write_bytes(blob)
    doc = omf.open(p, mode="diagnose")
    assert doc.model is None
    first = doc.problems[0]
    assert (first.kind, first.where, first.offset) == (Kind.MALFORMED, where, offset)
    r = subprocess.run([sys.executable, "-m", "onemodel_viewer", "--check", "--json", str(p)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    reported = json.loads(r.stdout)["problems"][0]
    assert (reported["kind"], reported["where"], reported["offset"]) == ("Malformed", where, offset)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _ld(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


@pytest.mark.parametrize("depth", [50, 5000])
def test_deeply_nested_onnx_types_are_malformed(tmp_path, depth):
    """Hand-serialized TypeProto nesting: protobuf's decode depth limit stops it; reported as Malformed."""
    t = _ld(1, _varint(1 << 3) + _varint(1))  # tensor_type { elem_type: FLOAT }
    for _ in range(depth):
        t = _ld(4, _ld(1, t))  # sequence_type { elem_type: t }
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(helper.make_graph([], "tmp", [], []), opset_imports=[helper.make_opsetid("", 17)])
    m.ClearField("graph")
    p = tmp_path / "deep.onnx"
    p.write_bytes(m.SerializeToString() + _ld(7, g.SerializeToString() + _ld(11, _ld(1, b"x") + _ld(2, t))))
    e = _first_problem(p)
    assert (e.kind, e.where) == (Kind.MALFORMED, "onnx")


def _onnx_with_initializer(tmp_path, t) -> Path:
    g = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [t])
    p = tmp_path / "m.onnx"
    p.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    return p


def _tensor(dtype: int, dims: list[int], **fields) -> TensorProto:
    t = TensorProto()
    t.name, t.data_type = "w", dtype
    t.dims.extend(dims)
    for k, v in fields.items():
        if isinstance(v, bytes):
            setattr(t, k, v)
        else:
            getattr(t, k).extend(v)
    return t


@pytest.mark.parametrize("case,tensor,kind", [
    ("huge-dims-raw", _tensor(1, [1 << 40], raw_data=b"\0" * 16), Kind.INVALID_MODEL),
    ("huge-dims-typed", _tensor(1, [1 << 40], float_data=[1.0] * 4), Kind.INVALID_MODEL),
    ("count-2pow124", _tensor(1, [1 << 62, 1 << 62]), Kind.UNSUPPORTED),
    ("dtype-99", _tensor(99, [4], raw_data=b"\0" * 16), Kind.UNSUPPORTED),
    ("float16-typed-short", _tensor(10, [5], int32_data=[1, 2]), Kind.INVALID_MODEL),
    ("negative-dim", _tensor(1, [-4], raw_data=b"\0" * 16), Kind.INVALID_MODEL),
    ("strings-short", _tensor(8, [3], string_data=[b"a"]), Kind.INVALID_MODEL),
], ids=lambda x: x if isinstance(x, str) else "")
def test_bad_onnx_tensors_are_refused_without_allocating(tmp_path, case, tensor, kind):
    """Dims claiming 2^40 elements with 16 bytes of data: refused before any allocation from dims."""
    e = _first_problem(_onnx_with_initializer(tmp_path, tensor))
    assert e.kind is kind, e
    assert e.where.startswith("onnx.graph.initializers[0]")
