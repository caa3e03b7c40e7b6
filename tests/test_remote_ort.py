""".ort at a URL: the verifying walk reads through the block cache and fetches what it reads; payloads are
fetched when used. It used to fetch the whole file before the walk."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from onemodel_viewer.format import reader
from onemodel_viewer.format.remote import storage as remote_storage
from onemodel_viewer.format.remote.lazy import CHUNK, LazyCopy
from onemodel_viewer.format.schema import all_tensors

sys.path.insert(0, str(Path(__file__).parent))
from remote_server import RangeServer  # noqa: E402
from ort_convert import to_ort  # noqa: E402 - tests/ helper


@pytest.fixture(scope="module")
def big_ort(tmp_path_factory) -> Path:
    """A real .ort (ONNX Runtime's converter) of four 4 MiB initializers."""
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    d = tmp_path_factory.mktemp("ort")
    rng = np.random.default_rng(5)
    inits, nodes, prev = [], [], "x"
    for i in range(4):
        inits.append(numpy_helper.from_array(rng.standard_normal((1024, 1024)).astype(np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]))
        prev = f"m{i}"
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1024])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 1024])], initializer=inits)
    src, dst = d / "m.onnx", d / "m.ort"
    src.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    to_ort(src, dst)
    return dst


def test_ort_at_a_url_is_walked_without_its_payloads(big_ort):
    local = reader.open_path(str(big_ort), "strict")
    with RangeServer(str(big_ort.parent)) as srv:
        doc = reader.open_path(srv.url(big_ort.name), "strict")
        try:
            opened = srv.stats()
            assert opened["bytes"] < doc.size // 4, srv.log  # the first MiB and a chunk per tensor table
            assert opened["requests"] <= 2 + 4 + 2
            assert doc.extra.spans == local.extra.spans and doc.extra.unowned == local.extra.unowned
            assert [(p.kind, p.where, p.offset) for p in doc.problems] == [(p.kind, p.where, p.offset) for p in local.problems]
            assert [(f.code, f.where, f.offset) for f in doc.findings] == [(f.code, f.where, f.offset) for f in local.findings]
            here = [(t.where, t.name, t.dims, t.file_offset, t.length) for t in all_tensors(local.model)]
            assert [(t.where, t.name, t.dims, t.file_offset, t.length) for t in all_tensors(doc.model)] == here
            t = all_tensors(doc.model)[2]
            np.testing.assert_array_equal(t.values(), all_tensors(local.model)[2].values())
            assert srv.stats()["bytes"] - opened["bytes"] >= t.length - CHUNK  # fetched on use
        finally:
            doc.close()
            local.close()


