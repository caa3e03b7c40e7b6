"""The orjson manifest parser (issue 11): exact depth limit without touching the interpreter,
no copy or decode of a manifest that fails, duplicate keys, and the noncanonical-manifest
comparison that stops at the first differing byte."""

from __future__ import annotations

import codecs
import json
import pathlib
import re
import sys
import threading

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onemodel_viewer.analysis.layout import onemodel as layout
from onemodel_viewer.format.onemodel import json_scan
from onemodel_viewer.format.onemodel import manifest as M
from onemodel_viewer.format.onemodel import manifest_keys as K
from onemodel_viewer.format.onemodel.canonical import STEP_CHUNKS
from onemodel_viewer.format.onemodel.canonical import compact_json, writer_chunks
from onemodel_viewer.format import reader
from onemodel_viewer.format.onemodel import writer
from onemodel_viewer.format.errors import FormatError, Kind
from onemodel_viewer.format.reader import open_path, open_with_manifest

from conftest import JSON_KEYS, json_text  # noqa: E402 - the shared test helpers
from test_reader_util import graph, model, node, pack, tensor, write

ROOT = pathlib.Path(__file__).resolve().parent.parent


def parse_err(data, base: int = 64) -> FormatError:
    with pytest.raises(FormatError) as ei:
        M.parse(data, base)
    return ei.value


def where_of(e: FormatError) -> tuple:
    return e.kind, e.where, e.offset


# --- the depth limit ----------------------------------------------------------------------------


def _arrays(levels: int, prefix: bytes = b'{"x":') -> bytes:
    """A top-level object whose "x" holds arrays: ``levels`` JSON levels in all."""
    k = levels - 1
    return prefix + b"[" * k + b"]" * k + b"}"


def _objects(levels: int) -> bytes:
    return b'{"a":' * (levels - 1) + b"{}" + b"}" * (levels - 1)


def _mixed(levels: int) -> bytes:
    """Objects and arrays taking turns: {"a":[{"a":[...]}]}."""
    opens, closes = [], []
    for i in range(levels):
        if i % 2 == 0:
            opens.append(b'{"a":' if i < levels - 1 else b"{")
            closes.append(b"}")
        else:
            opens.append(b"[")
            closes.append(b"]")
    return b"".join(opens) + b"".join(reversed(closes))


def _depth_of(value) -> int:
    d = 0
    while isinstance(value, (dict, list)):
        d += 1
        value = value.get("a", value.get("x")) if isinstance(value, dict) else (value[0] if value else None)
    return d


@pytest.mark.parametrize("shape", [_arrays, _objects, _mixed], ids=["arrays", "objects", "mixed"])
def test_1024_levels_parse_1025_are_unsupported_at_the_1025th_bracket(shape):
    assert _depth_of(M.parse(shape(1024)).value) == 1024
    deep = shape(1025)
    e = parse_err(deep)
    opened = [m.start() for m in re.finditer(rb"[\[{]", deep)]
    assert where_of(e) == (Kind.UNSUPPORTED, "manifest", 64 + opened[1024])


def test_depth_offset_is_in_bytes_after_non_ascii():
    """orjson counts characters; the problem's offset counts bytes."""
    data = _arrays(1025, '{"日本":"é","x":'.encode())
    e = parse_err(data)
    assert where_of(e) == (Kind.UNSUPPORTED, "manifest", 64 + data.index(b"[") + 1023)


def test_depth_limit_never_touches_the_recursion_limit(monkeypatch, tmp_path):
    """Regression: the limit was enforced by setting the recursion limit around each parse (a
    process-wide setting, changed from whichever thread parsed); on 3.12+ the probe never
    converged. Nothing may call sys.setrecursionlimit now: not the parse, not the open."""
    limit = sys.getrecursionlimit()

    def refuse(n):
        raise AssertionError(f"sys.setrecursionlimit({n}) called")

    monkeypatch.setattr(sys, "setrecursionlimit", refuse)
    assert M.parse(_mixed(1024)).value
    assert parse_err(_mixed(1025)).kind == Kind.UNSUPPORTED
    text = json.dumps(model())[:-1] + ',"x":' + "[" * 1023 + "]" * 1023 + "}"
    assert open_path(write(tmp_path, pack(text))).valid
    assert sys.getrecursionlimit() == limit


