"""ONNX external data under ``--check``: the verdict, the weights files' layout and their findings.

Every case of ``testdata/external`` (made by ``testdata/make_external.py``) is checked against
its expected verdict (first problem's kind, where, file and offset), finding codes and ``files``
entries. Cases are copied to a temporary folder first: the FIFO and the second hard link are made
there, never in the repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnx")

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "testdata" / "external"
sys.path.insert(0, str(HERE.parent / "testdata"))
import make_external as mx  # noqa: E402

from onemodel_viewer.cli import main  # noqa: E402
from onemodel_viewer.commands.check import check_file  # noqa: E402
from onemodel_viewer.format import FormatError, Kind  # noqa: E402
from onemodel_viewer import format as omf  # noqa: E402

EXPECTED = json.loads((CORPUS / "expected.json").read_text())


def _copy(case: str, tmp_path: Path) -> Path:
    d = tmp_path / case
    shutil.copytree(CORPUS / case, d, symlinks=True)
    mx.make_special(d, case)
    return d


def _facts(result) -> dict:
    j = result.as_json()
    return {"valid": j["valid"],
            "problems": [[p["kind"], p["where"], p.get("file"), p["offset"]] for p in j["problems"]],
            "findings": sorted(f["code"] for f in j["findings"]),
            "files": [{k: v for k, v in f.items() if k != "shared_with"} for f in j.get("files", [])]}


def test_corpus_is_reproducible(tmp_path):
    mx.build(tmp_path / "out", special=False)
    cmp = subprocess.run(["diff", "-r", "--no-dereference", str(CORPUS), str(tmp_path / "out")], capture_output=True, text=True)
    assert cmp.returncode == 0, cmp.stdout[:2000]


def test_corpus_size():
    assert len(EXPECTED) >= 40


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_case(case, tmp_path):
    d = _copy(case, tmp_path)
    for model, want in EXPECTED[case]["models"].items():
        assert _facts(check_file(str(d / model))) == want, (case, model)


@pytest.mark.parametrize("case", sorted(c for c, e in EXPECTED.items()
                                        if not next(iter(e["models"].values()))["valid"]))
def test_strict_open_raises_the_first_problem(case, tmp_path):
    """The library's strict open raises exactly --check's first problem (file included)."""
    d = _copy(case, tmp_path)
    model, want = next(iter(EXPECTED[case]["models"].items()))
    with pytest.raises(FormatError) as info:
        omf.open(d / model).close()
    p = info.value.problem
    assert [p.kind.value, p.where, p.file, p.offset] == want["problems"][0]
    doc = omf.open(d / model, mode="diagnose")
    assert doc.problems[0] == p


def test_small_external_shape_tensor_is_valid(tmp_path):
    """Regression: onnx.checker.check_model(path, full_check=True) failed with "Cannot parse data from
    external tensors" on what onnx.save_model(size_threshold=0) writes; --check called it INVALID."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    shape = numpy_helper.from_array(np.array([2, 8], dtype=np.int64), "shape")
    w = numpy_helper.from_array(np.arange(16, dtype=np.float32), "w")
    g = helper.make_graph([helper.make_node("Reshape", ["w", "shape"], ["y"])], "g", [],
                          [helper.make_tensor_value_info("y", 1, [2, 8])], [w, shape])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    p = tmp_path / "model.onnx"
    onnx.save_model(m, str(p), save_as_external_data=True, location="model.onnx.data", size_threshold=0)
    r = check_file(str(p))
    assert r.valid, r.problems
    assert [f.path for f in r.files] == ["model.onnx.data"]


def test_checker_still_rejects_a_broken_graph(tmp_path):
    """The checker runs on models with external data: a real graph error is still InvalidModel at onnx.checker."""
    d = _copy("aligned-64", tmp_path)
    import onnx

    m = onnx.load(str(d / "model.onnx"), load_external_data=False)
    m.graph.node[0].op_type = "NoSuchOp"
    (d / "model.onnx").write_bytes(m.SerializeToString())
    r = check_file(str(d / "model.onnx"))
    assert [(p.kind, p.where) for p in r.problems] == [(Kind.INVALID_MODEL, "onnx.checker")]


def test_text_excerpt_comes_from_the_weights_file(tmp_path, capsys):
    """Regression: the excerpt of an offset in w.data was taken from the .onnx file."""
    d = _copy("range-past-end", tmp_path)
    w = (d / "w.data").read_bytes()
    with open(d / "w.data", "ab") as f:  # make offset 4000 exist in w.data, still past the end for 1200 bytes
        f.write(b"\xab" * (4016 - len(w)))
    assert main(["--check", str(d / "model.onnx")]) == 1
    out = capsys.readouterr().out
    assert "in w.data" in out
    assert "00000f90" in out and "ab ab ab" in out  # the row holding offset 4000 (0xfa0) of w.data


