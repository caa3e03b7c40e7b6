"""The hex pane's byte map of an .ort file: flatbuffer objects coloured and named by owner; payloads are tensors."""

from __future__ import annotations

from pathlib import Path

from onemodel_viewer import format as omf
from onemodel_viewer.tui.hex.bytemap import ByteMap

BASE = Path(__file__).resolve().parent.parent / "testdata" / "hostile" / "ort" / "base.ort"


def test_bytemap_names_flatbuffer_owners_and_payloads():
    doc = omf.open(BASE)
    try:
        bm = ByteMap(doc)
        assert bm.owner_at(0).startswith("header.root offset")
        kinds = {r.kind for r in bm.base}
        assert {"header", "manifest", "padding", "tail", "annotation"} <= kinds
        assert all(a.end <= b.start for a, b in zip(bm.base, bm.base[1:]))  # no overlaps
        (w,) = [t for t in doc.model.graph.initializers if t.name == "w"]
        assert bm.owner_at(w.file_offset + 1) == "tensor w +1"
        root = doc.extra.spans[[s[2] for s in doc.extra.spans].index("table")]
        assert bm.owner_at(root[0]).startswith("table InferenceSession")
        assert doc.extra.owner_at(w.file_offset).kind == "payload"
    finally:
        doc.close()