def test_lazy_copy_fetches_what_is_needed_and_skips_far_gaps(tmp_path):
    data = os.urandom(24 << 20)
    (tmp_path / "blob.bin").write_bytes(data)
    with RangeServer(str(tmp_path)) as srv:
        st = remote_storage.open_remote(srv.url("blob.bin"), first=4096)
        lazy = LazyCopy(st)
        srv.reset()
        lazy.need(11 << 20, 100)  # far from the first 4 KiB: its chunk only
        assert lazy.buf[11 << 20:(11 << 20) + 100] == data[11 << 20:(11 << 20) + 100]
        assert [r for _p, r, _s, _n in srv.log] == [f"bytes={11 << 20}-{(11 << 20) + CHUNK - 1}"]
        lazy.need(100, 8)  # the first 4 KiB are in the storage's cache, the rest of the chunk is not
        assert lazy.buf[100:108] == data[100:108]
        for at in range((11 << 20) - 10, 8 << 20, -(100 << 10)):  # a walk down the file: read ahead, growing
            lazy.need(at, 16)
            assert lazy.buf[at:at + 16] == data[at:at + 16]
        sizes = [n for _p, _r, _s, n in srv.log[2:]]
        assert sizes == sorted(sizes) and sizes[-1] > 4 * CHUNK  # each request longer than the one before
        assert not any(lazy.have[(4 << 20) // CHUNK:(6 << 20) // CHUNK])  # never asked for: never fetched
        assert srv.stats()["bytes"] < 6 << 20
        lazy.close()
        st.close()


def test_a_size_no_address_space_holds_is_a_clear_error():
    """A server may state any size: a walk buffer that cannot be set aside is Unsupported, not a traceback."""
    from onemodel_viewer.format import FormatError, Kind

    class Huge:
        size = 1 << 62

    with pytest.raises(FormatError) as e:
        LazyCopy(Huge())
    assert (e.value.kind, e.value.where) == (Kind.UNSUPPORTED, "file") and "address space" in e.value.message


def test_lazy_copy_fetches_the_rest_at_once_after_a_quarter(tmp_path):
    """Small payloads between tables are fetched along; once that is a quarter of the file, the rest comes in
    parallel pieces instead of one round trip at a time."""
    from onemodel_viewer.format.remote.lazy import WHOLE

    data = os.urandom(16 << 20)
    (tmp_path / "blob.bin").write_bytes(data)
    with RangeServer(str(tmp_path)) as srv:
        st = remote_storage.open_remote(srv.url("blob.bin"), first=4096)
        lazy = LazyCopy(st)
        at = len(data) - 16
        while lazy.fetched * WHOLE < len(data):  # a walk down the file
            lazy.need(at, 16)
            at -= 64 << 10
        assert not all(lazy.have)
        lazy.need(1 << 20, 16)  # far from the walk: on its own, this chunk only
        assert all(lazy.have) and lazy.buf[:] == data
        lazy.close()
        st.close()


def test_hint_fetches_the_tables_of_a_vector_together(tmp_path):
    """The tables of a vector (an .ort graph's initializers, each beside its payload) were fetched one round
    trip at a time as the walk came to each; the walk now names them first and they are fetched together."""
    import threading

    data = os.urandom(16 << 20)
    (tmp_path / "blob.bin").write_bytes(data)
    with RangeServer(str(tmp_path)) as srv:
        st = remote_storage.open_remote(srv.url("blob.bin"), first=4096)
        threads = set()
        fetch = st.source.fetch

        def spy(lo, hi):
            threads.add(threading.current_thread().name)
            return fetch(lo, hi)

        st.source.fetch = spy
        lazy = LazyCopy(st)
        srv.reset()
        tables = [(13 << 20) + 8, (9 << 20) + 8, (5 << 20) + 8, (1 << 20) + 8]
        lazy.hint(tables)
        assert sorted(r for _p, r, _s, _n in srv.log) == sorted(
            f"bytes={t - 8}-{t - 8 + CHUNK - 1}" for t in tables)
        assert len(threads) > 1 and threading.current_thread().name not in threads
        for t in tables:  # the walk comes to each: nothing more to fetch
            lazy.need(t, 64)
            assert lazy.buf[t:t + 64] == data[t:t + 64]
        assert len(srv.log) == 4
        lazy.close()
        st.close()


def test_aligned_padding_of_an_ort_at_a_url(big_ort, tmp_path):
    """Alignment padding before a payload (``--export X.ort --align N``) is told from unowned bytes by reading
    it: at a URL the walk's lazy copy held zeros there (a non-zero byte passed for padding), and the layout
    screen's check took a memoryview of the remote file's lazy sequence (TypeError)."""
    from onemodel_viewer import cli
    from onemodel_viewer.analysis.layout.ort import ort_layout

    aligned = tmp_path / "a.ort"
    assert cli.main(["--export", str(big_ort), str(aligned), "--align", "4096"]) == 0
    local = reader.open_path(str(aligned), "diagnose")
    start, length = next((s, n) for s, n in local.extra.unowned if n >= 8)
    local.close()
    b = bytearray(aligned.read_bytes())
    b[start + length - 1] = 0x55
    (tmp_path / "p.ort").write_bytes(bytes(b))

    def seen(doc):
        lay = ort_layout(doc)
        return ([(f.code, f.where, f.offset) for f in doc.findings], lay.padding_runs,
                [(u.start, u.end, u.nonzero) for u in lay.unowned])

    with RangeServer(str(tmp_path)) as srv:
        for name in ("a.ort", "p.ort"):
            local = reader.open_path(str(tmp_path / name), "diagnose")
            doc = reader.open_path(srv.url(name), "diagnose")
            assert seen(doc) == seen(local), name
            doc.close()
            local.close()
    assert ("unowned-bytes", "file", start) in seen(reader.open_path(str(tmp_path / "p.ort"), "diagnose"))[0]
