"""Look-ups after an edit: :meth:`Locator.rebased` keeps what was walked where the bytes did not change,
and the viewer's highlight and JSON editor find exactly the edited file's bytes."""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import pytest

from onemodel_viewer.format.manifest_locate import Locator, locate

ROOT = Path(__file__).resolve().parent.parent
VALID = ROOT / "testdata" / "valid"
FLAGS = [dict(), dict(unique_keys=True), dict(background=True), dict(unique_keys=True, background=True)]


def manifest_of(data: bytes) -> bytes:
    return data[64:64 + struct.unpack_from("<Q", data, 24)[0]]


def paths(value, base: str = "manifest") -> list[str]:
    """Every path of ``value``, and one past the end of each container (found: None, or the container)."""
    out = [base]
    if isinstance(value, list):
        for i, x in enumerate(value):
            out += paths(x, f"{base}[{i}]")
        out.append(f"{base}[{len(value)}]")
    elif isinstance(value, dict):
        for k, x in value.items():
            out += paths(x, f"{base}[{json.dumps(k)}]")
        out.append(f'{base}["no such key"]')
    return out


def value_edits(data: bytes, rnd: random.Random, count: int) -> list[bytes]:
    """``count`` versions of the manifest ``data``: one value replaced by another JSON text each."""
    wheres = paths(json.loads(data))[1:]
    out = []
    while len(out) < count:
        span = locate(data, rnd.choice(wheres))
        if span is None:
            continue
        new = rnd.choice([b'"x"', b"1", b"[]", b'{"k":[1,2,{"v":"w\\u00e9"}]}', b'"' + b"y" * 300 + b'"', b"null",
                          data[span[0]:span[1]] + b" ", b'"\xc3\xa9"'])
        out.append(data[:span[0]] + new + data[span[1]:])
    return out


@pytest.mark.parametrize("flags", FLAGS)
@pytest.mark.parametrize("name", ["showcase.onemodel", "subgraphs.onemodel", "functions.onemodel"])
def test_a_rebased_locator_answers_as_a_new_one(name, flags):
    """After look-ups in the manifest before an edit (in a random order), every path of the edited
    manifest is found where a new Locator of it finds it; three edits in a row."""
    rnd = random.Random(name + str(flags))
    data = manifest_of((VALID / name).read_bytes())
    for _ in range(6):
        loc, before = Locator(data, **flags), data
        for after in value_edits(data, rnd, 3):
            wheres = paths(json.loads(before))
            for where in rnd.sample(wheres, len(wheres) // 2):
                loc.nearest(where)
            loc = loc.rebased(after, **flags)
            wheres = list(dict.fromkeys(paths(json.loads(after)) + wheres))
            rnd.shuffle(wheres)
            fresh = Locator(after, **flags)
            assert [loc.nearest(w) for w in wheres] == [fresh.nearest(w) for w in wheres]
            before = after


def test_a_rebased_locator_of_other_bytes_and_of_the_same():
    """Bytes that share nothing with the manifest walked, and the same bytes: the answers of a new Locator."""
    data = manifest_of((VALID / "showcase.onemodel").read_bytes())
    loc = Locator(data)
    wheres = paths(json.loads(data))
    for where in wheres:
        loc.nearest(where)
    same = loc.rebased(bytes(data))
    assert [same.nearest(w) for w in wheres] == [Locator(data).nearest(w) for w in wheres]
    other = json.dumps({"graph": {"nodes": [{"name": "only"}]}}, indent=2).encode()
    moved = loc.rebased(other)
    ow = paths(json.loads(other)) + wheres
    assert [moved.nearest(w) for w in ow] == [Locator(other).nearest(w) for w in ow]
    not_utf8 = b'{"graph": \xff'
    assert moved.rebased(not_utf8).nearest("manifest.graph") == Locator(not_utf8).nearest("manifest.graph")