def test_depth_limit_exact_from_300_frames_deep():
    def at(k: int, data: bytes):
        if k:
            return at(k - 1, data)
        try:
            return _depth_of(M.parse(data).value)
        except FormatError as e:
            return e.kind

    limit = sys.getrecursionlimit()
    for shape in (_arrays, _objects, _mixed):
        assert at(300, shape(1024)) == 1024
        assert at(300, shape(1025)) == Kind.UNSUPPORTED
    assert sys.getrecursionlimit() == limit


def test_depth_limit_exact_while_another_thread_parses():
    """Regression: a second thread parsing at the same time got a valid 1024-level manifest
    rejected as Unsupported (the first thread had lowered the process's recursion limit), and
    the limit was left changed."""
    limit = sys.getrecursionlimit()
    ok, deep = _mixed(1024), _mixed(1025)
    results: dict[str, list] = {"a": [], "b": []}
    start = threading.Barrier(2)

    def run(name: str, k: int) -> None:
        def at(j):
            if j:
                return at(j - 1)
            for _ in range(200):
                results[name].append(_depth_of(M.parse(ok).value))
                try:
                    M.parse(deep)
                    results[name].append("accepted")
                except FormatError as e:
                    results[name].append(e.kind)

        start.wait()
        at(k)

    threads = [threading.Thread(target=run, args=("a", 0)), threading.Thread(target=run, args=("b", 300))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in "ab":
        assert results[name] == [1024, Kind.UNSUPPORTED] * 200, name
    assert sys.getrecursionlimit() == limit


def test_nested_graphs_from_a_deep_caller_open_on_a_fresh_stack(tmp_path, monkeypatch):
    """64 nested graphs (the builder recurses ~6 frames a level) opened by a caller close to the
    recursion limit: no RecursionError, and the limit is not raised to make room."""
    g = graph()
    for _ in range(63):
        g = graph(nodes=[node("If", [], [], attributes=[{"name": "b", "type": 5, "value": g}])])
    p = write(tmp_path, pack(model(g)))
    monkeypatch.setattr(sys, "setrecursionlimit", lambda n: pytest.fail("setrecursionlimit called"))
    names: list[str] = []
    build = reader._parse_and_build

    def spy(*args):
        names.append(threading.current_thread().name)
        return build(*args)

    monkeypatch.setattr(reader, "_parse_and_build", spy)

    def at(k):
        return at(k - 1) if k else open_path(p, mode="diagnose")

    assert at(sys.getrecursionlimit() - 60).valid
    assert at(0).valid
    assert names == ["onemodel-open", threading.current_thread().name]


def test_orjson_minimum_in_pyproject_has_the_exact_limit():
    """orjson 3.9.15 is the first with the 1024-level limit (3.9.14 accepts any depth); the
    module refuses to import with an orjson that does not stop exactly there."""
    text = (ROOT / "pyproject.toml").read_text()
    (pin,) = re.findall(r'"orjson>=([0-9.]+)"', text)
    assert tuple(map(int, pin.split("."))) >= (3, 9, 15)
    assert json_scan._orjson_stops_at_max_depth(orjson) and M._orjson() is orjson


# --- what orjson refuses, explained as before --------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b'{"a":[1,2,]}',  # orjson says the comma; the standard library the bracket (the comma on 3.13)
        b'{"a":04}',  # orjson: the number; the standard library: after its first digit
        b'{"a":"abc',  # unterminated: the string's start, not the end of the data
        '{"日本":1,}'.encode(),
        b'{"a" 1}',
        b'{"a":1}} ',
        b'{"a":tru}',
    ],
)
def test_syntax_errors_keep_the_standard_librarys_offsets(data):
    """orjson's positions differ (and count characters): the problem is where this Python's json says."""
    with pytest.raises(json.JSONDecodeError) as ei:
        json.loads(data.decode())
    expected = len(data.decode()[: ei.value.pos].encode())
    assert where_of(parse_err(data)) == (Kind.MALFORMED, "manifest", 64 + expected)


def test_minus_infinity_is_reported_at_its_minus_sign():
    data = b'{"a":[1,-Infinity]}'  # orjson stops after the sign
    assert where_of(parse_err(data)) == (Kind.MALFORMED, "manifest", 64 + data.index(b"-Infinity"))


