"""Structure-aware mutators for the fuzz targets: one ``random.Random`` drives each, so atheris
(``custom_mutator``, seeded by libFuzzer) and the hypothesis tests (a drawn seed) share them.

* :func:`mutate_bytes` -- blind: bit flips, byte sets, interesting integers, cuts, repeats.
* :func:`mutate_onemodel` -- parse the manifest JSON, change one value (delete, retype, bump,
  empty or hostile names, duplicate an array element), re-assemble with a consistent header.
* :func:`mutate_protobuf` -- parse the protobuf wire format into fields (recursing into
  length-delimited fields that parse as messages), change one field (varint to an interesting
  value, drop, duplicate, new string, swap two), re-serialise.
* :func:`mutate_flatbuffer` -- walk the ``.ort`` file with the verifier to learn its tables,
  vectors and strings, then alias an offset onto another object (shared sub-tables), blow up a
  vector or string length, or zero / redirect a vtable entry.

Each returns bytes no longer than ``max_size``; a seed that does not parse falls back to
:func:`mutate_bytes`.
"""

from __future__ import annotations

import copy
import json
import random
import struct

INTERESTING = (0, 1, 2, 3, 4, 7, 8, 15, 16, 63, 64, 65, 127, 128, 255, 256, 0x7FFF, 0x8000, 0xFFFF,
               0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1 << 32, 1 << 53, (1 << 63) - 1, 1 << 63,
               (1 << 64) - 1)
HOSTILE_STRINGS = ("", " ", "x", "\x1b[2J\x1b[31mred", "a\u202eb", "\u2066x\u2069", "\x00", "\u200b",
                   "a\nb", "\ud800", "..", "/etc/passwd", "w.data", "A" * 300, "\\", '"', "manifest.graph")


def mutate_bytes(data: bytes, rng: random.Random, max_size: int = 1 << 20) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(8)
        if not b:
            b += bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
            continue
        i = rng.randrange(len(b))
        if op == 0:
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[i] = rng.choice((0, 0xFF, 0x7F, 0x80, 0x22, 0x5B, 0x7B, 0x5C, 0x1B, 0xED, 0x08, 0x12, 0x1A))
        elif op == 2:
            size = rng.choice((1, 2, 4, 8))
            v = rng.choice(INTERESTING) % (1 << (8 * size))
            b[i:i + size] = v.to_bytes(size, "little")
        elif op == 3:
            del b[i:]
        elif op == 4:
            j = rng.randrange(len(b))
            b[i:i] = b[j:j + rng.randint(1, 64)]
        elif op == 5:
            del b[i:i + rng.randint(1, 32)]
        elif op == 6:
            b += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        else:
            j = rng.randrange(len(b))
            n = rng.randint(1, 16)
            b[i:i + n], b[j:j + n] = b[j:j + n], b[i:i + n]
    return bytes(b[:max_size])


# -- OneModel: the manifest as JSON ---------------------------------------------------------------

def _assemble(manifest: bytes, data: bytes) -> bytes:
    ml = len(manifest)
    do = (64 + ml + 63) // 64 * 64
    fl = do + len(data)
    head = b"ONEMODEL" + struct.pack("<IIQQQQQQ", 1, 0, 64, ml, do, len(data), fl, 0)
    return head + manifest + bytes(do - 64 - ml) + data


def _spots(obj, out):
    if isinstance(obj, dict):
        for k in list(obj):
            out.append((obj, k))
            _spots(obj[k], out)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.append((obj, i))
            _spots(v, out)
    return out


def _new_value(rng: random.Random, old):
    r = rng.randrange(6)
    if r == 0 and isinstance(old, int) and not isinstance(old, bool):
        return old + rng.choice((-65, -64, -1, 1, 63, 64, 1 << 32, 1 << 62))
    if r == 1:
        return rng.choice(HOSTILE_STRINGS)
    if r == 2:
        return rng.choice(INTERESTING) * rng.choice((1, -1))
    if r == 3:
        return rng.choice((None, True, False, 1.5, float("1e308"), [], {}, [0], {"kind": "tensor"}))
    if r == 4 and isinstance(old, str):
        return old + rng.choice(HOSTILE_STRINGS[1:8])
    return rng.choice(("", 0, -1))


