#!/usr/bin/env python3
"""Build the hostile-file corpus: ``testdata/hostile/<Kind>-<case>.onemodel`` + ``expected.json``.

Every ``<Kind>-<case>`` file holds EXACTLY ONE defect on top of a small valid base model
assembled here with ``struct.pack`` + ``json`` (this script does not use the project's writer,
so a writer bug cannot hide a reader bug). ``valid-<case>`` files are valid models holding
terminal-hostile strings or limits just inside the bounds; they are listed with ``"kind": null``.

``expected.json`` maps each file name to ``{"kind": ..., "where": ..., "note": ...}``: the kind and
the ``where`` of the FIRST problem a strict reader must report (``note`` is for people).

Run ``python testdata/make_hostile.py`` (optionally ``--out DIR``); the output is byte-identical
on every run (no timestamps, no randomness, sorted JSON).

Kinds come from the spec table of section 3.1 and /work/shared/spec/CLARIFICATIONS.md. Where
they are silent, the reasoning is written next to the case (search for "DECISION").
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "hostile"

U63 = (1 << 63) - 1
U64 = (1 << 64) - 1
HEADER = struct.Struct("<8sIIQQQQQQ")  # magic, version, flags, manifest_offset, manifest_length,
#                                        data_offset, data_length, file_length, reserved
assert HEADER.size == 64


def align64(n: int) -> int:
    return (n + 63) // 64 * 64


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def f32(*values: float) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


# --------------------------------------------------------------------------------------------
# The tiny assembler (independent of onemodel_viewer.format.onemodel.writer)
# --------------------------------------------------------------------------------------------

RAW_PREFIX = "@@RAW:"


def raw(text: str) -> str:
    """A placeholder that :func:`dump` replaces by ``text`` verbatim (for 1.0, 1e3, NaN, duplicate keys...)."""
    return f"{RAW_PREFIX}{base64.b16encode(text.encode()).decode()}@@"


def dump(obj, *, ensure_ascii: bool = False) -> bytes:
    """Compact JSON (no insignificant whitespace) with :func:`raw` placeholders substituted."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=ensure_ascii)
    while RAW_PREFIX in text:
        start = text.index('"' + RAW_PREFIX)
        end = text.index('@@"', start + len(RAW_PREFIX) + 1) + 3
        payload = text[start + 1 + len(RAW_PREFIX) : end - 3]
        text = text[:start] + base64.b16decode(payload).decode() + text[end:]
    return text.encode("utf-8", "surrogatepass")


def assemble(
    manifest: bytes,
    data: bytes,
    *,
    pad_extra: int = 0,
    **fields: int | bytes,
) -> bytes:
    """Header + manifest + zero padding to 64 (+ ``pad_extra``) + data region, header consistent.

    ``fields`` override header values (``magic``, ``version``, ``flags``, ``manifest_offset``,
    ``manifest_length``, ``data_offset``, ``data_length``, ``file_length``, ``reserved``) AFTER
    the consistent values were computed; the bytes are laid out as computed.
    """
    data_offset = align64(64 + len(manifest)) + pad_extra
    values = {
        "magic": b"ONEMODEL",
        "version": 1,
        "flags": 0,
        "manifest_offset": 64,
        "manifest_length": len(manifest),
        "data_offset": data_offset,
        "data_length": len(data),
        "file_length": data_offset + len(data),
        "reserved": 0,
    }
    values.update(fields)
    header = HEADER.pack(*values.values())
    body = manifest + b"\0" * (data_offset - 64 - len(manifest))
    return header + body + data


def set_header(blob: bytes, **fields: int | bytes) -> bytes:
    """Rewrite header fields of an assembled file in place (other bytes unchanged)."""
    values = dict(zip(
        ("magic", "version", "flags", "manifest_offset", "manifest_length", "data_offset", "data_length",
         "file_length", "reserved"),
        HEADER.unpack_from(blob, 0),
    ))
    values.update(fields)
    return HEADER.pack(*values.values()) + blob[64:]


# --------------------------------------------------------------------------------------------
# The valid base model
# --------------------------------------------------------------------------------------------
#
# data region (relative offsets):   0 w float[4]   64 b float[4]   128 q int4[3]
#                                  192 sparse values float[2]   256 sparse indices int64[2]
#                                  320 node[4] attribute "tensor" float[2]  (ends at 328)
#
# graph: x(float[1,4]) -> n0 Mul(x,w)=t -> n1 LeakyRelu(t)=u -> n2 Add(u,b)=y
#        cond(bool) -> n3 If(cond)=z  (then: Identity(u)=zt, else: Identity(t)=ze: read outer values)
#        y -> n4 com.example.Custom(y)=v  (attributes of every kind, a function with a ref)

DATA = bytearray(328)
DATA[0:16] = f32(1.0, 2.0, 3.0, 4.0)
DATA[64:80] = f32(0.5, -0.5, 0.25, -0.25)
DATA[128:130] = bytes([0x21, 0x0F])  # int4 [1, 2, -1]
DATA[192:200] = f32(7.0, 8.0)
DATA[256:272] = struct.pack("<2q", 1, 3)
DATA[320:328] = f32(-0.0, float("inf"))
DATA = bytes(DATA)

F4 = {"kind": "tensor", "elem": 1, "shape": [1, 4]}


def tensor(name: str, dtype: int, dims: list, offset: int, length: int) -> dict:
    return {"name": name, "dtype": dtype, "dims": dims, "data": {"offset": offset, "length": length}}


def node(name: str, op: str, inputs: list, outputs: list, attributes: list | None = None, domain: str = "") -> dict:
    return {"name": name, "op": op, "domain": domain, "overload": "", "inputs": inputs, "outputs": outputs,
            "attributes": attributes or []}


def base() -> dict:
    """A fresh copy of the valid base manifest (fields in the order of the spec's tables)."""
    then_g = {"name": "then", "outputs": [{"name": "zt"}], "nodes": [node("then_id", "Identity", ["u"], ["zt"])]}
    else_g = {"name": "else", "outputs": [{"name": "ze"}], "nodes": [node("else_id", "Identity", ["t"], ["ze"])]}
    g0 = {"name": "g0", "outputs": [{"name": "g0o"}], "nodes": [node("g0n", "Identity", ["x"], ["g0o"])]}
    g1 = {"name": "g1", "outputs": [{"name": "g1o"}], "nodes": [node("g1n", "Identity", ["y"], ["g1o"])]}
    return {
        "format": "onemodel",
        "version": 1,
        "ir_version": 8,
        "producer_name": "make_hostile",
        "producer_version": "1",
        "doc": "hostile corpus base model",
        "model_version": 1,
        "opsets": [{"domain": "", "version": 17}, {"domain": "com.example", "version": 1}],
        "metadata": [{"key": "author", "value": "hostile"}],
        "graph": {
            "name": "main",
            "doc": "base",
            "inputs": [
                {"name": "x", "type": copy.deepcopy(F4)},
                {"name": "cond", "type": {"kind": "tensor", "elem": 9, "shape": []}},
            ],
            "outputs": [
                {"name": "y", "type": copy.deepcopy(F4)},
                {"name": "z", "type": {"kind": "tensor", "elem": 1}},
            ],
            "value_info": [{"name": "t", "type": {"kind": "tensor", "elem": 1, "shape": [1, "n"]}}],
            "initializers": [
                tensor("w", 1, [4], 0, 16),
                tensor("b", 1, [4], 64, 16),
                tensor("q", 22, [3], 128, 2),
                {"name": "s", "dtype": 8, "dims": [2], "strings": [b64(b"a"), b64(b"bc")]},
            ],
            "sparse_initializers": [
                {"values": tensor("sp", 1, [2], 192, 8), "indices": tensor("", 7, [2], 256, 16), "dims": [4]},
            ],
            "nodes": [
                node("n0", "Mul", ["x", "w"], ["t"]),
                node("n1", "LeakyRelu", ["t"], ["u"], [{"name": "alpha", "type": 1, "value": bits(0.1)}]),
                node("n2", "Add", ["u", "b"], ["y"]),
                node("n3", "If", ["cond"], ["z"], [
                    {"name": "then_branch", "type": 5, "value": then_g},
                    {"name": "else_branch", "type": 5, "value": else_g},
                ]),
                node("n4", "Custom", ["y"], ["v"], [
                    {"name": "ints", "type": 7, "value": [1, -2, 3]},
                    {"name": "str", "type": 3, "value": b64(b"hi")},
                    {"name": "strs", "type": 8, "value": [b64(b"a"), b64(b"b")]},
                    {"name": "tensor", "type": 4, "value": tensor("attr_t", 1, [2], 320, 8)},
                    {"name": "floats", "type": 6, "value": [0, 0x80000000, 0x7FC00001]},
                    {"name": "i", "type": 2, "value": -5},
                    {"name": "graphs", "type": 10, "value": [g0, g1]},
                    {"name": "tp", "type": 13, "value": {"kind": "sequence", "inner": {"kind": "tensor", "elem": 1}}},
                ], domain="com.example"),
            ],
        },
        "functions": [{
            "name": "Custom",
            "domain": "com.example",
            "overload": "",
            "inputs": ["a"],
            "outputs": ["c"],
            "attribute_names": ["alpha"],
            "attribute_defaults": [{"name": "alpha", "type": 1, "value": bits(0.5)}],
            "nodes": [node("f0", "LeakyRelu", ["a"], ["c"], [{"name": "alpha", "type": 1, "ref": "alpha"}])],
            "opsets": [{"domain": "", "version": 17}],
        }],
    }


