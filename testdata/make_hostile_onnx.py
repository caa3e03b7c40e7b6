#!/usr/bin/env python3
"""Build ``testdata/hostile/onnx/<Kind>-<case>.onnx`` + ``expected.json``: ONNX inputs the onnx fuzz target
found (fuzz/README.md), one defect each, with the kind and ``where`` of the one problem each must give.

    python testdata/make_hostile_onnx.py        # deterministic: the same bytes on every run
"""

from __future__ import annotations

import json
import os

from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hostile", "onnx")


def _model(graph, **kw):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="make_hostile_onnx", **kw)
    m.ir_version = 8
    return m


def cases() -> dict:
    import numpy as np

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    relu = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    out = {}
    # the reader accepted a model without ir_version (0) and the OneModel writer refused it
    m = _model(relu)
    m.ClearField("ir_version")
    out["InvalidModel-ir-version-missing.onnx"] = (m, "InvalidModel", "onnx.ir_version")
    # a sparse initializer whose dense dims count 2^62 elements: accepted, then refused when the OneModel
    # file written from it was read back (the OneModel reader's limit is 2^60)
    sp = helper.make_sparse_tensor(numpy_helper.from_array(np.ones(1, np.float32), "sv"),
                                   numpy_helper.from_array(np.zeros(1, np.int64), "si"), [1 << 31, 1 << 31])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y], sparse_initializer=[sp])
    out["Unsupported-sparse-dims-2pow62.onnx"] = (_model(g), "Unsupported", "onnx.graph.sparse_initializers[0].dims")
    return out


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    expected = {}
    for name, (model, kind, where) in sorted(cases().items()):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(model.SerializeToString())
        expected[name] = {"kind": kind, "where": where}
    with open(os.path.join(OUT, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {len(expected)} files to {os.path.relpath(OUT)}")


if __name__ == "__main__":
    main()