def test_json_problem_names_the_file(tmp_path, capsys):
    d = _copy("location-missing-file", tmp_path)
    assert main(["--check", "--json", str(d / "model.onnx")]) == 1
    j = json.loads(capsys.readouterr().out)
    assert j["problems"][0]["file"] == "nope.data"
    assert "file" not in j["findings"][0] or j["findings"][0]["file"] == "w.data"


def test_files_table_in_text(tmp_path, capsys):
    d = _copy("aligned-4096", tmp_path)
    assert main(["--check", str(d / "model.onnx")]) == 0
    out = capsys.readouterr().out
    assert "weights file" in out and "alignment" in out
    line = next(x for x in out.splitlines() if x.rstrip().endswith("w.data"))
    assert line.split()[:5] == ["9,392", "3", "2,624", "6,768", "4,096"]


def test_two_models_sharing_a_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(_copy("shared-two-models", tmp_path))
    a, b = "a.onnx", "b.onnx"
    assert main(["--check", "--json", a, b]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert lines[0]["files"][0]["shared_with"] == []
    assert lines[1]["files"][0]["shared_with"] == [a]
    assert main(["--check", a, b]) == 0
    out = capsys.readouterr().out
    assert "models sharing a weights file" in out and f"{a} (w.data), {b} (w.data)" in out


def test_hf_cache_refusal_says_what_to_do(tmp_path):
    """Outside the recognised layout the refusal message says how to fix it."""
    d = _copy("location-symlink-escape", tmp_path)
    doc = omf.open(d / "model" / "model.onnx", mode="diagnose")
    assert "Hugging Face" in doc.problems[0].message and "copy or move" in doc.problems[0].message


def test_hf_layout_without_model_link_is_refused(tmp_path):
    """Only the cache layout is allowed: a real model.onnx in snapshots/ whose data links to blobs/ is refused."""
    d = _copy("hf-cache", tmp_path)
    snap = d / "snapshots" / "0123abcd"
    real = (snap / "model.onnx").resolve().read_bytes()
    (snap / "model.onnx").unlink()
    (snap / "model.onnx").write_bytes(real)
    doc = omf.open(snap / "model.onnx", mode="diagnose")
    assert (doc.problems[0].kind, doc.problems[0].where) == (Kind.MALFORMED, "onnx.graph.initializers[0].external_data.location")


def test_checksum_mismatch_names_the_file(tmp_path):
    d = _copy("checksum-bad", tmp_path)
    r = check_file(str(d / "model.onnx"))
    f = next(f for f in r.findings if f.code == "checksum-mismatch")
    assert (f.where, f.file) == ("onnx.graph.initializers[0].external_data.checksum", "w.data")


def test_duplicate_key_at_second_entry(tmp_path):
    d = _copy("duplicate-key", tmp_path)
    r = check_file(str(d / "model.onnx"))
    f = next(f for f in r.findings if f.code == "duplicate-key")
    assert f.where == "onnx.graph.initializers[0].external_data[3]"


def test_shared_bytes_per_file(tmp_path):
    """Tensors in different files at the same offsets share nothing; the overlap inside one file is found."""
    d = _copy("one-file-per-tensor", tmp_path)
    r = check_file(str(d / "model.onnx"))
    assert not [f for f in r.findings if f.code == "shared-bytes"]
    d = _copy("overlap", tmp_path)
    r = check_file(str(d / "model.onnx"))
    f = next(f for f in r.findings if f.code == "shared-bytes")
    assert (f.offset, f.file, f.where) == (128, "w.data", "onnx.graph.initializers[1]")


def test_big_sparse_file_past_4gib(tmp_path):
    """A 4 GiB sparse weights file with tensors past 2^32: read at the right offsets, layout facts exact."""
    model, placed = mx.big_sparse(tmp_path / "big")
    r = check_file(str(model))
    assert r.valid, r.problems
    (fl,) = r.files
    assert (fl.size, fl.tensors, fl.owned, fl.alignment) == ((4 << 30) + (64 << 10), 4, 4 * 4096, 4096)
    doc = omf.open(model)
    try:
        for t, (name, off, ln) in zip(doc.model.graph.initializers, placed):
            assert (t.name, t.file_offset, t.length) == (name, off, ln)
        hi = doc.model.graph.initializers[2]
        assert hi.file_offset > 1 << 32
        import numpy as np

        assert np.frombuffer(hi.storage.read(hi.file_offset, 8), "<f4").tolist() == [3.0, 4.0]
    finally:
        doc.close()
