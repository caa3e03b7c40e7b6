"""The builder's shortcut for tensors stored as writers store them (``TensorBuilder.writer_tensor``).

Every tensor object here is read twice: as it is (four fields: the shortcut may take it), and with
an explicit ``"doc": ""`` (five fields: the field-by-field path, same meaning). Both must give the
same record and the same problems (kind, where, offset, message).
"""

from __future__ import annotations

import dataclasses

import pytest

from onemodel_viewer.format.builder_tensor import TensorBuilder
from onemodel_viewer.format.reporter import Reporter


class _Storage:
    size = 1 << 20


STORAGE = _Storage()
DATA_OFFSET = 4096
DATA_LENGTH = 1 << 16


def _read(o):
    report = Reporter(False)
    t = TensorBuilder(report, DATA_OFFSET, DATA_LENGTH, STORAGE).tensor(o, "manifest.graph.initializers[0]")
    return tuple(getattr(t, f.name) for f in dataclasses.fields(t)), [(p.kind, p.where, p.offset, p.message) for p in report.problems]


def _sound(**changes):
    o = {"name": "w", "dtype": 1, "dims": [4, 8], "data": {"offset": 128, "length": 128}}
    o.update(changes)
    return o


CASES = {
    "sound": _sound(),
    "sound float16": _sound(dtype=10, data={"offset": 0, "length": 64}),
    "sound int4 (sub-byte)": _sound(dtype=22, dims=[3], data={"offset": 64, "length": 2}),
    "scalar": _sound(dims=[], data={"offset": 64, "length": 4}),
    "empty at an odd offset": _sound(dims=[0, 5], data={"offset": 3, "length": 0}),
    "data with another key": _sound(data={"offset": 128, "length": 128, "x": 1}),
    "offset not a multiple of 64": _sound(data={"offset": 100, "length": 128}),
    "negative offset": _sound(data={"offset": -64, "length": 128}),
    "offset a float": _sound(data={"offset": 128.0, "length": 128}),
    "offset a boolean": _sound(data={"offset": True, "length": 128}),
    "length wrong": _sound(data={"offset": 128, "length": 127}),
    "length negative": _sound(data={"offset": 128, "length": -1}),
    "length past 2^31-1": _sound(dims=[1 << 29, 4], data={"offset": 0, "length": 1 << 33}),
    "past the data region": _sound(data={"offset": DATA_LENGTH - 64, "length": 128}),
    "at the region's end": _sound(data={"offset": DATA_LENGTH - 128, "length": 128}),
    "offset past 2^63": _sound(data={"offset": 1 << 64, "length": 128}),
    "data without length": _sound(data={"offset": 128}),
    "data an array": _sound(data=[128, 128]),
    "data a string": _sound(data="x"),
    "string dtype": _sound(dtype=8),
    "unknown dtype": _sound(dtype=99),
    "dtype a boolean": _sound(dtype=True),
    "dtype a string": _sound(dtype="1"),
    "name not a string": _sound(name=3),
    "dims not an array": _sound(dims=32),
    "negative dim": _sound(dims=[-4, -8]),
    "dim a boolean": _sound(dims=[True, 32]),
    "dim past 2^63 after a 0": _sound(dims=[0, 1 << 64], data={"offset": 0, "length": 0}),
    "count 2^60 or more": _sound(dims=[1 << 30, 1 << 30], data={"offset": 0, "length": 1 << 62}),
    "count 2^60 with a 0 later": _sound(dims=[1 << 40, 1 << 40, 0], data={"offset": 0, "length": 0}),
}

SOUND = {
    "sound", "sound float16", "sound int4 (sub-byte)", "scalar", "empty at an odd offset", "data with another key",
    "at the region's end", "count 2^60 with a 0 later",
}


@pytest.mark.parametrize("case", list(CASES))
def test_shortcut_same_as_field_by_field(case):
    o = CASES[case]
    fast = _read(o)
    slow = _read({**o, "doc": ""})
    assert fast == slow
    if case in SOUND:
        assert fast[1] == [] and fast[0][7] is STORAGE  # a record with its bytes in the data region
    else:
        assert fast[1] or fast[0][7] is None


def test_shortcut_record():
    """The shortcut's record, field by field (offset absolute in the file)."""
    (name, dtype, dims, doc, offset, length, file_offset, storage, strings, where), problems = _read(_sound())
    assert (name, dtype, dims, doc, offset, length, file_offset, strings, where) == (
        "w", 1, (4, 8), "", 128, 128, DATA_OFFSET + 128, None, "manifest.graph.initializers[0]")
    assert storage is STORAGE and problems == []