def test_memoryview_parses_like_bytes():
    good = json.dumps(model(graph(nodes=[node("Relu", name="日本")])), ensure_ascii=False).encode()
    assert M.parse(memoryview(good)).value == M.parse(good).value
    for bad in (b'{"a":"\xff"}', b'{"a":[1,]}', _mixed(1025), b"\0" * 100, b'"x"', b'{"a":"\\ud800"}'):
        assert where_of(parse_err(memoryview(bad))) == where_of(parse_err(bad))


def test_lone_surrogate_is_reported_after_a_later_syntax_error_as_before():
    """The old parser found lone surrogates only in a parsed manifest: JSON errors anywhere win."""
    data = b'{"a":"\\ud800","b":[1 2]}'
    assert where_of(parse_err(data)) == (Kind.MALFORMED, "manifest", 64 + data.index(b"2"))
    data = b'{"a":["x","\\ud800"]}'
    assert where_of(parse_err(data)) == (Kind.MALFORMED, "manifest.a[1]", 64 + data.index(b'"\\ud800'))


def test_error_beyond_the_explanation_window_uses_orjsons_position():
    """A late error in a big manifest is not explained by decoding and re-parsing all of it."""
    big = b'{"pad":"' + b"x" * (M._EXPLAIN_CAP + 10) + b'","b":[1 2]}'
    e = parse_err(big)
    assert where_of(e) == (Kind.MALFORMED, "manifest", 64 + big.index(b"2"))


def test_numbers_beyond_a_double_as_before(tmp_path):
    """orjson refuses 1e400 and 400-digit integers; the standard library reads them (inf, an
    int): an unknown field keeps them, a known integer field reports them at its path."""
    assert M.parse(b'{"x":1e400,"y":-1e400}').value == {"x": float("inf"), "y": float("-inf")}
    assert M.parse(b'{"x":' + b"7" * 400 + b"}").value == {"x": int("7" * 400)}
    text = json.dumps(model(graph(initializers=[tensor("t", 1, [1], 0, 4)])))
    bad = text.replace('"dims": [1]', '"dims": [1e400]')
    p = write(tmp_path, pack(bad, b"\0" * 4))
    with pytest.raises(FormatError) as ei:
        open_path(p)
    assert (ei.value.kind, ei.value.where) == (Kind.MALFORMED, "manifest.graph.initializers[0].dims[0]")


@pytest.mark.parametrize("big", ["18446744073709551616", "-9223372036854775809", "99999999999999999999999"])
def test_integers_beyond_64_bits_are_malformed_at_their_field(tmp_path, big):
    """orjson reads integers of 2^64 or more (and below -2^63) as floats: the schema builder must
    still report them where they are, not accept them nor fail elsewhere."""
    text = json.dumps(model(graph(initializers=[tensor("t", 1, [1], 0, 4)])))
    bad = text.replace('"dims": [1]', f'"dims": [{big}]')
    p = write(tmp_path, pack(bad, b"\0" * 4))
    with pytest.raises(FormatError) as ei:
        open_path(p)
    e = ei.value
    assert (e.kind, e.where) == (Kind.MALFORMED, "manifest.graph.initializers[0].dims[0]")
    assert e.offset == 64 + bad.encode().index(big.encode())
    diag = open_path(p, mode="diagnose")
    assert diag.problems[0] == e.problem


# --- failing without copying or decoding the manifest -------------------------------------------


@pytest.fixture
def decodes(monkeypatch):
    """Sizes of every UTF-8 decode of a buffer the manifest module makes, and orjson.loads calls."""
    sizes: list[int] = []
    loads: list[int] = []
    real_decode, real_loads = codecs.utf_8_decode, M._orjson().loads

    def decode(b, *a):
        sizes.append(len(b))
        return real_decode(b, *a)

    def loads_(b):
        loads.append(len(b))
        return real_loads(b)

    monkeypatch.setattr(M.codecs, "utf_8_decode", decode)
    monkeypatch.setattr(M._orjson(), "loads", loads_)
    scans: list[int] = []
    real_scan = M._stdlib_scan
    monkeypatch.setattr(M, "_stdlib_scan", lambda data, cut: scans.append(cut) or real_scan(data, cut))
    return sizes, loads, scans


