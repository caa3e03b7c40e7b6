"""Hand-packed OneModel files for the reader tests (no dependency on the writer).

``pack(manifest, blobs)`` lays out header + manifest + zero padding + data exactly as spec
section 1 says; ``header_overrides`` patch header fields afterwards for hostile cases.
"""

from __future__ import annotations

import json
import struct

ALIGN = 64


def align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def manifest_bytes(manifest) -> bytes:
    if isinstance(manifest, bytes):
        return manifest
    if isinstance(manifest, str):
        return manifest.encode("utf-8")
    return json.dumps(manifest, separators=(",", ":")).encode("utf-8")


def pack(manifest, data: bytes = b"", *, layout_offset: int | None = None, **header_overrides) -> bytes:
    """A OneModel file: header, manifest (dict/str/bytes), zero padding, ``data`` as the data region.

    ``layout_offset`` places the data region; ``header_overrides`` only patch header fields.
    """
    m = manifest_bytes(manifest)
    do = align(64 + len(m)) if layout_offset is None else layout_offset
    fields = {
        "magic": b"ONEMODEL",
        "version": 1,
        "flags": 0,
        "manifest_offset": 64,
        "manifest_length": len(m),
        "data_offset": do,
        "data_length": len(data),
        "file_length": do + len(data),
        "reserved": 0,
    }
    fields.update(header_overrides)
    head = struct.pack(
        "<8sIIQQQQQQ",
        fields["magic"], fields["version"], fields["flags"], fields["manifest_offset"], fields["manifest_length"],
        fields["data_offset"], fields["data_length"], fields["file_length"], fields["reserved"],
    )
    body = head + m
    body += b"\0" * (do - len(body)) if do >= len(body) else b""
    return body + data


def tensor(name: str, dtype: int, dims, offset: int, length: int, **extra) -> dict:
    d = {"name": name, "dtype": dtype, "dims": list(dims), "data": {"offset": offset, "length": length}}
    d.update(extra)
    return d


def node(op: str, inputs=(), outputs=(), name: str = "", **extra) -> dict:
    d = {"name": name, "op": op, "domain": "", "overload": "", "inputs": list(inputs), "outputs": list(outputs), "attributes": []}
    d.update(extra)
    return d


def graph(**fields) -> dict:
    g = {"inputs": [], "outputs": [], "value_info": [], "initializers": [], "sparse_initializers": [], "nodes": []}
    g.update(fields)
    return g


def model(graph_: dict | None = None, **fields) -> dict:
    m = {"format": "onemodel", "version": 1, "ir_version": 8, "opsets": [{"domain": "", "version": 17}], "graph": graph_ or graph()}
    m.update(fields)
    return m


def write(tmp_path, content: bytes, name: str = "m.onemodel"):
    p = tmp_path / name
    p.write_bytes(content)
    return p


def test_pack_layout():
    b = pack(model(), b"\x01" * 10)
    magic, version, flags, mo, ml, do, dl, fl, res = struct.unpack("<8sIIQQQQQQ", b[:64])
    assert (magic, version, flags, mo, res) == (b"ONEMODEL", 1, 0, 64, 0)
    assert do % 64 == 0 and do >= 64 + ml and fl == len(b) == do + dl
