"""Real .ort files, made here by ONNX Runtime's own converter from testdata/ and onnx's backend test models.

Each ONNX model goes through ``InferenceSession`` with ``optimized_model_filepath`` set to a
``.ort`` name (optimisations off). Then: the .ort opens strictly as source ``ort``; every
initializer is byte-equal to the ONNX source's tensor of that name (an initializer or a Constant
node's value); node op types are the source's minus Constant nodes; If/Loop/Scan keep their
subgraphs; ``--diff SRC.onnx X.ort`` is equal (ORT's normalisations are equivalences);
``--export`` and ``--convert`` round trips diff equal to the .ort. Skipped without onnxruntime.
"""

from __future__ import annotations

import io
import json
import warnings
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

from onemodel_viewer import cli  # noqa: E402
from onemodel_viewer import format as omf  # noqa: E402
from onemodel_viewer.format.dtypes import AttrType
from onemodel_viewer.format.schema import walk_graphs  # noqa: E402
from ort_convert import to_ort  # noqa: E402 - tests/ helper

ROOT = Path(__file__).resolve().parent.parent
VALID = ROOT / "testdata" / "valid"
TESTDATA = ["external", "out_of_order", "showcase", "sparse", "strings", "subgraphs"]
BACKEND = ["test_if", "test_loop11", "test_scan9_sum", "test_conv_with_strides_padding", "test_gemm_default_matrix_bias",
           "test_lstm_defaults", "test_batchnorm_epsilon", "test_layer_normalization_2d_axis0"]
