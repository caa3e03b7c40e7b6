"""The viewer's diff mode on hostile files (opened in diagnose mode): one file of each kind of trouble.

The tensor whose bytes cannot be read is marked ``?`` with the file's problem (exact kind, ``where``,
offset) in the detail pane, the verdict line says it is over the sound parts, ``p`` lists both files'
problems; a file without any model leaves the error in the status line and ``p`` still works.
The library and CLI sides, over the whole corpus: tests/test_diff_hostile.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from onemodel_viewer import format as omf
from onemodel_viewer.tui.widgets.detail_pane import DetailPane
from onemodel_viewer.tui.diff.app import make_diff_app
from onemodel_viewer.tui.diff.tree import DiffTree
from onemodel_viewer.tui.screens.problems import ProblemsScreen

from conftest import wait_for_workers  # noqa: E402 - the shared Pilot helpers

HOSTILE = Path(__file__).resolve().parent.parent / "testdata" / "hostile"
BASE = HOSTILE / "valid-base.onemodel"

CASES = [
    # (A, B, the not-compared tensor's entry, its problem in A: kind, where, offset)
    ("Unsupported-count-2pow60.onemodel", "Unsupported-count-2pow60.onemodel", 'graph.initializers["b"]',
     ("Unsupported", "manifest.graph.initializers[1].dims", 819)),
    ("Malformed-range-offset-past-data.onemodel", "valid-base.onemodel", 'graph.initializers["w"]',
     # the manifest's `data` object claiming bytes past the file (it was data_offset + the claim: 4352, past the end)
     ("Malformed", "manifest.graph.initializers[0].data", 764)),
    ("Malformed-type-graph-attr-array.onemodel", "valid-base.onemodel", None, None),
    ("Malformed-magic-bad.onemodel", "valid-base.onemodel", None, None),
]


async def _until(pilot, cond, what: str) -> None:
    for _ in range(500):  # bounded: 500 UI turns
        if cond():
            return
        await pilot.pause()
    raise AssertionError(f"never: {what}")


@pytest.mark.parametrize("a,b,entry,problem", CASES, ids=[c[0].removesuffix(".onemodel") for c in CASES])
async def test_diff_viewer_on_hostile_files(a, b, entry, problem):
    pa, pb = HOSTILE / a, HOSTILE / b
    want = omf.open(str(pa), mode="diagnose").problems[0]
    app = make_diff_app(str(pa), str(pb))
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: app._phase == "done" or app.error is not None, "the diff finished")
        await wait_for_workers(app)
        await pilot.pause()
        status = app.query_one("#status").render()
        status = status.plain if hasattr(status, "plain") else str(status)
        if app.result is None:  # no model in A: the error names the file and its first problem
            assert f"{want.kind.value} at {want.where}" in app.error and a in app.error
        else:
            assert app.error is None
            assert "over the sound parts only" in status and "A 1 problem" in status
            if entry is not None:
                node = next(n for n in app.result.root.walk() if n.where == entry)
                assert node.not_compared is not None
                got = node.not_compared.a
                assert (got.kind.value, got.where, got.offset) == problem
                tree = app.query_one(DiffTree)
                # nothing else differs: the first selection is that entry
                await _until(pilot, lambda: app.current_entry is node, "the entry shown")
                assert tree.cursor_node.data is node and tree.cursor_node.label.plain.startswith("? ")
                lines = app.query_one(DetailPane).plain_lines()
                assert lines[0].startswith("? not compared")
                kind, where, offset = problem
                assert any(f"A  {kind} at {where} (offset {offset})" in line for line in lines)
                await pilot.press("f")  # only the differences: the entry stays, n comes back to it
                await _until(pilot, lambda: tree.only_differences, "only differences")
                assert tree.reveal(node)
                await pilot.press("n")
                await _until(pilot, lambda: tree.cursor_node is not None and tree.cursor_node.data is node, "n")
        await pilot.press("p")
        await _until(pilot, lambda: isinstance(app.screen, ProblemsScreen), "the problems screen")
        screen = app.screen
        docs = app.docs
        assert len(docs) == 2
        assert screen.records[: len(docs[0].problems) + len(docs[1].problems)] == [*docs[0].problems, *docs[1].problems]
        assert screen.records[0] == want
        assert screen.files[0] == "A"
        assert ("B" in screen.files) is bool(docs[1].problems or docs[1].findings)
