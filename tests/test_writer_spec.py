"""A OneModel file parser written from the spec alone, and the checks of every generated file against it.

Independent of ``onemodel_viewer.format.reader`` on purpose: the writer is
checked against the text of sections 1 and 2, not against our own reader.
"""

from __future__ import annotations

import base64
import json
import struct

HEADER = struct.Struct("<8sIIQQQQQQ")


def _no_float(s: str):
    raise AssertionError(f"manifest holds a non-integer number {s!r}")


def parse(blob: bytes) -> tuple[dict, dict, bytes]:
    """(header dict, manifest dict, data region) after checking every header rule of section 1.1."""
    magic, version, flags, moff, mlen, doff, dlen, flen, reserved = HEADER.unpack_from(blob)
    h = dict(magic=magic, version=version, flags=flags, manifest_offset=moff, manifest_length=mlen, data_offset=doff,
             data_length=dlen, file_length=flen, reserved=reserved)
    assert magic == b"ONEMODEL" and version == 1 and flags == 0 and reserved == 0
    assert moff == 64 and flen == len(blob) and doff % 64 == 0 and doff >= 64 + mlen
    assert doff + dlen == flen
    assert doff == (64 + mlen + 63) // 64 * 64, "the writer pads only to the next multiple of 64"
    assert blob[64 + mlen : doff] == bytes(doff - 64 - mlen), "padding must be zero"
    raw = blob[64 : 64 + mlen]
    assert not raw.startswith(b"\xef\xbb\xbf")
    manifest = json.loads(raw.decode("utf-8"), parse_float=_no_float, parse_constant=_no_float)
    assert raw == json.dumps(manifest, separators=(",", ":"), ensure_ascii=False).encode(), "insignificant whitespace"
    return h, manifest, blob[doff:]


def iter_tensors(manifest: dict):
    """(path, tensor dict) for every tensor of the manifest, in section 1.3 order."""

    def graph(g, w):
        for i, t in enumerate(g["initializers"]):
            yield f"{w}.initializers[{i}]", t
        for i, s in enumerate(g["sparse_initializers"]):
            yield f"{w}.sparse_initializers[{i}].values", s["values"]
            yield f"{w}.sparse_initializers[{i}].indices", s["indices"]
        for i, n in enumerate(g["nodes"]):
            yield from attrs(n["attributes"], f"{w}.nodes[{i}].attributes")

    def attrs(items, w):
        for k, a in enumerate(items):
            if "ref" in a:
                continue
            v, t, aw = a.get("value"), a["type"], f"{w}[{k}].value"
            if t == 4:
                yield aw, v
            elif t == 9:
                for j, x in enumerate(v):
                    yield f"{aw}[{j}]", x
            elif t == 11:
                yield aw + ".values", v["values"]
                yield aw + ".indices", v["indices"]
            elif t == 12:
                for j, x in enumerate(v):
                    yield f"{aw}[{j}].values", x["values"]
                    yield f"{aw}[{j}].indices", x["indices"]
            elif t == 5:
                yield from graph(v, aw)
            elif t == 10:
                for j, x in enumerate(v):
                    yield from graph(x, f"{aw}[{j}]")

    yield from graph(manifest["graph"], "manifest.graph")
    for i, f in enumerate(manifest.get("functions", ())):
        for j, n in enumerate(f["nodes"]):
            yield from attrs(n["attributes"], f"manifest.functions[{i}].nodes[{j}].attributes")
        yield from attrs(f["attribute_defaults"], f"manifest.functions[{i}].attribute_defaults")


BITS = {1: 32, 6: 32, 12: 32, 2: 8, 3: 8, 9: 8, 17: 8, 18: 8, 19: 8, 20: 8, 24: 8, 4: 16, 5: 16, 10: 16, 16: 16,
        7: 64, 11: 64, 13: 64, 14: 64, 15: 128, 21: 4, 22: 4, 23: 4, 25: 2, 26: 2, 27: 6, 28: 6}


def tensor_bytes(t: dict, data: bytes) -> bytes | list[bytes]:
    """A tensor's bytes (or its strings), after checking section 2.5's rules."""
    count = 1
    for d in t["dims"]:
        assert isinstance(d, int) and d >= 0
        count *= d
    if t["dtype"] == 8:
        assert "data" not in t
        assert len(t["strings"]) == count
        return [base64.b64decode(s, validate=True) for s in t["strings"]]
    off, ln = t["data"]["offset"], t["data"]["length"]
    assert ln == (count * BITS[t["dtype"]] + 7) // 8
    if ln:
        assert off % 64 == 0 and off + ln <= len(data)
    else:
        assert off == 0
    return data[off : off + ln]


def check_layout(manifest: dict, data: bytes) -> None:
    """Section 1.3 as this writer does it: order, alignment, distinct bytes, zero gaps, tight end."""
    cursor = 0
    end = 0
    for _w, t in iter_tensors(manifest):
        if t["dtype"] == 8 or t["data"]["length"] == 0:
            continue
        off, ln = t["data"]["offset"], t["data"]["length"]
        assert off == (cursor + 63) // 64 * 64, "tensors placed in section 1.3 order at the next multiple of 64"
        assert data[cursor:off] == bytes(off - cursor), "zero bytes between tensors"
        cursor = end = off + ln
    assert len(data) == end, "the data region ends right after the last tensor"


# ---------------------------------------------------------------------------------------------
# tests: every file the writer produced for testdata/valid obeys the text of the spec

import glob  # noqa: E402
import os  # noqa: E402

import pytest  # noqa: E402

VALID = os.path.join(os.path.dirname(__file__), "..", "testdata", "valid")
WRITTEN = [n for n in ("attributes", "dtypes", "external", "functions", "out_of_order", "showcase", "sparse", "strings",
                       "subgraphs", "typed", "types")]


@pytest.mark.parametrize("name", WRITTEN)
def test_written_testdata_follows_the_spec(name):
    with open(os.path.join(VALID, name + ".onemodel"), "rb") as f:
        blob = f.read()
    _h, manifest, data = parse(blob)
    check_layout(manifest, data)
    for _w, t in iter_tensors(manifest):
        tensor_bytes(t, data)


def test_every_valid_onemodel_parses():
    files = sorted(glob.glob(os.path.join(VALID, "*.onemodel")))
    assert len(files) >= 13
    for path in files:
        with open(path, "rb") as f:
            blob = f.read()
        magic, *_ = HEADER.unpack_from(blob)
        assert magic == b"ONEMODEL"


@pytest.mark.parametrize("name", WRITTEN)
def test_written_testdata_is_canonical_for_the_reader(name):
    """What the reader reads back re-encodes to the very manifest bytes the writer wrote."""
    from onemodel_viewer import format as omf
    from onemodel_viewer.format.onemodel import writer

    doc = omf.open(os.path.join(VALID, name + ".onemodel"))
    mo, ml = doc.manifest_span
    assert writer.encode_manifest(doc.model) == doc.storage.read(mo, ml)
    doc.close()
