"""format/ort/fbs.py is ORT's schema as the installed wheel's generated bindings describe it; the reader needs neither.

``scripts/gen_ort_schema.py`` derives the table from the flatc output in the onnxruntime wheel;
this re-derives it and compares (skipped without onnxruntime). Opening an .ort file imports
neither onnxruntime, flatbuffers, textual nor rich.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_schema_table_matches_the_wheel():
    pytest.importorskip("onnxruntime")
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_ort_schema
    finally:
        sys.path.pop(0)
    text = gen_ort_schema.render(gen_ort_schema.derive())
    assert (ROOT / "onemodel_viewer" / "format" / "ort" / "fbs.py").read_text() == text, \
        "the wheel's schema changed: rerun scripts/gen_ort_schema.py"


def test_reading_an_ort_file_imports_no_runtime_and_no_ui():
    code = (
        "import sys\n"
        "from onemodel_viewer import format as omf\n"
        f"d = omf.open({str(ROOT / 'testdata' / 'hostile' / 'ort' / 'base.ort')!r})\n"
        "assert d.source == 'ort' and d.valid\n"
        "bad = [m for m in ('onnxruntime', 'flatbuffers', 'textual', 'rich', 'onnx') if m in sys.modules]\n"
        "print(bad)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_every_table_field_kind_is_known():
    from onemodel_viewer.format.ort.fbs import STRUCTS, TABLES, UNIONS

    for t, fields in TABLES.items():
        vos = [vo for _n, vo, *_ in fields]
        assert vos == sorted(vos) and len(set(vos)) == len(vos), t
        for name, vo, kind, elem, _default in fields:
            assert kind in {"scalar", "string", "table", "union", "vector"}, (t, name)
            if kind == "table":
                assert elem in TABLES
            if kind == "union":
                assert all(m in TABLES for m in UNIONS[elem].values())
            if kind == "vector" and elem.startswith(("table:", "struct:")):
                assert elem.split(":", 1)[1] in (TABLES if elem.startswith("table:") else STRUCTS)
