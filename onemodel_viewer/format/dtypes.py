"""One table owns everything about a dtype: code, name, bit width, numpy/ml_dtypes type.

Codes are ONNX ``TensorProto.DataType`` (spec section 2.5), named by :class:`DataType`; the
attribute type codes (section 2.4) are :class:`AttrType`. No other module compares a bare code.
numpy and ml_dtypes are imported only when values are decoded, so reading a manifest stays cheap.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


class DataType(enum.IntEnum):
    """ONNX ``TensorProto.DataType`` (spec section 2.5): the codes of :data:`_TABLE`, by name."""

    UNDEFINED = 0
    FLOAT = 1
    UINT8 = 2
    INT8 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    STRING = 8
    BOOL = 9
    FLOAT16 = 10
    DOUBLE = 11
    UINT32 = 12
    UINT64 = 13
    COMPLEX64 = 14
    COMPLEX128 = 15
    BFLOAT16 = 16
    FLOAT8E4M3FN = 17
    FLOAT8E4M3FNUZ = 18
    FLOAT8E5M2 = 19
    FLOAT8E5M2FNUZ = 20
    UINT4 = 21
    INT4 = 22
    FLOAT4E2M1 = 23
    FLOAT8E8M0 = 24
    UINT2 = 25
    INT2 = 26
    FLOAT6E2M3 = 27
    FLOAT6E3M2 = 28


class AttrType(enum.IntEnum):
    """ONNX ``AttributeProto.AttributeType`` (spec section 2.4)."""

    UNDEFINED = 0
    FLOAT = 1
    INT = 2
    STRING = 3
    TENSOR = 4
    GRAPH = 5
    FLOATS = 6
    INTS = 7
    STRINGS = 8
    TENSORS = 9
    GRAPHS = 10
    SPARSE_TENSOR = 11
    SPARSE_TENSORS = 12
    TYPE_PROTO = 13
    TYPE_PROTOS = 14


STRING = DataType.STRING
COMPLEX = frozenset((DataType.COMPLEX64, DataType.COMPLEX128))
"""The complex types (statistics over ``|z|``)."""


@dataclass(frozen=True, slots=True)
class DType:
    """One element type of section 2.5."""

    code: int
    """ONNX ``TensorProto.DataType`` code."""
    name: str
    """ONNX name in lower case (``float``, ``bfloat16``, ``float8e4m3fn``...)."""
    bits: int
    """Bits per element; 0 for strings (no fixed size)."""
    numpy_name: str | None
    """``numpy`` dtype name, or ``ml_dtypes.<name>``; ``None`` for strings."""
    is_float: bool = False
    """Floating point (including complex and the 8/6/4-bit float formats)."""

    @property
    def numpy(self) -> "np.dtype":
        """The numpy dtype of one decoded element (little endian)."""
        return _numpy_dtype(self.numpy_name)

    @property
    def is_complex(self) -> bool:
        return self.code in COMPLEX

    @property
    def is_subbyte(self) -> bool:
        return 0 < self.bits < 8

    def byte_length(self, count: int) -> int:
        """``ceil(count * bits / 8)``: the stored byte length of ``count`` elements."""
        return (count * self.bits + 7) // 8


_TABLE = (
    DType(1, "float", 32, "<f4", True),
    DType(2, "uint8", 8, "u1"),
    DType(3, "int8", 8, "i1"),
    DType(4, "uint16", 16, "<u2"),
    DType(5, "int16", 16, "<i2"),
    DType(6, "int32", 32, "<i4"),
    DType(7, "int64", 64, "<i8"),
    DType(8, "string", 0, None),
    DType(9, "bool", 8, "?"),
    DType(10, "float16", 16, "<f2", True),
    DType(11, "double", 64, "<f8", True),
    DType(12, "uint32", 32, "<u4"),
    DType(13, "uint64", 64, "<u8"),
    DType(14, "complex64", 64, "<c8", True),
    DType(15, "complex128", 128, "<c16", True),
    DType(16, "bfloat16", 16, "ml_dtypes.bfloat16", True),
    DType(17, "float8e4m3fn", 8, "ml_dtypes.float8_e4m3fn", True),
    DType(18, "float8e4m3fnuz", 8, "ml_dtypes.float8_e4m3fnuz", True),
    DType(19, "float8e5m2", 8, "ml_dtypes.float8_e5m2", True),
    DType(20, "float8e5m2fnuz", 8, "ml_dtypes.float8_e5m2fnuz", True),
    DType(21, "uint4", 4, "ml_dtypes.uint4"),
    DType(22, "int4", 4, "ml_dtypes.int4"),
    DType(23, "float4e2m1", 4, "ml_dtypes.float4_e2m1fn", True),
    DType(24, "float8e8m0", 8, "ml_dtypes.float8_e8m0fnu", True),
    DType(25, "uint2", 2, "ml_dtypes.uint2"),
    DType(26, "int2", 2, "ml_dtypes.int2"),
    DType(27, "float6e2m3", 6, "ml_dtypes.float6_e2m3fn", True),
    DType(28, "float6e3m2", 6, "ml_dtypes.float6_e3m2fn", True),
)

DTYPES: dict[int, DType] = {d.code: d for d in _TABLE}
"""Every supported code. Any other code (0 included) is Unsupported."""

BY_NAME: dict[str, DType] = {d.name: d for d in _TABLE}


def by_code(code: int) -> DType | None:
    """The dtype for ``code``, or ``None`` when the code is not supported."""
    return DTYPES.get(code)


def name_of(code: int) -> str:
    """Display name of a code, ``dtype(99)`` for an unknown one."""
    d = DTYPES.get(code)
    return d.name if d else f"dtype({code})"


@cache
def _numpy_dtype(numpy_name: str | None) -> "np.dtype":
    import numpy as np

    if numpy_name is None:
        return np.dtype(object)
    if numpy_name.startswith("ml_dtypes."):
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, numpy_name.split(".", 1)[1]))
    return np.dtype(numpy_name)


def decode(raw: "np.ndarray", dtype: DType, count: int) -> "np.ndarray":
    """Decode ``raw`` (uint8, exactly ``dtype.byte_length(count)`` bytes) into a flat array.

    Elements of 8 bits or more are a zero-copy ``view``. Sub-byte elements are
    unpacked as ONNX ``raw_data`` packs them: the first element in the low bits of
    the first byte, a continuous little-endian bit stream (4-bit: two per byte,
    2-bit: four per byte, 6-bit: four in three bytes).
    """
    import numpy as np

    if dtype.bits == 0:
        raise ValueError("string tensors have no byte encoding")
    if dtype.bits >= 8:
        return raw.view(dtype.numpy)[:count]
    raw = np.asarray(raw, dtype=np.uint8)
    if dtype.bits == 4:
        out = np.empty(raw.size * 2, dtype=np.uint8)
        out[0::2] = raw & 0x0F
        out[1::2] = raw >> 4
        codes = out[:count]
    elif dtype.bits == 2:
        out = np.empty(raw.size * 4, dtype=np.uint8)
        for i in range(4):
            out[i::4] = (raw >> (2 * i)) & 0x03
        codes = out[:count]
    else:  # 6 bits: generic little-endian bit stream
        bits = np.unpackbits(raw, bitorder="little")[: count * dtype.bits].reshape(count, dtype.bits)
        codes = np.packbits(bits, axis=1, bitorder="little").reshape(count)
    return codes.view(dtype.numpy)


def encode(values: "np.ndarray", dtype: DType) -> bytes:
    """The raw_data bytes of ``values`` (inverse of :func:`decode`)."""
    import numpy as np

    if dtype.bits == 0:
        raise ValueError("string tensors have no byte encoding")
    arr = np.ascontiguousarray(values, dtype=dtype.numpy).reshape(-1)
    if dtype.bits >= 8:
        return arr.tobytes()
    codes = arr.view(np.uint8) & ((1 << dtype.bits) - 1)
    bits = np.unpackbits(codes.reshape(-1, 1), axis=1, bitorder="little")[:, : dtype.bits]
    return np.packbits(bits.reshape(-1), bitorder="little").tobytes()
