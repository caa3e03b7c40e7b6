"""The ``.ort`` writer's layout and refusals, without onnxruntime: payload alignment, the same bytes for any
thread count, ``input_arg_counts`` per formal schema input, the kernel type-string entries, Constant nodes
and local functions, int4/float8/string/sparse tensors, and bad inputs (a source with problems, the
destination a file of the source, a model over flatbuffers' 2 GiB, an unwritable destination, Ctrl-C).
"""

from __future__ import annotations

import io
import os
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from onemodel_viewer import cli  # noqa: E402
from onemodel_viewer import format as omf  # noqa: E402
from onemodel_viewer.format.errors import FormatError, Kind  # noqa: E402
from onemodel_viewer.format.ort import writer as ort_writer  # noqa: E402
from onemodel_viewer.format.ort.writer import write_ort  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
VALID = ROOT / "testdata" / "valid"


def run(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            rc = cli.main([str(a) for a in argv])
        except SystemExit as e:
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


def opened(path):
    doc = omf.open(str(path), mode="strict")
    return doc


def save(model, path: Path) -> Path:
    onnx.save(model, str(path))
    return path


def node_counts(path) -> list[tuple[str, tuple[int, ...]]]:
    """(op, input_arg_counts) of every main-graph node of an .ort file, read with the schema-driven walker."""
    from onemodel_viewer.format.ort.verify import Walker
    from onemodel_viewer.format.reporter import Reporter

    data = Path(path).read_bytes()
    root = Walker(data, len(data), Reporter(True)).root()
    return [(n["op_type"].decode(), tuple(n.get("input_arg_counts", ()))) for n in root["model"]["graph"]["nodes"]]


def weights_model(n: int = 5, size: int = 3000, seed: int = 7):
    """A small MatMul chain whose weights are above the proto-inline size (copied from the source's mapping)."""
    rng = np.random.default_rng(seed)
    inits, nodes, prev = [], [], "x"
    for i in range(n):
        w = rng.standard_normal((size // 8, 2)).astype(np.float32)[: 2, :2] if i % 2 else rng.standard_normal((2, 2)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"h{i}"]))
        prev = f"h{i}"
    big = rng.standard_normal(size * 40).astype(np.float32)  # 480 KB: over prepare.INLINE_BYTES
    inits.append(numpy_helper.from_array(big, "big"))
    nodes.append(helper.make_node("Identity", ["big"], ["big_out"]))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [2, 2]),
                           helper.make_tensor_value_info("big_out", TensorProto.FLOAT, None)], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("align", [1, 16, 64, 4096])
def test_every_payload_starts_at_a_multiple_of_align(tmp_path, align):
    """(5) raw_data bytes of initializers (and attribute tensors) at multiples of --align from the file start,
    zeros between; --check --json of the written file reports them clean."""
    src = save(weights_model(), tmp_path / "w.onnx")
    dst = tmp_path / "w.ort"
    rc, _out, err = run("--export", src, dst, "--align", align)
    assert rc == 0, err
    doc = opened(dst)
    try:
        payloads = doc.extra.payloads
        assert len(payloads) == 6
        assert all(p.offset % align == 0 for p in payloads)
        data = dst.read_bytes()
        ends = sorted((p.offset, p.offset + p.length) for p in payloads)
        for (_s, e), (s2, _e2) in zip(ends, ends[1:]):
            assert not any(data[e:s2 - 4])  # the padding before the next vector's length is zeros
        assert not doc.findings
        from onemodel_viewer.analysis.layout.ort import ort_layout

        lay = ort_layout(doc)  # the layout screen's rows: the aligned payloads, no unowned run
        assert not lay.unowned and len(lay.payloads) == 6
        assert all(p.start % align == 0 for p in lay.payloads)
        big = {t.name: bytes(t.raw()) for t in doc.model.graph.initializers}["big"]
    finally:
        doc.close()
    assert big == numpy_helper.to_array(weights_model().graph.initializer[-1]).tobytes()
    rc, out, _ = run("--check", "--json", dst)
    import json

    report = json.loads(out)
    assert rc == 0 and report["valid"] and report["problems"] == [] and report["findings"] == []
    assert report["ort"]["version"] == "6" and report["ort"]["payloads"] == 6
    assert report["ort"]["payload_alignment"] >= max(align, 4) and report["ort"]["payload_alignment"] % max(align, 4) == 0


def test_default_alignment_is_64(tmp_path):
    src = save(weights_model(), tmp_path / "w.onnx")
    dst = tmp_path / "w.ort"
    assert run("--export", src, dst)[0] == 0
    doc = opened(dst)
    try:
        offsets = [p.offset for p in doc.extra.payloads]
    finally:
        doc.close()
    assert all(o % 64 == 0 for o in offsets) and any(o % 128 for o in offsets)


def test_same_bytes_for_any_thread_count_and_run(tmp_path, monkeypatch):
    """(7) 1 and 4 threads, twice: byte-identical files (pieces of 4 KiB: many pieces per payload)."""
    monkeypatch.setattr(ort_writer, "CHUNK", 4096)
    src = save(weights_model(), tmp_path / "w.onnx")
    doc = opened(src)
    try:
        outs = []
        for i, threads in enumerate((1, 4, 4, 1)):
            dst = tmp_path / f"w{i}.ort"
            write_ort(doc.model, dst, threads=threads)
            outs.append(dst.read_bytes())
    finally:
        doc.close()
    assert all(o == outs[0] for o in outs[1:])
    assert len(outs[0]) > 480_000


def test_formal_input_counts_concat_and_clip(tmp_path):
    """The seed's examples: a three-input Concat stores [3]; Clip at opset 11 with only its input [1, 0, 0];
    with an explicitly empty ``min`` slot and a ``max`` [1, 1, 1] (the empty slot counts one)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    nodes = [helper.make_node("Concat", ["x", "x", "x"], ["c"], axis=0),
             helper.make_node("Clip", ["c"], ["d"]),
             helper.make_node("Clip", ["d", "", "mx"], ["e"])]
    mx = numpy_helper.from_array(np.array(1.0, dtype=np.float32), "mx")
    g = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info("e", TensorProto.FLOAT, [6])], initializer=[mx])
    src = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)]), tmp_path / "c.onnx")
    dst = tmp_path / "c.ort"
    assert run("--export", src, dst)[0] == 0
    assert node_counts(dst) == [("Concat", (3,)), ("Clip", (1, 0, 0)), ("Clip", (1, 1, 1))]


def test_kernel_type_strings_from_the_schemas(tmp_path):
    """Each op id ``domain:op:since``; type constraints with their (input 0 / output 1, index) uses, a
    fixed-type parameter under its name (Reshape-14's ``shape``); sorted."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    shape = numpy_helper.from_array(np.array([3, 2], dtype=np.int64), "shape")
    g = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["r"]), helper.make_node("Relu", ["r"], ["y"])],
                          "g", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])], initializer=[shape])
    src = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), tmp_path / "r.onnx")
    dst = tmp_path / "r.ort"
    assert run("--export", src, dst)[0] == 0
    doc = opened(dst)
    try:
        got = [(k.op_id, k.args) for k in doc.extra.kernel_type_strs]
        assert doc.extra.version == "6"
    finally:
        doc.close()
    assert got == [(":Relu:14", (("T", ((0, 0), (1, 0))),)),
                   (":Reshape:14", (("T", ((0, 0), (1, 0))), ("shape", ((0, 1),))))]


