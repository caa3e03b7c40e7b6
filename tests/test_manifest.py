"""Manifest parsing rules (spec 1.2) and locate(): exact kind/where/offset, never a stray exception."""

from __future__ import annotations

import json
import sys
import time

import pytest

from onemodel_viewer.analysis.layout.onemodel import all_findings
from onemodel_viewer.format.onemodel import manifest as M
from onemodel_viewer.format.onemodel.canonical import has_minus_zero
from onemodel_viewer.format.errors import FormatError, Kind
from onemodel_viewer.format.onemodel.manifest_locate import nearest_bytes
from onemodel_viewer.format.reader import open_path

from test_reader_util import graph, model, node, pack, write


def parse_err(data: bytes) -> FormatError:
    with pytest.raises(FormatError) as ei:
        M.parse(data, 64)
    return ei.value


def open_err(tmp_path, manifest, data=b""):
    p = write(tmp_path, pack(manifest, data))
    with pytest.raises(FormatError) as ei:
        open_path(p)
    diag = open_path(p, mode="diagnose")
    assert diag.problems and diag.problems[0] == ei.value.problem, "strict error must be diagnose's problems[0]"
    return ei.value


# --- text level --------------------------------------------------------------------------------


def test_bom_is_malformed():
    e = parse_err(b"\xef\xbb\xbf{}")
    assert (e.kind, e.where, e.offset) == (Kind.MALFORMED, "manifest", 64)


def test_invalid_utf8_offset_is_the_bad_byte():
    e = parse_err(b'{"a":"xx\xff"}')
    assert (e.kind, e.where, e.offset) == (Kind.MALFORMED, "manifest", 64 + 8)


def test_utf8_encoded_surrogate_rejected():
    e = parse_err(b'{"a":"\xed\xa0\x80"}')
    assert (e.kind, e.where, e.offset) == (Kind.MALFORMED, "manifest", 64 + 6)


def test_lone_surrogate_escape_rejected_at_its_path(tmp_path):
    m = json.dumps(model(graph(nodes=[node("Relu", name="\ud800")]))).replace("\\ud800", "\\ud800")
    assert "\\ud800" in m
    e = open_err(tmp_path, m)
    assert (e.kind, e.where) == (Kind.MALFORMED, "manifest.graph.nodes[0].name")
    assert e.offset == 64 + m.encode().index(b'"\\ud800"')


def test_lone_surrogate_in_key_rejected_at_the_object():
    e = parse_err(b'{"graph":{"\\udc00":1}}')
    assert (e.kind, e.where, e.offset) == (Kind.MALFORMED, "manifest.graph", 64 + 9)


def test_surrogate_pair_escape_is_fine():
    p = M.parse(b'{"a":"\\ud83d\\ude00","b":"\\\\ud800"}')
    assert p.value == {"a": "\U0001F600", "b": "\\ud800"}


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_literals_rejected(literal):
    text = f'{{"s":"NaN Infinity","x":[1,{literal}]}}'.encode()
    e = parse_err(text)
    assert (e.kind, e.where, e.offset) == (Kind.MALFORMED, "manifest", 64 + text.index(literal.encode(), 20))


def test_syntax_error_offset_is_in_bytes_not_characters():
    text = '{"a":"日本語", "b": }'.encode()
    e = parse_err(text)
    assert (e.kind, e.where) == (Kind.MALFORMED, "manifest")
    assert e.offset == 64 + text.index(b"}", 10)


@pytest.mark.parametrize("text", [b"[]", b'"x"', b"1", b"", b"   "])
def test_top_level_must_be_an_object(text):
    e = parse_err(text)
    assert (e.kind, e.where) == (Kind.MALFORMED, "manifest")


def test_extra_data_after_object():
    e = parse_err(b'{"a":1} {"b":2}')
    assert (e.kind, e.where, e.offset) == (Kind.MALFORMED, "manifest", 64 + 8)


def test_huge_integer_literal_is_malformed_not_valueerror():
    e = parse_err(b'{"a":' + b"9" * 5000 + b"}")
    assert (e.kind, e.where) == (Kind.MALFORMED, "manifest")


