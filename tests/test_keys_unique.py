"""``manifest.keys_unique``: one duplicate-key detector for any JSON value (an edit's value, a whole
manifest), answering as the standard library's pairs hook did (the reference below)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onemodel_viewer.format.onemodel import manifest as M
from onemodel_viewer.format.onemodel.edit_image import Image, parse_edit

from conftest import JSON_KEYS, JSON_SCALARS, json_text  # noqa: E402 - the shared test helpers
from test_reader_util import graph, model, node, pack, write


def reference(value: bytes) -> bool:
    """What edit_image answered before: the standard library with an ``object_pairs_hook``."""
    def pairs(items: list) -> None:
        if len({k for k, _ in items}) != len(items):
            raise ValueError("a repeated key")

    try:
        json.loads(value, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return False
    return True


CORPUS = [
    b'{"a":1,"b":2}', b'{"a":1,"a":2}', b'{"a":1,"\\u0061":2}', b'{"\\u0061":1,"\\u0061":2}',
    b'{"\\u00e9":1,"\xc3\xa9":2}', b'{"a":{"b":1,"b":2}}', b'{"a":{"b":1,"b":2},"a":3}', b'[{"k":1},{"k":1}]',
    b'[{"k":1,"k":1}]', b'[]', b'{}', b'[[[{"x":[{"y":1,"z":{"y":2,"y":3}}]}]]]', b'"a"', b'"\\u003a"',
    b'"\\\\u003a"', b'1', b'-0.5e3', b'true', b'null', b' \n{"a" : 1 , "a" : 2} ', b'{":":1,"\\u003a":2}',
    b'{"k:v":1,"k":2,"v":3}', b'NaN', b'[Infinity, -Infinity]', b'{"a":NaN,"a":1}', b'{"a":NaN,"b":1}',
    b'1e400', b'{"n":1e400,"n":1}', b'{"\\ud800":1,"\\ud800":2}', b'{"\\ud800":1,"\\udc00":2}',
    b'["\\ud800"]', b'{"a":1,}', b'{"a"}', b'', b'   ', b'[1] 2', b'{"a":1', b'\xff', b'{"\xff":1}',
    b"\xef\xbb\xbf{}", b'{"a":[1,2,{"a":1}],"b":{"a":1}}', b'{"a":"\\"a\\":1,","a":2}', b'{"a\\"":1,"a\\u0022":2}',
    b"[" * 300 + b'{"k":1,"k":2}' + b"]" * 300, b"[" * 300 + b'{"k":1,"j":2}' + b"]" * 300,
    b"[" * 1100 + b"]" * 1100,
]


@pytest.mark.parametrize("value", CORPUS)
def test_keys_unique_answers_as_the_pairs_hook(value):
    assert M.keys_unique(value) == reference(value)
    assert M.keys_unique(memoryview(value)) == reference(value)


def test_a_value_nested_deeper_than_the_standard_library_goes_is_answered():
    """The pairs hook said "repeats a key" (its RecursionError) of a value nested past this thread's
    recursion limit: the walk answers, linear and without recursion, up to orjson's 1024 levels."""
    deep = b"[" * 1000 + b'{"k":1,"j":2}' + b"]" * 1000
    assert M.keys_unique(deep)
    assert not M.keys_unique(deep.replace(b'"j"', b'"k"'))


_KEYS = JSON_KEYS + ('"\\ud800"',)  # a lone surrogate key
_SCALARS = JSON_SCALARS + ("NaN", "1e400", '"\\udc00"')  # what orjson refuses and the standard library takes


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_text(_SCALARS, _KEYS), st.sampled_from(["", " ", "\n\t"]), st.sampled_from(["", "x", ",", "]"]))
def test_keys_unique_agrees_with_the_pairs_hook_on_any_value(text, space, junk):
    """Objects, arrays and scalars at the top, escapes ("\\u0061" is "a"), nested objects, values orjson
    refuses and the standard library takes (NaN, 1e400, lone surrogates), and text that is not JSON."""
    for value in ((space + text + space).encode(), (text + junk).encode()):
        assert M.keys_unique(value) == reference(value), value


def test_an_edit_keeps_the_manifest_proof_only_when_its_value_repeats_no_key(tmp_path):
    """The edit's value is judged by the same detector: ``"\\u0061"`` repeats ``a``."""
    text = json.dumps(model(graph(nodes=[node("Relu", ["x"], ["y"], name="n")], inputs=[{"name": "x"}],
                                  outputs=[{"name": "y"}]))).encode()
    path = write(tmp_path, pack(text, b""))
    for value, kept in (('{"a":1,"b":2}', True), ('{"a":1,"\\u0061":2}', False), ('[{"a":1},{"a":1}]', True)):
        img = Image(path)
        img.apply(parse_edit(f"manifest.metadata_props={value}"))
        assert img.facts.keys_unique is (True if kept else None), value
