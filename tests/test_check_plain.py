"""``--check``'s text report to a pipe or a file: plain text made without rich (commands/plaintext.py), the same
text rich's Console printed there before (issue 28: importing rich was ~30 ms of a ~100 ms check)."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from rich.console import Console

from onemodel_viewer.commands import plaintext
from onemodel_viewer.commands.check import _shared_summary, check_file, render

from test_check_cli import EVIL
from test_reader_util import graph, model, node, pack, tensor, write


@pytest.fixture
def files(tmp_path):
    ok = write(tmp_path, pack(model(graph(initializers=[tensor("w", 1, [1], 0, 4)])), bytes(4)), "ok.onemodel")
    bad = write(tmp_path, pack(model(graph(nodes=[node("Relu", [EVIL], ["y"]), node("Relu", ["y"], [EVIL])]))),
                "bad.onemodel")
    finding = write(tmp_path, pack(json.dumps(model(), indent=1)), "finding.onemodel")
    return ok, bad, finding


def _rich_text(renderable) -> str:
    """What rich's Console printed to a non-terminal before (the old run_check's console)."""
    buf = io.StringIO()
    Console(file=buf, highlight=False, soft_wrap=True, width=10_000).print(renderable)
    return buf.getvalue()


@pytest.mark.parametrize("strict", [False, True])
def test_plain_report_is_what_rich_printed(files, strict):
    for path in files:
        result = check_file(str(path))
        assert str(render(result, strict, plaintext)) + "\n" == _rich_text(render(result, strict))
    shared = [("k", [("a\x1b.onnx", "w.bin"), ("b.onnx", "w.bin")])]
    assert str(_shared_summary(shared, plaintext)) + "\n" == _rich_text(_shared_summary(shared))


def test_plain_report_covers_problems_with_excerpts(files):
    result = check_file(str(files[1]))
    text = str(render(result, False, plaintext))
    assert result.problems and "INVALID" in text and "\x1b" not in text and "  00000" in text  # hex excerpt rows


def test_check_to_a_pipe_imports_no_rich(files):
    ok, bad, _ = files
    code = (
        "import sys; from onemodel_viewer.cli import main; rc = main(['--check', sys.argv[1], sys.argv[2]]);"
        "print('RICH', 'rich' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(ok), str(bad)], capture_output=True, text=True).stdout
    assert "RICH False" in out and "INVALID" in out
