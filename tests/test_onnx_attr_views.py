"""ONNX attribute tensors located in the file: a Constant node's ``value`` (PaddlePaddle exports such as
PP-OCR keep all their weights there), a ``tensors`` attribute and the tensors of subgraphs are views of
the model file at their ``raw_data`` bytes, like graph initializers, on disk and over HTTP.

They were copied out of the parsed protobuf at open: their detail said ``@0x0``, the hex pane knew no
bytes of theirs, and a model at a URL was fetched whole to open it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onemodel_viewer.format import FormatError, reader
from onemodel_viewer.format.onnx.wire import strip_raw_data
from onemodel_viewer.format.schema import all_tensors

sys.path.insert(0, str(Path(__file__).parent))
from remote_server import RangeServer  # noqa: E402

BIG = np.random.default_rng(7).standard_normal((1024, 1024)).astype(np.float32)  # 4 MiB: mapped; past a URL's first MiB
SMALL = np.arange(6, dtype=np.int64).reshape(2, 3)
INNER = np.full((4, 4), 2.5, dtype=np.float32)
SUB_INIT = np.arange(8, dtype=np.float16)


def _model() -> onnx.ModelProto:
    """Weights in Constant nodes (raw_data), one typed (float_data), a ``tensors`` attribute, an If whose
    branch has a Constant and an initializer of its own."""
    then = helper.make_graph(
        [helper.make_node("Constant", [], ["inner"], value=numpy_helper.from_array(INNER, "inner_w")),
         helper.make_node("Identity", ["inner"], ["then_out"])],
        "then", [], [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, [4, 4])],
        initializer=[numpy_helper.from_array(SUB_INIT, "sub_init")])
    other = helper.make_graph(
        [helper.make_node("Constant", [], ["else_out"], value_floats=[1.0] * 16)],
        "else", [], [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, [16])])
    nodes = [
        helper.make_node("Constant", [], ["w"], value=numpy_helper.from_array(BIG, "conv_w")),
        helper.make_node("Constant", [], ["shape"], value=numpy_helper.from_array(SMALL, "shape_c")),
        helper.make_node("Constant", [], ["typed"], value=helper.make_tensor("typed_c", TensorProto.FLOAT, [3], [1, 2, 3])),
        helper.make_node("Custom", ["w"], ["y"], domain="test.custom",
                         pieces=[numpy_helper.from_array(SMALL + 10, "p0"), numpy_helper.from_array(SMALL + 20, "p1")]),
        helper.make_node("If", ["cond"], ["branch"], then_branch=then, else_branch=other),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("branch", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("shape", TensorProto.INT64, [2, 3]),
                               helper.make_tensor_value_info("typed", TensorProto.FLOAT, [3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("test.custom", 1)])


EXPECTED = {  # where -> the values its bytes hold
    "onnx.graph.nodes[0].attributes[0].value": BIG,
    "onnx.graph.nodes[1].attributes[0].value": SMALL,
    "onnx.graph.nodes[3].attributes[0].value[0]": SMALL + 10,
    "onnx.graph.nodes[3].attributes[0].value[1]": SMALL + 20,
    "onnx.graph.nodes[4].attributes[1].value.nodes[0].attributes[0].value": INNER,  # then_branch (sorted by name)
    "onnx.graph.nodes[4].attributes[1].value.initializers[0]": SUB_INIT,
}


@pytest.fixture(scope="module")
def model_file(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("attr") / "consts.onnx"
    p.write_bytes(_model().SerializeToString())
    return p


def _by_where(doc) -> dict:
    return {t.where: t for t in all_tensors(doc.model)}


def test_stripper_finds_every_raw_data_where_the_importer_puts_it(model_file):
    blob = model_file.read_bytes()
    _stripped, spans = strip_raw_data(blob)
    assert set(spans) == set(EXPECTED)
    for where, (off, ln) in spans.items():
        assert blob[off:off + ln] == EXPECTED[where].tobytes(), where


def test_constant_tensors_are_views_of_the_file_at_their_raw_data(model_file):
    blob = model_file.read_bytes()
    doc = reader.open_path(str(model_file), "strict")
    try:
        tensors = _by_where(doc)
        storages = {id(tensors[w].storage) for w in EXPECTED}
        assert len(storages) == 1  # one storage: the model file's
        for where, values in EXPECTED.items():
            t = tensors[where]
            assert t.storage.path == str(model_file)
            assert (t.file_offset, t.length) == (blob.find(values.tobytes()), values.nbytes), where
            assert blob[t.file_offset:t.file_offset + t.length] == values.tobytes()
            assert np.shares_memory(t.raw(), t.storage.view(0, t.storage.size))  # no copy: the mapping itself
            np.testing.assert_array_equal(t.values(), values)
        assert tensors["onnx.graph.nodes[2].attributes[0].value"].values().tolist() == [1.0, 2.0, 3.0]  # typed: re-encoded
    finally:
        doc.close()


def test_detail_and_hex_map_show_a_constants_offset(model_file):
    from onemodel_viewer.tui.hex.bytemap import ByteMap
    from onemodel_viewer.tui.widgets.formatters import tensor_summary

    doc = reader.open_path(str(model_file), "strict")
    try:
        t = _by_where(doc)["onnx.graph.nodes[0].attributes[0].value"]
        assert t.file_offset > 0 and f"@0x{t.file_offset:x}" in tensor_summary(t).plain
        bm = ByteMap(doc)
        assert bm.owner_at(t.file_offset + 5) == "tensor conv_w +5"
        assert [x.where for x in bm.tensors_at(t.file_offset + t.length - 1)] == [t.where]
    finally:
        doc.close()


def test_an_attribute_tensor_twice_is_left_to_protobuf(tmp_path):
    """An attribute with ``t`` twice: protobuf merges the two messages (the last raw_data wins); the stripper
    leaves such bytes to it rather than guess."""
    def msg(tag: int, body: bytes) -> bytes:
        return bytes([tag, len(body)]) + body

    first = numpy_helper.from_array(np.zeros(4, np.float32), "a").SerializeToString()
    last = TensorProto(raw_data=np.ones(4, np.float32).tobytes()).SerializeToString()  # merged: only raw_data differs
    attr = msg(0x0A, b"value") + b"\xa0\x01\x04" + msg(0x2A, first) + msg(0x2A, last)  # name, type TENSOR, t, t
    node = msg(0x12, b"c") + msg(0x22, b"Constant") + msg(0x2A, attr)
    out = helper.make_tensor_value_info("c", TensorProto.FLOAT, [4]).SerializeToString()
    graph = msg(0x0A, node) + msg(0x12, b"g") + msg(0x62, out)
    blob = b"\x08\x08" + msg(0x3A, graph) + msg(0x42, b"\x10\x11")  # ir 8, graph, opset 17
    assert onnx.ModelProto.FromString(blob).graph.node[0].attribute[0].t.raw_data == np.ones(4, np.float32).tobytes()
    assert strip_raw_data(blob) is None
    p = tmp_path / "twice.onnx"
    p.write_bytes(blob)
    doc = reader.open_path(str(p), "strict")
    [t] = [t for t in all_tensors(doc.model)]
    assert t.values().tolist() == [1.0] * 4
    doc.close()


def test_over_http_constants_are_views_fetched_on_use(model_file):
    """The same records at a URL; opening fetches the metadata, not the Constant's megabyte."""
    blob = model_file.read_bytes()
    local = reader.open_path(str(model_file), "strict")
    with RangeServer(str(model_file.parent)) as srv:
        doc = reader.open_path(srv.url(model_file.name), "strict")
        try:
            opened = srv.stats()
            assert opened["bytes"] < BIG.nbytes // 2  # the first MiB and the nodes; it was the whole file
            here, there = _by_where(local), _by_where(doc)
            for where in EXPECTED:
                a, b = here[where], there[where]
                assert (b.file_offset, b.length) == (a.file_offset, a.length)
                assert b.storage.remote and b.storage.path == srv.url(model_file.name)
            big = there["onnx.graph.nodes[0].attributes[0].value"]
            assert bytes(big.raw()) == blob[big.file_offset:big.file_offset + big.length]
            assert srv.stats()["bytes"] - opened["bytes"] >= BIG.nbytes - (64 << 10)
            for where, values in EXPECTED.items():
                np.testing.assert_array_equal(there[where].values(), values)
        finally:
            doc.close()
            local.close()


