"""The command line's output to a pipe or a file, and what --convert / --export report (issue 15.18, 15.20)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "testdata" / "hostile"
SHOWCASE_ONNX = ROOT / "testdata" / "valid" / "showcase.onnx"
SHOWCASE = ROOT / "testdata" / "valid" / "showcase.onemodel"


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path.name} not generated yet")
    return path


def run(*args: str) -> subprocess.CompletedProcess:
    """The CLI with stdout a pipe (not a terminal), COLUMNS unset."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "LANG": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "onemodel_viewer", *args], capture_output=True, text=True, env=env)


def test_check_to_a_pipe_does_not_wrap_or_pad():
    """Piped --check output wrapped at 80 columns (``INVALID  (1⏎problem, 0 findings)``) with trailing spaces."""
    path = need(HOSTILE / "InvalidModel-cycle-two-nodes.onemodel")
    r = run("--check", str(path))
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert lines[0].startswith(str(path)) and "INVALID" in lines[0] and lines[0].rstrip().endswith(")")
    assert "problem" in lines[0] and "finding" in lines[0]
    assert not [line for line in lines if line != line.rstrip()]
    long = [line for line in lines if len(line) > 80]
    assert long, "a report line longer than 80 columns stays one line"


@pytest.mark.parametrize("flag, src, dst", [("--convert", SHOWCASE_ONNX, "out.onemodel"), ("--export", SHOWCASE, "out.onnx")])
def test_convert_and_export_say_what_they_wrote(tmp_path, flag, src, dst):
    """--convert / --export printed nothing: no file name, size, tensor count or time."""
    out = tmp_path / dst
    r = run(flag, str(need(src)), str(out))
    assert r.returncode == 0, r.stderr
    line = r.stdout.strip()
    assert str(out) in line and f"{out.stat().st_size:,} bytes" in line
    assert "36 tensors" in line and line.endswith(" s")


def test_cycle_message_names_its_nodes():
    """``the nodes form a cycle of 2 node(s); 3 nodes cannot be ordered`` named no node."""
    from onemodel_viewer import format as omf

    doc = omf.open(str(need(HOSTILE / "InvalidModel-cycle-two-nodes.onemodel")), mode="diagnose")
    try:
        msg = doc.problems[0].message
    finally:
        doc.close()
    assert "(n0 → n1 → n0)" in msg and "2 nodes" in msg and "node(s)" not in msg
