"""The dtype table and the raw_data codec agree with onnx.numpy_helper for every code."""

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from onemodel_viewer.format.dtypes import DTYPES, by_code, decode, encode, name_of

SPEC_BITS = {
    32: {1, 6, 12},
    8: {2, 3, 9, 17, 18, 19, 20, 24},
    16: {4, 5, 10, 16},
    64: {7, 11, 13, 14},
    128: {15},
    4: {21, 22, 23},
    2: {25, 26},
    6: {27, 28},
}


def test_table_matches_spec_section_2_5():
    for bits, codes in SPEC_BITS.items():
        for code in codes:
            assert DTYPES[code].bits == bits, code
    assert DTYPES[8].bits == 0
    all_codes = set().union(*SPEC_BITS.values()) | {8}
    assert set(DTYPES) == all_codes
    assert by_code(0) is None and by_code(29) is None
    assert name_of(99) == "dtype(99)"


def test_names_match_onnx():
    for code, d in DTYPES.items():
        assert onnx.TensorProto.DataType.Name(code).lower() == d.name


@pytest.mark.parametrize("code", sorted(c for c in DTYPES if c != 8))
@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 7, 13])
def test_codec_matches_onnx_raw_data(code, n):
    d = DTYPES[code]
    rng = np.random.default_rng(code * 100 + n)
    if d.bits <= 8:
        codes = rng.integers(0, 1 << d.bits, n, dtype=np.uint8)
        if code == 9:
            codes &= 1
        values = codes.view(d.numpy)
    elif d.is_float:
        values = rng.standard_normal(n).astype(d.numpy)
    else:
        values = rng.integers(0, 100, n).astype(d.numpy)
    raw = encode(values, d)
    assert len(raw) == d.byte_length(n)
    back = decode(np.frombuffer(raw, np.uint8), d, n)
    assert back.tobytes() == np.asarray(values).tobytes()
    proto = onnx.TensorProto(data_type=code, dims=[n], raw_data=raw)
    assert numpy_helper.to_array(proto).tobytes() == back.tobytes()


def test_subbyte_first_element_in_low_bits():
    d = DTYPES[22]  # int4
    vals = decode(np.array([0x21, 0x0F], dtype=np.uint8), d, 3)
    assert [int(v) for v in vals] == [1, 2, -1]
