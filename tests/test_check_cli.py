"""``onemodel-view --check``: exit codes, one JSON object per line, escaped text report, light imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from onemodel_viewer.cli import main
from onemodel_viewer.commands.check import check_file, render, run_check
from onemodel_viewer.textsafe import visible, visible_bytes

from test_reader_util import graph, model, node, pack, tensor, write

EVIL = "x\x1b[31mred\u202eevil\u200b\x07\x9b"


@pytest.fixture
def files(tmp_path):
    ok = write(tmp_path, pack(model(graph(initializers=[tensor("w", 1, [1], 0, 4)])), bytes(4)), "ok.onemodel")
    bad = write(tmp_path, pack(model(graph(nodes=[node("Relu", [EVIL], ["y"])]))), "bad.onemodel")
    finding = write(tmp_path, pack(json.dumps(model(), indent=1)), "finding.onemodel")
    return ok, bad, finding


def run_json(capsys, paths, strict=False):
    rc = run_check([str(p) for p in paths], as_json=True, strict=strict)
    lines = capsys.readouterr().out.splitlines()
    return rc, [json.loads(line) for line in lines], lines


def test_exit_codes(capsys, files):
    ok, bad, finding = files
    assert run_check([str(ok)], as_json=True) == 0
    assert run_check([str(finding)], as_json=True) == 0
    assert run_check([str(finding)], as_json=True, strict=True) == 1
    assert run_check([str(ok), str(bad)], as_json=True) == 1
    assert run_check([str(ok)], as_json=False, strict=True) == 0
    capsys.readouterr()


def test_usage_errors_exit_2(capsys):
    for argv in (["--check"], ["--check", "--summary", "x"], ["--json", "x"]):
        with pytest.raises(SystemExit) as ei:
            main(argv)
        assert ei.value.code == 2
    capsys.readouterr()


def test_json_shape_one_object_per_line(capsys, files, tmp_path):
    ok, bad, finding = files
    missing = tmp_path / "missing.onemodel"
    rc, objs, lines = run_json(capsys, [ok, bad, finding, missing])
    assert rc == 1 and len(lines) == 4
    for o in objs:
        assert set(o) == {"file", "valid", "problems", "findings"}
        for p in o["problems"]:
            assert set(p) == {"kind", "where", "offset", "message", "rule"}
        for f in o["findings"]:
            assert set(f) == {"code", "where", "offset", "message"}
    assert objs[0] == {"file": str(ok), "valid": True, "problems": [], "findings": []}
    assert objs[1]["valid"] is False
    assert objs[1]["problems"][0]["kind"] == "InvalidModel"
    assert objs[1]["problems"][0]["where"] == "manifest.graph.nodes[0].inputs[0]"
    assert isinstance(objs[1]["problems"][0]["offset"], int)
    assert objs[2]["valid"] is True and objs[2]["findings"][0]["code"] == "noncanonical-manifest"
    assert objs[3]["problems"][0]["kind"] == "Io" and objs[3]["valid"] is False
    for line in lines:
        assert line.isascii() and "\x1b" not in line


def test_json_problems0_is_the_strict_error(capsys, files):
    from onemodel_viewer.format.errors import FormatError
    from onemodel_viewer.format.reader import open_path

    _, bad, _ = files
    with pytest.raises(FormatError) as ei:
        open_path(bad)
    _, [obj], _ = run_json(capsys, [bad])
    assert obj["problems"][0] == dict(ei.value.problem.as_json(), rule=obj["problems"][0]["rule"])


def test_json_survives_hostile_bytes(capsys, tmp_path):
    text = json.dumps(model(graph(nodes=[node("Relu", ["\ud800"], ["y"])])))  # lone surrogate escape
    bad_utf8 = pack(b'{"format":"onemodel","x":"\xff\xfe"}')
    paths = [write(tmp_path, pack(text), "s.onemodel"), write(tmp_path, bad_utf8, "u.onemodel"),
             write(tmp_path, b"\x00" * 3, "tiny.onemodel")]
    rc, objs, lines = run_json(capsys, paths)
    assert rc == 1 and all(not o["valid"] for o in objs)
    assert [o["problems"][0]["where"] for o in objs] == ["manifest.graph.nodes[0].inputs[0]", "manifest", "header.magic"]


def test_onnx_files_are_checked(capsys, tmp_path):
    rc, [obj], _ = run_json(capsys, ["testdata/valid/typed.onnx"])
    assert rc == 0 and obj["valid"]
    junk = write(tmp_path, b"\x08\x07\x12\x04junkjunkjunk", "junk.onnx")
    rc, [obj], _ = run_json(capsys, [junk])
    assert rc == 1 and obj["problems"][0]["where"].startswith("onnx")


def test_onnx_checker_failure_is_invalid_model(capsys, tmp_path):
    import onnx
    from onnx import TensorProto, helper

    n = helper.make_node("Relu", ["x"], ["y"])
    g = helper.make_graph([n], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.graph.node[0].op_type = "NoSuchOp"
    p = tmp_path / "bad.onnx"
    onnx.save(m, p)
    rc, [obj], _ = run_json(capsys, [p])
    assert rc == 1 and {"kind": "InvalidModel", "where": "onnx.checker"}.items() <= obj["problems"][-1].items()


def test_text_report_escapes_file_strings(capsys, files):
    _, bad, _ = files
    rc = run_check([str(bad)], as_json=False)
    out = capsys.readouterr().out
    assert rc == 1
    assert "\x1b[31mred" not in out and "\u202e" not in out and "\u200b" not in out and "\x07" not in out
    assert "\\x1b[31mred" in out and "\\u202e" in out
    assert "InvalidModel" in out and "manifest.graph.nodes[0].inputs[0]" in out
    assert "offset 0x" in out


def test_text_report_has_hex_excerpt(files):
    from rich.console import Console

    _, bad, _ = files
    res = check_file(str(bad))
    console = Console(width=120, record=True, color_system=None)
    console.print(render(res))
    text = console.export_text()
    off = res.problems[0].offset
    assert f"{(off // 16) * 16:08x}" in text


def test_check_json_imports_nothing_heavy(files):
    ok, bad, _ = files
    code = (
        "import sys; from onemodel_viewer.cli import main; rc = main(['--check', '--json', sys.argv[1], sys.argv[2]]);"
        "bad=[m for m in ('numpy','textual','onnx','rich') if m in sys.modules]; print('HEAVY', bad)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(ok), str(bad)], capture_output=True, text=True).stdout
    assert "HEAVY []" in out


def test_check_text_imports_no_textual_onnx(files):
    ok, bad, _ = files
    code = (
        "import sys; from onemodel_viewer.cli import main; rc = main(['--check', sys.argv[1], sys.argv[2]]);"
        "bad=[m for m in ('textual','onnx') if m in sys.modules]; print('HEAVY', bad)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(ok), str(bad)], capture_output=True, text=True).stdout
    assert "HEAVY []" in out


def test_installed_command(files):
    ok, bad, _ = files
    r = subprocess.run([sys.executable, "-m", "onemodel_viewer", "--check", "--json", str(ok), str(bad)], capture_output=True, text=True)
    assert r.returncode == 1 and len(r.stdout.splitlines()) == 2


# --- textsafe ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,shown",
    [
        ("plain name_1.weight", "plain name_1.weight"),
        ("日本語 😀", "日本語 😀"),
        ("a\x1bb", "a\\x1bb"),
        ("\x00\x7f\x85\x9b", "\\x00\\x7f\\x85\\x9b"),
        ("\n\t\r", "\\n\\t\\r"),
        ("\u202ertl\u2066\u2069", "\\u202ertl\\u2066\\u2069"),
        ("zero\u200bwidth\ufeff", "zero\\u200bwidth\\ufeff"),
        ("\ud800lone", "\\ud800lone"),
        ("\u2028\u2029", "\\u2028\\u2029"),
        ("\U000e0041tag", "\\U000e0041tag"),
    ],
)
def test_visible(raw, shown):
    assert visible(raw) == shown


def test_visible_truncates():
    s = visible("a" * 1000, 10)
    assert s == "a" * 10 + "…(+990 chars)"
    assert visible("a" * 1000, None) == "a" * 1000


def test_visible_bytes():
    assert visible_bytes(b"ok\xff\x1b") == "ok\\xff\\x1b"
    assert visible_bytes("é".encode()) == "é"


def test_text_report_with_offset_beyond_the_file(tmp_path, capsys):
    """A tensor range claimed past 2^63 must not make the hex excerpt crash (seek overflow)."""
    t = tensor("w", 1, [1], (1 << 63) - 64, 4)
    p = write(tmp_path, pack(model(graph(initializers=[t])), bytes(64)), "far.onemodel")
    assert run_check([str(p)], as_json=False) == 1
    out = capsys.readouterr().out
    assert "Malformed" in out and "initializers[0].data" in out


def test_closed_pipe_is_quiet(tmp_path):
    """Regression: `--check --json ... | head -1` printed a BrokenPipeError traceback."""
    import subprocess
    import sys
    from pathlib import Path

    hostile = sorted(str(p) for p in (Path(__file__).resolve().parent.parent / "testdata" / "hostile").glob("*.onemodel"))
    proc = subprocess.Popen([sys.executable, "-m", "onemodel_viewer", "--check", "--json", *hostile],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()  # the reader goes away after one line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert "Traceback" not in err


def test_run_check_holds_only_the_last_files_closed_document(capsys, files):
    from onemodel_viewer.commands import check

    paths = [str(p) for p in files[:2]]
    run_check(paths, as_json=True)
    capsys.readouterr()
    # the last file's document (closed) and parsed manifest, kept for the one-shot exit to skip freeing
    assert len(check._HELD) == 2 and check._HELD[0].path == paths[-1]
    assert check._HELD[1] is not None and isinstance(check._HELD[1].value, dict)
    run_check(paths[:1], as_json=True)
    capsys.readouterr()
    assert check._HELD[0].path == paths[0]
