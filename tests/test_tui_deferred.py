"""The viewer's two-phase open (tui/background.py ``open_for_viewer``): a big manifest's first screen
comes from the parse and the records the screen needs; the node checks and reading rules run first in
the background job, and what they find reaches the info bar, the problems group and the cursor."""

from __future__ import annotations

from onemodel_viewer.format import reader
from onemodel_viewer.tui import background
from onemodel_viewer.tui.app import make_app
from onemodel_viewer.tui.background import OpenRest
from onemodel_viewer.tui.widgets.info_bar import InfoBar
from onemodel_viewer.tui.widgets.structure_tree import StructureTree

import conftest  # noqa: E402
from conftest import held_checks, hold_checks, wait_for_workers  # noqa: E402 - the shared Pilot helpers
from test_reader_lazy import _chain_model
from test_reader_util import pack, write

SIZE = (120, 40)


def broken_chain(tmp_path, monkeypatch) -> str:
    """40 nodes in one bulk list, node 33 reading a name nothing defines (a reading rule's problem),
    node 22 holding a TENSOR attribute (a tensor known only once its node is checked); every manifest deferred."""
    monkeypatch.setattr(reader, "BULK_NODES", 32)
    monkeypatch.setattr(background, "DEFER_BYTES", 0)
    m = _chain_model()
    m["graph"]["nodes"][33]["inputs"] = ["nowhere"]
    return str(write(tmp_path, pack(m, b"\0" * 8)))


async def until(pilot, cond) -> None:
    """conftest's ``until``, then one more pause (the messages the state's change posted)."""
    await conftest.until(pilot, cond)
    await pilot.pause()


def info(app) -> str:
    return app.query_one("#infobar", InfoBar).render().plain


def group(app, key: str) -> str:
    [g] = [e for e in app.query_one(StructureTree).roots if e.key == key]
    return str(g.label)


async def test_problems_of_the_deferred_checks_reach_the_info_bar_the_group_and_the_cursor(tmp_path, monkeypatch):
    reached, go = hold_checks(monkeypatch)
    app = make_app(broken_chain(tmp_path, monkeypatch))
    assert app.document.problems == [] and app.unchecked_manifest.finish is not None
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, reached.is_set)
            bar = info(app)
            assert "checking…" in bar and "valid" not in bar  # no verdict before the checks
            assert "1 tensor " in bar + " "  # node 22's tensor not known yet
            assert "(0)" in group(app, "problems") and app.current.kind == "model"
            [w] = app.document.model.graph.initializers
            assert not app.owner_at(w.file_offset).startswith("tensor")  # the first screen's map has no tensors
            go.set()
            await until(pilot, lambda: not app.checks_pending)
            await wait_for_workers(app)
            await until(pilot, lambda: not app.findings_pending)
            [p] = app.document.problems
            assert p.where == "manifest.graph.nodes[33].inputs[0]" and p.offset is not None
            bar = info(app)
            assert "1 problem" in bar and "checking" not in bar and "2 tensors" in bar
            assert "(1)" in group(app, "problems")
            c = app.document.model.graph.nodes[22].attributes[0].value
            # w and node 22's c (known once the job checked the node) share their 8 bytes
            assert c.file_offset == w.file_offset and app.owner_at(w.file_offset) == "tensor c +0 (+1 sharing)"
            # the cursor had not moved: it goes to the problem, as for a broken model checked at open
            assert app.current.kind == "problem" and app.current.obj is p
    finally:
        go.set()


async def test_a_cursor_moved_before_the_checks_end_stays_where_it_is(tmp_path, monkeypatch):
    async with held_checks(monkeypatch, broken_chain(tmp_path, monkeypatch), SIZE) as (app, pilot, go):
        await pilot.press("down")
        await until(pilot, lambda: app.current is not None and app.current.kind != "model")
        moved = app.current
        go.set()
        await until(pilot, lambda: not app.checks_pending)
        await wait_for_workers(app)
        assert "(1)" in group(app, "problems") and "1 problem" in info(app)
        assert app.current is moved


async def test_checks_that_fail_leave_no_valid_verdict(tmp_path, monkeypatch):
    """A finish that raises (a core bug, a file changed under the job): the bar never says ``valid``."""
    app = make_app(broken_chain(tmp_path, monkeypatch))

    def broken(step=None):
        raise RuntimeError("core bug")

    app.unchecked_manifest = OpenRest(app.unchecked_manifest.parsed, broken)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.checks_failed)
        await wait_for_workers(app)
        await pilot.pause()
        bar = info(app)
        assert "checks incomplete" in bar and "valid" not in bar


def test_a_small_manifest_is_checked_whole_before_its_first_screen(tmp_path, monkeypatch):
    path = broken_chain(tmp_path, monkeypatch)
    monkeypatch.setattr(background, "DEFER_BYTES", 1 << 20)
    doc, rest = background.open_for_viewer(path)
    try:
        assert [p.where for p in doc.problems] == ["manifest.graph.nodes[33].inputs[0]"]
        assert rest is None or rest.finish is None
    finally:
        doc.close()