def _nested(total_depth: int) -> bytes:
    """A top-level object whose 'x' holds arrays: total JSON depth = total_depth."""
    k = total_depth - 1
    return b'{"x":' + b"[" * k + b"]" * k + b"}"


def test_depth_1024_accepted_1025_unsupported():
    value = M.parse(_nested(1024)).value["x"]
    depth = 1
    while value:
        value = value[0]
        depth += 1
    assert depth == 1023  # 'x' holds 1023 nested arrays under the top-level object
    e = parse_err(_nested(1025))
    assert (e.kind, e.where) == (Kind.UNSUPPORTED, "manifest")
    assert e.offset == 64 + 5 + 1023  # the 1025th opening bracket


def test_depth_limit_exact_at_any_call_depth_and_never_recursionerror():
    limit = sys.getrecursionlimit()

    def at(k: int, depth: int):
        if k:
            return at(k - 1, depth)
        try:
            M.parse(_nested(depth))
            return "ok"
        except FormatError as e:
            return e.kind

    for k in (0, 50, 300, 400, limit - 60):
        assert at(k, 1024) == "ok"
        assert at(k, 1025) == Kind.UNSUPPORTED
    assert at(0, 100_000) == Kind.UNSUPPORTED
    assert sys.getrecursionlimit() == limit, "the recursion limit is left alone"


def test_depth_in_a_model_file(tmp_path):
    m = model()
    text = json.dumps(m)[:-1] + ',"x":' + "[" * 1023 + "]" * 1023 + "}"
    assert open_path(write(tmp_path, pack(text))).valid
    text = json.dumps(m)[:-1] + ',"x":' + "[" * 1024 + "]" * 1024 + "}"
    e = open_err(tmp_path, text)
    assert (e.kind, e.where) == (Kind.UNSUPPORTED, "manifest")


def test_duplicate_keys_are_findings_last_wins(tmp_path):
    text = json.dumps(model(graph(nodes=[node("Relu", name="a")])))
    text = text.replace('"name": "a"', '"name": "first", "name": "a"')
    p = write(tmp_path, pack(text))
    doc = open_path(p, mode="diagnose")
    assert doc.valid
    assert doc.model.graph.nodes[0].name == "a"
    [f] = [f for f in doc.findings if f.code == "duplicate-key"]
    assert f.where == "manifest.graph.nodes[0].name"
    assert f.offset == 64 + text.encode().index(b'"a"', text.index('"first"'))
    # strict opens skip the (costly) detection; all_findings adds it back
    strict = open_path(p)
    assert not [f for f in strict.findings if f.code == "duplicate-key"]
    assert [g for g in all_findings(strict) if g.code == "duplicate-key"] == [f]


def test_duplicate_weird_key_path_is_quoted(tmp_path):
    text = json.dumps(model())[:-1] + ', "a.b": 1, "a.b": 2}'
    doc = open_path(write(tmp_path, pack(text)), mode="diagnose")
    [f] = [f for f in doc.findings if f.code == "duplicate-key"]
    assert f.where == 'manifest["a.b"]'
    assert f.offset == 64 + text.encode().rindex(b"2")


# --- integers and floats through the schema ----------------------------------------------------


@pytest.mark.parametrize("bad", ["1.0", "1e3", "true", "null", '"8"', str(1 << 63), str(-(1 << 63) - 1)])
def test_required_integer_must_be_an_exact_int64(tmp_path, bad):
    text = json.dumps(model()).replace('"ir_version": 8', f'"ir_version": {bad}')
    e = open_err(tmp_path, text)
    assert (e.kind, e.where) == (Kind.MALFORMED, "manifest.ir_version")
    assert e.offset == 64 + text.index(bad, text.index("ir_version"))


def test_int64_extremes_kept_exact(tmp_path):
    attrs = [
        {"name": "lo", "type": 2, "value": -(1 << 63)},
        {"name": "hi", "type": 7, "value": [(1 << 63) - 1, 0, -1]},
    ]
    doc = open_path(write(tmp_path, pack(model(graph(nodes=[node("X", attributes=attrs)]), opsets=[{"domain": "", "version": 1}]))))
    a = doc.model.graph.nodes[0].attributes
    assert a[0].value == -(1 << 63) and a[1].value == ((1 << 63) - 1, 0, -1)


