"""The first manifest edit's no-repeated-key proof: ``EditSession(path, keys_unique=..., proven_on=...)``
takes what the viewer's open (or its background job) proved of the file's manifest instead of parsing it
whole (10^6 nodes: ~3.5 s), and only for the bytes it was proven on."""

from __future__ import annotations

import json
import os
import sys

from conftest import Viewer, hold_method, identity_chain, until

from onemodel_viewer.format.onemodel import manifest as M
from onemodel_viewer.format.onemodel.overlay import EditSession
from onemodel_viewer.format.storage import FileStorage
from onemodel_viewer.tui.app import make_app

from test_reader_util import graph, model, node, pack

SIZE = (120, 40)
settle = Viewer.settle


def count_edit_parses(monkeypatch) -> list:
    """Each whole-manifest parse an edit makes (edit_image's; a re-read's parse is the reader's)."""
    calls: list = []
    real = M.parse

    def parse(*args, **kwargs):
        if sys._getframe(1).f_globals["__name__"].endswith("edit_image"):
            calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(M, "parse", parse)
    return calls


def manifest_text(names: tuple[str, ...]) -> bytes:
    """A one-node model whose node spells ``name`` once per entry of ``names`` (the last one wins)."""
    text = json.dumps(model(graph(nodes=[node("Relu", ["x"], ["y"], name="PLACE")], inputs=[{"name": "x"}],
                                  outputs=[{"name": "y"}])))
    return text.replace('"name": "PLACE"', ", ".join(f'"name": "{n}"' for n in names)).encode()


def write_file(path, names: tuple[str, ...]) -> str:
    """Write the model to ``path`` (a new file replaces the old one: a new inode)."""
    tmp = f"{path}.new"
    with open(tmp, "wb") as f:
        f.write(pack(manifest_text(names)))
    os.replace(tmp, path)
    return str(path)


EDIT = 'manifest.graph.nodes[0].name="edited"'


def edited_names(session: EditSession) -> tuple[str, bytes]:
    """The node's name as the re-read sees it, and the edited manifest's bytes."""
    doc = session.document()
    try:
        return doc.model.graph.nodes[0].name, bytes(session.image.manifest)
    finally:
        doc.close()


def test_a_proven_fact_spares_the_first_edit_its_whole_parse(tmp_path, monkeypatch):
    path = write_file(tmp_path / "m.onemodel", ("n",))
    plain = EditSession(path)
    plain.apply(EDIT)
    calls = count_edit_parses(monkeypatch)
    proven_on = FileStorage(path)
    session = EditSession(path, keys_unique=True, proven_on=proven_on)
    session.apply(EDIT)
    assert calls == []
    assert session.image.facts.keys_unique is True
    assert edited_names(session) == edited_names(plain) and edited_names(session)[0] == "edited"
    for s in (plain, session, proven_on):
        s.close()


def test_a_fact_that_keys_repeat_is_used_too_and_the_last_key_is_edited(tmp_path, monkeypatch):
    path = write_file(tmp_path / "m.onemodel", ("first", "last"))
    calls = count_edit_parses(monkeypatch)
    proven_on = FileStorage(path)
    session = EditSession(path, keys_unique=False, proven_on=proven_on)
    session.apply(EDIT)
    name, data = edited_names(session)
    assert calls == [] and name == "edited" and b'"name": "first"' in data
    session.close()
    proven_on.close()


def test_without_a_proof_the_edit_parses_the_manifest_as_before(tmp_path, monkeypatch):
    path = write_file(tmp_path / "m.onemodel", ("first", "last"))
    calls = count_edit_parses(monkeypatch)
    for session in (EditSession(path), EditSession(path, keys_unique=True)):  # a fact with no storage: not taken
        session.apply(EDIT)
        name, data = edited_names(session)
        assert name == "edited" and b'"name": "first"' in data
        session.close()
    assert calls == [1, 1]


def test_a_fact_proven_on_a_file_since_changed_is_dropped(tmp_path, monkeypatch):
    """The fact is about the bytes it was proven on: the file rewritten since (now repeating a key) is
    parsed, and the edit changes the key that counts (the last), not the first one a unique walk meets."""
    path = write_file(tmp_path / "m.onemodel", ("n",))
    proven_on = FileStorage(path)  # the shown document's storage: its manifest had no repeated key
    write_file(path, ("first", "last"))
    calls = count_edit_parses(monkeypatch)
    session = EditSession(path, keys_unique=True, proven_on=proven_on)
    assert session.image.facts.keys_unique is None
    session.apply(EDIT)
    name, data = edited_names(session)
    assert calls == [1] and name == "edited" and b'"name": "first"' in data
    other = tmp_path / "other.onemodel"
    write_file(other, ("n",))
    elsewhere = FileStorage(str(other))  # proven on another file: not this one's fact
    assert EditSession(path, keys_unique=True, proven_on=elsewhere).image.facts.keys_unique is None
    for s in (session, proven_on, elsewhere):
        s.close()


async def test_the_viewer_passes_what_its_background_job_proved(tmp_path, monkeypatch):
    """The viewer's first edit parsed the whole manifest again to learn what its background job had
    proved (no repeated key): seconds on a 10^6-node model."""
    calls = count_edit_parses(monkeypatch)
    app = make_app(str(identity_chain(tmp_path, 60)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not app.findings_pending
        assert app.apply_edit('manifest.graph.nodes[30].inputs[0]="undefined-x"')
        await settle(pilot)
        assert app.edit_session.base.facts.keys_unique is True
        assert calls == []
        assert any(p.where == "manifest.graph.nodes[30].inputs[0]" for p in app.document.problems)


async def test_the_viewer_passes_no_fact_before_its_background_job_has_looked(tmp_path, monkeypatch):
    """While the job's duplicate-key detection waits the shown document proves nothing: the edit parses,
    and changes the key that counts (the last one)."""
    from onemodel_viewer.tui.background import BackgroundWork

    calls = count_edit_parses(monkeypatch)
    reached, go = hold_method(monkeypatch, BackgroundWork, "_duplicate_findings")
    path = write_file(tmp_path / "m.onemodel", ("first", "last"))
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        try:
            await until(pilot, reached.is_set)
            assert app.findings_pending
            assert app.apply_edit(EDIT)
            await until(pilot, lambda: not app.edit_pending)
            assert calls == [1] and app.document.model.graph.nodes[0].name == "edited"
        finally:
            go.set()
        await settle(pilot)


async def test_the_viewer_passes_a_repeated_key_its_open_found(tmp_path, monkeypatch):
    """A duplicate-key finding is a fact too: no parse, and the edit changes the key that counts."""
    calls = count_edit_parses(monkeypatch)
    app = make_app(write_file(tmp_path / "m.onemodel", ("first", "last")))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert any(f.code == "duplicate-key" for f in app.document.findings)
        assert app.apply_edit(EDIT)
        await settle(pilot)
        assert calls == [] and app.edit_session.base.facts.keys_unique is False
        assert app.document.model.graph.nodes[0].name == "edited"
        assert b'"name": "first"' in bytes(app.edit_session.image.manifest)