def test_nul_manifest_fails_at_byte_0_without_parsing_or_decoding_it(decodes):
    """Regression: a 512 MiB manifest of NUL bytes failed at byte 0 but cost 1.55 GB (decoded
    whole first). Now: UTF-8 checked 1 MiB at a time, orjson never given it, and the standard
    library reads the first 64 KiB only."""
    sizes, loads, scans = decodes
    data = memoryview(bytes(5 << 20))
    assert where_of(parse_err(data)) == (Kind.MALFORMED, "manifest", 64)
    assert loads == [] and max(sizes) <= M._CHUNK and sum(sizes) == len(data)
    assert scans == [M._EXPLAIN_MARGIN]


def test_one_string_manifest_is_not_built(decodes):
    """Regression: a 300 MB manifest holding one JSON string cost 1.7 GB. A manifest that does not
    start with '{' is not a JSON object, whatever follows: it is not parsed at all."""
    sizes, loads, scans = decodes
    data = b'  "' + b"a" * (3 << 20) + b'"'
    assert where_of(parse_err(data)) == (Kind.MALFORMED, "manifest", 64 + 2)
    assert loads == [] and scans == [] and max(sizes) <= M._CHUNK


def test_error_position_in_characters_becomes_bytes_a_chunk_at_a_time(decodes):
    sizes, _loads, _scans = decodes
    data = '{"a":"'.encode() + "日本".encode() * (1 << 20) + b'","b":[1 2]}'
    e = parse_err(data)
    assert where_of(e) == (Kind.MALFORMED, "manifest", 64 + data.index(b"2"))
    assert max(sizes) <= M._CHUNK


def test_valid_manifest_is_parsed_once_from_its_bytes(decodes):
    sizes, loads, scans = decodes
    data = json.dumps(model(graph(nodes=[node("Relu", name=f"n{i}") for i in range(100)]))).encode()
    M.parse(data)
    assert loads == [len(data)] and sizes == [] and scans == []


# --- duplicate keys ----------------------------------------------------------------------------


def _reachable_dups(parsed: M.Parsed) -> set:
    """{(path, frozenset(keys))} of the objects in ``parsed.value`` that repeated a key."""
    paths = {}
    stack = [(parsed.value, "manifest")]
    while stack:
        v, w = stack.pop()
        if type(v) is dict:
            paths[id(v)] = w
            stack.extend((x, M.join(w, k)) for k, x in v.items())
        elif type(v) is list:
            stack.extend((x, f"{w}[{i}]") for i, x in enumerate(v))
    return {(paths[id(d)], frozenset(k)) for d, k in parsed.duplicates if id(d) in paths}


def _reference_dups(text: bytes) -> set:
    """The old way: the standard library's object_pairs_hook, then the objects the value reaches."""
    found: list = []  # keeps every such dict alive: an id is not reused by a later one

    def hook(pairs):
        d = dict(pairs)
        if len(d) != len(pairs):
            seen: set = set()
            found.append((d, [k for k, _ in pairs if k in seen or seen.add(k)]))
        return d

    value = json.loads(text, object_pairs_hook=hook)
    return _reachable_dups(M.Parsed(value, found))


_KEYS = st.sampled_from(JSON_KEYS)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_KEYS, json_text()), max_size=5))
def test_duplicates_agree_with_the_pairs_hook(members):
    """The cheap proof and the byte walk find exactly the objects the old pairs hook found,
    among those the parsed value holds (a later duplicate replaces an object with its own)."""
    text = ("{" + ",".join(f"{k}:{v}" for k, v in members) + "}").encode()
    assert _reachable_dups(M.parse(text)) == _reference_dups(text)


def test_duplicates_proof_skips_the_walk_on_a_manifest_without_any(monkeypatch):
    walked: list = []
    monkeypatch.setattr(K, "_duplicate_keys", lambda data: walked.append(1) or [])
    text = json.dumps(model(graph(nodes=[node("Relu", ["a:b"], [":"], name=f"日{i}") for i in range(50)])), ensure_ascii=False)
    data = text.replace('":"', '"\\u003a"', 3).encode()  # a colon spelt as an escape is a colon too
    assert b"\\u003a" in data
    assert M.parse(data).duplicates == [] and walked == []
    M.parse(b'{"a":1,"b":{"c":2,"c":3}}')
    assert walked == [1]  # a repeated key fails the proof: the walk looks