@pytest.mark.parametrize("bits", [0x7FC00001, 0xFFC12345, 0x80000000, 0x7F800000, 0, 0xFFFFFFFF])
def test_float_bits_preserved(tmp_path, bits):
    attrs = [{"name": "f", "type": 1, "value": bits}, {"name": "fs", "type": 6, "value": [bits, 1065353216]}]
    doc = open_path(write(tmp_path, pack(model(graph(nodes=[node("X", attributes=attrs)])))))
    f, fs = doc.model.graph.nodes[0].attributes
    assert f.value == bits and fs.value == (bits, 1065353216)
    assert fs.float_value[1] == 1.0


@pytest.mark.parametrize("bad,where", [(1 << 32, ""), (-1, ""), (1.5, ""), ("1", "")])
def test_float_bits_out_of_range_malformed(tmp_path, bad, where):
    attrs = [{"name": "f", "type": 1, "value": bad}]
    e = open_err(tmp_path, model(graph(nodes=[node("X", attributes=attrs)])))
    assert (e.kind, e.where) == (Kind.MALFORMED, "manifest.graph.nodes[0].attributes[0].value")


def test_floats_element_out_of_range(tmp_path):
    attrs = [{"name": "f", "type": 6, "value": [0, 1 << 32]}]
    e = open_err(tmp_path, model(graph(nodes=[node("X", attributes=attrs)])))
    assert (e.kind, e.where) == (Kind.MALFORMED, "manifest.graph.nodes[0].attributes[0].value[1]")


@pytest.mark.parametrize("good,raw", [("", b""), ("QQ==", b"A"), ("QUI=", b"AB"), ("QUJD", b"ABC"), ("/+8=", b"\xff\xef")])
def test_base64_strict_accepts(tmp_path, good, raw):
    attrs = [{"name": "s", "type": 3, "value": good}]
    doc = open_path(write(tmp_path, pack(model(graph(nodes=[node("X", attributes=attrs)])))))
    assert doc.model.graph.nodes[0].attributes[0].value == raw


@pytest.mark.parametrize("bad", ["QQ", "QQ=", "Q===", "QR==", "QQ==\n", "Q Q==", "-_8=", "QUJD QQ==", "é===", "QQ==QQ=="])
def test_base64_strict_rejects(tmp_path, bad):
    attrs = [{"name": "s", "type": 8, "value": ["QQ==", bad]}]
    e = open_err(tmp_path, model(graph(nodes=[node("X", attributes=attrs)])))
    assert (e.kind, e.where) == (Kind.MALFORMED, "manifest.graph.nodes[0].attributes[0].value[1]")


# --- locate ------------------------------------------------------------------------------------


def test_locate_paths():
    doc = {"graph": {"nodes": [{"op": "A", "inputs": ["x", "y"]}, {"op": "B", "attributes": [{"value": {"nodes": [{"op": "C"}]}}]}]}}
    data = json.dumps(doc, indent=1).encode()

    def val(where):
        span = M.locate(data, where)
        return None if span is None else json.loads(data[span[0] : span[1]])

    assert val("manifest.graph.nodes[0].inputs[1]") == "y"
    assert val("manifest.graph.nodes[1].attributes[0].value.nodes[0].op") == "C"
    assert val("manifest.graph.nodes[1]")["op"] == "B"
    assert val("manifest") == doc
    assert val("manifest.graph.nodes[2]") is None
    assert val("manifest.graph.nodes[0].missing") is None
    assert val("manifest.graph.nodes[0].op.x") is None
    assert val("header.flags") is None
    assert M.locate_nearest(data, "manifest.graph.nodes[0].missing")[2] == "manifest.graph.nodes[0]"


def test_locate_escaped_and_quoted_keys():
    data = b'{"a\\"b":{"c.d":[10, 20]},"e":"x\\"]}"}'
    assert M.locate(data, 'manifest["a\\"b"]["c.d"][1]') == (data.index(b"20"), data.index(b"20") + 2)
    assert M.locate(data, "manifest.e") == (data.index(b'"x'), len(data) - 1)


