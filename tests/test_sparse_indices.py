"""``widen_sparse_indices``: narrowed sparse indices become INT64 wherever they are (graph sparse
initializers, SPARSE_TENSOR(S) attributes, subgraphs); every record without one is shared."""

from __future__ import annotations

import numpy as np

from onemodel_viewer.format.dtypes import AttrType, DataType
from onemodel_viewer.format.schema import Attribute, Graph, Model, Node, SparseTensor, Tensor
from onemodel_viewer.format.sparse_indices import widen_sparse_indices
from onemodel_viewer.format.storage import BytesStorage


def _t(name: str, arr: np.ndarray, dtype: int) -> Tensor:
    raw = arr.tobytes()
    return Tensor(name, dtype, tuple(arr.shape), length=len(raw), file_offset=0, storage=BytesStorage(raw))


def _sparse(name: str, index_dtype, code: int) -> SparseTensor:
    values = _t(name, np.array([1.0, 2.0], np.float32), int(DataType.FLOAT))
    return SparseTensor(values, _t(name + "_idx", np.array([1, 3], index_dtype), code), (4,))


def test_indices_in_attributes_and_subgraphs_are_widened_and_the_rest_shared():
    sub = Graph("sub", sparse_initializers=(_sparse("in_sub", np.int8, int(DataType.INT8)),))
    plain = Node("Relu", "plain", inputs=("x",), outputs=("y",), attributes=(Attribute("axis", AttrType.INT, 1),))
    nodes = (
        plain,
        Node("Constant", "c", outputs=("s",), attributes=(
            Attribute("alpha", AttrType.FLOAT, 0), Attribute("value", AttrType.SPARSE_TENSOR, _sparse("attr", np.int32, int(DataType.INT32))))),
        Node("If", "if", inputs=("cond",), outputs=("z",), attributes=(Attribute("then_branch", AttrType.GRAPH, sub),)),
        Node("Constant", "wide", outputs=("w",), attributes=(
            Attribute("value", AttrType.SPARSE_TENSOR, _sparse("int64", np.int64, int(DataType.INT64))),)),
    )
    model = Model(9, Graph("g", nodes=nodes))
    out, n = widen_sparse_indices(model)
    assert n == 2
    g = out.graph
    assert g.nodes[0] is plain and g.nodes[3] is nodes[3]  # nothing to widen: the same records
    widened = [g.nodes[1].attributes[1].value.indices, g.nodes[2].attributes[0].value.sparse_initializers[0].indices]
    for t in widened:
        assert t.dtype == DataType.INT64 and t.storage.read(0, t.length) == np.array([1, 3], np.int64).tobytes()
    assert g.nodes[1].attributes[0] is nodes[1].attributes[0]
    again, zero = widen_sparse_indices(out)
    assert zero == 0 and again is out
