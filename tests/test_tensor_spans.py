"""analysis.tensor_spans: the one computation of which tensors hold a byte and which share bytes,
behind both the viewer's byte map and the layout (issue 12)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_bytemap import DO, SPANS, doc_with  # noqa: E402

from onemodel_viewer.analysis.layout.onemodel import layout  # noqa: E402
from onemodel_viewer.analysis.layout.tensor_spans import TensorSpans  # noqa: E402
from onemodel_viewer.tui.hex.bytemap import ByteMap  # noqa: E402


class _Counted(list):
    visits = 0

    def __getitem__(self, i):
        _Counted.visits += 1
        return list.__getitem__(self, i)


def test_layout_and_byte_map_share_the_same_answers():
    """The layout's sharing and the hex pane's come from one TensorSpans computation: they agree."""
    doc = doc_with(SPANS)
    lay, bm = layout(doc, scan=False), ByteMap(doc)
    for t in doc.model.graph.initializers:
        assert lay.sharing(t) == bm.sharing(t)
    for off in (0, 20, 64, 100, 603, 639, 640):
        assert [t.name for t in lay.tensors_at(DO + off)] == [r.name for r in bm.tensors_at(DO + off)]


def test_queries_under_a_long_tensor_walk_few_tree_nodes():
    """A query under a tensor covering n others walks O(log n) nodes of the max-end tree, not the n tensors."""
    n = 4096
    doc = doc_with([(0, 64 * n)] + [(64 * k + 8, 8) for k in range(n)])
    spans = TensorSpans(doc.model.graph.initializers)
    spans._maxend = [_Counted(level) for level in spans._tree()]
    _Counted.visits = 0
    mid = DO + 64 * (n // 2)
    assert [spans.tensors[i].name for i in spans.holding(mid + 2)] == ["t0"]
    assert _Counted.visits <= 60
    _Counted.visits = 0
    small = doc.model.graph.initializers[n // 2 + 1]
    assert [t.name for t in spans.sharing(small)] == ["t0"]
    assert _Counted.visits <= 60


def test_zero_length_tensors_and_duplicates():
    doc = doc_with([(0, 64), (64, 0), (64, 64)])
    inits = doc.model.graph.initializers
    spans = TensorSpans(list(inits) + [inits[0]], empties=True)
    assert [t.name for t in spans.tensors] == ["t0", "t2"] and [t.name for t in spans.empties] == ["t1"]
    assert spans.disjoint() and spans.order == [0, 1]
    assert TensorSpans(inits).empties == []