def test_locate_duplicate_key_picks_the_last_like_json():
    data = b'{"a":1,"a":22}'
    assert M.locate(data, "manifest.a") == (11, 13)


@pytest.mark.parametrize(
    "data",
    [b"", b"{", b'{"a"', b'{"a":', b'{"a":[1,2', b'{"a":"unterminated', b"[1]", b'{"a" 1}', b"\xff\xfe", b'{"a":[}'],
)
def test_locate_hostile_input_returns_none(data):
    assert M.locate(data, "manifest.a[1]") is None


def test_locate_is_linear():
    """A guard against quadratic walking (which would take minutes here), not a benchmark."""
    big = b'{"a":[' + b",".join(b'{"k":"v\\"x","n":[1,2,3]}' for _ in range(100_000)) + b'],"b":7}'
    t = time.perf_counter()
    assert M.locate(big, "manifest.b") == (len(big) - 2, len(big) - 1)
    assert M.locate(big, "manifest.a[99999].n[2]") is not None
    assert time.perf_counter() - t < 20.0


def test_split_and_join_paths():
    assert M.split_path("manifest.graph.nodes[3].inputs[1]") == ["graph", "nodes", 3, "inputs", 1]
    assert M.split_path('manifest["x y"][0]') == ["x y", 0]
    assert M.split_path("header.flags") is None
    assert M.join("manifest", "a b") == 'manifest["a b"]'
    assert M.join("manifest", "ok_1") == "manifest.ok_1"


def test_locate_falls_back_to_bytes_on_invalid_utf8():
    data = b'{"a":"\xff\xfe","b":[1,22]}'
    assert M.locate(data, "manifest.b[1]") == (data.index(b"22"), data.index(b"22") + 2)


def test_locator_caches_and_agrees_with_locate():
    doc = {"graph": {"nodes": [{"op": f"N{i}", "inputs": [f"x{i}", "y"]} for i in range(300)]}}
    data = json.dumps(doc, ensure_ascii=False).encode()
    loc = M.Locator(data)
    for i in (0, 150, 299, 150):
        where = f"manifest.graph.nodes[{i}].inputs[0]"
        s, e, path = loc.nearest(where)
        assert path == where and json.loads(data[s:e]) == f"x{i}" and M.locate(data, where) == (s, e)


def test_locate_non_ascii_byte_offsets():
    data = '{"é":"日本","k":[true]}'.encode()
    s, e = M.locate(data, "manifest.k[0]")
    assert data[s:e] == b"true"


def test_locator_text_and_byte_walks_agree_on_non_ascii():
    doc = {"é" * 5000: 1, "a": ["日本" * 3000, {"k": [1, 2, "x"]}], "z": "ü"}
    data = json.dumps(doc, ensure_ascii=False).encode()
    loc = M.Locator(data)
    for where in ("manifest.a[1].k[2]", "manifest.a[0]", "manifest.a[1]", "manifest.z", "manifest"):
        assert loc.nearest(where) == nearest_bytes(data, M.split_path(where))


LOCATOR_FLAGS = [dict(), dict(background=True), dict(unique_keys=True), dict(unique_keys=True, background=True)]


@pytest.mark.parametrize("flags", LOCATOR_FLAGS, ids=str)
def test_locator_modes_agree_with_the_byte_walk_on_every_path(flags):
    """Every value of a nested document, looked up in a shuffled order, by every Locator mode."""
    import random

    body = {"nodes": [{"op": "Loop", "inputs": ["a", ""], "attributes": [{"value": {"nodes": [{"op": "C", "x": [1, [2, {"y": "]}"}]]}]}}]},
                      {"op": "Q\"uote", "inputs": []}], "value_info": {}, "e": [], "n": -1.5e3, "t": True, "z": None}
    doc = {"graph": body, "functions": [body, {"é": "日本"}], "tail": "x"}
    data = json.dumps(doc, indent=1, ensure_ascii=False).encode()
    paths = []

    def walk(v, where):
        paths.append(where)
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, M.join(where, k))
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, f"{where}[{i}]")

    walk(doc, "manifest")
    paths += ["manifest.graph.nodes[9]", "manifest.graph.missing", "manifest.tail.x", "manifest.graph.nodes.op"]
    random.Random(7).shuffle(paths)
    loc = M.Locator(data, **flags)
    for where in paths:
        assert loc.nearest(where) == nearest_bytes(data, M.split_path(where)), where


