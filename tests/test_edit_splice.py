"""An edit session's re-read takes the manifest's parse from the edit, not from the bytes: each manifest
edit splices its value into the parse before it (``Image.manifest_parse``), and the re-read builds from
that (``open_storage(parse=)``), so one ``orjson.loads`` of the whole manifest (10-30 ms on 10,000 nodes,
no other thread can run meanwhile: the viewer's UI) is made only when nothing is known.

What must hold: the spliced parse is exactly the parse of the edited bytes, and the document read from it
has the same problems and findings, at the same offsets, as one read from the bytes."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from onemodel_viewer.format.onemodel import manifest as M
from onemodel_viewer.format.onemodel.edit_image import EditError
from onemodel_viewer.format.manifest_path import join
from onemodel_viewer.format.onemodel.overlay import EditSession
from onemodel_viewer.format.reader import open_storage

from test_reader_util import graph, model, node, pack, write

ROOT = Path(__file__).resolve().parent.parent
SEEDS = sorted(str(p) for p in (ROOT / "testdata" / "valid").glob("*.onemodel")) + sorted(
    str(p) for p in (ROOT / "testdata" / "hostile").glob("Invalid*.onemodel"))[:12]
VALUES = ["0", "-2", "7", '"x"', '"y:z"', '"\\u0061"', "[]", "{}", '{"a":1}', "[1,[2]]", "null", "(null)",
          "1.5", "true", "NaN", '"\\ud800"', "18446744073709551616", "123456789012345678901234567890", "1e400", "-0",
          "1E2", '{"name":"n","op_type":"Relu"}']


def _paths(value, where: str = "manifest"):
    """Every manifest path in ``value``, with the places one past the end of each array and a new key of each object."""
    if isinstance(value, dict):
        yield join(where, "new_key")
        for k, v in value.items():
            yield join(where, k)
            yield from _paths(v, join(where, k))
    elif isinstance(value, list):
        yield f"{where}[{len(value)}]"
        for i, v in enumerate(value):
            yield f"{where}[{i}]"
            yield from _paths(v, f"{where}[{i}]")


def _same_reading(session: EditSession) -> bool:
    """Whether the re-read took a spliced parse; asserts it read as the bytes do."""
    image = session.image
    parse = image.manifest_parse()
    if parse is not None:  # the reader's own parse, value for value and type for type (2^64 is a float to both)
        assert json.dumps(parse) == json.dumps(M.parse(bytes(image.manifest), duplicates=False).value)
    spliced = session.document()
    fresh = open_storage(session.path, session.storage(), keys_unique=session.keys_unique)
    def seen(doc):
        return ([(p.kind, p.where, p.offset, p.message) for p in doc.problems],
                [(f.code, f.where, f.offset, f.message) for f in doc.findings], doc.keys_unique)

    assert seen(spliced) == seen(fresh)
    return parse is not None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SEEDS), st.data())
def test_a_spliced_parse_is_the_parse_of_the_edited_bytes(seed, data):
    session = EditSession(seed)
    try:
        session.document()  # the first re-read parses the bytes: the edits after it splice
        for _ in range(data.draw(st.integers(1, 4))):
            parse = session.image.manifest_parse() or json.loads(bytes(session.image.manifest))
            path = data.draw(st.sampled_from(sorted(set(_paths(parse)))))
            try:
                session.apply(f"{path}={data.draw(st.sampled_from(VALUES))}")
            except EditError:
                continue
            event("spliced" if _same_reading(session) else "read from the bytes")
        if data.draw(st.booleans()):
            session.undo()
            _same_reading(session)
    finally:
        session.close()


def _chain(tmp_path, n: int = 20) -> str:
    nodes = [node("Relu", [f"t{i}"], [f"t{i + 1}"], name=f"n{i}") for i in range(n)]
    text = json.dumps(model(graph(nodes=nodes, inputs=[{"name": "t0"}], outputs=[{"name": f"t{n}"}]))).encode()
    return str(write(tmp_path, pack(text, b"")))


def _count_parses(monkeypatch) -> list:
    calls: list = []
    real = M.parse
    monkeypatch.setattr(M, "parse", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def test_only_the_first_re_read_parses_the_whole_manifest(tmp_path, monkeypatch):
    session = EditSession(_chain(tmp_path))
    calls = _count_parses(monkeypatch)
    first = session.document()
    assert len(calls) == 1 and not first.problems
    session.apply('manifest.graph.nodes[10].inputs[0]="nowhere"')
    doc = session.document()
    assert [(p.where, p.offset) for p in doc.problems] == [
        ("manifest.graph.nodes[10].inputs[0]", bytes(session.image.manifest).index(b'"nowhere"') + 64)]
    session.undo()
    assert not session.document().problems
    session.apply("manifest.graph.nodes[3]=null")
    assert len(session.document().problems) == 1
    assert len(calls) == 1  # each edit after the first re-read spliced; the undo's image kept its parse
    session.close()


def test_a_value_orjson_refuses_is_read_from_the_bytes(tmp_path, monkeypatch):
    """``NaN`` parses by the standard library's rules (the reader's fallback), never by a splice."""
    session = EditSession(_chain(tmp_path))
    session.document()
    session.apply("manifest.graph.nodes[2].attributes=NaN")
    assert session.image.manifest_parse() is None
    calls = _count_parses(monkeypatch)
    session.document()
    assert len(calls) == 1
    session.close()


def test_no_parse_is_kept_while_a_key_repeats(tmp_path):
    """With a repeated key the parse keeps only the last value: the bytes say more than the parse."""
    path = _chain(tmp_path)
    session = EditSession(path)
    session.document()
    session.apply('manifest.graph.nodes[1]={"name":"a","name":"b","op_type":"Relu"}')
    assert not session.keys_unique and session.image.manifest_parse() is None
    session.document()
    assert session.image.manifest_parse() is None
    session.close()


def test_a_header_that_no_longer_locates_the_manifest_drops_the_parse(tmp_path):
    """``header.manifest_length`` edited: the reader reads other bytes than the parse was made of."""
    session = EditSession(_chain(tmp_path))
    session.document()
    session.apply('manifest.graph.nodes[1].name="m"')
    assert session.image.manifest_parse() is not None
    session.apply(f"header.manifest_length={len(session.image.manifest) - 1}")
    assert session.image.manifest_parse() is None
    doc = session.document()
    assert doc.problems and session.image.manifest_parse() is None
    session.close()


def _file_parse(path: str) -> tuple[dict, tuple[int, int]]:
    data = Path(path).read_bytes()
    length = int.from_bytes(data[24:32], "little")
    return json.loads(data[64:64 + length]), (64, length)


def test_a_session_takes_the_open_parse_only_for_the_bytes_it_was_made_of(tmp_path, monkeypatch):
    from onemodel_viewer.format.storage import FileStorage

    path = _chain(tmp_path)
    parse, span = _file_parse(path)
    proven_on = FileStorage(path)
    session = EditSession(path, keys_unique=True, proven_on=proven_on, parse=parse, parse_span=span)
    assert session.image.manifest_parse() is parse
    calls = _count_parses(monkeypatch)
    session.apply('manifest.graph.nodes[5].inputs[0]="nowhere"')
    assert [p.where for p in session.document().problems] == ["manifest.graph.nodes[5].inputs[0]"]
    assert calls == [] and parse["graph"]["nodes"][5]["inputs"] == ["t5"]  # spliced into a copy
    other = EditSession(path, keys_unique=True, proven_on=proven_on, parse=parse, parse_span=(64, span[1] - 1))
    assert other.image.manifest_parse() is None  # another span than the manifest the session reads
    Path(f"{path}.new").write_bytes(Path(path).read_bytes())
    os.replace(f"{path}.new", path)  # the same bytes, but another file since: the proof and the parse are dropped
    changed = EditSession(path, keys_unique=True, proven_on=proven_on, parse=parse, parse_span=span)
    assert changed.image.manifest_parse() is None and changed.image.facts.keys_unique is None
    for s in (session, other, changed, proven_on):
        s.close()


async def test_the_viewers_first_edit_splices_into_the_open_parse(tmp_path, monkeypatch):
    """The first edit of a viewer session (and its undo) parsed the whole manifest again in its re-read."""
    from conftest import Viewer, identity_chain

    from onemodel_viewer.tui.app import make_app

    app = make_app(str(identity_chain(tmp_path, 60)))
    async with app.run_test(size=(120, 40)) as pilot:
        await Viewer.settle(pilot)
        assert app.edit_base_parse is not None and app.edit_base_parse[0] is app.document
        calls = _count_parses(monkeypatch)
        assert app.apply_edit('manifest.graph.nodes[30].inputs[0]="undefined-x"')
        await Viewer.settle(pilot)
        assert [p.where for p in app.document.problems] == ["manifest.graph.nodes[30].inputs[0]"]
        app.action_undo_edit()
        await Viewer.settle(pilot)
        assert not app.document.problems
        assert calls == [] and app.edit_base_parse is None


def test_a_parse_the_standard_library_made_is_not_spliced_into(tmp_path):
    """Regression: a re-read of a manifest holding ``1e400`` (orjson refuses it; the standard library parses
    the whole manifest) was kept, and an edit removing the ``1e400`` spliced into it: ``2^64`` elsewhere
    stayed the standard library's ``int`` where a parse of the new bytes (orjson's) has a ``float``."""
    session = EditSession(_chain(tmp_path))
    session.document()
    for edit in ("manifest.format=18446744073709551616", "manifest.metadata_props=1e400", "manifest.metadata_props=0"):
        session.apply(edit)
        _same_reading(session)
    session.close()


def test_a_session_keeps_one_parse_and_what_was_spliced_into_it(tmp_path):
    """Each re-read after a header or bytes edit parses the whole manifest again: had every image of the
    undo list kept its parse, a session would hold ~5x the manifest's bytes per such edit."""
    session = EditSession(_chain(tmp_path))
    session.document()
    session.apply('manifest.graph.nodes[1].name="m"')
    assert session.image.manifest_parse() is not None  # spliced into the base's
    session.apply("header.reserved=1")
    assert session.image.manifest_parse() is None
    session.document()
    assert session.image.manifest_parse() is not None  # learnt from the re-read
    session.apply('manifest.graph.nodes[2].name="k"')
    assert session.image.manifest_parse() is not None
    session.undo()
    session.undo()
    assert session.image.manifest_parse() is None  # dropped when the header edit's parse was learnt
    _same_reading(session)
    session.close()
