"""``onemodel-view --stats [--json] FILE``: every tensor's own figures, one line each, errors as exit 1."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from onemodel_viewer import format as omf
from onemodel_viewer.analysis.stats.compute import compute_stats
from onemodel_viewer.cli import main
from onemodel_viewer.commands.stats import record
from onemodel_viewer.format.schema import all_tensors

sys.path.insert(0, str(Path(__file__).resolve().parent))
import insight_models as im  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _model(out: Path) -> Path:
    """float64 values whose sum overflows (mean NaN), a float16 weight above the small-tensor size, a
    tensor with no finite value, and a name holding an escape sequence."""
    rng = np.random.default_rng(4)
    inits = [numpy_helper.from_array(np.array([1.7e308, 1.6e308, -1e300]), "huge"),
             numpy_helper.from_array((rng.standard_normal(20_000) * 0.02).astype(np.float16), "w\x1b[31mred"),
             numpy_helper.from_array(np.array([np.nan, np.inf], dtype=np.float32), "nothing_finite")]
    nodes = [helper.make_node("Identity", [t.name], [f"o{i}"], name=f"id{i}") for i, t in enumerate(inits)]
    g = helper.make_graph(nodes, "g", [], [helper.make_value_info(f"o{i}", onnx.TypeProto()) for i in range(len(inits))],
                          initializer=inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10), out)
    return out


def _json_lines(capsys, path) -> list[dict]:
    assert main(["--stats", "--json", str(path)]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_json_is_each_tensors_compute_stats(tmp_path, capsys):
    src = im.tensors(tmp_path / "t.onemodel")
    got = _json_lines(capsys, src)
    doc = omf.open(str(src))
    tensors = all_tensors(doc.model)
    assert [g["where"] for g in got] == [t.where for t in tensors]
    for g, t in zip(got, tensors):
        assert g == json.loads(json.dumps(record(t, compute_stats(t))))
    cube = next(g for g in got if g["name"] == "cube")
    assert (cube["nan"], cube["posinf"], cube["neginf"], cube["finite"], cube["dims"]) == (1, 1, 1, 21, [2, 3, 4])
    assert sum(cube["histogram"]) == 21 and cube["first"][:2] == ["0.0", "0.25"]
    names = next(g for g in got if g["name"] == "names")
    assert (names["dtype"], names["min_len"], names["max_len"], names["total_len"]) == ("string", 5, 8, 5 + 8 + 8)
    assert "histogram" not in names


def test_json_non_finite_figures_and_escapes(tmp_path, capsys):
    src = _model(tmp_path / "m.onnx")
    out = main(["--stats", "--json", str(src)])
    text = capsys.readouterr().out
    assert out == 0 and "\x1b" not in text and "\\u001b[31mred" in text  # ASCII JSON: the escape stays escaped
    huge, w, nothing = (json.loads(line) for line in text.splitlines())
    assert huge["mean"] == "nan" and huge["std"] == "inf" and huge["max"] == 1.7e308
    assert w["name"] == "w\x1b[31mred" and w["count"] == 20_000 and sum(w["histogram"]) == 20_000
    assert (nothing["min"], nothing["mean"], nothing["histogram"], nothing["hist_range"]) == (None, None, [], None)


def test_text_one_line_per_tensor_made_visible(tmp_path, capsys):
    src = _model(tmp_path / "m.onnx")
    assert main(["--stats", str(src)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and "\x1b" not in "".join(lines)
    assert "w\\x1b[31mred" in lines[1] and "float16[20000]" in lines[1]
    assert "min - " in lines[2] and "nan 1  +inf 1" in lines[2]


def test_errors_exit_1(tmp_path, capsys):
    assert main(["--stats", str(tmp_path / "missing.onemodel")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("onemodel-view: --stats: ") and "missing.onemodel" in err
    bad = ROOT / "testdata" / "hostile" / "InvalidModel-attribute-tensors-length.onemodel"
    assert main(["--stats", "--json", str(bad)]) == 1  # the strict open's first problem, nothing on stdout
    out, err = capsys.readouterr()
    assert out == "" and "InvalidModel at " in err