NOT_DIFF_EQUAL = {"showcase": "ORT inlines its model-local functions (a real structural change)"}


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    d = tmp_path_factory.mktemp("ort")
    out = {}
    for n in TESTDATA:
        src = VALID / f"{n}.onnx"
        if n == "external":  # the external data must sit beside the model
            import shutil

            for p in VALID.glob("external.onnx*"):
                shutil.copy(p, d / p.name)
            src = d / "external.onnx"
        out[n] = (src, d / f"{n}.ort")
        to_ort(src, out[n][1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case.node import collect_testcases

        cases = {c.name: c for c in collect_testcases() if c.name in BACKEND}
    for n in BACKEND:
        src = d / f"{n}.onnx"
        onnx.save(cases[n].model, str(src))
        out[n] = (src, d / f"{n}.ort")
        to_ort(src, out[n][1])
    return out


ALL = TESTDATA + BACKEND


def _source_tensors(mp) -> dict[str, bytes]:
    """name -> raw bytes of every initializer and Constant value (tensor-valued) of the ONNX model, subgraphs too."""
    from onnx import numpy_helper

    out = {}

    def arr(t):
        if t.data_type == onnx.TensorProto.STRING:  # as bytes: a name may not be UTF-8
            return np.array(list(t.string_data), dtype=object).reshape(tuple(t.dims))
        return numpy_helper.to_array(t)

    def graph(g):
        for t in g.initializer:
            out[t.name] = arr(t)
        for n in g.node:
            if n.op_type == "Constant":
                for a in n.attribute:
                    if a.name == "value":
                        out[n.output[0]] = arr(a.t)
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    graph(a.g)
                for sub in a.graphs:
                    graph(sub)

    graph(mp.graph)
    return out


@pytest.mark.parametrize("name", ALL)
def test_initializers_byte_equal_and_ops_kept(models, name):
    src, dst = models[name]
    mp = onnx.load(str(src))
    want = _source_tensors(mp)
    doc = omf.open(dst)
    try:
        assert doc.source == "ort" and doc.valid, doc.problems
        graphs = list(walk_graphs(doc.model.graph))
        n_init = 0
        for g in graphs:
            for t in g.initializers:
                if t.name.startswith("_inlfunc_"):  # made by ORT's function inlining: no source tensor
                    continue
                assert t.name in want, t.name
                if t.is_string:
                    assert list(t.values().reshape(-1)) == list(want[t.name].reshape(-1)), t.name
                    continue
                ref = want[t.name]
                from onemodel_viewer.format.dtypes import encode

                assert t.raw().tobytes() == encode(ref, t.info), t.name
                n_init += 1
        # payloads are views of the mapped file: file_offset points into the .ort
        for p in doc.extra.payloads:
            assert 0 < p.offset < doc.size and p.mod64 == p.offset % 64
        ops_src = sorted(n.op_type for n in mp.graph.node if n.op_type != "Constant")
        assert sorted(n.op for n in doc.model.graph.nodes) == ops_src or name in NOT_DIFF_EQUAL
        for n in doc.model.graph.nodes:
            if n.op in ("If", "Loop", "Scan"):
                assert any(a.type == AttrType.GRAPH for a in n.attributes), n.op
                assert doc.extra.nodes[n.where].execution_provider == "CPUExecutionProvider"
                assert doc.extra.nodes[n.where].since_version > 0
    finally:
        doc.close()


def _diff(a: Path, b: Path) -> dict:
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = cli.main(["--diff", str(a), str(b), "--json"])
    d = json.loads(buf.getvalue())
    assert code == (0 if d["equal"] else 1)
    return d


@pytest.mark.parametrize("name", [n for n in ALL if n not in NOT_DIFF_EQUAL])
def test_diff_with_source_is_equal(models, name):
    src, dst = models[name]
    d = _diff(src, dst)
    assert d["equal"], d["differences"][:5]
    assert any("ONNX Runtime" in e for e in d["equivalences"])
    d = _diff(dst, src)  # either side
    assert d["equal"], d["differences"][:5]


@pytest.mark.parametrize("name", ALL)
def test_export_and_convert_round_trip(models, name, tmp_path, capsys):
    _src, dst = models[name]
    onnx_out, om_out = tmp_path / "rt.onnx", tmp_path / "rt.onemodel"
    assert cli.main(["--export", str(dst), str(onnx_out)]) == 0
    assert cli.main(["--convert", str(dst), str(om_out)]) == 0
    assert "not restored: the original opset list" in capsys.readouterr().err
    assert _diff(dst, onnx_out)["equal"]
    assert _diff(dst, om_out)["equal"]
    assert _diff(om_out, onnx_out)["equal"]


def test_check_json_on_real_files(models):
    files = [str(models[n][1]) for n in ALL]
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = cli.main(["--check", "--json", *files])
    reports = [json.loads(x) for x in buf.getvalue().splitlines()]
    assert code == 0 and all(r["valid"] for r in reports)
    assert set(reports[0]) == {"file", "valid", "problems", "findings", "ort"}
    assert all(r["ort"]["version"] == "6" for r in reports)  # and the alignment ONNX Runtime's converter gives
    assert all(r["ort"]["payload_alignment"] is None or r["ort"]["payload_alignment"] >= 4 for r in reports)


def test_int4_written_by_ort_is_read_with_a_finding(models):
    """ORT writes INT4 initializers with code 22 (not in its own TensorDataType): read as int4, with a finding."""
    doc = omf.open(models["showcase"][1])
    try:
        codes = {f.code for f in doc.findings}
        assert "ort-unloadable-dtype" in codes
        int4 = [t for t in doc.model.graph.initializers if t.dtype == 22]
        assert int4 and int4[0].values().dtype.name == "int4"
    finally:
        doc.close()


def test_unaligned_payload_views(models):
    """Payloads are 4-byte aligned at best: typed views of them still decode (numpy reads unaligned data)."""
    doc = omf.open(models["showcase"][1])
    try:
        for t in doc.model.graph.initializers:
            if not t.is_string and t.length:
                v = t.values()
                assert v.size == t.count
                assert np.asarray(v, dtype=np.float64 if t.info.is_float and t.dtype not in (14, 15) else None).size == t.count
    finally:
        doc.close()


def test_installed_onnxruntime_reads_the_versions_the_table_says(tmp_path):
    """The version table (format/ort/facts.py) against the installed full build: base.ort relabelled as each
    version 1..7 loads exactly when ``reads(version, release)`` says so (the table's 5/6 ranges were once
    written from memory)."""
    from onemodel_viewer.format.ort.facts import reads

    base = ROOT / "testdata" / "hostile" / "ort" / "base.ort"
    doc = omf.open(base)
    at = doc.extra.version_offset + 4  # the version string's one character
    doc.close()
    data = bytearray(base.read_bytes())
    assert data[at:at + 2] == b"6\0"
    release = tuple(int(x) for x in ort.__version__.split(".")[:2])
    for v in "1234567":
        data[at] = ord(v)
        p = tmp_path / f"v{v}.ort"
        p.write_bytes(data)
        so = ort.SessionOptions()
        so.log_severity_level = 3
        try:
            ort.InferenceSession(str(p), so, providers=["CPUExecutionProvider"])
            loaded = True
        except Exception as e:  # onnxruntime's own error type
            assert "version" in str(e), e
            loaded = False
        assert loaded is reads(v, release), (v, release)


def test_export_widens_narrowed_sparse_indices_for_onnx_checker(models, tmp_path):
    """ORT narrows sparse indices (INT64 to INT8); --export wrote them as INT8 and onnx.checker rejected the file
    ("Sparse tensor indices must have INT64 type"). Now they are INT64, the same positions; --convert too."""
    from onnx import numpy_helper

    from onemodel_viewer.format.sparse_indices import widen_sparse_indices

    _src, dst = models["sparse"]
    doc = omf.open(dst)
    try:
        narrowed = {s.name: s.indices for s in doc.model.graph.sparse_initializers}
        assert any(t.dtype != onnx.TensorProto.INT64 for t in narrowed.values())
        want = {n: t.values().astype(np.int64).tolist() for n, t in narrowed.items()}
        same, n = widen_sparse_indices(doc.model)
        assert n == len([t for t in narrowed.values() if t.dtype != onnx.TensorProto.INT64])
        again, zero = widen_sparse_indices(same)
        assert zero == 0 and again is same  # nothing left to widen: the model itself
    finally:
        doc.close()
    out = tmp_path / "sparse.onnx"
    assert cli.main(["--export", str(dst), str(out)]) == 0
    mp = onnx.load(str(out))
    onnx.checker.check_model(mp, full_check=False)
    got = {s.values.name: s.indices for s in mp.graph.sparse_initializer}
    assert {n: t.data_type for n, t in got.items()} == {n: onnx.TensorProto.INT64 for n in want}
    assert {n: numpy_helper.to_array(t).tolist() for n, t in got.items()} == want
    assert _diff(dst, out)["equal"]
    om = tmp_path / "sparse.onemodel"  # --convert writes them as --export does (the two round trips diff equal)
    assert cli.main(["--convert", str(dst), str(om)]) == 0
    doc = omf.open(om)
    try:
        assert {s.name: (s.indices.dtype, s.indices.values().tolist()) for s in doc.model.graph.sparse_initializers} \
            == {n: (onnx.TensorProto.INT64, v) for n, v in want.items()}
    finally:
        doc.close()
    assert _diff(om, out)["equal"]


@pytest.mark.parametrize("name, message", [("Unsupported-external-data-offset.ort", "external data"),
                                           ("Finding-unloadable-dtype.ort", "Unsupported tensor data type")])
def test_onnxruntime_refuses_what_the_findings_say(name, message):
    """The finding file (testdata/hostile/ort) opens here with a finding, the external_data_offset file is
    Unsupported here; ONNX Runtime itself refuses both."""
    so = ort.SessionOptions()
    so.log_severity_level = 3
    with pytest.raises(Exception) as info:
        ort.InferenceSession(str(ROOT / "testdata" / "hostile" / "ort" / name), so, providers=["CPUExecutionProvider"])
    assert message in str(info.value)
