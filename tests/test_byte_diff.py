"""analysis/diff/byte_diff.py: the next differing byte of two files at an alignment (the diff viewer's d / D)."""

from __future__ import annotations

import threading

import pytest

from onemodel_viewer.analysis.diff import byte_diff
from onemodel_viewer.analysis.diff.byte_diff import ScanCancelled, next_differing
from onemodel_viewer.format.storage import BytesStorage


def _pair(n=1000, changes=(), b_prefix=b""):
    a = bytes(range(256)) * (n // 256 + 1)
    a = a[:n]
    b = bytearray(a)
    for c in changes:
        b[c] ^= 0xFF
    return BytesStorage(a), BytesStorage(b_prefix + bytes(b))


@pytest.mark.parametrize("chunk", [byte_diff.CHUNK, 7])
def test_forward_and_backward(monkeypatch, chunk):
    monkeypatch.setattr(byte_diff, "CHUNK", chunk)  # chunk edges: a difference on either side of one
    a, b = _pair(changes=(6, 7, 500))
    assert next_differing(a, b, 0, 0) == 6
    assert next_differing(a, b, 8, 0) == 500
    assert next_differing(a, b, 501, 0) is None
    assert next_differing(a, b, 999, 0, step=-1) == 500
    assert next_differing(a, b, 499, 0, step=-1) == 7
    assert next_differing(a, b, 5, 0, step=-1) is None


def test_alignment_delta_and_bytes_without_counterpart():
    a, b = _pair(n=100, changes=(40,), b_prefix=b"XYZ")  # B is A shifted by 3, one byte changed
    assert next_differing(a, b, 0, 3) == 40
    assert next_differing(a, b, 0, 0) == 0  # misaligned: differs at once
    short = BytesStorage(a.read(0, 50))
    assert next_differing(a, short, 0, 0) == 50  # past B's end: no counterpart, differs
    assert next_differing(short, a, 0, 0) is None  # every byte of the shorter one matches
    assert next_differing(a, b, 2, -3, step=-1) == 2  # before B's start (delta -3): differs
    assert next_differing(a, b, 100, 0) is None  # a start outside the file


def test_cancel_stops_the_scan():
    a, b = _pair()
    ev = threading.Event()
    ev.set()
    with pytest.raises(ScanCancelled):
        next_differing(a, b, 0, 0, cancel=ev)
