"""``onnx_wire.fields``: the protobuf field scanner (its one-byte varints read inline) gives what the
plain varint loop gives, and refuses the same bytes, on every prefix of messages with one- and
multi-byte keys and lengths."""

from __future__ import annotations

import random

import pytest

from onemodel_viewer.format.onnx.wire import fields, strip_raw_data, varint, varint_bytes


def _plain_fields(buf, start, end):
    """The scanner as a plain loop over :func:`varint` (the reference)."""
    pos = start
    out = []
    while pos < end:
        fs = pos
        key, pos = varint(buf, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            _, ve = varint(buf, pos)
            vs = pos
        elif wt == 1:
            vs, ve = pos, pos + 8
        elif wt == 5:
            vs, ve = pos, pos + 4
        elif wt == 2:
            ln, vs = varint(buf, pos)
            ve = vs + ln
        else:
            raise ValueError(f"wire type {wt}")
        if ve > end or num == 0:
            raise ValueError("field past the end of its message")
        pos = ve
        out.append((num, wt, fs, vs, ve))
    return out


def _scan(fn, buf):
    try:
        return list(fn(buf, 0, len(buf)))
    except (ValueError, IndexError) as e:
        return type(e).__name__


def _message(rng: random.Random) -> bytes:
    out = bytearray()
    for _ in range(rng.randint(1, 12)):
        num = rng.choice([1, 5, 9, 15, 16, 200, 5000])  # keys of one, two and three bytes
        wt = rng.choice([0, 1, 2, 5])
        out += varint_bytes(num << 3 | wt)
        if wt == 0:
            out += varint_bytes(rng.choice([0, 1, 127, 128, 300, 1 << 40]))
        elif wt == 1:
            out += bytes(8)
        elif wt == 5:
            out += bytes(4)
        else:
            n = rng.choice([0, 1, 127, 128, 200])  # lengths of one and two bytes
            out += varint_bytes(n) + bytes(rng.randrange(256) for _ in range(n))
    return bytes(out)


@pytest.mark.parametrize("seed", range(40))
def test_fields_matches_the_plain_varint_loop_on_every_prefix(seed):
    rng = random.Random(seed)
    msg = _message(rng)
    for cut in sorted({len(msg), *(rng.randrange(len(msg) + 1) for _ in range(20))}):
        buf = msg[:cut]
        assert _scan(fields, buf) == _scan(_plain_fields, buf), (seed, cut)
        assert _scan(fields, memoryview(buf)) == _scan(_plain_fields, buf)


def test_a_length_that_is_the_last_byte_is_truncated():
    buf = varint_bytes(5 << 3 | 2)  # a length-delimited field whose length byte is missing
    assert _scan(fields, buf) == _scan(_plain_fields, buf) == "ValueError"
    assert strip_raw_data(varint_bytes(7 << 3 | 2) + b"\x05" + buf) is None
