"""Every surface lists the same findings for the same ONNX file with external data: ``--check``, ``--diff``
(``--json``, each side's ``findings``) and the viewer (the reader's findings plus what its background job
adds, ``analysis.layout.onemodel.file_findings``). On every model of every case of ``testdata/external/``.

Regression: ``--diff`` listed none of the external-data findings ``--check`` reports (``shared-bytes``,
``unowned-bytes``...), and the viewer's background job looked for findings in OneModel files only.
"""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnx")

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "testdata" / "external"
sys.path.insert(0, str(ROOT / "testdata"))
import make_external as mx  # noqa: E402

sys.path.pop(0)

from onemodel_viewer import format as omf  # noqa: E402
from onemodel_viewer.analysis.layout.onemodel import file_findings  # noqa: E402
from onemodel_viewer.commands.check import check_file  # noqa: E402
from onemodel_viewer.commands.diff import run_diff  # noqa: E402

EXPECTED = json.loads((CORPUS / "expected.json").read_text())
MODELS = [(case, model) for case, e in sorted(EXPECTED.items()) for model in sorted(e["models"])]


def _key(f) -> tuple:
    return (f["code"], f["where"], f["offset"], f.get("file"))


@pytest.mark.parametrize("case,model", MODELS, ids=[f"{c}/{m}" for c, m in MODELS])
def test_check_diff_and_viewer_list_the_same_findings(case, model, tmp_path):
    d = tmp_path / case
    shutil.copytree(CORPUS / case, d, symlinks=True)
    mx.make_special(d, case)
    path = str(d / model)
    checked = [_key(f.as_json()) for f in check_file(path).findings]
    assert sorted(c for c, *_ in checked) == sorted(EXPECTED[case]["models"][model]["findings"])

    out, err = io.StringIO(), io.StringIO()
    code = run_diff(path, path, as_json=True, out=out, err=err)
    if code == 2 and not out.getvalue():  # nothing sound to compare: the diff refuses the file (one stderr line)
        assert EXPECTED[case]["models"][model]["problems"], err.getvalue()
    else:
        diffed = json.loads(out.getvalue())["findings"]
        assert [_key(f) for f in diffed["a"]] == checked
        assert [_key(f) for f in diffed["b"]] == checked

    doc = omf.open(path, mode="diagnose")
    try:
        shown = [_key(f.as_json()) for f in list(doc.findings) + file_findings(doc)]
    finally:
        doc.close()
    assert shown == checked


def test_a_case_with_external_findings_is_covered():
    """The corpus has cases whose check lists weights-file findings (else the test above proves little)."""
    codes = {c for e in EXPECTED.values() for m in e["models"].values() for c in m["findings"]}
    assert {"shared-bytes", "unowned-bytes"} <= codes, codes
