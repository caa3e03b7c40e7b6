"""The fuzz harness (fuzz/fuzz_ort.py -> fuzz_reader.exercise) on .ort inputs: seeds and mutations of base.ort.

Only FormatError may come out of the reader; strict's error is diagnose's first problem;
--check agrees. Mutations: byte overwrites at offsets the flatbuffer uses (offsets, lengths,
vtable entries), truncations, and u32 writes of extreme values.
"""

from __future__ import annotations

import signal
import struct
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "fuzz"))
import fuzz_ort  # noqa: E402

sys.path.pop(0)

BASE = (ROOT / "testdata" / "hostile" / "ort" / "base.ort").read_bytes()


def _guarded(data: bytes) -> str:
    def on_alarm(signum, frame):
        raise TimeoutError("no result after 20 s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, 20)
    try:
        return fuzz_ort.exercise(data)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("path", fuzz_ort.seed_files(), ids=lambda p: p.name)
def test_harness_on_seeds(path):
    outcome = _guarded(path.read_bytes())
    valid = path.name == "base.ort" or path.name.startswith("Finding-")  # a finding is not a problem
    assert outcome == ("valid" if valid else path.name.split("-", 1)[0])


@st.composite
def mutated(draw):
    buf = bytearray(BASE)
    for _ in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["byte", "u32", "u16", "cut"]))
        at = draw(st.integers(0, len(buf) - 1)) if buf else 0
        if how == "byte" and buf:
            buf[at] = draw(st.integers(0, 255))
        elif how == "u32" and at + 4 <= len(buf):
            struct.pack_into("<I", buf, at & ~3, draw(st.sampled_from([0, 1, 3, 0x7FFFFFFF, 0xFFFFFFFF, len(buf), at])))
        elif how == "u16" and at + 2 <= len(buf):
            struct.pack_into("<H", buf, at & ~1, draw(st.sampled_from([0, 1, 2, 4, 0xFFFF, 0xFFFE])))
        else:
            del buf[at:]
    return bytes(buf)


@settings(max_examples=250, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated())
def test_mutated_ort_fails_cleanly(blob):
    _guarded(blob)