def test_constant_nodes_and_local_functions_warned(tmp_path):
    """Constant nodes become initializers and local functions are inlined, each said once on stderr."""
    dst = tmp_path / "f.ort"
    rc, _out, err = run("--export", VALID / "functions.onnx", dst)
    assert rc == 0
    assert "warning: model-local functions inlined" in err and "local.fn:ScaledAdd" in err
    assert "Constant nodes made initializers" in err
    doc = opened(dst)
    try:
        ops = [n.op for n in doc.model.graph.nodes]
        inits = {t.name: t for t in doc.model.graph.initializers}
    finally:
        pass
    try:
        assert "Constant" not in ops and "ScaledAdd" not in ops and "Mul" in ops
        assert not doc.model.functions
        # the omitted attribute's default (alpha 0.5) was used by the inlined Constant
        alpha = [t for n, t in inits.items() if n.startswith("alpha_t")]
        assert sorted(float(t.values()) for t in alpha) == [0.5, 1.0, 2.0]
    finally:
        doc.close()


@pytest.mark.parametrize("name", ["dtypes", "strings", "sparse", "typed"])
def test_int4_float8_string_sparse_tensors_keep_their_bytes(tmp_path, name):
    """Every tensor (int4/uint4/float4, the float8 types, strings, sparse values and indices) reads back
    with the source's dtype, dims and bytes; int4 keeps ONNX's code 22, which ONNX Runtime 1.32 writes too
    (and then refuses: a finding, as for its own file)."""
    dst = tmp_path / f"{name}.ort"
    rc, _out, err = run("--export", VALID / f"{name}.onnx", dst)
    assert rc == 0, err
    src, back = opened(VALID / f"{name}.onnx"), opened(dst)
    try:
        def tensors(doc):
            out = {}
            for t in doc.model.graph.initializers:
                out[t.name] = (t.dtype, t.dims, t.strings if t.is_string else bytes(t.raw()))
            for s in doc.model.graph.sparse_initializers:
                out[s.name] = (s.values.dtype, s.dims, bytes(s.values.raw()), bytes(s.indices.raw()))
            return out

        want, got = tensors(src), tensors(back)
        for n in src.model.graph.nodes:
            if n.op == "Constant":
                want.pop(n.outputs[0], None)
                got.pop(n.outputs[0], None)
        assert got == want
        codes = {f.code for f in back.findings}
        if name in ("dtypes", "typed"):  # typed: values from float_data, int32_data... written as raw bytes
            assert {t[0] for t in got.values()} >= {17, 18, 19, 20, 21, 22}
            assert codes == {"ort-unloadable-dtype"}
        else:
            assert not back.findings
    finally:
        src.close()
        back.close()


