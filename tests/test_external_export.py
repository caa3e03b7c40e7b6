"""``--export`` with external data: ``--external-data``, ``--size-threshold``, ``--align``,
``--max-file-size``, ``--keep-external``, and the streaming re-alignment of an ONNX source.

Every output is loaded by ``onnx.load`` (with its data) and compared with the source tensor by
tensor, byte for byte; offsets, file sizes and which files exist are checked as asked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")
from onnx import numpy_helper  # noqa: E402

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "testdata" / "external"
VALID = HERE.parent / "testdata" / "valid"
sys.path.insert(0, str(HERE.parent / "testdata"))
import make_external as mx  # noqa: E402

from onemodel_viewer.cli import main  # noqa: E402
from onemodel_viewer.format.onemodel import writer  # noqa: E402
from onemodel_viewer.format.onnx.weights import parse_size  # noqa: E402


def _copy(case: str, tmp_path: Path) -> Path:
    d = tmp_path / "src" / case
    shutil.copytree(CORPUS / case, d, symlinks=True)
    return d


def _all_tensors(m):
    """Every TensorProto with its path, subgraphs and Constant values included."""
    out = []

    def graph(g, where):
        for i, t in enumerate(g.initializer):
            out.append((f"{where}.init[{i}]", t))
        for n in g.node:
            for a in n.attribute:
                if a.HasField("t"):
                    out.append((f"{where}.{n.output[0]}.{a.name}", a.t))
                if a.HasField("g"):
                    graph(a.g, f"{where}.{n.output[0]}.{a.name}")
    graph(m.graph, "g")
    return out


def _values(path: Path) -> dict:
    m = onnx.load(str(path))  # with its external data
    return {w: (t.name, t.data_type, tuple(t.dims), numpy_helper.to_array(t).tobytes()) for w, t in _all_tensors(m)}


def _externals(path: Path) -> list[tuple[str, str, int, int]]:
    m = onnx.load(str(path), load_external_data=False)
    out = []
    for _w, t in _all_tensors(m):
        if t.data_location == onnx.TensorProto.EXTERNAL:
            kv = {e.key: e.value for e in t.external_data}
            out.append((t.name, kv["location"], int(kv.get("offset", "0")), int(kv["length"])))
    return out


CASES = ["aligned-64", "packed", "constant-external", "split-set", "one-file-per-tensor", "empty-tensor"]
OPTIONS = [
    (["--external-data", "--size-threshold", "0"], 4096, None),
    (["--external-data=weights.bin", "--align", "64", "--size-threshold", "0"], 64, None),
    (["--align", "128", "--size-threshold", "1"], 128, None),
    (["--external-data", "--size-threshold", "0", "--align", "64", "--max-file-size", "1500"], 64, 1500),
    (["--external-data", "--size-threshold", "0", "--align", "1", "--max-file-size", "1"], 1, 1),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("flags,align,limit", OPTIONS)
def test_export_layout(case, flags, align, limit, tmp_path):
    d = _copy(case, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    dst = out / "m.onnx"
    assert main(["--export", str(d / "model.onnx"), str(dst), *flags]) == 0
    assert _values(dst) == _values(d / "model.onnx")
    ext = _externals(dst)
    assert ext, "every tensor at or above the threshold is external"
    for _name, loc, off, ln in ext:
        assert off % align == 0
        assert not os.path.isabs(loc) and ".." not in loc
    sizes = {loc: os.path.getsize(out / loc) for _n, loc, _o, _l in ext}
    base = "weights.bin" if "--external-data=weights.bin" in flags else "m.onnx.data"
    assert sorted(sizes) == sorted([base] + [f"{base}.{k}" for k in range(1, len(sizes))])
    if limit is not None:
        for loc, size in sizes.items():
            held = [ln for _n, l2, _o, ln in ext if l2 == loc]
            assert size <= limit or len(held) == 1
    r = json.loads(subprocess.run([sys.executable, "-m", "onemodel_viewer", "--check", "--json", str(dst)],
                                  capture_output=True, text=True).stdout)
    assert r["valid"], r["problems"]
    assert all(f["alignment"] is None or f["alignment"] % align == 0 for f in r["files"])


def test_threshold_keeps_small_tensors_inline(tmp_path):
    d = _copy("constant-external", tmp_path)
    dst = tmp_path / "m.onnx"
    assert main(["--export", str(d / "model.onnx"), str(dst), "--external-data", "--size-threshold", "100"]) == 0
    assert sorted(n for n, *_ in _externals(dst)) == ["w"]  # 256 bytes; the Constants hold 64 and 32
    assert _values(dst) == _values(d / "model.onnx")


def test_attribute_tensors_go_external(tmp_path):
    d = _copy("constant-external", tmp_path)
    dst = tmp_path / "m.onnx"
    assert main(["--export", str(d / "model.onnx"), str(dst), "--external-data", "--size-threshold", "0"]) == 0
    assert sorted(n for n, *_ in _externals(dst)) == ["c", "k", "s", "w"]  # c: the else branch's inline Constant


def test_onemodel_source(tmp_path):
    src = VALID / "showcase.onemodel"
    plain, ext = tmp_path / "plain.onnx", tmp_path / "ext.onnx"
    assert main(["--export", str(src), str(plain)]) == 0
    assert main(["--export", str(src), str(ext), "--external-data", "--size-threshold", "16"]) == 0
    assert _values(ext) == _values(plain)
    assert all(off % 4096 == 0 for *_x, off, _l in _externals(ext))


def test_keep_external_same_folder(tmp_path):
    """Already-external tensors keep their location and offset; no byte is copied; no new file without new weights."""
    d = _copy("aligned-64", tmp_path)
    before = sorted(os.listdir(d))
    dst = d / "copy.onnx"
    assert main(["--export", str(d / "model.onnx"), str(dst), "--keep-external"]) == 0
    assert sorted(os.listdir(d)) == sorted(before + ["copy.onnx"])
    assert _externals(dst) == _externals(d / "model.onnx")
    assert _values(dst) == _values(d / "model.onnx")


def test_keep_external_new_weights_go_to_dst_data(tmp_path):
    """A OneModel-born tensor (inline in the source) goes to DST.data, aligned; the external ones stay."""
    d = _copy("aligned-64", tmp_path)
    m = onnx.load(str(d / "model.onnx"), load_external_data=False)
    import numpy as np

    m.graph.initializer.append(numpy_helper.from_array(np.arange(2048, dtype=np.float32), "new"))
    m.graph.node.append(onnx.helper.make_node("Identity", ["new"], ["y_new"]))
    m.graph.output.append(onnx.helper.make_tensor_value_info("y_new", 1, [2048]))
    (d / "model.onnx").write_bytes(m.SerializeToString())
    dst = d / "copy.onnx"
    assert main(["--export", str(d / "model.onnx"), str(dst), "--keep-external"]) == 0
    ext = {n: (loc, off) for n, loc, off, _l in _externals(dst)}
    assert ext["a"][0] == ext["b"][0] == ext["c"][0] == "w.data"
    assert ext["new"] == ("copy.onnx.data", 0)
    assert _values(dst) == _values(d / "model.onnx")


def test_keep_external_parent_folder_rewrites_location(tmp_path):
    d = _copy("aligned-64", tmp_path)
    dst = d.parent / "up.onnx"
    assert main(["--export", str(d / "model.onnx"), str(dst), "--keep-external"]) == 0
    assert {loc for _n, loc, _o, _l in _externals(dst)} == {"aligned-64/w.data"}
    assert _values(dst) == _values(d / "model.onnx")


def test_keep_external_elsewhere_refused(tmp_path, capsys):
    d = _copy("aligned-64", tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    assert main(["--export", str(d / "model.onnx"), str(other / "m.onnx"), "--keep-external"]) == 1
    assert "Unsupported at onnx.graph.initializers[0].external_data.location" in capsys.readouterr().err
    assert os.listdir(other) == []


def test_never_writes_a_file_the_source_reads(tmp_path, capsys):
    d = _copy("aligned-64", tmp_path)
    before = (d / "w.data").read_bytes()
    assert main(["--export", str(d / "model.onnx"), str(d / "x.onnx"), "--external-data=w.data"]) == 1
    assert "Io at destination" in capsys.readouterr().err
    assert (d / "w.data").read_bytes() == before
    assert not (d / "x.onnx").exists()


def test_failure_leaves_nothing(tmp_path, monkeypatch, capsys):
    d = _copy("aligned-64", tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    calls = []

    def boom(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise OSError(5, "I/O error")
        return real(*a, **k)

    real = writer.copy_storage_range
    monkeypatch.setattr(writer, "copy_storage_range", boom)
    assert main(["--export", str(d / "model.onnx"), str(out / "m.onnx"), "--external-data", "--size-threshold", "0",
                 "--max-file-size", "1"]) == 1
    capsys.readouterr()
    assert os.listdir(out) == []


@pytest.mark.parametrize("text,value", [("1024", 1024), ("64K", 64 << 10), ("1MiB", 1 << 20), ("2G", 2 << 30),
                                        ("3GB", 3 * 10**9), ("1kB", 1000), ("5 MiB", 5 << 20)])
def test_parse_size(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "1.5G", "-1", "1Q", "G", "1_024", "\u0661"])
def test_parse_size_refuses(text):
    with pytest.raises(ValueError):
        parse_size(text)


@pytest.mark.parametrize("argv", [["--align", "3"], ["--align", "0"], ["--max-file-size", "lots"],
                                  ["--size-threshold", "x"]])
def test_bad_flags_are_usage_errors(argv, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["--export", str(CORPUS / "aligned-64" / "model.onnx"), str(tmp_path / "m.onnx"), *argv])
    assert e.value.code == 2


def test_flags_need_export(tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["--check", str(CORPUS / "aligned-64" / "model.onnx"), "--align", "64"])
    assert e.value.code == 2


RSS_PROBE = r"""
import resource, subprocess, sys
subprocess.run([sys.executable, "-m", "onemodel_viewer", "--export", sys.argv[1], sys.argv[2], "--align", "4096"], check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def test_realign_4gib_sparse_bounded_memory(tmp_path):
    """A 4 GiB weights file (sparse, tensors past 2^32) re-aligned to 4096: bytes equal, peak RSS bounded."""
    model, placed = mx.big_sparse(tmp_path / "big")
    out = tmp_path / "out"
    out.mkdir()
    dst = out / "m.onnx"
    r = subprocess.run([sys.executable, "-c", RSS_PROBE, str(model), str(dst)], capture_output=True, text=True, check=True)
    peak_kib = int(r.stdout.split()[-1])
    assert peak_kib < 256 << 10, peak_kib
    ext = _externals(dst)
    assert [(n, ln) for n, _loc, _o, ln in ext] == [(n, ln) for n, _o, ln in placed]
    assert [off for *_x, off, _l in ext] == [0, 4096, 8192, 12288]
    assert os.path.getsize(out / "m.onnx.data") == 4 * 4096
    assert _values(dst) == _values(model)
