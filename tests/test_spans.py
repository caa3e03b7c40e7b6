"""One record for "a byte range and who owns it": every byte map describes its bytes as analysis.spans.Span.

The OneModel layout, the external-data layout, the .ort layout and the viewer's byte map each had a
type of their own (Extent, external_layout.Span, PayloadRow / UnownedRow, bytemap.Region) for the same
thing; a consumer had to know which map it was reading.
"""

from __future__ import annotations

from pathlib import Path

from onemodel_viewer import format as omf
from onemodel_viewer.analysis.layout.external import external_layout
from onemodel_viewer.analysis.layout.onemodel import layout
from onemodel_viewer.analysis.layout.ort import ort_layout
from onemodel_viewer.analysis.layout.spans import Span

ROOT = Path(__file__).resolve().parent.parent / "testdata"


def _bytemap(doc):
    from onemodel_viewer.tui.hex.bytemap import ByteMap

    return ByteMap(doc)


def _all_spans(spans) -> bool:
    spans = list(spans)
    return bool(spans) and all(type(s) is Span for s in spans)


def test_onemodel_layout_and_bytemap_are_spans():
    with omf.open(ROOT / "valid" / "shared_bytes.onemodel") as doc:
        lay = layout(doc)
        assert _all_spans(lay.extents)
        bm = _bytemap(doc)
        assert _all_spans(bm.base)
        # the viewer's tensor byte ranges are the layout's: same ranges, same tensors
        assert (bm.spans.starts, bm.spans.ends) == (lay.tensors.starts, lay.tensors.ends)
        assert bm.spans.tensors == lay.tensors.tensors


def test_external_layout_spans():
    with omf.open(ROOT / "valid" / "external.onnx", mode="diagnose") as doc:
        (fl, *_rest) = external_layout(doc)
        assert _all_spans(fl.spans)
        assert all(s.owners == 1 for s in fl.spans if s.kind == "tensor")
        assert all(s.owners == 2 for s in fl.spans if s.kind == "overlap")


def test_ort_layout_and_bytemap_are_spans():
    with omf.open(ROOT / "hostile" / "ort" / "base.ort", mode="diagnose") as doc:
        lay = ort_layout(doc)
        assert _all_spans(lay.payloads) and all(p.kind == "payload" for p in lay.payloads)
        assert all(type(u) is Span and u.kind == "unowned" for u in lay.unowned)
        assert _all_spans(_bytemap(doc).base)