def test_source_with_problems_refused_nothing_written(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07\x12\x03abc\x3a\xff\xff\xff\xff\x0f")
    dst = tmp_path / "out.ort"
    rc, out, err = run("--export", bad, dst)
    assert rc == 1 and out == ""
    assert err.startswith("onemodel-view: error: ") and "Traceback" not in err
    assert not dst.exists() and [p.name for p in tmp_path.iterdir()] == ["bad.onnx"]


def test_destination_a_file_of_the_source_refused(tmp_path):
    """The external data file of SRC as DST: refused, the data file unchanged."""
    for p in VALID.glob("external.onnx*"):
        shutil.copy(p, tmp_path / p.name)
    data = tmp_path / "external.onnx.data"
    before = data.read_bytes()
    link = tmp_path / "weights.ort"
    os.symlink(data, link)  # the same file under a .ort name
    rc, _out, err = run("--export", tmp_path / "external.onnx", link)
    assert rc == 1
    assert "Io at destination" in err and "reads from" in err
    assert data.read_bytes() == before
    rc, _out, err = run("--export", tmp_path / "external.onnx", tmp_path / "external.onnx")
    assert rc == 1 and "Traceback" not in err


def test_unwritable_destination(tmp_path):
    dst = tmp_path / "no" / "such" / "folder" / "x.ort"
    rc, _out, err = run("--export", VALID / "subgraphs.onnx", dst)
    assert rc == 1 and "Io at destination" in err and "Traceback" not in err


def test_over_two_gib_refused_before_writing(tmp_path):
    """A model whose buffer would pass flatbuffers' 2 GiB (a sparse-file external source of 2 x 1.1 GB):
    Unsupported with the size it would need, exit 1, nothing written (not even a temporary file)."""
    n = 1_100_000_000 // 4
    data = tmp_path / "big.bin"
    with open(data, "wb") as f:
        f.truncate(2 * n * 4)
    inits = []
    for i in range(2):
        t = TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT, dims=[n])
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", "big.bin"), ("offset", str(i * n * 4)), ("length", str(n * 4))):
            t.external_data.add(key=k, value=v)
        inits.append(t)
    nodes = [helper.make_node("Identity", [f"w{i}"], [f"y{i}"]) for i in range(2)]
    g = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [n]) for i in range(2)],
                          initializer=inits)
    src = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "big.onnx")
    dst = tmp_path / "big.ort"
    rc, out, err = run("--export", src, dst)
    assert rc == 1 and out == ""
    assert "Unsupported at InferenceSession" in err and "2,200,00" in err and "2,147,483,647" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.bin", "big.onnx"]