def test_compact_is_exactly_orjsons_encoding_of_the_parse(tmp_path):
    """``Parsed.compact``: the bytes are orjson's encoding of the value (no duplicate, no formatting), and
    ``--check`` then proves a writer-shaped manifest canonical without reading its bytes again."""
    value = model(graph(nodes=[node("Relu", ["a"], ["b"], name="日")], inputs=[{"name": "a"}], outputs=[{"name": "b"}]))
    data = orjson.dumps(value)
    assert M.parse(data).compact and M.parse(memoryview(data)).compact
    assert not M.parse(data, duplicates=False).compact  # not looked for
    for other in (json.dumps(value).encode(), data + b"\n", data[:-1] + b',"graph":' + orjson.dumps(value["graph"]) + b"}"):
        p = M.parse(other)
        assert not p.compact and p.value == value
    assert M.parse(data[:-1] + b',"graph":' + orjson.dumps(value["graph"]) + b"}").duplicates  # the repeat is found
    path = write(tmp_path, pack(data, b""))
    doc, parsed = open_with_manifest(path)
    try:
        assert parsed.compact and not doc.problems
        read = []
        real = doc.storage.read
        doc.storage.read = lambda o, n: read.append((o, n)) or real(o, n)
        assert layout.noncanonical(doc, parsed) is None and read == []
    finally:
        doc.close()


def test_duplicates_deeper_than_orjson_writes_are_found():
    """orjson writes at most 254 levels: deeper manifests skip the proof and walk the bytes."""
    data = b'{"x":' + b"[" * 900 + b'{"k":1,"k":2}' + b"]" * 900 + b"}"
    [(d, keys)] = M.parse(data).duplicates
    assert d == {"k": 2} and keys == ["k"]


@given(members=st.lists(st.tuples(_KEYS, json_text()), max_size=6),
       items=st.integers(0, 5000))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_duplicates_found_a_piece_at_a_time_like_at_once(members, items):
    """with_duplicates(step=...) (the viewer's background job: ``orjson.dumps`` a piece at a time, never
    the whole 10^6-node manifest in one call) finds the same repeated keys as the parse's own detection,
    in objects reached through objects and inside arrays longer than a piece."""
    inner = "{" + ",".join(f"{k}:{v}" for k, v in members) + "}"
    text = ('{"graph":{"nodes":[' + ",".join(['{"op":"Relu","in":["x:y"]}'] * items + [inner]) + "]},"
            + ",".join(f"{k}:{v}" for k, v in members) + (',' if members else '') + '"z":1}').encode()
    at_once = M.parse(text)
    steps: list = []
    later = M.with_duplicates(text, M.parse(text, duplicates=False), step=lambda: steps.append(1) and False)
    assert later.checked_duplicates and not later.compact
    assert _reachable_dups(later) == _reachable_dups(at_once) == _reference_dups(text)
    assert len(steps) >= items // K._PIECE


def test_duplicates_a_piece_at_a_time_prove_without_the_walk_and_stop_when_asked(monkeypatch):
    walked: list = []
    monkeypatch.setattr(K, "_duplicate_keys", lambda data: walked.append(1) or [])
    text = b'{"k:":{"a":"b:c"},"graph":{"nodes":[' + b",".join([b'{"op":"Relu","x\\u003a":[":"]}'] * 5000) + b"]}}"
    parsed = M.parse(text, duplicates=False)
    assert M.with_duplicates(text, parsed, step=lambda: False).duplicates == [] and walked == []
    assert M.with_duplicates(text, parsed, step=lambda: True) is None


