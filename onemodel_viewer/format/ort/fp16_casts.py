"""Nodes ONNX Runtime's CPU build runs in float16 only through casts it inserts itself.

ONNX Runtime's CPU execution provider has no float16 kernel for some operators. Loading an ``.onnx``
it inserts Cast nodes around such a node (float16 -> float -> float16) and runs the float kernel;
loading an ``.ort`` it does not, and refuses the file ("Could not find an implementation for Mul(14)
node"). ONNX Runtime's own converter writes the casts into the ``.ort``; this writer keeps the model
as it is (other builds, CUDA for one, have the float16 kernels), and says so in a warning.

The list: the operators ONNX Runtime 1.32 refuses in an ``.ort`` with float16 inputs at opset 21 (each
tried as a one-node model; of the simple ones, ``Cast``, ``Clip``, ``Max``, ``Min``, ``Mod``, ``Round``,
``Sign``, ``IsNaN``, ``IsInf`` and the data-movement operators load), and ``Pad``, ``Conv`` and
``QLinearMatMul`` (float16 scales) found among the onnx backend test models (17 of them gave an
``.ort`` ONNX Runtime refuses). Other operators may be missing too; other releases may add kernels:
the warning says "may".
"""

from __future__ import annotations

__all__ = ["FLOAT16", "CAST_ONLY", "needs_inserted_casts"]

FLOAT16 = 10
_FIRST_INPUT = (
    "Abs Acos Acosh Add ArgMax ArgMin Asin Asinh Atan Atanh Ceil Conv Cos Cosh CumSum Div Elu Equal Erf Exp Floor "
    "Gelu GlobalAveragePool GlobalMaxPool Greater GreaterOrEqual HardSigmoid HardSwish Hardmax InstanceNormalization "
    "LeakyRelu Less LessOrEqual Log LogSoftmax LpNormalization MatMul Mean MeanVarianceNormalization Mish Mul Neg PRelu "
    "Pad Pow Reciprocal ReduceL2 ReduceLogSumExp ReduceMax ReduceMean ReduceMin ReduceProd ReduceSum Relu Selu Sigmoid "
    "Sin Sinh Softmax Softplus Softsign Sqrt Sub Sum Tan Tanh ThresholdedRelu TopK"
).split()
CAST_ONLY = {**dict.fromkeys(_FIRST_INPUT, 0), "QLinearMatMul": 1}
"""Operator (default domain) -> the input whose element type selects the kernel."""


def needs_inserted_casts(node, types: dict) -> bool:
    """Whether ``node`` (a NodeProto) is one ONNX Runtime's CPU build runs in float16 only through casts;
    ``types``: value name -> TypeProto."""
    pos = CAST_ONLY.get(node.op_type)
    if pos is None or node.domain not in ("", "ai.onnx") or len(node.input) <= pos:
        return False
    tp = types.get(node.input[pos])
    return tp is not None and tp.HasField("tensor_type") and tp.tensor_type.elem_type == FLOAT16
