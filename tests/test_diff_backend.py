"""Every model of the installed onnx backend test data, converted to OneModel, diffs EQUAL to its source."""

from __future__ import annotations

import glob
import json
import os

import onnx
import pytest

from onemodel_viewer import format as omf
from onemodel_viewer.analysis.diff.compare import diff
from onemodel_viewer.commands.convert import run_convert

DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
MODELS = sorted(glob.glob(os.path.join(DATA, "*", "*", "model.onnx")))


def test_backend_data_is_there():
    assert len(MODELS) >= 100


def _id(path: str) -> str:
    return os.path.relpath(os.path.dirname(path), DATA)


@pytest.mark.parametrize("src", MODELS, ids=[_id(p) for p in MODELS])
def test_converted_model_diffs_equal(src, tmp_path):
    dst = str(tmp_path / "m.onemodel")
    assert run_convert(src, dst) == 0
    a, b = omf.open(src), omf.open(dst)
    try:
        r = diff(a, b)
        assert r.equal, [d.as_json() for d in r.differences]
        r = diff(b, a)
        assert r.equal, [d.as_json() for d in r.differences]
    finally:
        a.close()
        b.close()


VALID = os.path.join(os.path.dirname(__file__), os.pardir, "testdata", "valid")
PAIRS = sorted(p[:-5] for p in glob.glob(os.path.join(VALID, "*.onnx")) if os.path.exists(p[:-5] + ".onemodel"))


@pytest.mark.parametrize("stem", PAIRS, ids=[os.path.basename(p) for p in PAIRS])
def test_valid_testdata_pairs_are_equal(stem):
    a, b = omf.open(stem + ".onnx"), omf.open(stem + ".onemodel")
    try:
        r = diff(a, b)
        assert r.equal, [d.as_json() for d in r.differences]
    finally:
        a.close()
        b.close()


def test_every_valid_file_against_every_other_does_not_fail():
    """Unrelated models: the diff reports differences and never raises."""
    files = sorted(glob.glob(os.path.join(VALID, "*.onnx")) + glob.glob(os.path.join(VALID, "*.onemodel")))
    docs = [omf.open(f) for f in files]
    try:
        for i, a in enumerate(docs):
            for b in docs[i:]:
                r = diff(a, b)
                assert r.equal == (not r.differences)
                json.dumps(r.as_json(a.path, b.path), allow_nan=False)
    finally:
        for d in docs:
            d.close()