def test_duplicates_a_piece_at_a_time_stop_when_asked_while_counting_the_colons(monkeypatch):
    """The colon count after the piecewise encoding ignored what ``step()`` answered: asked to stop
    there (the viewer's background job cancelled), it still counted the whole manifest, a MiB per
    step, and returned the duplicates instead of None."""
    text = b'{"graph":{"nodes":[' + b",".join([b'{"op":"Relu","in":["x:y"]}'] * 200_000) + b"]}}"
    assert len(text) > 4 * M._CHUNK
    parsed = M.parse(text, duplicates=False)
    encoded = K.written_colons
    counting: list = []

    def written_then_count(value, step):
        total = encoded(value, step)
        counting.append(True)
        return total

    monkeypatch.setattr(K, "written_colons", written_then_count)
    asked: list = []

    def step() -> bool:
        if counting:
            asked.append(1)
        return bool(counting)

    assert M.with_duplicates(text, parsed, step=step) is None
    assert len(asked) == 1


def test_duplicate_finding_of_a_key_repeated_100000_times(tmp_path):
    text = json.dumps(model())[:-1].encode() + b',"x":{' + b",".join([b'"k":0'] * 100_000) + b"}}"
    doc = open_path(write(tmp_path, pack(text)), mode="diagnose")
    [f] = [f for f in doc.findings if f.code == "duplicate-key"]
    assert f.where == "manifest.x.k" and f.offset == 64 + text.rindex(b'"k"') + 4


# --- noncanonical-manifest -----------------------------------------------------------------------


def _other_writer(m: dict) -> bytes:
    """``m`` as another writer might write it: keys in reverse order, optional fields explicit."""
    def rev(v):
        if isinstance(v, dict):
            return {k: rev(v[k]) for k in reversed(list(v))}
        return [rev(x) for x in v] if isinstance(v, list) else v

    m = json.loads(json.dumps(m))
    m.update(producer_name="", doc="", metadata=[])
    for n in m["graph"]["nodes"]:
        n["doc"] = ""
    return json.dumps(rev(m)).encode()


def _canonical_file(tmp_path, n: int = 300):
    g = graph(inputs=[{"name": "x"}], outputs=[{"name": f"v{n}"}],
              nodes=[node("Relu", [f"v{i}" if i else "x"], [f"v{i + 1}"], name=f"n{i}") for i in range(n)])
    first = open_path(write(tmp_path, pack(model(g)), "first.onemodel"))
    return write(tmp_path, writer.to_bytes(first.model), "canonical.onemodel"), model(g)


def test_noncanonical_finding_right_on_canonical_and_other_writers_files(tmp_path):
    canonical, m = _canonical_file(tmp_path)
    files = {
        "canonical": (canonical, None),
        "other": (write(tmp_path, pack(_other_writer(m)), "other.onemodel"), 64 + 2),
        "newline": (write(tmp_path, pack(canonical.read_bytes()[64:64 + reader.open_path(canonical).header.manifest_length] + b"\n"),
                          "newline.onemodel"), None),
    }
    for name, (p, at) in files.items():
        doc, parsed = open_with_manifest(p, "diagnose")
        have = doc.storage.read(*doc.manifest_span)
        want = writer.encode_manifest(doc.model)
        exact = None if want == have else next(i for i in range(min(len(want), len(have)) + 1)
                                                if i == min(len(want), len(have)) or want[i] != have[i])
        for f in (layout.noncanonical(doc, parsed), layout.noncanonical(doc)):
            if exact is None:
                assert f is None, name
            else:
                assert (f.code, f.where, f.offset) == ("noncanonical-manifest", "manifest", 64 + exact), name
        if at is not None:
            assert exact + 64 == at
        doc.close()
    assert exact == len(have) - 1  # the newline file: the writer's bytes up to the last one


def test_noncanonical_on_another_writers_file_encodes_no_record(tmp_path, monkeypatch):
    """Regression: the finding re-encoded the whole manifest (122 ms vs 25 ms for a bare read of a
    1 GiB file from another writer); it stops at the first differing byte now."""
    _canonical, m = _canonical_file(tmp_path)
    p = write(tmp_path, pack(_other_writer(m)), "other.onemodel")
    monkeypatch.setattr(reader, "BULK_NODES", 32)  # node records built lazily
    doc, parsed = open_with_manifest(p, "diagnose")
    encoded: list = []
    for name in ("_node", "_vi", "_tensor", "encode_manifest"):
        real = getattr(writer, name)
        monkeypatch.setattr(writer, name, lambda *a, _real=real, _name=name: encoded.append(_name) or _real(*a))
    f = layout.noncanonical(doc, parsed)
    assert f.offset == 64 + 2 and encoded == []
    assert not doc.model.graph.nodes.built
    doc.close()