def test_interrupt_mid_copy_leaves_nothing(tmp_path, monkeypatch):
    """Ctrl-C while payloads are copied: the temporary file is removed, DST never appears."""
    monkeypatch.setattr(ort_writer, "CHUNK", 4096)
    src = save(weights_model(), tmp_path / "w.onnx")
    calls = []
    real = ort_writer.start_writeback

    def interrupt(fd, a, b):
        calls.append(a)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real(fd, a, b)

    monkeypatch.setattr(ort_writer, "start_writeback", interrupt)
    doc = opened(src)
    try:
        with pytest.raises(KeyboardInterrupt):
            write_ort(doc.model, tmp_path / "w.ort", threads=2)
    finally:
        doc.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.onnx"]


def test_operator_without_schema_refused(tmp_path):
    """An operator onnx has no schema for: Unsupported at the node, nothing guessed, nothing written."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    g = helper.make_graph([helper.make_node("Frobnicate", ["x"], ["y"], domain="my.ops")], "g", [x],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    src = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("my.ops", 1)]),
               tmp_path / "u.onnx")
    rc, _out, err = run("--export", src, tmp_path / "u.ort")
    assert rc == 1 and "Unsupported at graph.nodes[0]" in err and "my.ops:Frobnicate" in err
    assert not (tmp_path / "u.ort").exists()


def test_bad_align_is_a_usage_error(tmp_path):
    rc, _out, err = run("--export", VALID / "subgraphs.onnx", tmp_path / "x.ort", "--align", "48")
    assert rc == 2 and "power of two" in err
    rc, _out, err = run("--export", VALID / "subgraphs.onnx", tmp_path / "x.ort", "--external-data")
    assert rc == 2 and "inline" in err
    with pytest.raises(FormatError) as e:
        ort_writer.check_align(0)
    assert e.value.kind == Kind.UNSUPPORTED


def test_help_says_the_suffix_selects_ort():
    rc, out, _ = run("--help")
    assert rc == 0 and "ends in .ort" in out.replace("\n", " ").replace("  ", " ")


def test_nonzero_padding_before_an_aligned_payload_is_still_reported(tmp_path):
    """The zero run before an aligned payload is padding; one non-zero byte in it makes it an unowned-bytes
    finding again (at the run's offset), as any other unowned run."""
    src = save(weights_model(), tmp_path / "w.onnx")
    dst = tmp_path / "w.ort"
    assert run("--export", src, dst, "--align", "4096")[0] == 0
    doc = opened(dst)
    try:
        first = min(p.offset for p in doc.extra.payloads)
        runs = [r for r in doc.extra.unowned if r[0] + r[1] + 4 == first]
    finally:
        doc.close()
    assert len(runs) == 1 and runs[0][1] >= 8
    data = bytearray(dst.read_bytes())
    data[runs[0][0] + 1] = 0x5A
    bad = tmp_path / "bad.ort"
    bad.write_bytes(bytes(data))
    doc = omf.open(str(bad), mode="diagnose")
    try:
        assert not doc.problems
        assert [(f.code, f.offset) for f in doc.findings] == [("unowned-bytes", runs[0][0])]
    finally:
        doc.close()
