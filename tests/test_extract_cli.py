"""``onemodel-view --extract FILE NAME OUT.npy``: values equal to the tensor's, exotic types as said, errors as exit 1."""

from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np

from onemodel_viewer import format as omf
from onemodel_viewer.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parent))
import insight_models as im  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def test_extract_round_trip(tmp_path, capsys):
    src = str(im.tensors(tmp_path / "t.onemodel"))
    doc = omf.open(src, mode="diagnose")
    want = {t.name: t.values() for t in doc.model.graph.initializers}
    assert main(["--extract", src, "cube", str(tmp_path / "cube.npy")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "cube.npy"), want["cube"])
    assert main(["--extract", src, "bf", str(tmp_path / "bf.npy")]) == 0
    assert "raw bits" in capsys.readouterr().err
    np.testing.assert_array_equal(np.load(tmp_path / "bf.npy").view(ml_dtypes.bfloat16), want["bf"])
    where = doc.model.graph.initializers[2].where
    assert main(["--extract", src, where, str(tmp_path / "i4.npy")]) == 0
    assert np.load(tmp_path / "i4.npy").tolist() == want["i4"].astype(np.int8).tolist()


def test_extract_errors(tmp_path, capsys):
    src = str(im.tensors(tmp_path / "t.onemodel"))
    assert main(["--extract", src, "no-such", str(tmp_path / "x.npy")]) == 1
    assert "no tensor named" in capsys.readouterr().err
    assert main(["--extract", src, "cube", src]) == 1  # never over the model itself
    assert main(["--extract", str(tmp_path / "missing.onemodel"), "cube", str(tmp_path / "x.npy")]) == 1
    assert not (tmp_path / "x.npy").exists()


def test_extract_from_onnx_and_broken_file(tmp_path):
    onnx_src = ROOT / "testdata" / "valid" / "dtypes.onnx"
    doc = omf.open(str(onnx_src), mode="diagnose")
    t = next(t for t in doc.model.graph.initializers if t.info is not None and t.info.name == "float" and t.count)
    assert main(["--extract", str(onnx_src), t.name, str(tmp_path / "f.npy")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "f.npy"), t.values())
    bad = ROOT / "testdata" / "hostile" / "Malformed-file-63-bytes.onemodel"
    if bad.exists():
        assert main(["--extract", str(bad), "x", str(tmp_path / "b.npy")]) == 1
