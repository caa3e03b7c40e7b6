"""Look-ups after an edit: :meth:`Locator.rebased` keeps what was walked where the bytes did not change,
and the viewer's highlight and JSON editor find exactly the edited file's bytes."""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import pytest
from textual.widgets import TextArea

import onemodel_viewer.format as omf
from onemodel_viewer.format.onemodel.manifest_locate import Locator, locate
from onemodel_viewer.format.onemodel.overlay import EditSession
from onemodel_viewer.format.reader import duplicate_key_findings
from onemodel_viewer.tui.background import open_for_viewer
from onemodel_viewer.tui.edit.screens import JsonEditor
from onemodel_viewer.tui.hex.hex_view import HexView
from onemodel_viewer.tui.hex.locate import ManifestSpans
from conftest import Viewer, identity_chain, settle_located  # noqa: E402 - the shared Pilot set-up

ROOT = Path(__file__).resolve().parent.parent
VALID = ROOT / "testdata" / "valid"
HOSTILE = ROOT / "testdata" / "hostile"
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


def test_after_an_edit_the_span_is_the_nodes_bytes_in_the_edited_file(tmp_path):
    """The viewer's look-ups: the edited node, the one after it (its bytes shifted by the edit) and the one
    before are found exactly where they are in the edited file, looked up before and after the edit."""
    session = EditSession(VALID / "showcase.onemodel")
    spans = ManifestSpans()
    doc = omf.open(session.path, mode="diagnose")
    nodes = [n.where for n in doc.model.graph.nodes]
    k = len(nodes) // 2
    docs = [doc]
    try:
        for where in nodes:
            assert spans.span(doc, where, lambda: True, lambda: False) is not None
        session.apply(f'{nodes[k]}.inputs[0]="a much longer name than the one before"')
        out = tmp_path / "edited.onemodel"
        session.save_as(out)
        edited = out.read_bytes()
        doc = session.document()
        docs.append(doc)
        for where in (nodes[k], nodes[k + 1], nodes[k - 1], nodes[-1]):
            offset, length = spans.span(doc, where, lambda: True, lambda: False)
            s, e = locate(manifest_of(edited), where)
            assert (offset, length) == (64 + s, e - s)
        offset, length = spans.span(doc, nodes[k], lambda: True, lambda: False)
        node = json.loads(edited[offset:offset + length])
        assert node["inputs"][0] == "a much longer name than the one before"
    finally:
        spans.close()
        for d in docs:
            d.close()
        session.close()


def test_value_span_of_a_newer_version_than_the_document_shown():
    """The editor opened while an edit is re-read: its bytes (the edits' latest) are not the shown
    document's; the value is found in them, exactly."""
    session = EditSession(VALID / "showcase.onemodel")
    spans = ManifestSpans()
    doc = omf.open(session.path, mode="diagnose")
    try:
        where = doc.model.graph.nodes[1].where
        assert spans.span(doc, where, lambda: True, lambda: False) is not None
        session.apply(f'{doc.model.graph.nodes[0].where}.name="renamed, longer than it was"')
        newer = bytes(session.image.manifest)
        for w in (where, f"{where}.inputs[0]", "manifest.graph", "manifest.graph.nodes[999]"):
            assert spans.value_span(doc, newer, w, False, lambda: False) == locate(newer, w)
        shown = manifest_of(Path(session.path).read_bytes())
        assert spans.value_span(doc, shown, where, False, lambda: False) == locate(shown, where)
        assert spans.value_span(None, newer, where, False, lambda: False) == locate(newer, where)
    finally:
        spans.close()
        doc.close()
        session.close()


def test_a_repeated_key_found_after_the_first_look_up_counts():
    """Regression: whether a look-up may stop at the first match of a key was decided at a document's
    first look-up and kept: the viewer's first open leaves duplicate keys to its background job, so a
    look-up before the job found them made every later one stop at the first of a repeated key."""
    path = str(HOSTILE / "valid-duplicate-keys.onemodel")
    doc, rest = open_for_viewer(path)
    spans = ManifestSpans()
    try:
        assert not any(f.code == "duplicate-key" for f in doc.findings)  # left to the job
        spans.span(doc, "manifest.x_dup", lambda: True, lambda: False)
        m0, mlen = doc.manifest_span
        data = doc.storage.read(m0, mlen)
        doc.findings.extend(duplicate_key_findings(data, m0, rest.parsed))  # what the job adds
        offset, length = spans.span(doc, "manifest.x_dup", lambda: True, lambda: False)
        assert data[offset - m0:offset - m0 + length] == b"2"  # the last "x_dup", the one JSON keeps
        assert data.endswith(b'"x_dup":1,"x_dup":2}')
    finally:
        spans.close()
        doc.close()


# ---------------------------------------------------------------------------------------------
# in the viewer


async def test_the_highlight_after_an_edit_is_the_nodes_bytes_in_the_edited_file(tmp_path):
    """The edited node selected: after the edit (and after its undo) the hex pane highlights exactly its
    bytes in the edited file; then the node after it, whose bytes moved."""
    path = identity_chain(tmp_path, 40)
    async with Viewer()(path) as pilot:
        app = pilot.app
        nodes = [n.where for n in app.document.model.graph.nodes]
        app.reveal(nodes[20])
        await settle_located(pilot)
        assert app.query_one(HexView).highlight is not None
        out = tmp_path / "edited.onemodel"
        for op in ("edit", "undo"):
            if op == "edit":
                app.apply_edit(f'{nodes[20]}.inputs[0]="v19 and then some"')
            else:
                app.action_undo_edit()
            for _ in range(200):  # until the selection is back on the re-read document
                await settle_located(pilot)
                if not app.edit_pending and not app.edit_restoring:
                    break
            await settle_located(pilot)
            assert app.current.where == nodes[20]
            app.edit_session.save_as(out)
            data = out.read_bytes()
            for where in (nodes[20], nodes[21]):
                if where != nodes[20]:
                    app.reveal(where)
                    await settle_located(pilot)
                s, e = locate(manifest_of(data), where)
                assert app.query_one(HexView).highlight == (64 + s, 64 + e)
            assert json.loads(data[64 + s:64 + e])["name"] == "n21"
            app.reveal(nodes[20])
            await settle_located(pilot)


async def test_the_editor_opens_on_the_last_of_a_repeated_key(tmp_path):
    """The editor's value comes through the hex pane's look-ups: in a manifest that repeats a key (before
    and after an edit) it is the last one, the value JSON keeps."""
    async with Viewer()(HOSTILE / "valid-duplicate-keys.onemodel") as pilot:
        app = pilot.app
        for step in range(2):
            app.current = type(app.current)("value", app.current.label, where="manifest.x_dup")
            await pilot.press("E")
            for _ in range(100):
                await pilot.pause()
                if isinstance(app.screen, JsonEditor):
                    break
            assert isinstance(app.screen, JsonEditor)
            assert app.screen.query_one(TextArea).text == ("2" if step == 0 else "3")
            if step == 0:
                app.screen.query_one(TextArea).text = "3"
                await pilot.press("ctrl+s")
                for _ in range(200):
                    await settle_located(pilot)
                    if not app.edit_pending and not app.edit_restoring:
                        break
        app.edit_session.save_as(tmp_path / "out.onemodel")
        assert manifest_of((tmp_path / "out.onemodel").read_bytes()).endswith(b'"x_dup":1,"x_dup":3}')
