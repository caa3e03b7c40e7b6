"""``onemodel-view --diff A B --json/--summary`` on real files: single mutations, JSON shape, exit codes.

A is an ONNX model built with onnx.helper and converted to OneModel; B is the same
ONNX model with one mutation, saved as ONNX. So every case also diffs across formats.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onemodel_viewer.cli import main
from onemodel_viewer.commands.convert import run_convert


def base_proto() -> onnx.ModelProto:
    w = numpy_helper.from_array(np.arange(16, dtype=np.float32).reshape(4, 4), "w")  # raw_data
    h = helper.make_tensor("h", TensorProto.FLOAT16, [3], np.array([0.5, 1.5, -2.0], dtype=np.float16))  # int32_data
    q = helper.make_tensor("q", TensorProto.INT4, [5], [-8, -1, 0, 3, 7])
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="id"),
            helper.make_node("Add", ["c_in", "w"], ["c_out"], name="badd"),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("c_in", TensorProto.FLOAT, [4, 4]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("c_out", TensorProto.FLOAT, [4, 4]),
        ],
    )
    nodes = [
        helper.make_node("Add", ["x", "w"], ["y"], name="add1"),
        helper.make_node("LeakyRelu", ["y"], ["z"], name="act", alpha=0.0),
        helper.make_node("Loop", ["", "", "z"], ["l"], name="loop", body=body),
        helper.make_node("Identity", ["h"], ["hh"]),
        helper.make_node("Identity", ["q"], ["qq"]),
    ]
    g = helper.make_graph(
        nodes,
        "main",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])],
        [
            helper.make_tensor_value_info("l", TensorProto.FLOAT, [4, 4]),
            helper.make_tensor_value_info("hh", TensorProto.FLOAT16, [3]),
            helper.make_tensor_value_info("qq", TensorProto.INT4, [5]),
        ],
        [w, h, q],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="diff-test")
    helper.set_model_props(m, {"author": "me"})
    return m


def _init(m: onnx.ModelProto, name: str) -> onnx.TensorProto:
    return next(t for t in m.graph.initializer if t.name == name)


def _node(m: onnx.ModelProto, name: str) -> onnx.NodeProto:
    return next(n for n in m.graph.node if n.name == name)


def flip_weight_byte(m):
    t = _init(m, "w")
    raw = bytearray(t.raw_data)
    raw[4 * 6] ^= 0x01
    t.raw_data = bytes(raw)


def float16_element(m):
    t = _init(m, "h")
    t.CopyFrom(helper.make_tensor("h", TensorProto.FLOAT16, [3], np.array([0.5, 1.25, -2.0], dtype=np.float16)))


def int4_element(m):
    t = _init(m, "q")
    t.CopyFrom(helper.make_tensor("q", TensorProto.INT4, [5], [-8, -1, 0, 3, -7]))


def alpha_sign_of_zero(m):
    a = _node(m, "act").attribute[0]
    a.f = -0.0


def rename_node(m):
    _node(m, "add1").name = "add_renamed"


def change_op(m):
    _node(m, "act").op_type = "Elu"


def add_initializer(m):
    m.graph.initializer.append(numpy_helper.from_array(np.zeros(2, dtype=np.float32), "extra"))


def dtype_change(m):
    _init(m, "w").CopyFrom(numpy_helper.from_array(np.arange(16, dtype=np.float64).reshape(4, 4), "w"))


def opset_change(m):
    m.opset_import[0].version = 18


def metadata_change(m):
    m.metadata_props[0].value = "you"


def loop_body_change(m):
    body = _node(m, "loop").attribute[0].g
    next(n for n in body.node if n.name == "badd").op_type = "Sub"


MUTATIONS = [
    (flip_weight_byte, 'graph.initializers["w"].data', "changed", "6.0", "6.0000005"),
    (float16_element, 'graph.initializers["h"].data', "changed", "1.5", "1.25"),
    (int4_element, 'graph.initializers["q"].data', "changed", "7", "-7"),
    (alpha_sign_of_zero, 'graph.nodes["act"].attributes["alpha"]', "changed", "0.0", "-0.0"),
    (rename_node, 'graph.nodes["add1"].name', "changed", "add1", "add_renamed"),
    (change_op, 'graph.nodes["act"].op', "changed", "LeakyRelu", "Elu"),
    (add_initializer, 'graph.initializers["extra"]', "added", None, "float[2]"),
    (dtype_change, 'graph.initializers["w"].dtype', "changed", "float", "double"),
    (opset_change, 'model.opsets[""]', "changed", 17, 18),
    (metadata_change, 'model.metadata["author"]', "changed", "me", "you"),
    (loop_body_change, 'graph.nodes["loop"].attributes["body"].nodes["badd"].op', "changed", "Add", "Sub"),
]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    d = tmp_path_factory.mktemp("diffcli")
    src = str(d / "a.onnx")
    onnx.save(base_proto(), src)
    dst = str(d / "a.onemodel")
    assert run_convert(src, dst) == 0
    return d, src, dst


def _json(capsys, *args) -> tuple[int, dict]:
    rc = main(["--diff", *args, "--json"])
    out = capsys.readouterr().out
    return rc, json.loads(out)


def test_converted_base_is_equal(base, capsys):
    _, src, dst = base
    rc, out = _json(capsys, dst, src)
    assert rc == 0
    assert out == {"a": dst, "b": src, "equal": True, "differences": [], "equivalences": out["equivalences"],
                   "not_compared": [], "complete": True, "problems": {"a": [], "b": []},
                   "findings": {"a": [], "b": []}}
    assert any("raw_data" in e for e in out["equivalences"])


@pytest.mark.parametrize("mutate,where,change,a,b", MUTATIONS, ids=[m[0].__name__ for m in MUTATIONS])
def test_single_mutation(base, capsys, mutate, where, change, a, b):
    d, _, dst = base
    m = base_proto()
    mutate(m)
    path = str(d / f"{mutate.__name__}.onnx")
    onnx.save(m, path)
    rc, out = _json(capsys, dst, path)
    assert rc == 1
    assert out["equal"] is False
    assert len(out["differences"]) == 1, out["differences"]
    diff = out["differences"][0]
    assert (diff["where"], diff["change"], diff["a"], diff["b"]) == (where, change, a, b)
    # and the other way round
    rc, out = _json(capsys, path, dst)
    assert rc == 1 and len(out["differences"]) == 1
    rev = out["differences"][0]
    # a renamed node is named by A's name, so by the new name when swapped
    assert rev["where"] == (where.replace(a, b) if mutate is rename_node else where)
    assert rev["change"] == {"added": "removed", "removed": "added"}.get(change, change)
    assert (rev["a"], rev["b"]) == (b, a)


def test_data_detail(base, capsys):
    d, _, dst = base
    m = base_proto()
    flip_weight_byte(m)
    path = str(d / "detail.onnx")
    onnx.save(m, path)
    _, out = _json(capsys, dst, path)
    det = out["differences"][0]["detail"]
    assert det["differing"] == 1 and det["count"] == 16
    assert det["first_index"] == [1, 2]
    assert det["first_byte"] == 24
    assert det["max_abs"] > 0 and det["max_rel"] > 0


def test_summary_output(base, capsys):
    d, _, dst = base
    m = base_proto()
    rename_node(m)
    path = str(d / "summary.onnx")
    onnx.save(m, path)
    rc = main(["--diff", dst, path, "--summary"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "1 difference:" in out and "add_renamed" in out and "changed" in out


def test_missing_file_exit_2(base, capsys, tmp_path):
    _, src, _ = base
    rc = main(["--diff", src, str(tmp_path / "missing.onemodel"), "--json"])
    cap = capsys.readouterr()
    assert rc == 2
    assert cap.out == ""
    assert "missing.onemodel" in cap.err and "Io" in cap.err
    assert len(cap.err.strip().splitlines()) == 1


def test_malformed_file_exit_2(base, capsys, tmp_path):
    _, _, dst = base
    bad = tmp_path / "bad.onemodel"
    data = bytearray(open(dst, "rb").read())
    data[12] = 1  # header.flags
    bad.write_bytes(bytes(data))
    rc = main(["--diff", dst, str(bad), "--summary"])
    cap = capsys.readouterr()
    assert rc == 2
    assert "bad.onemodel" in cap.err and "Unsupported" in cap.err and "header.flags" in cap.err
    assert "Traceback" not in cap.err


def test_subprocess_exit_codes(base):
    """The installed entry point: exit status and JSON on stdout, nothing on stderr."""
    d, src, dst = base
    p = subprocess.run([sys.executable, "-m", "onemodel_viewer", "--diff", src, dst, "--json"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["equal"] is True


def test_hostile_names_are_escaped_in_summary(base, capsys):
    d, _, dst = base
    m = base_proto()
    _node(m, "add1").name = "evil\x1b[31m\u202e"
    path = str(d / "evil.onnx")
    onnx.save(m, path)
    rc = main(["--diff", dst, path, "--summary"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "\x1b[31m" not in out and "\u202e" not in out
    rc, js = _json(capsys, dst, path)
    assert js["differences"][0]["b"] == "evil\x1b[31m\u202e"  # JSON keeps the name as-is
    assert os.path.exists(path)


def test_mapped_files_across_chunk_boundary(tmp_path, capsys):
    """Files over 1 MiB are memory-mapped; a difference past the first 6 MiB chunk is found exactly."""
    arr = np.zeros((7, 1 << 18), dtype=np.float32)  # 7 MiB
    m = helper.make_model(
        helper.make_graph([], "big", [], [], [numpy_helper.from_array(arr, "big")]),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    src = str(tmp_path / "a.onnx")
    onnx.save(m, src)
    dst = str(tmp_path / "a.onemodel")
    assert run_convert(src, dst) == 0
    assert capsys.readouterr().out.startswith("wrote ")  # --convert says what it wrote; not part of the diff's JSON
    arr2 = arr.copy()
    arr2[6, 5] = 2.5
    arr2[6, 7] = -1.0
    m.graph.initializer[0].CopyFrom(numpy_helper.from_array(arr2, "big"))
    src2 = str(tmp_path / "b.onnx")
    onnx.save(m, src2)
    rc, out = _json(capsys, dst, src2)
    assert rc == 1 and len(out["differences"]) == 1
    d = out["differences"][0]
    assert (d["where"], d["a"], d["b"]) == ('graph.initializers["big"].data', "0.0", "2.5")
    assert d["detail"]["differing"] == 2
    assert d["detail"]["first_index"] == [6, 5]
    assert d["detail"]["max_abs"] == 2.5
    assert d["detail"]["max_rel"] == 1.0
    assert d["detail"]["first_byte"] == (6 * (1 << 18) + 5) * 4
    rc, out = _json(capsys, dst, src)
    assert rc == 0


def test_external_data_difference_names_the_data_file(tmp_path, capsys):
    import shutil

    valid = os.path.join(os.path.dirname(__file__), os.pardir, "testdata", "valid")
    shutil.copy(os.path.join(valid, "external.onnx"), tmp_path / "external.onnx")
    shutil.copy(os.path.join(valid, "external.onnx.data"), tmp_path / "external.onnx.data")
    base = os.path.join(valid, "external.onemodel")
    rc, out = _json(capsys, base, str(tmp_path / "external.onnx"))
    assert rc == 0 and any("external data" in e for e in out["equivalences"])
    data = bytearray((tmp_path / "external.onnx.data").read_bytes())
    data[0] ^= 0xFF
    (tmp_path / "external.onnx.data").write_bytes(bytes(data))
    rc, out = _json(capsys, base, str(tmp_path / "external.onnx"))
    assert rc == 1 and len(out["differences"]) == 1
    det = out["differences"][0]["detail"]
    assert out["differences"][0]["where"].endswith(".data")
    assert det["b_offset"] == 0  # the flipped byte starts the external file's first tensor
    assert det["b_file"] == str(tmp_path / "external.onnx.data")
    assert "a_file" not in det and "a_offset" in det


def test_findings_are_reported_beside_the_verdict(capsys):
    """Readers may disagree on a file with duplicate keys: --diff must say so in both outputs (issue: every surface)."""
    from onemodel_viewer.cli import main

    path = str(Path(__file__).resolve().parent.parent / "testdata" / "hostile" / "valid-duplicate-keys.onemodel")
    assert main(["--diff", "--json", path, path]) == 0
    doc = json.loads(capsys.readouterr().out)
    for side in ("a", "b"):
        dup = [f for f in doc["findings"][side] if f["code"] == "duplicate-key"]
        assert [f["where"] for f in dup] == ["manifest.x_dup"]
    assert main(["--diff", "--summary", path, path]) == 0
    out = capsys.readouterr().out
    assert out.count("finding duplicate-key at manifest.x_dup") == 2
    assert "more findings" in out  # capped list, disagreements first


def test_convert_warns_about_duplicate_keys(tmp_path, capsys):
    from onemodel_viewer.cli import main

    src = str(Path(__file__).resolve().parent.parent / "testdata" / "hostile" / "valid-duplicate-keys.onemodel")
    assert main(["--convert", src, str(tmp_path / "out.onemodel")]) == 0
    err = capsys.readouterr().err
    assert "manifest.x_dup" in err and "more than once" in err
