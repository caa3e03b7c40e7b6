"""What the viewer shows while a big manifest's deferred checks have not run (tui/background.py
``open_for_viewer``): an edit's marks, the problems and layout screens, the tree's node order."""

from __future__ import annotations

import threading

from onemodel_viewer.format import reader
from onemodel_viewer.tui import background
from onemodel_viewer.tui.app import make_app

from conftest import held_checks, wait_for_workers  # noqa: E402 - the shared Pilot helpers
from test_reader_lazy import _chain_model
from test_reader_util import pack, write
from test_tui_deferred import SIZE, broken_chain, group, info, until

EDIT = 'manifest.graph.nodes[10].inputs[0]="undefined-x"'


def wheres(problems) -> list[str]:
    return [p.where for p in problems]


async def test_an_edit_before_the_checks_end_marks_only_its_own_problem(tmp_path, monkeypatch):
    """Regression: an edit made while the shown document's deferred checks had not run compared the
    re-read's whole verdict with the problems known so far: the problem the checks were about to find
    (node 33's undefined input) was marked as appeared with the edit's own. The comparison now waits
    (off the UI thread) for those checks."""
    reread = threading.Event()
    real_open = reader.open_storage

    def reading(*args, **kwargs):
        try:
            return real_open(*args, **kwargs)
        finally:
            reread.set()

    monkeypatch.setattr(reader, "open_storage", reading)
    async with held_checks(monkeypatch, broken_chain(tmp_path, monkeypatch), SIZE) as (app, pilot, go):
        assert app.checks_pending and app.document.problems == []
        assert app.apply_edit(EDIT)
        await until(pilot, reread.is_set)
        await pilot.pause(0.1)
        assert app.edit_pending  # the verdict waits for the checks
        go.set()
        await until(pilot, lambda: not app.edit_pending)
        await wait_for_workers(app)
        change = app.edit_change
        assert wheres(change["appeared"]) == ["manifest.graph.nodes[10].inputs[0]"]
        assert change["disappeared"] == []
        assert wheres(app.document.problems) == ["manifest.graph.nodes[10].inputs[0]",
                                                 "manifest.graph.nodes[33].inputs[0]"]
        marks = app.problem_marks()
        assert {w for _, w in marks["appeared"]} == {"manifest.graph.nodes[10].inputs[0]"}
        assert marks["gone"] == []
        assert "+1 -0" in group(app, "problems") and "+1 -0 problems" in info(app)


def title(screen, css: str) -> str:
    from textual.widgets import Static

    return str(screen.query_one(css, Static).render())


async def test_the_problems_screen_opened_before_the_checks_end_says_so_and_gets_the_complete_list(tmp_path, monkeypatch):
    """Regression: ``p`` pressed while the deferred checks ran listed the problems known so far as if they
    were all ("0 problems", "the file is valid"), and kept that list once the checks had found more."""
    from onemodel_viewer.tui.screens.problems import ProblemsScreen

    async with held_checks(monkeypatch, broken_chain(tmp_path, monkeypatch), SIZE) as (app, pilot, go):
        await pilot.press("p")
        await until(pilot, lambda: isinstance(app.screen, ProblemsScreen))
        screen = app.screen
        head = title(screen, "#problems-title")
        assert "0 problems" in head and "checking…" in head
        assert screen.records == [] and "valid" not in str(screen.query_one("DataTable").get_row_at(0))
        go.set()
        await until(pilot, lambda: not app.checks_pending)
        assert app.screen is screen
        assert wheres(screen.records) == ["manifest.graph.nodes[33].inputs[0]"]
        head = title(screen, "#problems-title")
        assert "1 problem," in head and "checking" not in head
        assert screen.query_one("DataTable").row_count == 1


async def test_the_layout_screen_opened_before_the_checks_end_says_so_and_is_computed_again(tmp_path, monkeypatch):
    """Regression: ``l`` pressed while the deferred checks ran listed the extents without the tensors of
    the nodes not checked yet (node 22's ``c``, sharing ``w``'s bytes) and did not say so, and kept them."""
    from onemodel_viewer.tui.screens.layout import LayoutScreen

    async with held_checks(monkeypatch, broken_chain(tmp_path, monkeypatch), SIZE) as (app, pilot, go):
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, LayoutScreen) and app.screen.extents is not None)
        screen = app.screen
        assert "checking…" in title(screen, "#layout-title")
        assert [(r.kind, r.name) for r in screen.extents][-1] == ("tensor", "w")
        go.set()
        await until(pilot, lambda: not app.checks_pending and screen.extents is not None)
        assert app.screen is screen
        assert [(r.kind, r.name) for r in screen.extents][-1] == ("overlap", "c, w")  # c shares w's bytes
        assert "checking" not in title(screen, "#layout-title")


def node_rows(app) -> list[tuple[str, str]]:
    """(where, label) of the rows of the open main-graph nodes group, top to bottom."""
    from onemodel_viewer.tui.widgets.structure_tree import StructureTree

    tree = app.query_one(StructureTree)
    row = tree.node_for(app.reveal("manifest.graph.nodes[5]")).parent
    return [(c.data.where, c.label.plain) for c in row.children]


async def test_a_nodes_group_opened_before_the_reading_rules_lists_what_a_checked_open_lists(tmp_path, monkeypatch):
    """The tree lists a graph's nodes in stored order (as the file has them), never in the reading rules'
    dependency order (``graph.order``, known only once the deferred checks have run): a group opened
    before the rules ran, and the same group after, have the rows of a viewer whose open checked the
    file whole, though this file's resolved order is not its stored order."""
    monkeypatch.setattr(reader, "BULK_NODES", 32)
    monkeypatch.setattr(background, "DEFER_BYTES", 0)
    m = _chain_model()
    nodes = m["graph"]["nodes"]
    nodes[3], nodes[4] = nodes[4], nodes[3]  # n4 stored before n3, which makes what it reads
    path = str(write(tmp_path, pack(m, b"\0" * 8), "swapped.onemodel"))
    async with held_checks(monkeypatch, path, SIZE) as (app, pilot, go):
        assert app.document.model.graph.order is None
        before = node_rows(app)
        go.set()
        await until(pilot, lambda: not app.checks_pending)
        await wait_for_workers(app)
        order = app.document.model.graph.order
        assert order is not None and list(order) != sorted(order)
        after = node_rows(app)
        await pilot.pause()
    monkeypatch.setattr(background, "DEFER_BYTES", 1 << 30)  # checked whole before the first screen
    checked = make_app(path)
    async with checked.run_test(size=SIZE) as pilot:
        await wait_for_workers(checked)
        await pilot.pause()
        whole = node_rows(checked)
        await pilot.pause()  # the row's highlight answered before the app ends
    assert [w for w, _ in before] == [w for w, _ in after] == [w for w, _ in whole]
    assert [w for w, _ in whole] == [f"manifest.graph.nodes[{i}]" for i in range(40)]
    assert after == whole
