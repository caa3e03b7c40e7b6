"""What the viewer shows while a big manifest's deferred checks have not run (tui/background.py
``open_for_viewer``): an edit's marks, the problems and layout screens, the tree's node order."""

from __future__ import annotations

import threading

from onemodel_viewer.format import reader
from onemodel_viewer.tui.app import make_app

from conftest import wait_for_workers  # noqa: E402 - the shared Pilot helpers
from test_tui_deferred import SIZE, broken_chain, group, hold_checks, info, until

EDIT = 'manifest.graph.nodes[10].inputs[0]="undefined-x"'


def wheres(problems) -> list[str]:
    return [p.where for p in problems]


async def test_an_edit_before_the_checks_end_marks_only_its_own_problem(tmp_path, monkeypatch):
    """Regression: an edit made while the shown document's deferred checks had not run compared the
    re-read's whole verdict with the problems known so far: the problem the checks were about to find
    (node 33's undefined input) was marked as appeared with the edit's own. The comparison now waits
    (off the UI thread) for those checks."""
    reached, go = hold_checks(monkeypatch)
    reread = threading.Event()
    real_open = reader.open_storage

    def reading(*args, **kwargs):
        try:
            return real_open(*args, **kwargs)
        finally:
            reread.set()

    monkeypatch.setattr(reader, "open_storage", reading)
    app = make_app(broken_chain(tmp_path, monkeypatch))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, reached.is_set)
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
    finally:
        go.set()
