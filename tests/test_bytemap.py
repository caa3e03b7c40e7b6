"""tui.bytemap: who owns each byte, what shares bytes with a tensor, the hex pane's colour runs (issue 11)."""

from __future__ import annotations

import pytest

from onemodel_viewer.format.document import Document, Header
from onemodel_viewer.format.schema import Graph, Model, Tensor
from onemodel_viewer.format.storage import BytesStorage
from onemodel_viewer.tui.hex.bytemap import ByteMap

DO = 128
"""Where the data region of :func:`doc_with` starts."""


def doc_with(spans: list[tuple[int, int]]) -> Document:
    """A OneModel-like document (64-byte header, 40-byte manifest, data at 128) with tensors t0, t1...
    at the given (data offset, length)."""
    data_len = max((o + n for o, n in spans), default=0) + 64
    size = DO + data_len
    storage = BytesStorage(bytes(size))
    tensors = tuple(Tensor(f"t{i}", 2, (n,), offset=o, length=n, file_offset=DO + o, storage=storage,
                           where=f"manifest.graph.initializers[{i}]") for i, (o, n) in enumerate(spans))
    model = Model(ir_version=8, graph=Graph("g", initializers=tensors, where="manifest.graph"))
    header = Header(b"ONEMODEL", 1, 0, 64, 40, DO, data_len, size, 0)
    return Document("x.onemodel", "onemodel", size, storage, header, (64, 40), (DO, data_len), model)


SPANS = [(0, 640)] + [(64 * k, 64) for k in range(10)] + [(0, 32), (64, 16), (64, 16), (600, 8)]


@pytest.mark.parametrize("off, owner, at", [
    (0, "tensor t0 +0 (+2 sharing)", ["t0", "t1", "t11"]),
    (20, "tensor t0 +20 (+2 sharing)", ["t0", "t1", "t11"]),
    (40, "tensor t0 +40 (+1 sharing)", ["t0", "t1"]),
    (64, "tensor t2 +0 (+3 sharing)", ["t2", "t13", "t12", "t0"]),
    (100, "tensor t2 +36 (+1 sharing)", ["t2", "t0"]),
    (603, "tensor t14 +3 (+2 sharing)", ["t14", "t10", "t0"]),
    (639, "tensor t10 +63 (+1 sharing)", ["t10", "t0"]),
    (640, "data region: gap (no tensor)", []),
])
def test_owner_at_pinned(off, owner, at):
    """Pinned from the running-maximum scan the max-end tree replaced: the same owners, the last to start first."""
    bm = ByteMap(doc_with(SPANS))
    assert bm.owner_at(DO + off) == owner
    assert [r.name for r in bm.tensors_at(DO + off)] == at


def test_sharing_and_runs_pinned():
    """Pinned from the code before the max-end tree: sharing lists the others in start order."""
    doc = doc_with(SPANS)
    bm = ByteMap(doc)
    got = {t.name: [o.name for o in bm.sharing(t)] for t in doc.model.graph.initializers}
    assert got == {
        "t0": ["t11", "t1", "t12", "t13", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9", "t10", "t14"],
        "t1": ["t11", "t0"], "t2": ["t0", "t12", "t13"], "t3": ["t0"], "t4": ["t0"], "t5": ["t0"], "t6": ["t0"],
        "t7": ["t0"], "t8": ["t0"], "t9": ["t0"], "t10": ["t0", "t14"], "t11": ["t1", "t0"],
        "t12": ["t0", "t13", "t2"], "t13": ["t0", "t12", "t2"], "t14": ["t0", "t10"],
    }
    assert bm.runs(DO, DO + 128) == [(DO, DO + 128, ("overlap", 0))]
    assert bm.runs(DO + 576, DO + 704) == [(DO + 576, DO + 640, ("overlap", 0)), (DO + 640, DO + 704, ("data", 0))]


def test_many_tensors_on_the_same_bytes():
    doc = doc_with([(0, 64)] * 20)
    bm = ByteMap(doc)
    assert bm.owner_at(DO + 3) == "tensor t19 +3 (+7 sharing)"  # at most 8 looked at
    t = doc.model.graph.initializers[4]
    assert [o.name for o in bm.sharing(t)] == [f"t{i}" for i in range(20) if i != 4]


class _CountedList(list):
    """A list that counts the elements handed out by indexing."""

    visits = 0

    def __getitem__(self, i):
        _CountedList.visits += 1
        return list.__getitem__(self, i)


def test_queries_under_a_long_tensor_look_at_few_tensors():
    """Every query scanned back over every tensor that starts under a long one (its end kept the running
    maximum high): a hex line, the cursor's owner and the detail pane's "shares bytes with" cost O(n) each
    on a file where one tensor covers n others. Now they look at the tensors they report, plus a few."""
    n = 2000
    spans = [(0, 64 * n)] + [(64 * k + 8, 8) for k in range(n)]
    doc = doc_with(spans)
    bm = ByteMap(doc)
    bm.spans.tensors = _CountedList(bm.spans.tensors)  # what every query reads its tensors from
    mid = DO + 64 * (n // 2)
    _CountedList.visits = 0
    runs = bm.runs(mid, mid + 16)  # one hex line: a gap under t0, then a small tensor
    assert [k for _s, _e, (k, _i) in runs] == ["tensor", "overlap"]
    assert bm.owner_at(mid + 2) == "tensor t0 +64,002"
    assert _CountedList.visits <= 40  # was ~1,000 per query
    _CountedList.visits = 0
    small = doc.model.graph.initializers[n // 2 + 1]
    assert [o.name for o in bm.sharing(small)] == ["t0"]
    assert _CountedList.visits <= 4  # was ~1,000
    assert len(bm.sharing(doc.model.graph.initializers[0])) == n


def test_a_map_without_tensors():
    """sharing() on a map without tensors (an ONNX file whose tensors are all external) raised IndexError."""
    doc = doc_with([(0, 64)])
    bm = ByteMap.for_external_file("other.data", 256, [])
    t = doc.model.graph.initializers[0]
    assert bm.sharing(t) == [] and bm.tensors_at(DO) == [] and bm.owner_at(DO) == "other.data +128 (no tensor)"