def test_a_constant_past_the_end_of_the_file_is_malformed(model_file):
    """A cut file: the stripper refuses (truncated), protobuf refuses: Malformed at onnx."""
    blob = model_file.read_bytes()
    cut = model_file.parent / "cut.onnx"
    cut.write_bytes(blob[: blob.find(BIG.tobytes()) + 100])
    with pytest.raises(FormatError) as e:
        reader.open_path(str(cut), "strict")
    assert (e.value.kind.value, e.value.where) == ("Malformed", "onnx")


def test_one_request_per_skipped_constant_at_a_url(tmp_path):
    """Opening a model of Constant weights past the first MiB: one probe per weight skipped. The scanner
    goes back to a node's start after looking past its tensor's end; with one probe window held, it
    fetched the same windows again (602 requests for 420 weights, 202 now)."""
    rng = np.random.default_rng(3)
    nodes = [helper.make_node("Constant", [], ["filler"], value=numpy_helper.from_array(np.zeros(300_000, np.float32), "f"))]
    prev = "filler"
    for i in range(20):
        nodes.append(helper.make_node("Constant", [], [f"w{i}"],
                                      value=numpy_helper.from_array(rng.standard_normal(2048).astype(np.float32), f"w{i}")))
        nodes.append(helper.make_node("Add", [prev, f"w{i}"], [f"a{i}"]))
        prev = f"a{i}"
    graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info(prev, TensorProto.FLOAT, None)])
    (tmp_path / "m.onnx").write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    with RangeServer(str(tmp_path)) as srv:
        doc = reader.open_path(srv.url("m.onnx"), "strict")
        assert len(all_tensors(doc.model)) == 21
        st = srv.stats()
        assert st["requests"] <= 1 + 20 + 2, srv.log  # the first MiB, a probe after each weight, the file's end
        doc.close()
