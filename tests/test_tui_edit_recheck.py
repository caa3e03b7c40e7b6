"""Pilot tests of an edit's re-check in the viewer (tui/edit/mode.py): what runs beside the re-read."""

from __future__ import annotations

import gc
import time

from conftest import Viewer, identity_chain, slow_facts, until

from onemodel_viewer.format import reader
from onemodel_viewer.tui.app import make_app

SIZE = (120, 40)
settle = Viewer.settle


async def test_the_shown_documents_job_waits_while_the_edited_file_is_read_again(tmp_path, monkeypatch):
    """Regression: the background job of the document shown shared the interpreter with the edit's
    re-read (its results are for a document about to be replaced): some re-checks of the 10,000-node
    model took twice as long (0.47-0.87 s instead of ~0.25). It now waits at its next step until the
    re-read document is shown."""
    held_during = []
    real_open = reader.open_storage

    def reading(*args, **kwargs):
        app = pilot.app
        held_during.append(app._background_cancel.input_until > time.monotonic())
        return real_open(*args, **kwargs)

    monkeypatch.setattr(reader, "open_storage", reading)
    app = make_app(str(identity_chain(tmp_path, 50)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.apply_edit('manifest.graph.nodes[10].inputs[0]="undefined-x"')
        await until(pilot, lambda: not app.edit_pending)
        await settle(pilot)
        assert held_during == [True]
        assert any(p.where.startswith("manifest.graph.nodes[10]") for p in app.document.problems)


async def test_nothing_is_drawn_while_the_edited_file_is_read_again(tmp_path, monkeypatch):
    """Regression: the re-read started at once, and the frame saying "re-checking…" and the toast saying
    what the edit did were drawn while it ran: sharing the interpreter with it took each such frame
    45-90 ms of wall time instead of ~15 (10,000 nodes), the UI's longest block. The re-read now starts
    once that frame is drawn, with the UI thread favoured (a 1 ms switch interval), and the toast comes
    with the verdict."""
    import sys

    from onemodel_viewer.tui.widgets.info_bar import InfoBar

    seen = []
    real_open = reader.open_storage

    def reading(*args, **kwargs):
        bar = pilot.app.query_one("#infobar", InfoBar)
        seen.append(("re-read", sys.getswitchinterval(), "re-checking" in bar.fitted(120).plain))
        return real_open(*args, **kwargs)

    monkeypatch.setattr(reader, "open_storage", reading)
    app = make_app(str(identity_chain(tmp_path, 50)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        real_notify = app.notify
        monkeypatch.setattr(app, "notify", lambda message, **kw: seen.append(("told", str(message))) or
                            real_notify(message, **kw))
        assert sys.getswitchinterval() == 0.005  # the first job has ended
        assert app.apply_edit('manifest.graph.nodes[10].inputs[0]="undefined-x"')
        assert seen == []  # not yet: after the frame
        await until(pilot, lambda: not app.edit_pending)
        assert seen[0] == ("re-read", 0.001, True)
        assert seen[1][0] == "told" and seen[1][1].startswith("edit 1: manifest.graph.nodes[10].inputs[0]")
        await until(pilot, lambda: not app.background_running)
        assert sys.getswitchinterval() == 0.005  # the re-read document's job ended: the default again
        app.action_undo_edit()
        await until(pilot, lambda: not app.edit_pending)
        assert seen[2] == ("re-read", 0.001, True) and seen[3][1].startswith("undone: ")


async def test_the_gc_stays_off_until_the_re_read_is_shown_when_the_job_ends_meanwhile(tmp_path, monkeypatch):
    """Regression: the shown document's background job ending while an edit was read again turned the
    GC back on; collections over the re-read's new records then ran in its thread (a 24 ms one seen, holding the
    interpreter, the UI waiting). It stays off until the re-read document's own job ends."""
    real_open = reader.open_storage
    enabled = []

    def reading(*args, **kwargs):
        app = pilot.app
        app.call_from_thread(app._background_ended, app._background_cancel)  # the job ends meanwhile
        enabled.append(gc.isenabled())
        return real_open(*args, **kwargs)

    monkeypatch.setattr(reader, "open_storage", reading)
    app = make_app(str(identity_chain(tmp_path, 50)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.background_gc_held = True  # as run_viewer leaves it: the GC off until the job ends
        assert app.apply_edit('manifest.graph.nodes[10].inputs[0]="undefined-x"')
        await until(pilot, lambda: not app.edit_pending)
        assert enabled == [False]
        await until(pilot, lambda: not app.background_gc_held)  # the re-read document's job ended
        assert gc.isenabled()


def shown_rows(app) -> list[tuple]:
    """Every row the tree shows but the problems group's (it carries the edit's marks): depth, label with
    its styles, record, expandable, open; each row's entry mapping back to its row."""
    from onemodel_viewer.tui.widgets.structure_tree import StructureTree

    tree = app.query_one(StructureTree)
    out = []

    def walk(node, depth: int) -> None:
        for child in node.children:
            e = child.data
            assert tree.node_for(e) is child
            if e.key == "problems":
                continue
            out.append((depth, child.label.markup, e.kind, e.where, child.allow_expand, child.is_expanded))
            if child.is_expanded:
                walk(child, depth + 1)

    walk(tree.root, 0)
    return out


async def test_the_tree_after_an_edit_has_the_rows_of_a_fresh_build(tmp_path):
    """The tree keeps its rows across an edit's re-read (only changed rows relabelled, rows added and
    removed where records came and went): it must show what a viewer opened on the edited file shows,
    every row on the re-read document's records."""
    from onemodel_viewer.tui.widgets.structure_tree import StructureTree

    path = identity_chain(tmp_path, 2500)
    where = "manifest.graph.nodes[1500]"
    app = make_app(str(path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.reveal(where)
        await settle(pilot)
        before = shown_rows(app)
        assert app.apply_edit(f'{where}.name="renamed"')  # the selected row's label changes
        assert app.apply_edit('manifest.graph.nodes[1501].inputs[0]="undefined-x"')  # a problem appears
        await until(pilot, lambda: not app.edit_pending and not app.edit_restoring)
        await settle(pilot)
        after = shown_rows(app)
        tree = app.query_one(StructureTree)
        nodes = app.document.model.graph.nodes
        assert tree.cursor_node.data.obj is nodes[1500] and nodes[1500].name == "renamed"
        group = tree.cursor_node.parent
        assert [c.data.obj for c in group.children] == [nodes[i] for i in range(1000, 2000)]
        problems = tree.node_for(next(e for e in tree.roots if e.key == "problems"))
        assert len(problems.children) == len(app.document.problems) == 1
        edited = tmp_path / "edited.onemodel"
        app.edit_session.save_as(str(edited))
    assert after != before and any("renamed" in r[1] for r in after)
    fresh = make_app(str(edited))
    async with fresh.run_test(size=SIZE) as pilot:
        await settle(pilot)
        fresh.reveal(where)
        await settle(pilot)
        assert shown_rows(fresh) == after


async def test_the_previous_document_is_closed_off_the_ui_thread_once_no_row_shows_it(tmp_path, monkeypatch):
    """The rows left on the previous read until the graph's facts are known show its records: it stays
    open until they are swapped, then it is closed (its file unmapped: ~17 ms for the 4 GiB benchmark
    model, on the UI thread when the re-read was shown) and freed in a thread."""
    import threading

    from onemodel_viewer.tui.widgets.structure_tree import StructureTree

    slow_facts(monkeypatch, 0.3)
    app = make_app(str(identity_chain(tmp_path, 1200)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.reveal("manifest.graph.nodes[1100]")
        await settle(pilot)
        old, closed = app.document, []
        old_row = app.query_one(StructureTree).cursor_node
        assert old_row.data.obj is old.model.graph.nodes[1100]
        real_close = type(old).close

        def close(doc):
            if doc is old:  # off the UI thread? the selected row on the re-read's record?
                on_ui = threading.current_thread() is threading.main_thread()
                closed.append((on_ui, old_row.data.obj is old.model.graph.nodes[1100]))
            real_close(doc)

        monkeypatch.setattr(type(old), "close", close)
        assert app.apply_edit('manifest.graph.nodes[1100].inputs[0]="undefined-x"')
        await until(pilot, lambda: not app.edit_pending)
        assert app.edit_restoring and not closed  # the verdict shown, rows of ``old`` still in the tree
        await until(pilot, lambda: not app.edit_restoring and closed)
        assert closed == [(False, False)]  # once, off the UI thread, once the rows were swapped


async def test_opening_the_file_anew_before_the_rows_were_swapped_leaves_no_row_waiting(tmp_path, monkeypatch):
    """Regression: ``r`` (open the file anew) pressed after an edit's verdict, before the other rows
    were swapped, left the tree's highlights unshown (the detail pane kept the first selection)."""
    slow_facts(monkeypatch, 0.5)
    app = make_app(str(identity_chain(tmp_path, 1200)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.apply_edit('manifest.graph.nodes[1100].inputs[0]="undefined-x"')
        await until(pilot, lambda: not app.edit_pending)
        assert app.edit_restoring
        await pilot.press("r")
        await until(pilot, lambda: not app.edit_restoring)
        await settle(pilot)
        from onemodel_viewer.tui.widgets.structure_tree import StructureTree

        tree = app.query_one(StructureTree)
        tree.focus()
        await pilot.press("down")
        await until(pilot, lambda: app.current is tree.cursor_node.data)