def mutate_onemodel(data: bytes, rng: random.Random, max_size: int = 1 << 20) -> bytes:
    if len(data) < 64 or data[:8] != b"ONEMODEL":
        return mutate_bytes(data, rng, max_size)
    ml = int.from_bytes(data[24:32], "little")
    do = int.from_bytes(data[32:40], "little")
    try:
        manifest = json.loads(data[64:64 + ml])
    except (ValueError, RecursionError):
        return mutate_bytes(data, rng, max_size)
    spots = _spots(manifest, [])
    if not spots:
        return mutate_bytes(data, rng, max_size)
    for _ in range(rng.randint(1, 3)):
        container, key = rng.choice(spots)
        try:
            old = container[key]
        except (KeyError, IndexError):
            continue
        op = rng.randrange(5)
        if op == 0:
            del container[key]
        elif op == 1 and isinstance(container, list):
            container.insert(key, json.loads(json.dumps(old)))  # a duplicate: a repeated name
        elif op == 2 and isinstance(old, str):
            container[key] = ""  # empty names: "" never names a value
        else:
            container[key] = _new_value(rng, old)
    try:
        text = json.dumps(manifest, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
    except (ValueError, RecursionError):
        return mutate_bytes(data, rng, max_size)
    tail = data[do:] if do <= len(data) else b""
    return _assemble(text, tail)[:max_size]


# -- protobuf wire format -------------------------------------------------------------------------

def _varint(buf: bytes, i: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("varint")
        c = buf[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def _enc_varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        if v:
            out.append(c | 0x80)
        else:
            out.append(c)
            return bytes(out)


def parse_fields(buf: bytes, depth: int = 0) -> list | None:
    """[(field number, wire type, value)]: value an int, bytes, or (for type 2 that parses) a list."""
    out, i = [], 0
    try:
        while i < len(buf):
            key, i = _varint(buf, i)
            num, wt = key >> 3, key & 7
            if num == 0:
                return None
            if wt == 0:
                v, i = _varint(buf, i)
            elif wt == 1:
                if i + 8 > len(buf):
                    return None
                v, i = buf[i:i + 8], i + 8
            elif wt == 5:
                if i + 4 > len(buf):
                    return None
                v, i = buf[i:i + 4], i + 4
            elif wt == 2:
                n, i = _varint(buf, i)
                if i + n > len(buf):
                    return None
                raw = buf[i:i + n]
                i += n
                sub = parse_fields(raw, depth + 1) if depth < 12 and raw else None
                v = sub if sub else raw
            else:
                return None
            out.append([num, wt, v])
    except ValueError:
        return None
    return out


def serialise(fields: list) -> bytes:
    out = bytearray()
    for num, wt, v in fields:
        out += _enc_varint((num << 3) | wt)
        if wt == 0:
            out += _enc_varint(v)
        elif wt == 2:
            raw = serialise(v) if isinstance(v, list) else v
            out += _enc_varint(len(raw)) + raw
        else:
            out += v
    return bytes(out)


def _all_fields(fields: list, out: list) -> list:
    for f in fields:
        out.append((fields, f))
        if isinstance(f[2], list):
            _all_fields(f[2], out)
    return out


def swap_fields(f: list, g: list) -> None:
    """Swap two parsed fields' wire types and values, as copies: one may sit inside the other, and swapping
    the lists themselves made a field contain itself (serialising it then recursed without end)."""
    f[2], g[2], f[1], g[1] = copy.deepcopy(g[2]), copy.deepcopy(f[2]), g[1], f[1]


def mutate_protobuf(data: bytes, rng: random.Random, max_size: int = 1 << 20) -> bytes:
    fields = parse_fields(data)
    if not fields:
        return mutate_bytes(data, rng, max_size)
    spots = _all_fields(fields, [])
    for _ in range(rng.randint(1, 3)):
        parent, f = rng.choice(spots)
        op = rng.randrange(6)
        if op == 0 and f in parent:
            parent.remove(f)
        elif op == 1:
            parent.insert(rng.randrange(len(parent) + 1), [f[0], f[1], f[2]])
        elif op == 2 and f[1] == 0:
            f[2] = rng.choice(INTERESTING + (-1 % (1 << 64), -2 % (1 << 64)))
        elif op == 3 and f[1] == 2:
            f[2] = rng.choice(HOSTILE_STRINGS).encode("utf-8", "surrogatepass") if rng.random() < 0.7 \
                else str(rng.choice(INTERESTING)).encode()
        elif op == 4:
            swap_fields(f, rng.choice(spots)[1])
        else:
            f[0] = rng.choice((f[0], f[0] + 1, 1, 2, 5, 7, 8, 13, 14, 20))
    return serialise(fields)[:max_size]


# -- flatbuffers (.ort) ---------------------------------------------------------------------------

def flatbuffer_objects(data: bytes) -> list[tuple[int, int, str]]:
    """(start, length, kind) of every table, vector, string and vtable the verifier walks."""
    from onemodel_viewer.format.ort.verify import Walker

    w = Walker(data, len(data), lambda *a: None)
    try:
        w.root()
    except Exception:  # noqa: BLE001 - a mutator must not stop the run; the target finds the bug
        return []
    return [(s, n, k) for s, n, k, _o in w.spans if k in ("table", "vector", "string", "vtable")]


def mutate_flatbuffer(data: bytes, rng: random.Random, max_size: int = 1 << 20) -> bytes:
    objs = flatbuffer_objects(data)
    if not objs:
        return mutate_bytes(data, rng, max_size)
    b = bytearray(data)
    vectors = [o for o in objs if o[2] == "vector" and o[1] >= 12]
    for _ in range(rng.randint(1, 3)):
        start, length, kind = rng.choice(objs)
        op = rng.choice((0, 0, 1, 2, 3, 4, 4, 4, 5))
        if op == 0 and kind in ("table", "vector") and length >= 8:
            # alias: one 4-aligned slot of this object now points at another object (shared sub-tables)
            at = start + 4 * rng.randrange(1, max(2, length // 4))
            at -= at % 4
            targets = [s for s, _n, k in objs if s > at and k in ("table", "vector", "string")]
            if targets and at + 4 <= len(b):
                struct.pack_into("<I", b, at, rng.choice(targets) - at)
        elif op == 1 and kind in ("vector", "string"):
            n = rng.choice((0, 1, 2, 255, 4096, 65535, len(b) // 4, len(b), 0x7FFFFFFF, 0xFFFFFFFF))
            struct.pack_into("<I", b, start, n % (1 << 32))
        elif op == 2 and kind == "vtable" and length >= 6:
            at = start + 2 * rng.randrange(2, length // 2)
            if at + 2 <= len(b):
                struct.pack_into("<H", b, at, rng.choice((0, 1, 2, 4, 6, 0xFFFF, length)))
        elif op == 4 and vectors:
            # fan-out: every element of a vector points at one object after it (a shared sub-table
            # visited n times), or the vector grows over the rest of a grown file (n bad offsets)
            start, length, kind = rng.choice(vectors)
            n = (length - 4) // 4
            if rng.random() < 0.5:
                targets = [s for s, _n, k in objs if s > start + length and k in ("table", "vector", "string")]
                if targets:
                    t = rng.choice(targets)
                    for i in range(n):
                        at = start + 4 + 4 * i
                        struct.pack_into("<I", b, at, t - at)
            else:
                if len(b) < max_size // 2:
                    b += bytes(min(rng.choice((4096, 16384, 65536)), max_size - len(b)))
                struct.pack_into("<I", b, start, (len(b) - start - 4) // 4)
        elif op == 3 and kind == "table":
            struct.pack_into("<i", b, start, rng.choice((0, 1, -1, 4, -4, start, -start, 1 << 30)))
        else:
            return mutate_bytes(bytes(b), rng, max_size)
    return bytes(b[:max_size])


MUTATORS = {"bytes": mutate_bytes, "onemodel": mutate_onemodel, "protobuf": mutate_protobuf,
            "flatbuffer": mutate_flatbuffer}


def structured(kind: str):
    """A mutator that applies the structure-aware ``kind`` 3 times in 4, else blind bytes."""
    smart = MUTATORS[kind]

    def mutate(data: bytes, rng: random.Random, max_size: int = 1 << 20) -> bytes:
        return smart(data, rng, max_size) if rng.random() < 0.75 else mutate_bytes(data, rng, max_size)

    return mutate