def test_locator_walks_only_as_far_as_the_lookup_needs():
    n = 5000
    data = json.dumps({"a": [{"k": i} for i in range(n)], "b": 1}).encode()
    loc = M.Locator(data, unique_keys=True, background=True)
    s, e, _ = loc.nearest("manifest.a[10].k")
    assert data[s:e] == b"10"
    array = loc._members[data.index(b"[")]
    assert len(array.spans) == 11 and not array.done  # elements 11.. not read yet
    assert loc.nearest("manifest.a[3]")[2] == "manifest.a[3]"
    assert len(array.spans) == 11  # cached
    top = loc._members[0]
    assert list(top.keys) == ["a"] and not top.done  # "b" not reached: "a"'s end never measured
    assert data.index(b"[") not in loc._ends
    assert data[slice(*loc.nearest("manifest.b")[:2])] == b"1"
    assert top.done is False and list(top.keys) == ["a", "b"]


def test_locator_keeps_8_bytes_per_member_of_a_huge_object():
    """Regression: locating the duplicate-key finding of a manifest repeating one key 10^6 times
    cost ~190 MB (a [start, end] list per member and a cached end for each): the walk keeps one
    8-byte start a member, and ends only of containers and long values."""
    n = 100_000
    data = b'{"x":{' + b",".join([b'"k":0'] * n) + b',"big":[1,2],"s":"' + b"y" * 300 + b'"},"z":1}'
    loc = M.Locator(data)
    s, e, path = loc.nearest("manifest.x.k")
    assert (path, data[s:e]) == ("manifest.x.k", b"0") and s == data.rindex(b'"k":0') + 4
    members = loc._members[data.index(b"{", 1)]
    assert len(members.spans) == n + 2 and members.spans.itemsize == 8
    assert len(loc._ends) <= 3  # "x"'s container, the array, the 300-byte string
    assert loc.nearest("manifest.z")[2] == "manifest.z" and loc.nearest("manifest.x.s")[2] == "manifest.x.s"


def test_locator_without_unique_keys_reads_objects_to_the_end():
    data = b'{"a":1,"b":[1,2],"a":22}'
    for flags in LOCATOR_FLAGS:
        expect = (5, 6) if flags.get("unique_keys") else (21, 23)  # the promise is the caller's to keep
        assert M.Locator(data, **flags).nearest("manifest.a")[:2] == expect


@pytest.mark.parametrize("flags", LOCATOR_FLAGS, ids=str)
@pytest.mark.parametrize(
    "data",
    [b'{"a":[1,2', b'{"a":[{"x":"]"', b'{"a":{"b":[1,}}', b'{"a":[1 2]}', b'{"a" 1}', b'{"a":"unterminated', b'{"a":[}', b'{"a":[1]]]'],
)
def test_locator_modes_on_broken_json_never_raise(flags, data):
    loc = M.Locator(data, **flags)
    for where in ("manifest.a[1]", "manifest.a", "manifest.a.b", "manifest"):
        got = loc.nearest(where)
        assert got is None or (0 <= got[0] <= got[1] <= len(data))


def test_background_locator_hands_the_interpreter_over_while_it_scans(monkeypatch):
    """A look-up that skips a huge graph in background mode gives the interpreter away
    (``time.sleep(0)``) every 4,096 brackets; the C-scanner mode never does.

    Regression: this was a wall-clock bound (``max(gaps) < 0.08`` between the main thread's turns)
    that failed on a loaded machine; what it meant is that the scan keeps yielding.
    """
    data = json.dumps({"graph": {"nodes": [{"op": "Relu", "inputs": [f"v{i}"], "outputs": [f"v{i + 1}"]} for i in range(20_000)]},
                       "functions": [1]}, separators=(",", ":")).encode()
    graph_end = len(data) - len(',"functions":[1]}')
    brackets = sum(data.count(c, 0, graph_end) for c in (b"[", b"]", b"{", b"}")) - 1  # from the graph's '{' on
    sleeps: list = []
    monkeypatch.setattr(M.time, "sleep", sleeps.append)
    s, e, path = M.Locator(data, unique_keys=True, background=True).nearest("manifest.graph")
    assert (path, e) == ("manifest.graph", graph_end)
    assert len(sleeps) >= brackets // 4096 >= 10 and set(sleeps) == {0}
    sleeps.clear()
    assert M.Locator(data, unique_keys=True).nearest("manifest.graph") == (s, e, path)
    assert sleeps == []