def test_writer_chunks_are_the_writers_bytes_on_the_corpus():
    """The record-by-record encoding is byte for byte ``writer.encode_manifest`` (orjson writes the
    writer's records exactly as json.dumps does; a node taken from the parse as stored is what
    the writer writes), and the first difference is the exact one, with and without the parse."""
    files = sorted(str(p) for d in ("valid", "hostile") for p in (ROOT / "testdata" / d).glob("*.onemodel"))
    compared = 0
    for path in files:
        doc, parsed = open_with_manifest(path, "diagnose")
        try:
            if doc.model is None or doc.problems:
                continue
            try:
                want = writer.encode_manifest(doc.model)
            except FormatError:
                continue
            assert b"".join(writer_chunks(doc.model)) == want, path
            assert b"".join(writer_chunks(doc.model, parsed.value)) == want, path
            have = doc.storage.read(*doc.manifest_span)
            k = min(len(want), len(have))
            exact = None if want == have else next((j for j in range(k) if want[j] != have[j]), k)
            assert M.writer_difference(have, doc.model) == exact, path
            assert M.writer_difference(have, doc.model, parsed.value) == exact, path
            compared += 1
        finally:
            doc.close()
    assert compared > 30


def test_a_late_difference_in_another_writers_file_is_found_exactly(tmp_path):
    """A file that is the writer's but for one explicit default in its last node (the structure
    proof fails): the comparison runs to that node, taking the stored nodes as they are."""
    canonical, _m = _canonical_file(tmp_path)
    text = canonical.read_bytes()[64 : 64 + open_path(canonical).header.manifest_length]
    cut = text.rindex(b'{"name":"n299"')
    late = text[:cut] + b'{"doc":"",' + text[cut + 1 :]
    doc, parsed = open_with_manifest(write(tmp_path, pack(late), "late.onemodel"), "diagnose")
    assert doc.valid and not M.canonical_structure(parsed.value)
    f = layout.noncanonical(doc, parsed)
    assert (f.code, f.offset) == ("noncanonical-manifest", 64 + cut + 2)
    assert layout.noncanonical(doc) == f
    doc.close()


def test_the_record_by_record_comparison_asks_step_and_stops_when_told(tmp_path):
    """Regression: the comparison ran ~200 ms on 10,000 nodes without asking the background job's cancel,
    so the job went on through an edit's re-read (its hold waits only at a step) and slowed the UI's frames."""
    canonical, _m = _canonical_file(tmp_path)
    text = canonical.read_bytes()[64 : 64 + open_path(canonical).header.manifest_length]
    cut = text.rindex(b'{"name":"n299"')
    late = text[:cut] + b'{"doc":"",' + text[cut + 1 :]
    doc = open_path(write(tmp_path, pack(late), "late.onemodel"), "diagnose")
    have = doc.storage.read(*doc.manifest_span)
    asked: list = []
    assert M.writer_difference(have, doc.model, step=lambda: asked.append(1) and False) == cut + 2
    records = len(doc.model.graph.nodes) + len(doc.model.graph.initializers) + len(doc.model.graph.inputs)
    assert len(asked) >= records // STEP_CHUNKS >= 1
    stopped: list = []
    assert M.writer_difference(have, doc.model, step=lambda: stopped.append(1) is None) is None
    assert stopped == [1]  # asked once, at the first record: stopped there
    assert layout.noncanonical(doc, step=lambda: True) is None
    assert layout.noncanonical(doc, step=lambda: False).offset == 64 + cut + 2
    doc.close()


def test_writer_encoding_of_every_control_character_and_big_integers():
    s = "".join(map(chr, range(0x100))) + "\u2028\u2029\ufeff\U0010ffff"
    for v in ({s: [s, 1, -(1 << 63), (1 << 64) - 1, True, None]}, [1 << 64], [-(1 << 63) - 1], [[[]]] * 3):
        assert compact_json(v) == json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode()
    deep: list = []
    for _ in range(300):
        deep = [deep]
    assert compact_json(deep) == json.dumps(deep, separators=(",", ":")).encode()
    with pytest.raises(ValueError):
        compact_json(["\ud800"])
