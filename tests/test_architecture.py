"""The core never imports the UI (STYLE.md rule 1)."""

import subprocess
import sys

CORE = [
    "onemodel_viewer.format",
    "onemodel_viewer.format.reader",
    "onemodel_viewer.format.onemodel.writer",
    "onemodel_viewer.format.onnx.wire",
    "onemodel_viewer.format.onnx.importer",
    "onemodel_viewer.format.onnx.exporter",
    "onemodel_viewer.format.onnx.external",
    "onemodel_viewer.format.onnx.checker",
    "onemodel_viewer.format.onemodel.edit_image",
    "onemodel_viewer.format.onemodel.overlay",
    "onemodel_viewer.commands.shrink_onnx",
    "onemodel_viewer.analysis.layout.external",
    "onemodel_viewer.analysis.layout.onemodel",
    "onemodel_viewer.analysis.stats.compute",
    "onemodel_viewer.analysis.diff.compare",
    "onemodel_viewer.analysis.facts",
    "onemodel_viewer.analysis.search",
    "onemodel_viewer.analysis.diff.byte_diff",
    "onemodel_viewer.analysis.diff.search",
    "onemodel_viewer.analysis.layout.tensor_spans",
    "onemodel_viewer.analysis.layout.spans",
    "onemodel_viewer.analysis.layout.ort",
]


def test_core_imports_without_textual_or_rich():
    code = (
        "import sys\n"
        "sys.modules['textual'] = None\n"
        "sys.modules['rich'] = None\n"
        f"import importlib\nfor m in {CORE!r}:\n    importlib.import_module(m)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_reader_path_imports_no_numpy_onnx_textual():
    code = (
        "import sys, onemodel_viewer.format.reader\n"
        "bad = [m for m in ('numpy', 'onnx', 'textual', 'rich') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