def test_has_minus_zero_prefilter():

    assert not has_minus_zero(b'{"a":[1,2]}')
    assert not has_minus_zero(b'{"a-1":-5}')
    assert has_minus_zero(b'{"a":-0}')
    assert has_minus_zero(b"-0")
    assert not has_minus_zero(b"abc-")
    many = b"-1" * 5000
    assert not has_minus_zero(many) and has_minus_zero(many + b"-0") and has_minus_zero(b"-0" + many)


def test_background_locator_gives_up_when_its_caller_moves_on():
    data = json.dumps({"graph": {"nodes": [{"op": "Relu", "inputs": [f"v{i}"]} for i in range(50_000)]}, "tail": 1},
                      separators=(",", ":")).encode()
    loc = M.Locator(data, unique_keys=True, background=True)
    asked = []

    def cancelled() -> bool:
        asked.append(1)
        return len(asked) >= 2

    with pytest.raises(M.LookupCancelled):
        loc.nearest("manifest.tail", cancelled=cancelled)  # skipping the graph is a long bracket scan
    assert len(asked) == 2
    # what was walked stays usable: the same look-up, not cancelled, finishes and agrees with the byte walk
    assert loc.nearest("manifest.tail", cancelled=lambda: False) == nearest_bytes(data, ["tail"])
    with pytest.raises(M.LookupCancelled):  # a long walk along an array asks too
        M.Locator(data, unique_keys=True, background=True).nearest("manifest.graph.nodes[40000]", cancelled=lambda: True)
    # the C-scanner mode (reader, CLI) never asks
    assert M.Locator(data).nearest("manifest.graph.nodes[40000]", cancelled=lambda: True)[2] == "manifest.graph.nodes[40000]"


def test_scans_of_broken_json_stay_linear():
    """Found in review: three scans were super-linear on broken JSON (each case took minutes to hours before)."""
    tail = b'"' + b'\\"x' * 200_000  # an unterminated string of escaped quotes
    t = time.perf_counter()
    # the depth problem's location: 1100 arrays, then the unterminated string
    with pytest.raises(FormatError) as e:
        M.parse(b'{"a":' + b"[" * 1100 + tail, 64)
    assert (e.value.kind, e.value.where) == (Kind.UNSUPPORTED, "manifest") and e.value.offset == 64 + 5 + 1024 - 1
    # the byte walker's value skip
    assert M.locate_nearest(b'{"a":[' + tail, "manifest.a[3]") is None
    # the background Locator's bracket scan (a run with no bracket after it: exponential backtracking)
    assert M.Locator(b'{"graph": {"nodes": [' + b"1" * 100_000, background=True).nearest("manifest.graph") is None
    assert time.perf_counter() - t < 10.0


def test_bracket_walk_skips_strings_and_stops_at_an_unterminated_one():
    assert list(M._brackets('[{"]": "\\"["}, ["x\\\\"]]', 0)) == [(0, "["), (1, "{"), (12, "}"), (15, "["), (21, "]"), (22, "]")]
    assert list(M._brackets(b'[1, "ab\\"c', 0)) == [(0, b"[")]
    assert list(M._brackets(memoryview(b'{"[":[]}'), 0)) == [(0, b"{"), (5, b"["), (6, b"]"), (7, b"}")]
    assert M._first_too_deep(b'[[["x"]]]') == -1
    assert M._first_too_deep(b"[" * 1025) == 1024 and M._first_too_deep(b"[" * 1025, 1024) == -1