def build(manifest: dict | bytes, data: bytes = DATA, **kw) -> bytes:
    return assemble(manifest if isinstance(manifest, bytes) else dump(manifest), data, **kw)


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------

CASES: dict[str, tuple[bytes, str | None, str, str]] = {}
"""file stem -> (bytes, kind or None, where, note)."""


def case(stem: str, blob: bytes, where: str = "", note: str = "") -> None:
    kind = stem.split("-", 1)[0]
    if kind == "valid":
        kind = None
    else:
        assert kind in ("Malformed", "InvalidModel", "Unsupported"), stem
        assert where, stem
    assert stem not in CASES, stem
    CASES[stem] = (blob, kind, where, note)


def mutated(fn) -> bytes:
    m = base()
    fn(m)
    return build(m)


G = "manifest.graph"
N4 = f"{G}.nodes[4]"


def header_cases() -> None:
    good = build(base())
    size = len(good)
    ml = len(dump(base()))
    # DECISION: a file shorter than the 64-byte header is truncation (Malformed, spec table); nothing can be
    # said about any single field, so the where is the header as a whole.
    # An empty file has no magic at all: reported at header.magic (the reader checks the magic first).
    case("Malformed-file-empty", b"", "header.magic", "0 bytes")
    case("Malformed-file-10-bytes", good[:10], "header", "shorter than the header (magic intact)")
    case("Malformed-file-63-bytes", good[:63], "header", "one byte short of a header")
    case("Malformed-magic-bad", set_header(good, magic=b"ONEMODEX"), "header.magic")
    case("Malformed-magic-lowercase", set_header(good, magic=b"onemodel"), "header.magic")
    case("Malformed-magic-escape", set_header(good, magic=b"\x1b[2J\x1b]8;"), "header.magic",
         "magic bytes are a terminal escape: must be rendered visibly")
    case("Malformed-version-0", set_header(good, version=0), "header.version", "CLARIFICATIONS: version 0")
    case("Unsupported-version-2", set_header(good, version=2), "header.version", "newer version")
    case("Unsupported-version-u32-max", set_header(good, version=0xFFFFFFFF), "header.version")
    case("Unsupported-flags-1", set_header(good, flags=1), "header.flags")
    case("Unsupported-flags-high-bit", set_header(good, flags=0x80000000), "header.flags")
    case("Malformed-manifest-offset-0", set_header(good, manifest_offset=0), "header.manifest_offset")
    case("Malformed-manifest-offset-128", set_header(good, manifest_offset=128), "header.manifest_offset")
    case("Malformed-manifest-offset-u64-max", set_header(good, manifest_offset=U64), "header.manifest_offset",
         "also above 2^63-1")
    case("Malformed-manifest-length-past-file", set_header(good, manifest_length=size), "header.manifest_length",
         "64 + manifest_length > file length")
    case("Malformed-manifest-length-2pow63", set_header(good, manifest_length=1 << 63), "header.manifest_length",
         "u64 above 2^63-1")
    # A manifest_length that still fits in the file but runs into the data region: the rule that breaks is
    # "data_offset at least 64 + manifest_length". DECISION: the first field (in header order) whose own
    # check fails is manifest_length only when it exceeds the file; here the file length is respected, so the
    # inconsistency is reported on data_offset, the field whose constraint names manifest_length.
    case("Malformed-manifest-length-into-data", set_header(good, manifest_length=ml + 64), "header.data_offset",
         "64 + manifest_length > data_offset (but within the file)")
    m = dump(base())
    d0 = align64(64 + len(m))
    case("Malformed-data-offset-unaligned", assemble(m, DATA, pad_extra=1), "header.data_offset",
         "data_offset = 64k + 1; data_length and file_length consistent with it")
    case("Malformed-data-offset-before-manifest-end",
         assemble(m, DATA, data_offset=d0 - 64, data_length=size - (d0 - 64)), "header.data_offset",
         "data_offset multiple of 64 but inside the manifest; data_length consistent")
    case("Malformed-data-offset-past-file", set_header(good, data_offset=align64(size) + 64), "header.data_offset")
    case("Malformed-data-offset-2pow63", set_header(good, data_offset=1 << 63), "header.data_offset")
    case("Malformed-data-length-plus-64", set_header(good, data_length=len(DATA) + 64), "header.data_length")
    case("Malformed-data-length-minus-1", set_header(good, data_length=len(DATA) - 1), "header.data_length")
    case("Malformed-data-length-u64-max", set_header(good, data_length=U64), "header.data_length")
    # Truncation/extension: the spec says file_length is checked "before it trusts any other field".
    case("Malformed-file-length-truncated-data", good[:-8], "header.file_length", "last 8 bytes cut")
    case("Malformed-file-length-truncated-manifest", good[:64 + ml // 2], "header.file_length",
         "cut in the middle of the manifest")
    case("Malformed-file-length-extended", good + b"\0" * 64, "header.file_length", "64 bytes appended")
    case("Malformed-file-length-field-plus-1", set_header(good, file_length=size + 1), "header.file_length")
    case("Malformed-file-length-2pow63", set_header(good, file_length=1 << 63), "header.file_length")
    case("Unsupported-reserved-1", set_header(good, reserved=1), "header.reserved", "CLARIFICATIONS: reserved")
    case("Unsupported-reserved-high", set_header(good, reserved=1 << 62), "header.reserved")


def manifest_encoding_cases() -> None:
    m = dump(base())

    def with_manifest(raw_manifest: bytes) -> bytes:
        return assemble(raw_manifest, DATA)

    case("Malformed-manifest-bom", with_manifest(b"\xef\xbb\xbf" + m), "manifest", "UTF-8 byte-order mark")
    doc = b'"hostile corpus base model"'
    assert m.count(doc) == 1
    case("Malformed-manifest-invalid-utf8", with_manifest(m.replace(doc, b'"hostile \xff corpus"')), "manifest")
    case("Malformed-manifest-encoded-surrogate", with_manifest(m.replace(doc, b'"hostile \xed\xa0\x80 corpus"')),
         "manifest", "UTF-8 encoded U+D800 (ED A0 80)")
    case("Malformed-manifest-overlong-utf8", with_manifest(m.replace(doc, b'"hostile \xc0\xaf corpus"')), "manifest")
    case("Malformed-manifest-truncated-utf8", with_manifest(m.replace(doc, b'"hostile \xe2\x82"')), "manifest")
    # DECISION: a lone surrogate escape is valid JSON syntax whose string cannot be UTF-8: the problem is the
    # value of one field, so it is reported at that field's path (here the model's doc), unlike raw bytes
    # that are not UTF-8 (the text cannot be decoded at all: "manifest").
    case("Malformed-manifest-escaped-surrogate", with_manifest(m.replace(doc, b'"hostile \\ud800 corpus"')),
         "manifest.doc", 'JSON escape "\\ud800" (lone surrogate)')
    case("Malformed-manifest-escaped-low-surrogate", with_manifest(m.replace(doc, b'"\\udc00"')), "manifest.doc")

    def extra(text: str) -> bytes:
        mm = base()
        mm["x_unknown"] = raw(text)
        return build(mm)

    case("Malformed-manifest-nan-literal", extra("NaN"), "manifest", "NaN literal in an unknown field")
    case("Malformed-manifest-infinity-literal", extra("-Infinity"), "manifest")
    case("Malformed-manifest-trailing-garbage", with_manifest(m + b"}"), "manifest")
    case("Malformed-manifest-two-objects", with_manifest(m + b"{}"), "manifest")
    case("Malformed-manifest-not-object", with_manifest(b"[" + m + b"]"), "manifest", "an array")
    case("Malformed-manifest-string", with_manifest(b'"onemodel"'), "manifest")
    case("Malformed-manifest-null", with_manifest(b"null"), "manifest")
    case("Malformed-manifest-empty", with_manifest(b""), "manifest", "manifest_length 0")
    case("Malformed-manifest-whitespace-only", with_manifest(b"  \n"), "manifest")
    case("Malformed-manifest-cut", with_manifest(m[: len(m) // 2]), "manifest", "JSON ends early")
    case("Malformed-manifest-raw-control-char", with_manifest(m.replace(doc, b'"hostile \x01 corpus"')), "manifest",
         "unescaped U+0001 inside a JSON string")
    case("Malformed-manifest-single-quotes", with_manifest(m.replace(doc, b"'hostile'")), "manifest")
    case("Malformed-manifest-trailing-comma", with_manifest(m[:-1] + b",}"), "manifest")
    # Depth: the top-level object is level 1, so "x_unknown": [[...]] with 1024 arrays reaches 1025.
    case("Unsupported-manifest-depth-1025", extra("[" * 1024 + "]" * 1024), "manifest",
         "1025 JSON levels (limit 1024)")
    case("Unsupported-manifest-depth-100000", extra("[" * 100000 + "]" * 100000), "manifest",
         "very deep: must not be a RecursionError")
    case("valid-manifest-depth-1024", extra("[" * 1023 + "]" * 1023), note="exactly 1024 JSON levels")
    # Found in review: locating the depth problem re-scanned the unterminated string at every later
    # escaped quote (quadratic: this file took minutes); the walk must stay linear.
    case("Unsupported-manifest-depth-then-unterminated-escapes",
         with_manifest(m[:-1] + b',"x_unknown":' + b"[" * 1100 + b'"' + b'\\"x' * 100000), "manifest",
         "1100 arrays, then an unterminated string of 100,000 escaped quotes")


def integer_cases() -> None:
    def at(fn, stem, where, note=""):
        case(stem, mutated(fn), where, note)

    at(lambda m: m.__setitem__("ir_version", raw("8.0")), "Malformed-int-fraction-ir-version", "manifest.ir_version")
    at(lambda m: m["graph"]["initializers"][0]["dims"].__setitem__(0, raw("4e0")), "Malformed-int-exponent-dims",
       f"{G}.initializers[0].dims[0]")
    at(lambda m: m["graph"]["initializers"][1]["data"].__setitem__("length", raw("1e400")),
       "Malformed-int-huge-exponent-length", f"{G}.initializers[1].data.length", "1e400 becomes inf in Python")
    at(lambda m: m.__setitem__("model_version", 1 << 63), "Malformed-int-2pow63-model-version",
       "manifest.model_version")
    at(lambda m: m["graph"]["nodes"][4]["attributes"][5].__setitem__("value", 1 << 63),
       "Malformed-int-2pow63-attribute", f"{N4}.attributes[5].value", "INT attribute")
    at(lambda m: m["graph"]["nodes"][4]["attributes"][0]["value"].__setitem__(1, -(1 << 63) - 1),
       "Malformed-int-below-min-ints", f"{N4}.attributes[0].value[1]", "INTS attribute")
    at(lambda m: m.__setitem__("version", True), "Malformed-int-bool-version", "manifest.version")
    at(lambda m: m["opsets"][0].__setitem__("version", "17"), "Malformed-int-string-opset-version",
       "manifest.opsets[0].version")
    at(lambda m: m["graph"]["initializers"][0]["data"].__setitem__("offset", None), "Malformed-int-null-offset",
       f"{G}.initializers[0].data.offset")
    at(lambda m: m["graph"]["initializers"][2].__setitem__("dtype", raw("22.0")), "Malformed-int-fraction-dtype",
       f"{G}.initializers[2].dtype")
    at(lambda m: m["graph"]["inputs"][0]["type"]["shape"].__setitem__(1, raw("4.0")),
       "Malformed-int-fraction-shape", f"{G}.inputs[0].type.shape[1]")
    at(lambda m: m["graph"]["inputs"][0]["type"]["shape"].__setitem__(1, True), "Malformed-int-bool-shape",
       f"{G}.inputs[0].type.shape[1]", "a bool is neither an integer nor a named dimension")


def drop(container: dict, key: str):
    del container[key]


def missing_and_type_cases() -> None:
    def at(fn, stem, where, note=""):
        case(stem, mutated(fn), where, note)

    at(lambda m: drop(m, "format"), "Malformed-missing-format", "manifest.format")
    at(lambda m: drop(m, "version"), "Malformed-missing-version", "manifest.version")
    at(lambda m: drop(m, "ir_version"), "Malformed-missing-ir-version", "manifest.ir_version")
    at(lambda m: drop(m, "graph"), "Malformed-missing-graph", "manifest.graph")
    at(lambda m: drop(m["graph"]["nodes"][2], "op"), "Malformed-missing-node-op", f"{G}.nodes[2].op")
    at(lambda m: drop(m["graph"]["initializers"][1], "dtype"), "Malformed-missing-tensor-dtype",
       f"{G}.initializers[1].dtype")
    at(lambda m: drop(m["graph"]["initializers"][0], "dims"), "Malformed-missing-tensor-dims",
       f"{G}.initializers[0].dims")
    at(lambda m: drop(m["graph"]["nodes"][1]["attributes"][0], "name"), "Malformed-missing-attribute-name",
       f"{G}.nodes[1].attributes[0].name")
    at(lambda m: drop(m["graph"]["nodes"][1]["attributes"][0], "type"), "Malformed-missing-attribute-type",
       f"{G}.nodes[1].attributes[0].type")
    at(lambda m: drop(m["graph"]["nodes"][4]["attributes"][5], "value"), "Malformed-missing-attribute-value",
       f"{N4}.attributes[5].value", "INT attribute without ref and without value")
    at(lambda m: drop(m["graph"]["inputs"][1], "name"), "Malformed-missing-input-name", f"{G}.inputs[1].name")
    at(lambda m: drop(m["graph"]["initializers"][0]["data"], "offset"), "Malformed-missing-data-offset",
       f"{G}.initializers[0].data.offset")
    at(lambda m: drop(m["graph"]["initializers"][0]["data"], "length"), "Malformed-missing-data-length",
       f"{G}.initializers[0].data.length")
    at(lambda m: drop(m["graph"]["inputs"][0]["type"], "kind"), "Malformed-missing-type-kind",
       f"{G}.inputs[0].type.kind", "CLARIFICATIONS: Type without kind")
    at(lambda m: drop(m["graph"]["outputs"][0]["type"], "elem"), "Malformed-missing-type-elem",
       f"{G}.outputs[0].type.elem")
    at(lambda m: drop(m["functions"][0]["nodes"][0], "op"), "Malformed-missing-function-node-op",
       "manifest.functions[0].nodes[0].op")
    # wrong JSON types
    at(lambda m: m.__setitem__("graph", [m["graph"]]), "Malformed-type-graph-array", "manifest.graph")
    at(lambda m: m["graph"].__setitem__("nodes", {"n": 1}), "Malformed-type-nodes-object", f"{G}.nodes")
    at(lambda m: m["graph"]["nodes"][0]["inputs"].__setitem__(1, 7), "Malformed-type-node-input-int",
       f"{G}.nodes[0].inputs[1]")
    at(lambda m: m["graph"]["nodes"].__setitem__(2, "Add"), "Malformed-type-node-string", f"{G}.nodes[2]")
    at(lambda m: m["metadata"][0].__setitem__("value", 3), "Malformed-type-metadata-value-int",
       "manifest.metadata[0].value")
    at(lambda m: m["graph"]["inputs"][0]["type"]["shape"].__setitem__(1, raw("1.5")), "Malformed-type-shape-float",
       f"{G}.inputs[0].type.shape[1]")
    at(lambda m: m["graph"].__setitem__("doc", 5), "Malformed-type-graph-doc-int", f"{G}.doc")
    at(lambda m: m["graph"]["initializers"][0].__setitem__("dims", 4), "Malformed-type-dims-int",
       f"{G}.initializers[0].dims")
    at(lambda m: m["graph"]["initializers"][0].__setitem__("data", [0, 16]), "Malformed-type-data-array",
       f"{G}.initializers[0].data")
    at(lambda m: m["graph"]["inputs"][0].__setitem__("type", "float"), "Malformed-type-type-string",
       f"{G}.inputs[0].type")
    at(lambda m: m["graph"]["nodes"][3]["attributes"][0].__setitem__("value", [1]), "Malformed-type-graph-attr-array",
       f"{G}.nodes[3].attributes[0].value", "GRAPH attribute whose value is not an object")
    at(lambda m: m["functions"][0].__setitem__("inputs", "a"), "Malformed-type-function-inputs",
       "manifest.functions[0].inputs")
    # model-level fields
    at(lambda m: m.__setitem__("format", "onnx"), "Malformed-format-onnx", "manifest.format",
       "CLARIFICATIONS: format not onemodel")
    at(lambda m: m.__setitem__("format", "OneModel"), "Malformed-format-case", "manifest.format")
    at(lambda m: m.__setitem__("version", 2), "Malformed-version-mismatch", "manifest.version",
       "CLARIFICATIONS: manifest version differs from the header's")
    at(lambda m: m.__setitem__("ir_version", 2), "InvalidModel-ir-version-2", "manifest.ir_version",
       "CLARIFICATIONS: ir_version below 3")


def attribute_cases() -> None:
    def at(fn, stem, where, note=""):
        case(stem, mutated(fn), where, note)

    a1 = lambda m: m["graph"]["nodes"][1]["attributes"][0]  # noqa: E731  FLOAT alpha
    a4 = lambda m, i: m["graph"]["nodes"][4]["attributes"][i]  # noqa: E731
    at(lambda m: a1(m).__setitem__("type", 0), "Malformed-attribute-type-0", f"{G}.nodes[1].attributes[0].type",
       "CLARIFICATIONS: type 0 without ref")
    # DECISION: ref + value is reported on the value (the field that must not be there).
    at(lambda m: m["functions"][0]["nodes"][0]["attributes"][0].__setitem__("value", bits(0.2)),
       "Malformed-attribute-ref-with-value", "manifest.functions[0].nodes[0].attributes[0].value",
       "CLARIFICATIONS: ref and value")
    at(lambda m: a1(m).__setitem__("type", 15), "Unsupported-attribute-type-15", f"{G}.nodes[1].attributes[0].type")
    at(lambda m: a1(m).__setitem__("type", 99), "Unsupported-attribute-type-99", f"{G}.nodes[1].attributes[0].type")
    # DECISION: a negative attribute type is an unknown code (a well-formed integer this reader does not know).
    at(lambda m: a1(m).__setitem__("type", -1), "Unsupported-attribute-type-negative",
       f"{G}.nodes[1].attributes[0].type")
    at(lambda m: a1(m).__setitem__("value", 1 << 32), "Malformed-float-bits-2pow32", f"{G}.nodes[1].attributes[0].value",
       "CLARIFICATIONS: FLOAT value outside 0..2^32-1")
    at(lambda m: a1(m).__setitem__("value", -1), "Malformed-float-bits-negative", f"{G}.nodes[1].attributes[0].value")
    at(lambda m: a1(m).__setitem__("value", raw("0.1")), "Malformed-float-decimal", f"{G}.nodes[1].attributes[0].value",
       "floats are never written as decimal numbers")
    at(lambda m: a4(m, 4)["value"].__setitem__(1, -1), "Malformed-floats-negative", f"{N4}.attributes[4].value[1]")
    at(lambda m: a4(m, 4)["value"].__setitem__(2, 1 << 32), "Malformed-floats-2pow32", f"{N4}.attributes[4].value[2]")
    at(lambda m: a4(m, 1).__setitem__("value", "aGk"), "Malformed-base64-unpadded", f"{N4}.attributes[1].value")
    at(lambda m: a4(m, 1).__setitem__("value", "aG k="), "Malformed-base64-space", f"{N4}.attributes[1].value")
    at(lambda m: a4(m, 1).__setitem__("value", "aGk_"), "Malformed-base64-urlsafe", f"{N4}.attributes[1].value",
       "standard alphabet only")
    at(lambda m: a4(m, 2)["value"].__setitem__(1, "!!!!"), "Malformed-base64-strings-bad-char",
       f"{N4}.attributes[2].value[1]")
    at(lambda m: m["graph"]["initializers"][3]["strings"].__setitem__(1, "YmM"),
       "Malformed-base64-string-tensor", f"{G}.initializers[3].strings[1]")
    at(lambda m: a4(m, 5).__setitem__("value", "5"), "Malformed-attribute-int-as-string", f"{N4}.attributes[5].value")
    at(lambda m: a4(m, 0).__setitem__("value", 5), "Malformed-attribute-ints-not-array", f"{N4}.attributes[0].value")
    at(lambda m: a4(m, 6)["value"].__setitem__(1, 3), "Malformed-attribute-graphs-entry-int",
       f"{N4}.attributes[6].value[1]")
    at(lambda m: a4(m, 3)["value"].__setitem__("dtype", 99), "Unsupported-attribute-tensor-dtype",
       f"{N4}.attributes[3].value.dtype")
    at(lambda m: a4(m, 7)["value"].__setitem__("kind", "tuple"), "Unsupported-attribute-type-proto-kind",
       f"{N4}.attributes[7].value.kind")


def tensor_cases() -> None:
    def at(fn, stem, where, note=""):
        case(stem, mutated(fn), where, note)

    ini = lambda m, i: m["graph"]["initializers"][i]  # noqa: E731
    I0, I1, I2, I3 = (f"{G}.initializers[{i}]" for i in range(4))
    # DECISION (ranges): a range outside the data region is Malformed (spec table: "a range outside the file"),
    # reported at `data` (the range is the offset/length pair; agreed with the reader). An offset that is
    # negative or not a signed 64-bit integer is reported at data.offset itself.
    at(lambda m: ini(m, 0)["data"].__setitem__("offset", 1024), "Malformed-range-offset-past-data",
       f"{I0}.data", "offset beyond the data region")
    at(lambda m: ini(m, 1)["data"].__setitem__("offset", 320), "Malformed-range-end-past-data",
       f"{I1}.data", "starts inside (320), ends at 336 > data_length 328")
    at(lambda m: (ini(m, 0)["data"].__setitem__("offset", (1 << 63) - 64), ini(m, 0).__setitem__("dims", [32]),
                  ini(m, 0)["data"].__setitem__("length", 128)),
       "Malformed-range-overflow-int64", f"{I0}.data", "offset 2^63-64 + length 128 overflows int64")
    at(lambda m: ini(m, 0)["data"].__setitem__("offset", U64 - 63), "Malformed-range-offset-u64", f"{I0}.data.offset",
       "offset does not fit in a signed 64-bit integer")
    at(lambda m: ini(m, 0)["data"].__setitem__("offset", -64), "Malformed-range-offset-negative", f"{I0}.data.offset")
    # DECISION: an offset that is not a multiple of 64 breaks the file layout (section 1.3), like an unaligned
    # data_offset in the header: Malformed, at data.offset.
    at(lambda m: ini(m, 0)["data"].__setitem__("offset", 32), "Malformed-offset-unaligned", f"{I0}.data.offset")
    at(lambda m: ini(m, 2)["data"].__setitem__("offset", 129), "Malformed-offset-unaligned-subbyte",
       f"{I2}.data.offset")
    at(lambda m: ini(m, 0)["data"].__setitem__("length", 12), "InvalidModel-length-float-short", f"{I0}.data.length")
    at(lambda m: ini(m, 0)["data"].__setitem__("length", 20), "InvalidModel-length-float-long", f"{I0}.data.length")
    # A negative length is not a byte count at all (no range can have it): Malformed, like a negative offset.
    at(lambda m: ini(m, 0)["data"].__setitem__("length", -16), "Malformed-length-negative", f"{I0}.data.length")
    at(lambda m: ini(m, 2)["data"].__setitem__("length", 1), "InvalidModel-length-int4-short", f"{I2}.data.length",
       "int4[3] needs ceil(12/8) = 2 bytes")
    at(lambda m: ini(m, 2)["data"].__setitem__("length", 3), "InvalidModel-length-int4-long", f"{I2}.data.length")
    at(lambda m: ini(m, 2).__setitem__("dtype", 27), "InvalidModel-length-6bit", f"{I2}.data.length",
       "6-bit [3] needs 3 bytes, has 2")
    at(lambda m: (ini(m, 2).__setitem__("dtype", 25), ini(m, 2).__setitem__("dims", [9])), "InvalidModel-length-2bit",
       f"{I2}.data.length", "uint2[9] needs 3 bytes, has 2")
    at(lambda m: ini(m, 2).__setitem__("dtype", 2), "InvalidModel-length-dtype-changed", f"{I2}.data.length",
       "uint8[3] needs 3 bytes")
    at(lambda m: ini(m, 0)["dims"].__setitem__(0, -4), "InvalidModel-dims-negative", f"{I0}.dims[0]")
    at(lambda m: ini(m, 0).__setitem__("dims", [2, -2, -1]), "InvalidModel-dims-negative-product-positive",
       f"{I0}.dims[1]", "product is positive; the first negative entry is reported")
    # DECISION: an element count at 2^60 or more. Arguable both ways: section 2.5 says the count "must stay
    # below 2^60" (a format rule -> InvalidModel, like a negative dimension), but 3.1 lists it with the
    # limits, and the project's reader and ONNX bridge both chose Unsupported ("this reader does not handle
    # it"). We follow the project: Unsupported, at dims (no single entry is wrong). The count is checked
    # before the byte length and the range (they are derived from it), so the out-of-region range that any
    # such tensor also has is not what is reported.
    at(lambda m: (ini(m, 1).__setitem__("dtype", 2), ini(m, 1).__setitem__("dims", [1 << 30, 1 << 30]),
                  ini(m, 1)["data"].__setitem__("length", 1 << 60)),
       "Unsupported-count-2pow60", f"{I1}.dims", "uint8[2^30,2^30], length 2^60 (matches)")
    # DECISION: a tensor over 2^31-1 bytes is Unsupported (spec table). Its length matches dims; the range
    # check comes after the size limit (the limit is about the tensor, the range about the file).
    at(lambda m: (ini(m, 1).__setitem__("dtype", 2), ini(m, 1).__setitem__("dims", [1 << 31]),
                  ini(m, 1)["data"].__setitem__("length", 1 << 31)),
       "Unsupported-tensor-2pow31-bytes", f"{I1}.data.length", "uint8[2^31]: one byte over the limit")
    at(lambda m: ini(m, 0).__setitem__("dtype", 0), "Unsupported-dtype-0", f"{I0}.dtype")
    at(lambda m: ini(m, 0).__setitem__("dtype", 29), "Unsupported-dtype-29", f"{I0}.dtype")
    at(lambda m: ini(m, 0).__setitem__("dtype", -1), "Unsupported-dtype-negative", f"{I0}.dtype")
    at(lambda m: ini(m, 3).__setitem__("data", {"offset": 0, "length": 0}), "Malformed-dtype-8-with-data", f"{I3}.data",
       "CLARIFICATIONS: string tensor carrying data")
    at(lambda m: ini(m, 3)["strings"].append(b64(b"d")), "InvalidModel-strings-count-long", f"{I3}.strings")
    at(lambda m: ini(m, 3).__setitem__("strings", []), "InvalidModel-strings-count-empty", f"{I3}.strings")
    at(lambda m: ini(m, 3)["strings"].__setitem__(0, 5), "Malformed-strings-entry-int", f"{I3}.strings[0]")
    sp = f"{G}.sparse_initializers[0]"
    at(lambda m: m["graph"]["sparse_initializers"][0]["indices"]["data"].__setitem__("length", 8),
       "InvalidModel-sparse-indices-length", f"{sp}.indices.data.length")
    at(lambda m: m["graph"]["sparse_initializers"][0]["dims"].__setitem__(0, -4), "InvalidModel-sparse-dims-negative",
       f"{sp}.dims[0]")
    at(lambda m: m["graph"]["sparse_initializers"][0]["values"].__setitem__("dtype", 30),
       "Unsupported-sparse-values-dtype", f"{sp}.values.dtype")
    at(lambda m: m["graph"]["nodes"][4]["attributes"][3]["value"]["data"].__setitem__("offset", 384),
       "Malformed-range-attribute-tensor", f"{N4}.attributes[3].value.data")


def type_and_nesting_cases() -> None:
    def at(fn, stem, where, note=""):
        case(stem, mutated(fn), where, note)

    T0 = f"{G}.inputs[0].type"
    at(lambda m: m["graph"]["inputs"][0]["type"].__setitem__("kind", "tuple"), "Unsupported-type-kind-unknown",
       f"{T0}.kind")
    at(lambda m: m["graph"]["inputs"][0]["type"].__setitem__("kind", "Tensor"), "Unsupported-type-kind-case",
       f"{T0}.kind")
    at(lambda m: m["graph"]["inputs"][0]["type"].__setitem__("kind", 1), "Malformed-type-kind-int", f"{T0}.kind")
    at(lambda m: m["graph"]["inputs"][0]["type"]["shape"].__setitem__(1, -4), "InvalidModel-shape-negative",
       f"{T0}.shape[1]", "CLARIFICATIONS: negative shape entry")
    at(lambda m: m["graph"]["inputs"][0]["type"].__setitem__("shape", 4), "Malformed-shape-not-array", f"{T0}.shape")
    # Nesting (CLARIFICATIONS): the main graph is level 1; 64 open at once is accepted, 65 rejected.
    def nested_graphs(levels: int) -> tuple[dict, str]:
        """Main graph + (levels-1) nested GRAPH attributes; returns the manifest and the deepest graph's path."""
        m = base()
        inner = {"name": f"g{levels}", "outputs": [{"name": f"o{levels}"}],
                 "nodes": [node("leaf", "Identity", ["x"], [f"o{levels}"])]}
        path = ""
        for level in range(levels - 1, 1, -1):
            inner = {"name": f"g{level}", "outputs": [{"name": f"o{level}"}],
                     "nodes": [node(f"if{level}", "If", ["cond"], [f"o{level}"],
                                    [{"name": "then_branch", "type": 5, "value": inner}])]}
        m["graph"]["nodes"].append(node("deep", "If", ["cond"], ["deep_out"],
                                        [{"name": "then_branch", "type": 5, "value": inner}]))
        path = f"{G}.nodes[5].attributes[0].value" + ".nodes[0].attributes[0].value" * (levels - 2)
        return m, path

    m, _ = nested_graphs(64)
    case("valid-nesting-64-graphs", build(m), note="main graph + 63 nested graphs = 64 levels")
    m, path = nested_graphs(65)
    case("Unsupported-nesting-65-graphs", build(m), path, "the 65th open graph is reported")

    def nested_types(levels: int) -> tuple[dict, str]:
        """Main graph (level 1) + a type chain of (levels-1) types on inputs[0]."""
        m = base()
        t: dict = {"kind": "tensor", "elem": 1, "shape": [1, 4]}
        for _ in range(levels - 2):
            t = {"kind": "sequence", "inner": t}
        m["graph"]["inputs"][0]["type"] = t
        return m, f"{T0}" + ".inner" * (levels - 2)

    m, _ = nested_types(64)
    case("valid-nesting-64-types", build(m), note="main graph + 63 nested types")
    m, path = nested_types(65)
    case("Unsupported-nesting-65-types", build(m), path)

    # Mixed: 33 graphs (main + 32 nested), then a chain of 32 types on the deepest graph's output: 65 levels.
    m, gpath = nested_graphs(33)
    deepest = m["graph"]["nodes"][5]["attributes"][0]["value"]
    for _ in range(31):
        deepest = deepest["nodes"][0]["attributes"][0]["value"]
    t: dict = {"kind": "tensor", "elem": 1}
    for _ in range(31):
        t = {"kind": "optional", "inner": t}
    deepest["outputs"][0]["type"] = t
    case("Unsupported-nesting-65-mixed", build(m), gpath + ".outputs[0].type" + ".inner" * 31,
         "33 graphs + 32 types")
    # Map types: key and value types (the value type is `inner`).
    at(lambda m: m["graph"]["value_info"][0].__setitem__("type", {"kind": "map", "key": 7, "inner": {"kind": "nope"}}),
       "Unsupported-type-map-inner-kind", f"{G}.value_info[0].type.inner.kind")


def reading_rule_cases() -> None:
    def at(fn, stem, where, note=""):
        case(stem, mutated(fn), where, note)

    # DECISION (duplicates): the second definition is reported, at the field that defines the name: an
    # initializer's `name`, a node's `outputs[k]`, a sparse initializer's `values.name`, an input's `name`.
    at(lambda m: m["graph"]["initializers"][2].__setitem__("name", "w"), "InvalidModel-duplicate-initializers",
       f"{G}.initializers[2].name", "q renamed to w (q is unused)")
    at(lambda m: m["graph"]["nodes"][4].__setitem__("outputs", ["x"]), "InvalidModel-duplicate-input-node-output",
       f"{N4}.outputs[0]", "node output redefines graph input x")
    at(lambda m: m["graph"]["nodes"][4].__setitem__("outputs", ["t"]), "InvalidModel-duplicate-node-outputs",
       f"{N4}.outputs[0]", "two nodes define t")
    at(lambda m: m["graph"]["nodes"][4].__setitem__("outputs", ["v", "v"]), "InvalidModel-duplicate-same-node",
       f"{N4}.outputs[1]")
    at(lambda m: m["graph"]["sparse_initializers"][0]["values"].__setitem__("name", "q"),
       "InvalidModel-duplicate-initializer-sparse", f"{G}.sparse_initializers[0].values.name")
    at(lambda m: m["graph"]["inputs"].append({"name": "x"}), "InvalidModel-duplicate-inputs", f"{G}.inputs[2].name")
    at(lambda m: m["graph"]["nodes"][3]["attributes"][0]["value"]["nodes"].append(
        node("dup", "Identity", ["u"], ["zt"])), "InvalidModel-duplicate-in-subgraph",
       f"{G}.nodes[3].attributes[0].value.nodes[1].outputs[0]")
    at(lambda m: m["graph"]["nodes"][2]["inputs"].__setitem__(1, "nope"), "InvalidModel-undefined-node-input",
       f"{G}.nodes[2].inputs[1]")
    # DECISION: an undefined graph output is reported at the TypedName's `name`.
    at(lambda m: m["graph"]["outputs"][1].__setitem__("name", "nope"), "InvalidModel-undefined-graph-output",
       f"{G}.outputs[1].name")
    at(lambda m: m["graph"]["nodes"][3]["attributes"][0]["value"]["nodes"][0]["inputs"].__setitem__(0, "nope"),
       "InvalidModel-undefined-subgraph-input", f"{G}.nodes[3].attributes[0].value.nodes[0].inputs[0]")
    at(lambda m: m["graph"]["nodes"][3]["attributes"][1]["value"]["outputs"][0].__setitem__("name", "nope"),
       "InvalidModel-undefined-subgraph-output", f"{G}.nodes[3].attributes[1].value.outputs[0].name")
    # CLARIFICATIONS: a graph output named "" names no defined value (rule 2; "" as an omitted operand is for
    # node operands only, and a node's "" output defines nothing). Reported where an undefined output is.
    at(lambda m: m["graph"]["outputs"][1].__setitem__("name", ""), "InvalidModel-empty-graph-output",
       f"{G}.outputs[1].name", "graph output z renamed to the empty string")
    at(lambda m: m["graph"]["nodes"][3]["attributes"][0]["value"]["outputs"][0].__setitem__("name", ""),
       "InvalidModel-empty-subgraph-output", f"{G}.nodes[3].attributes[0].value.outputs[0].name",
       "the then branch's output zt renamed to the empty string")
    at(lambda m: m["functions"][0]["outputs"].__setitem__(0, ""), "InvalidModel-function-empty-output",
       "manifest.functions[0].outputs[0]", "a function output is a graph output of its body: the same rule")
    # CLARIFICATIONS: "" never names a value, so nothing defines it either: a graph or function input, an
    # initializer or a sparse initializer named "" is InvalidModel at its name (it was accepted as a definition).
    at(lambda m: m["graph"]["inputs"].append({"name": ""}), "InvalidModel-empty-graph-input", f"{G}.inputs[2].name",
       "a third graph input named the empty string")
    at(lambda m: m["graph"]["initializers"][2].__setitem__("name", ""), "InvalidModel-empty-initializer",
       f"{G}.initializers[2].name", "the unused initializer q renamed to the empty string")
    at(lambda m: m["graph"]["sparse_initializers"][0]["values"].__setitem__("name", ""),
       "InvalidModel-empty-sparse-initializer", f"{G}.sparse_initializers[0].values.name",
       "the sparse initializer sp renamed to the empty string")
    at(lambda m: m["functions"][0]["inputs"].append(""), "InvalidModel-function-empty-input",
       "manifest.functions[0].inputs[1]", "a second function input named the empty string")
    at(lambda m: m["graph"]["nodes"][4]["attributes"][6]["value"][1]["nodes"][0]["inputs"].__setitem__(0, "nope"),
       "InvalidModel-undefined-graphs-attr-input", f"{N4}.attributes[6].value[1].nodes[0].inputs[0]")
    # A subgraph's value is not visible to the outer graph.
    at(lambda m: m["graph"]["nodes"][2]["inputs"].__setitem__(1, "zt"), "InvalidModel-undefined-inner-value",
       f"{G}.nodes[2].inputs[1]", "outer node reads a value defined only inside a subgraph")
    at(lambda m: m["graph"]["nodes"][4]["inputs"].__setitem__(0, "s_typo\u202e"), "InvalidModel-undefined-bidi-name",
       f"{N4}.inputs[0]", "the undefined name holds U+202E: messages must render it visibly")
    at(lambda m: m["graph"]["nodes"][2]["inputs"].__setitem__(
        1, "\x1b[2J\x1b]52;c;SGVsbG8=\x07[bold red]x[/]\x9b31m"), "InvalidModel-undefined-escape-name",
       f"{G}.nodes[2].inputs[1]", "the undefined name is ESC/OSC 52/markup/C1 CSI")
    # DECISION (cycle): InvalidModel at the first node, in file order, that cannot be scheduled (every node of
    # a cycle waits for another; the stable order makes "first in the file" well defined).
    at(lambda m: m["graph"]["nodes"][0]["inputs"].__setitem__(0, "u"), "InvalidModel-cycle-two-nodes",
       f"{G}.nodes[0]", "n0 reads u (from n1), n1 reads t (from n0)")
    at(lambda m: m["graph"]["nodes"][4]["inputs"].__setitem__(0, "v"), "InvalidModel-cycle-self",
       f"{N4}", "n4 reads its own output")
    at(lambda m: m["graph"]["nodes"][4].__setitem__("domain", "com.other"), "InvalidModel-domain-not-in-opsets",
       f"{N4}.domain")
    at(lambda m: m["opsets"].pop(0), "InvalidModel-default-domain-not-in-opsets", f"{G}.nodes[0].domain",
       "no opset for the default domain: the first node in the file fails")
    at(lambda m: m["functions"][0]["nodes"][0]["inputs"].__setitem__(0, "nope"),
       "InvalidModel-function-undefined-input", "manifest.functions[0].nodes[0].inputs[0]")
    at(lambda m: m["functions"][0]["outputs"].__setitem__(0, "nope"), "InvalidModel-function-undefined-output",
       "manifest.functions[0].outputs[0]")
    # DECISION: a ref that names none of the function's attribute_names is an undefined name: InvalidModel.
    at(lambda m: m["functions"][0]["nodes"][0]["attributes"][0].__setitem__("ref", "beta"),
       "InvalidModel-function-unknown-ref", "manifest.functions[0].nodes[0].attributes[0].ref")


HOSTILE_STRINGS = {
    "markup": "[bold red]x[/] [link=http://evil.example]click[/link] [/]",
    "csi": "\x1b[31mred\x1b[0m\x1b[2J\x1b[H",
    "osc52": "\x1b]52;c;SGVsbG8=\x07",
    "osc8": "\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\",
    "c0": "".join(chr(c) for c in range(0, 32)) + "\x7f",
    "c1": "".join(chr(c) for c in range(0x80, 0xA0)),
    "bidi": "abc\u202edef\u2066ghi\u2069\u202c\u200f",
    "zero_width": "a\u200bb\ufeffc\u200dd",
}


def terminal_safety_cases() -> None:
    def named(strings: dict[str, str]) -> dict:
        m = base()
        text = "|".join(strings.values())
        m["producer_name"] = text
        m["doc"] = text
        m["metadata"] = [{"key": f"{k}:{v}", "value": v} for k, v in strings.items()]
        g = m["graph"]
        g["name"] = text
        g["doc"] = text
        # rename value x everywhere (graph input, n0 input, g0n input)
        evil = "x" + text
        g["inputs"][0]["name"] = evil
        g["nodes"][0]["inputs"][0] = evil
        g["nodes"][4]["attributes"][6]["value"][0]["nodes"][0]["inputs"][0] = evil
        for i, n in enumerate(g["nodes"]):
            n["name"] = f"n{i}{text}"
            n["doc"] = text
        g["nodes"][4]["op"] = "Custom" + text
        g["nodes"][4]["attributes"][1]["value"] = b64(text.encode("utf-8"))
        g["initializers"][3]["strings"] = [b64(text.encode("utf-8")), b64(b"\xff\xfe\x1b[2J\x00")]
        return m

    case("valid-term-markup", build(named({"markup": HOSTILE_STRINGS["markup"]})),
         note="Rich markup in names/docs/metadata: must appear literally")
    case("valid-term-ansi", build(named({k: HOSTILE_STRINGS[k] for k in ("csi", "osc52", "osc8")})),
         note="ANSI CSI, OSC 52 clipboard write, OSC 8 link")
    case("valid-term-controls", build(named({k: HOSTILE_STRINGS[k] for k in ("c0", "c1")})),
         note="every C0 control, DEL, every C1 control")
    case("valid-term-bidi", build(named({k: HOSTILE_STRINGS[k] for k in ("bidi", "zero_width")})),
         note="bidi overrides/isolates, zero-width characters, BOM inside a name")
    case("valid-term-all", build(named(HOSTILE_STRINGS)), note="every hostile string at once")
    # Raw C1 and bidi characters written unescaped in the manifest (ensure_ascii=False), the rest escaped.
    m = named(HOSTILE_STRINGS)
    case("valid-term-all-escaped", build(dump(m, ensure_ascii=True)), note="same, every non-ASCII char \\u-escaped")
    m = base()
    m["graph"]["initializers"][3]["strings"] = [b64(HOSTILE_STRINGS["osc52"].encode()), b64(bytes(range(256)))]
    case("valid-term-string-tensor", build(m), note="string tensor elements: OSC 52 and all 256 byte values")
    m = base()
    long_name = "[bold]" + "A" * (1_000_000 - 10) + "\x1b[2J"
    assert len(long_name) == 1_000_000
    m["graph"]["nodes"][4]["name"] = long_name
    case("valid-term-long-name", build(m), note="a node name of 1,000,000 characters")


def misc_valid_cases() -> None:
    case("valid-base", build(base()), note="the base every hostile file mutates")
    m = base()
    m["x_future_field"] = {"anything": [1, 2.5, None, True, "s"]}
    m["graph"]["x_more"] = 1.5
    m["graph"]["nodes"][0]["x_node_extra"] = {"nested": {"deep": []}}
    case("valid-unknown-fields", build(m), note="unknown fields are ignored (floats allowed there)")
    # Duplicate keys are a finding, not a problem (CLARIFICATIONS).
    m = base()
    m["x_dup"] = raw('1,"x_dup":2')
    case("valid-duplicate-keys", build(m), note="duplicate key x_dup: a finding only")
    case("valid-wide-data-offset", assemble(dump(base()), DATA, pad_extra=128),
         note="data_offset two blocks beyond the manifest's end: a finding only")
    m = base()
    for k in ("producer_name", "producer_version", "doc", "model_version", "metadata", "functions"):
        del m[k]
    m["graph"]["nodes"][4]["domain"] = ""
    case("valid-minimal-optional", build(m), note="optional model fields absent")
    m = base()
    m["graph"]["nodes"].reverse()
    case("valid-nodes-reversed", build(m), note="nodes stored in reverse dependency order (a finding)")
    m = base()
    m["opsets"][0]["domain"] = "ai.onnx"
    case("valid-opset-ai-onnx", build(m), note='"ai.onnx" is the default domain')
    m = base()
    m["graph"]["initializers"][1]["data"] = {"offset": 0, "length": 16}
    case("valid-shared-bytes", build(m), note="two tensors share bytes (allowed)")
    m = base()
    m["graph"]["initializers"].append(tensor("empty", 1, [0, 3], 0, 0))
    m["graph"]["initializers"].append(tensor("empty2", 1, [1 << 40, 0], 0, 0))
    case("valid-zero-length", build(m), note="zero-element tensors at offset 0 (a huge dim times 0)")
    m = base()
    m["graph"]["initializers"].append(tensor("empty3", 1, [1 << 31, 1 << 31, 1 << 31, 0], 0, 0))
    case("valid-zero-count-huge-dims", build(m), note="dims [2^31,2^31,2^31,0]: the product is 0 (< 2^60), "
         "though 2^93 on the way: a reader checking partial products rejects a valid file")


def more_cases() -> None:
    """Cases added after the first reader run (each still exactly one defect)."""

    def at(fn, stem, where, note=""):
        case(stem, mutated(fn), where, note)

    ini = lambda m, i: m["graph"]["initializers"][i]  # noqa: E731
    I0 = f"{G}.initializers[0]"
    at(lambda m: drop(ini(m, 0), "data"), "Malformed-missing-data", f"{I0}.data",
       "a non-string tensor needs data (a string tensor needs strings)")
    at(lambda m: ini(m, 0).__setitem__("strings", [b64(b"a")] * 4), "Malformed-strings-on-float-tensor",
       f"{I0}.strings", "a float tensor carrying strings as well as data")
    at(lambda m: m["graph"]["nodes"][1]["attributes"].__setitem__(0, {"name": "alpha", "type": 1, "ref": "alpha"}),
       "InvalidModel-ref-outside-function", f"{G}.nodes[1].attributes[0].ref",
       "a reference to an enclosing function's attribute, in the main graph (no function encloses it)")
    at(lambda m: drop(m["opsets"][1], "version"), "Malformed-missing-opset-version", "manifest.opsets[1].version")
    at(lambda m: m["graph"]["initializers"][0]["dims"].__setitem__(0, raw("04")), "Malformed-int-leading-zero",
       "manifest", "04 is not JSON")
    at(lambda m: m["graph"]["initializers"][0]["dims"].__setitem__(0, raw("+4")), "Malformed-int-plus-sign",
       "manifest", "+4 is not JSON")
    # Python refuses to convert integers of more than 4300 digits (sys.get_int_max_str_digits): the reader
    # must turn that ValueError into a clean problem. It is not valid JSON for us anyway (not an int64).
    at(lambda m: m.__setitem__("x_unknown", raw("9" * 5000)), "Malformed-int-5000-digits", "manifest",
       "a 5000-digit integer in an unknown field")
    at(lambda m: m["functions"][0]["nodes"].append(node("f1", "Relu", ["a"], ["c"])),
       "InvalidModel-function-duplicate-output", "manifest.functions[0].nodes[1].outputs[0]")

    def function_cycle(m):
        f = m["functions"][0]
        f["nodes"][0]["inputs"].append("e")  # f0 reads e (from f1), f1 reads c (from f0)
        f["nodes"].append(node("f1", "Relu", ["c"], ["e"]))

    # DECISION: rule 3 (dependency order, a cycle is an error) holds in function bodies as in graphs.
    at(function_cycle, "InvalidModel-function-cycle", "manifest.functions[0].nodes[0]",
       "f0 reads e (from f1), f1 reads c (from f0)")
    at(lambda m: m["graph"]["sparse_initializers"][0]["indices"].__setitem__("dtype", 0),
       "Unsupported-sparse-indices-dtype-0", f"{G}.sparse_initializers[0].indices.dtype")
    at(lambda m: m["graph"]["nodes"][4]["attributes"].append({"name": "tensors", "type": 9, "value": [
        tensor("t0", 1, [2], 320, 8), tensor("t1", 1, [2], 320, 4)]}), "InvalidModel-attribute-tensors-length",
       f"{N4}.attributes[8].value[1].data.length")
    at(lambda m: m["graph"]["nodes"][4]["attributes"].append({"name": "tps", "type": 14, "value": [
        {"kind": "tensor", "elem": 1}, {"kind": "bogus"}]}), "Unsupported-attribute-type-protos-kind",
       f"{N4}.attributes[8].value[1].kind")
    at(lambda m: m["graph"]["nodes"][4]["attributes"].append({"name": "sp", "type": 11, "value": {
        "values": tensor("spv", 1, [2], 192, 8), "indices": tensor("", 7, [2], 256, 16), "dims": [-1]}}),
       "InvalidModel-attribute-sparse-dims-negative", f"{N4}.attributes[8].value.dims[0]")
    m = dump(base())
    case("Malformed-manifest-utf16", assemble(m.decode().encode("utf-16-le"), DATA), "manifest",
         "the manifest in UTF-16 (NUL bytes everywhere)")
    # valid
    m = base()
    m["graph"] = {"name": "empty", "nodes": []}
    del m["functions"]
    case("valid-no-tensors", build(m, b""), note="no tensors: an empty data region at the end of the file")
    m = base()
    m["graph"]["outputs"].append({"name": "x"})
    case("valid-input-is-output", build(m), note="a graph input listed as a graph output")
    m = base()
    m["graph"]["nodes"][3]["attributes"][0]["value"]["nodes"][0]["outputs"] = ["zt"]
    m["graph"]["nodes"][3]["attributes"][1]["value"]["outputs"][0]["name"] = "zt"
    m["graph"]["nodes"][3]["attributes"][1]["value"]["nodes"][0]["outputs"] = ["zt"]
    case("valid-same-name-in-sibling-subgraphs", build(m), note="then and else both define zt (different graphs)")


def generate() -> dict[str, tuple[bytes, str | None, str, str]]:
    CASES.clear()
    header_cases()
    manifest_encoding_cases()
    integer_cases()
    missing_and_type_cases()
    attribute_cases()
    tensor_cases()
    type_and_nesting_cases()
    reading_rule_cases()
    more_cases()
    terminal_safety_cases()
    misc_valid_cases()
    return dict(CASES)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    cases = generate()
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("*.onemodel"):
        if old.stem not in cases:
            old.unlink()
    expected = {}
    for stem, (blob, kind, where, note) in sorted(cases.items()):
        (args.out / f"{stem}.onemodel").write_bytes(blob)
        entry = {"kind": kind, "where": where if kind else None}
        if note:
            entry["note"] = note
        expected[f"{stem}.onemodel"] = entry
    (args.out / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True, ensure_ascii=True) + "\n")
    bad = sum(1 for e in expected.values() if e["kind"])
    print(f"{len(expected)} files ({bad} hostile, {len(expected) - bad} valid) in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
