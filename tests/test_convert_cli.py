"""``--convert`` / ``--export``: exit codes, one-line errors, no partial output, sources untouched."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys

import onnx
import pytest
from onnx import helper

from onemodel_viewer import format as omf
from onemodel_viewer.cli import main
from onemodel_viewer.format.onemodel import writer
from onemodel_viewer.format.schema import all_tensors

VALID = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "valid")


def _sha(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_convert_and_export_round_trip(tmp_path, capsys):
    src = os.path.join(VALID, "showcase.onnx")
    before = _sha(src)
    assert main(["--convert", src, str(tmp_path / "s.onemodel")]) == 0
    assert capsys.readouterr().err == ""
    assert (tmp_path / "s.onemodel").read_bytes() == open(os.path.join(VALID, "showcase.onemodel"), "rb").read()
    assert main(["--export", str(tmp_path / "s.onemodel"), str(tmp_path / "s.onnx")]) == 0
    assert main(["--convert", str(tmp_path / "s.onnx"), str(tmp_path / "s2.onemodel")]) == 0
    assert (tmp_path / "s2.onemodel").read_bytes() == (tmp_path / "s.onemodel").read_bytes()
    assert _sha(src) == before
    onnx.checker.check_model(onnx.load(str(tmp_path / "s.onnx")), full_check=True)


def test_convert_onemodel_source_rewrites_canonically(tmp_path):
    """unknown_fields.onemodel carries extra fields: converting it gives the canonical file of the same model."""
    assert main(["--convert", os.path.join(VALID, "unknown_fields.onemodel"), str(tmp_path / "u.onemodel")]) == 0
    assert (tmp_path / "u.onemodel").read_bytes() == open(os.path.join(VALID, "dtypes.onemodel"), "rb").read()


def test_convert_external_data(tmp_path):
    for name in ("external.onnx", "external.onnx.data"):
        shutil.copy(os.path.join(VALID, name), tmp_path / name)
    assert main(["--convert", str(tmp_path / "external.onnx"), str(tmp_path / "e.onemodel")]) == 0
    assert (tmp_path / "e.onemodel").read_bytes() == open(os.path.join(VALID, "external.onemodel"), "rb").read()


def test_converting_an_onnx_file_loads_no_manifest_parser(tmp_path):
    """A process that converts an ONNX file reads no OneModel manifest: the manifest parser, the builder
    (and orjson) stay unloaded; the output is the same file as before."""
    for name in ("external.onnx", "external.onnx.data"):
        shutil.copy(os.path.join(VALID, name), tmp_path / name)
    code = (
        "import sys; from onemodel_viewer.cli import main; rc = main(['--convert', sys.argv[1], sys.argv[2]]);"
        "print('LOADED', [m for m in ('onemodel_viewer.format.onemodel.manifest', 'onemodel_viewer.format.onemodel.builder', 'orjson')"
        " if m in sys.modules], rc)"
    )
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "external.onnx"), str(tmp_path / "e.onemodel")],
                       capture_output=True, text=True)
    assert "LOADED [] 0" in r.stdout, r.stdout + r.stderr
    assert (tmp_path / "e.onemodel").read_bytes() == open(os.path.join(VALID, "external.onemodel"), "rb").read()


def test_warnings_do_not_fail(tmp_path, capsys):
    assert main(["--convert", os.path.join(VALID, "types.onnx"), str(tmp_path / "t.onemodel")]) == 0
    err = capsys.readouterr().err
    assert err.count("warning:") == 2 and "shape[1]" in err


@pytest.mark.parametrize("flag", ["--convert", "--export"])
def test_refuses_destination_equal_to_source(tmp_path, capsys, flag):
    src = tmp_path / "m.onemodel"
    shutil.copy(os.path.join(VALID, "dtypes.onemodel"), src)
    before = _sha(src)
    assert main([flag, str(src), str(src)]) == 1
    line = _one_error_line(capsys)
    assert line.startswith("onemodel-view: error: Io at destination:")
    os.link(src, tmp_path / "link.onemodel")
    assert main([flag, str(src), str(tmp_path / "link.onemodel")]) == 1
    _one_error_line(capsys)
    assert _sha(src) == before and _sha(tmp_path / "link.onemodel") == before


def test_refuses_destination_equal_to_external_data(tmp_path, capsys):
    for name in ("external.onnx", "external.onnx.data"):
        shutil.copy(os.path.join(VALID, name), tmp_path / name)
    before = _sha(tmp_path / "external.onnx.data")
    assert main(["--convert", str(tmp_path / "external.onnx"), str(tmp_path / "external.onnx.data")]) == 1
    assert "Io at destination" in _one_error_line(capsys)
    assert _sha(tmp_path / "external.onnx.data") == before


def test_errors_are_one_line_with_kind_and_where(tmp_path, capsys):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x0a\xff\xff\xff\xff\x0f not protobuf")
    assert main(["--convert", str(bad), str(tmp_path / "o.onemodel")]) == 1
    assert _one_error_line(capsys).startswith("onemodel-view: error: Malformed at onnx:")
    assert main(["--convert", str(tmp_path / "missing.onnx"), str(tmp_path / "o.onemodel")]) == 1
    assert _one_error_line(capsys).startswith("onemodel-view: error: Io at ")
    hostile = tmp_path / "h.onemodel"
    blob = bytearray(open(os.path.join(VALID, "dtypes.onemodel"), "rb").read())
    blob[12] = 1  # flags
    hostile.write_bytes(bytes(blob))
    assert main(["--export", str(hostile), str(tmp_path / "o.onnx")]) == 1
    assert _one_error_line(capsys).startswith("onemodel-view: error: Unsupported at header.flags")
    assert main(["--convert", str(tmp_path / "o.onemodel"), str(tmp_path / "missing_dir" / "x.onemodel")]) == 1
    _one_error_line(capsys)
    assert sorted(os.listdir(tmp_path)) == ["bad.onnx", "h.onemodel"]


def test_file_strings_in_errors_are_escaped(tmp_path, capsys):
    m = helper.make_model(helper.make_graph([helper.make_node("Relu", ["in\x1b[31m\u202e"], ["y"])], "g", [],
                                            [helper.make_tensor_value_info("y", 1, [1])]))
    p = tmp_path / "m.onnx"
    p.write_bytes(m.SerializeToString())
    assert main(["--convert", str(p), str(tmp_path / "o.onemodel")]) == 1
    line = _one_error_line(capsys)
    assert line.startswith("onemodel-view: error: InvalidModel at onnx.graph.nodes[0].inputs[0]")
    assert "\x1b" not in line and "\u202e" not in line


@pytest.mark.parametrize("exc", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_no_partial_output_when_writing_fails(tmp_path, monkeypatch, capsys, exc):
    src = os.path.join(VALID, "showcase.onnx")
    before = _sha(src)
    real = writer.copy_storage_range
    calls = []

    def flaky(out, storage, offset, length, fds=None):
        calls.append(1)
        if len(calls) == 5:
            raise exc
        return real(out, storage, offset, length, fds)

    monkeypatch.setattr(writer, "copy_storage_range", flaky)
    dst = tmp_path / "s.onemodel"
    code = main(["--convert", src, str(dst)])
    assert code == (1 if isinstance(exc, OSError) else 130)
    assert os.listdir(tmp_path) == []
    assert _sha(src) == before
    capsys.readouterr()


def test_export_failure_leaves_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(writer, "write_all", lambda f, data: (_ for _ in ()).throw(OSError(5, "I/O error")))
    assert main(["--export", os.path.join(VALID, "showcase.onemodel"), str(tmp_path / "s.onnx")]) == 1
    assert "Io at destination" in _one_error_line(capsys)
    assert os.listdir(tmp_path) == []


def test_command_line_process(tmp_path):
    """The installed entry point: exit codes and no traceback, in a real process."""
    exe = [sys.executable, "-m", "onemodel_viewer"]
    ok = subprocess.run(exe + ["--convert", os.path.join(VALID, "subgraphs.onnx"), str(tmp_path / "s.onemodel")],
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run(exe + ["--export", str(tmp_path / "nope.onemodel"), str(tmp_path / "x.onnx")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "Traceback" not in bad.stderr and bad.stderr.count("\n") == 1
    doc = omf.open(tmp_path / "s.onemodel")
    assert len(list(all_tensors(doc.model))) > 0
    doc.close()


HOSTILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "hostile")


@pytest.mark.parametrize("name,where", [
    ("valid-nesting-64-graphs.onemodel", "manifest.graph.nodes[5].attributes[0].value.nodes[0].attributes[0].value"),
    ("valid-nesting-64-types.onemodel", "manifest.graph.inputs[0].type.inner.inner"),
])
def test_export_nested_past_protobuf_depth_is_refused(tmp_path, capsys, name, where):
    """--export wrote these valid models as ONNX that onnx.load (and this project) reject as Malformed, and
    exited 0. Now: exit 1, one error line naming Unsupported, the deepest path and the limit, nothing written."""
    src = os.path.join(HOSTILE, name)
    before = _sha(src)
    dst = tmp_path / "out" / "m.onnx"
    dst.parent.mkdir()
    assert main(["--export", src, str(dst)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if ": error: " in line]  # the files' findings are warnings
    assert len(errors) == 1, err
    assert errors[0].startswith(f"onemodel-view: error: Unsupported at {where}")
    assert "stop at 100" in errors[0]
    assert os.listdir(dst.parent) == []
    assert _sha(src) == before


def test_export_at_protobuf_depth_100_exits_0_and_loads(tmp_path, capsys):
    """The deepest model protobuf decodes (34 graph levels, the innermost empty: 100 messages) still exports."""
    from test_reader_util import graph, model, node, pack

    inner = graph()
    for level in range(33, 0, -1):
        inner = graph(nodes=[node("If", [], [f"o{level}"], attributes=[{"name": "then_branch", "type": 5, "value": inner}])])
    src = tmp_path / "deep.onemodel"
    src.write_bytes(pack(model(inner)))
    assert main(["--export", str(src), str(tmp_path / "deep.onnx")]) == 0
    assert ": error: " not in capsys.readouterr().err
    g = onnx.load(str(tmp_path / "deep.onnx")).graph
    for _ in range(33):
        g = g.node[0].attribute[0].g
    assert len(g.node) == 0
