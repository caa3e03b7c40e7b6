"""Pilot tests of the viewer's edit mode (tui/edit/mode.py) and of the rule ids in its panes."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import TextArea

from onemodel_viewer.format.errors import FormatError, Kind
from onemodel_viewer.format.onemodel.overlay import EditSession, OverlayStorage
from onemodel_viewer.format.spec_rules import rule_of
from onemodel_viewer.tui.app import make_app
from onemodel_viewer.tui.widgets.detail_pane import DetailPane
from onemodel_viewer.tui.edit.screens import EditListScreen, JsonEditor
from onemodel_viewer.tui.hex.hex_view import HexView
from onemodel_viewer.tui.screens.problems import ProblemsScreen
from onemodel_viewer.tui.widgets.prompt import Prompt
from onemodel_viewer.tui.widgets.structure_tree import StructureTree
from conftest import Viewer, identity_chain, settle_located, slow_facts  # noqa: E402 - the shared Pilot set-up

ROOT = Path(__file__).resolve().parent.parent
SHOWCASE = ROOT / "testdata" / "valid" / "showcase.onemodel"
HOSTILE = ROOT / "testdata" / "hostile"
SIZE = (120, 40)


settle = Viewer.settle  # the shared set-up (tests/conftest.py)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def model(tmp_path) -> Path:
    """A private copy of the showcase model (the tests check it is never written)."""
    if not SHOWCASE.exists():
        pytest.skip("showcase.onemodel not generated yet")
    p = tmp_path / "model.onemodel"
    shutil.copyfile(SHOWCASE, p)
    return p


def problem_keys(doc) -> set:
    return {(p.kind, p.where) for p in doc.problems}


async def type_into_prompt(pilot, text: str) -> None:
    assert isinstance(pilot.app.screen, Prompt)
    inp = pilot.app.screen.query_one("#prompt-input")
    inp.value = text
    await pilot.press("enter")
    await settle(pilot)


def tree_labels(app) -> list[str]:
    tree = app.query_one(StructureTree)
    group = next(e for e in tree.roots if e.key == "problems")
    node = tree.node_for(group)
    tree.populate(node)
    return [c.label.plain for c in node.children]


# ---------------------------------------------------------------------------------------------
# edits through the keys


async def test_edit_header_field_marks_problem_and_undo_redo(model):
    before = digest(model)
    app = make_app(str(model))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not app.document.problems
        app.reveal("header.flags")
        await settle(pilot)
        assert app.current.kind == "header"
        await pilot.press("E")
        await pilot.pause()
        assert app.screen.query_one("#prompt-input").value == "0"  # the decoded value
        await type_into_prompt(pilot, "1")
        assert problem_keys(app.document) == {(Kind.UNSUPPORTED, "header.flags")}
        assert app.edit_session.edit_list() == ["header.flags=1"]
        assert [p.where for p in app.edit_change["appeared"]] == ["header.flags"]
        labels = tree_labels(app)
        assert labels[0].startswith("+ Unsupported header.flags")
        assert "EDITED 1 edit +1 -0 problems" in app.query_one("#infobar").render().plain
        assert app.current.where == "header.flags"  # the selection is kept
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert not app.document.problems
        assert [p.where for p in app.edit_change["disappeared"]] == ["header.flags"]
        assert any(lab.startswith("- gone: Unsupported header.flags") for lab in tree_labels(app))
        # fitted to a narrow tree, the gone problem keeps its kind and the start of its where (it was
        # one dim run, cut whole: "- gone: …")
        from onemodel_viewer.tui.widgets.safe import fit_text

        tree = app.query_one(StructureTree)
        group = tree.node_for(next(e for e in tree.roots if e.key == "problems"))
        gone = next(c.label for c in group.children if c.label.plain.startswith("- gone"))
        assert fit_text(gone, 34).plain.startswith("- gone: Unsupported header.f")
        await pilot.press("ctrl+y")
        await settle(pilot)
        assert problem_keys(app.document) == {(Kind.UNSUPPORTED, "header.flags")}
    assert digest(model) == before


async def test_edit_manifest_value_validated_as_json(model):
    before = digest(model)
    app = make_app(str(model))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        node = app.document.model.graph.nodes[1]
        app.reveal(node.where)
        await settle(pilot)
        # a value inside the node: the node's first input name
        target = f"{node.where}.inputs[0]"
        app.current = type(app.current)("value", app.current.label, where=target)
        await pilot.press("E")
        await pilot.pause()
        assert isinstance(app.screen, JsonEditor)
        area = app.screen.query_one(TextArea)
        assert area.text.startswith('"')  # the JSON text of the value as the file has it
        area.text = '"no such value'  # not JSON: refused, the editor stays
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, JsonEditor)
        assert "not JSON" in str(app.screen.query_one("#json-error").render())
        area.text = '"no such value"'
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not isinstance(app.screen, JsonEditor)
        assert app.edit_session.edit_list() == [f'{target}="no such value"']
        assert (Kind.INVALID_MODEL, target) in problem_keys(app.document)
        assert [p.where for p in app.edit_change["appeared"]] == [target]
    assert digest(model) == before


async def test_edit_bytes_in_hex_pane(model):
    """The debounced manifest look-up of the first selection moved the hex cursor to the manifest after
    the test put it on byte 0 (under load, CI): the look-up is waited for first."""
    before = digest(model)
    app = make_app(str(model))
    async with app.run_test(size=SIZE) as pilot:
        await settle_located(pilot)
        hexv = app.query_one(HexView)
        hexv.focus()
        hexv.goto(0)
        await pilot.pause()
        await pilot.press("E")
        await pilot.pause()
        assert app.screen.query_one("#prompt-input").value == "4f 4e 45 4d 4f 44 45 4c"  # ONEMODEL
        await type_into_prompt(pilot, "58")
        assert app.edit_session.edit_list() == ["bytes@0x0=58"]
        assert (Kind.MALFORMED, "header.magic") in problem_keys(app.document)
        assert app.query_one(HexView).storage.read(0, 8) == b"XNEMODEL"  # the hex pane shows the overlay
        assert app.query_one(HexView).has_focus
    assert digest(model) == before


async def test_bad_edit_is_refused_and_nothing_changes(model):
    app = make_app(str(model))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        doc = app.document
        assert app.apply_edit("manifest.graph.nodes[999999].name=\"x\"")  # parses; cannot be applied
        await settle(pilot)
        assert app.document is doc and app.edit_session.edits == [] and not app.edit_pending
        assert app.apply_edit("manifest.graph.nodes[0].name=x") is False  # not JSON: refused at once
        assert app.edit_session.edits == []


async def test_edit_list_matches_patch_and_save_as(model, tmp_path):
    before = digest(model)
    app = make_app(str(model))
    edits = ['manifest.graph.nodes[0].name="renamed"', "header.reserved=7", "bytes@0x41=20"]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for e in edits:
            assert app.apply_edit(e)
            await settle(pilot)
        await pilot.press("L")
        await pilot.pause()
        assert isinstance(app.screen, EditListScreen)
        assert app.screen.edits == edits
        assert app.screen.command.startswith("onemodel-view --patch ")
        await pilot.press("escape")
        await pilot.pause()
        # save-as refuses the input file under its own name, a symlink and a hard link
        link, hard = tmp_path / "link.onemodel", tmp_path / "hard.onemodel"
        os.symlink(model, link)
        os.link(model, hard)
        for name in (str(model), str(link), str(hard)):
            await pilot.press("S")
            await pilot.pause()
            await type_into_prompt(pilot, name)
            assert digest(model) == before
        assert os.path.islink(link)
        out = tmp_path / "out.onemodel"
        await pilot.press("S")
        await pilot.pause()
        await type_into_prompt(pilot, str(out))
        await settle(pilot)
    assert digest(model) == before
    patched = tmp_path / "patched.onemodel"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "onemodel_viewer", "--patch", str(model), str(patched), *edits],
                       capture_output=True, env=env)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == patched.read_bytes()
    assert digest(model) == before


async def test_problems_screen_marks_appeared_and_gone(tmp_path):
    src = HOSTILE / "InvalidModel-cycle-self.onemodel"
    model = tmp_path / "m.onemodel"
    shutil.copyfile(src, model)
    app = make_app(str(model))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        first = app.document.problems[0]
        assert first.where == "manifest.graph.nodes[4]"
        assert app.apply_edit('manifest.graph.nodes[4]=null')  # the node of the cycle goes...
        assert app.apply_edit("header.flags=1")  # ...and a header problem comes (the last edit wins the race)
        await settle(pilot)
        assert problem_keys(app.document) == {(Kind.UNSUPPORTED, "header.flags")}
        await pilot.press("p")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ProblemsScreen)
        kinds = [str(screen.query_one("#problems-table").get_row_at(i)[0]) for i in range(len(screen.records))]
        assert kinds[:2] == ["+ Unsupported", "- InvalidModel"]
        assert [p.where for p in screen.gone] == [first.where]


async def test_edit_in_a_big_graph_keeps_selection_and_renders_only_visible_labels(tmp_path, monkeypatch):
    """Regression: after an edit's re-read, putting the selection back on a node in a group of 1,000
    rendered every label of the group to measure the tree's width (~100 ms of the UI thread on the
    10,000-node model); now only the rows on screen are rendered, and the labels still fit the pane."""
    from onemodel_viewer.format.schema import Graph, Model, Node, OperatorSet, Type, ValueInfo
    from onemodel_viewer.format.onemodel.writer import write

    n = 2500
    nodes = tuple(Node("Identity", f"n{i}", inputs=(f"v{i}",), outputs=(f"v{i + 1}",)) for i in range(n))
    t = Type("tensor", elem=1, shape=(1,))
    g = Graph("chain", inputs=(ValueInfo("v0", t),), outputs=(ValueInfo(f"v{n}", t),), nodes=nodes)
    path = tmp_path / "chain.onemodel"
    write(Model(ir_version=8, graph=g, opsets=(OperatorSet("", 17),)), path)
    rendered = []
    real = StructureTree.render_label

    def counting(self, node, base_style, style):
        rendered.append(node)
        return real(self, node, base_style, style)

    monkeypatch.setattr(StructureTree, "render_label", counting)
    app = make_app(str(path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        where = "manifest.graph.nodes[1500]"
        app.reveal(where)
        await settle(pilot)
        tree = app.query_one(StructureTree)
        rendered.clear()
        assert app.apply_edit(f'{where}.inputs[0]="undefined-x"')
        await settle(pilot)
        await pilot.pause()
        assert any(p.where.startswith(where) for p in app.document.problems)
        entry = tree.cursor_node.data
        assert entry.kind == "node" and entry.where == where and entry.obj.name == "n1500"
        assert entry.obj is app.document.model.graph.nodes[1500]  # the re-read document's record
        assert len(tree.cursor_node.parent.children) == 1000  # its group was built again
        assert len({id(x) for x in rendered}) < 200  # the rows on screen (a few frames), not the group
        assert tree.virtual_size.width <= tree.size.width  # the labels still fitted: no sideways scrolling


async def test_selection_comes_back_after_the_facts_of_the_reread_graph(tmp_path, monkeypatch):
    """Regression: the selection was put back right after the first frame of the re-read document, and
    rebuilding the selected node's group computed the graph's facts on the UI thread (or waited there for
    the background job's). Now it comes back once they are known (computed off the UI thread)."""
    import threading
    import time

    from onemodel_viewer.analysis.facts import Facts
    from onemodel_viewer.format.schema import Graph, Model, Node, OperatorSet, Type, ValueInfo
    from onemodel_viewer.format.onemodel.writer import write

    n = 1200
    nodes = tuple(Node("Identity", f"n{i}", inputs=(f"v{i}",), outputs=(f"v{i + 1}",)) for i in range(n))
    t = Type("tensor", elem=1, shape=(1,))
    g = Graph("chain", inputs=(ValueInfo("v0", t),), outputs=(ValueInfo(f"v{n}", t),), nodes=nodes)
    path = tmp_path / "chain.onemodel"
    write(Model(ir_version=8, graph=g, opsets=(OperatorSet("", 17),)), path)
    computed_on = []
    real = Facts._compute

    def slow(self, graph, *args):
        computed_on.append(threading.current_thread() is threading.main_thread())
        time.sleep(0.3)  # a big graph's facts: long enough for the first frame to pass
        return real(self, graph, *args)

    monkeypatch.setattr(Facts, "_compute", slow)
    app = make_app(str(path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        where = "manifest.graph.nodes[1100]"
        app.reveal(where)
        await settle(pilot)
        restored = []
        real_restore = app._restore_selection

        def restore(*args):
            restored.append(app.facts.known(app.document.model.graph) is not None)
            real_restore(*args)

        app._restore_selection = restore
        computed_on.clear()
        assert app.apply_edit(f'{where}.inputs[0]="undefined-x"')
        await settle(pilot)
        await pilot.pause()
        assert restored == [True]
        assert computed_on and not any(computed_on)  # the re-read graph's facts, never on the UI thread
        tree = app.query_one(StructureTree)
        assert tree.cursor_node.data.where == where
        assert tree.cursor_node.data.obj is app.document.model.graph.nodes[1100]


async def _until(pilot, done, seconds: float = 20.0) -> None:
    """Pause until ``done()`` (a state, never a count of pauses); fail after ``seconds``."""
    import time

    end = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < end, "state not reached"
        await pilot.pause(0.01)


async def test_reread_never_builds_the_documents_repr_or_group_labels_on_the_ui_thread(tmp_path, monkeypatch):
    """Regression: the worker that waits for the re-read graph's facts took the document as an argument,
    and Textual described the worker with the repr of its arguments: the whole model (every node record
    built, ~100 ms on the UI thread at 10,000 nodes). And the 1,000 labels of the re-revealed node's group
    were made on the UI thread (~20 ms); they are now made in that worker, the UI thread only adds rows."""
    import threading

    from onemodel_viewer.format.schema import NodeList
    from onemodel_viewer.tui.widgets import entries

    path = identity_chain(tmp_path, 2500)
    on_ui = {"repr": 0, "labels": 0, "labels_off": 0}
    real_repr, real_label = NodeList.__repr__, entries.node_label

    def counting_repr(self):
        on_ui["repr"] += threading.current_thread() is threading.main_thread()
        return real_repr(self)

    def counting_label(n, types=None):
        on_ui["labels" if threading.current_thread() is threading.main_thread() else "labels_off"] += 1
        return real_label(n, types)

    monkeypatch.setattr(NodeList, "__repr__", counting_repr)
    monkeypatch.setattr(entries, "node_label", counting_label)
    app = make_app(str(path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        where = "manifest.graph.nodes[1500]"
        app.reveal(where)
        await settle(pilot)
        assert isinstance(app.document.model.graph.nodes, NodeList)  # what the repr would walk
        for k in on_ui:
            on_ui[k] = 0
        assert app.apply_edit(f'{where}.inputs[0]="undefined-x"')
        await _until(pilot, lambda: not app.edit_pending and not app.edit_restoring)
        await settle(pilot)
        tree = app.query_one(StructureTree)
        assert tree.cursor_node.data.where == where
        assert len(tree.cursor_node.parent.children) == 1000  # the group was built again...
        assert on_ui == {"repr": 0, "labels": 0, "labels_off": 1000}  # ...its labels off the UI thread


@contextlib.asynccontextmanager
async def _far_node_edited(tmp_path, monkeypatch):
    """(app, pilot, where) on a 1,200-node chain with slow facts, once ``where`` (node 1100, selected) had an
    input renamed to an undefined one and the re-read's verdict is shown."""
    path = identity_chain(tmp_path, 1200)
    slow_facts(monkeypatch, 0.5)
    app = make_app(str(path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        where = "manifest.graph.nodes[1100]"
        app.reveal(where)
        await settle(pilot)
        assert app.apply_edit(f'{where}.inputs[0]="undefined-x"')
        await _until(pilot, lambda: not app.edit_pending)
        yield app, pilot, where


async def test_selection_not_taken_back_when_the_cursor_moved_before_it_returned(tmp_path, monkeypatch):
    """The selection comes back after the re-read graph's facts are known, up to a second after the
    verdict on a big graph: a cursor the user moved meanwhile stays where it was put."""
    async with _far_node_edited(tmp_path, monkeypatch) as (app, pilot, where):
        assert app.edit_restoring  # the verdict is shown, the selection not back yet
        tree = app.query_one(StructureTree)
        tree.focus()
        await pilot.press("down")
        moved = tree.cursor_node.data
        await _until(pilot, lambda: not app.edit_restoring)
        await settle(pilot)
        assert tree.cursor_node.data.where == moved.where != where  # the row moved to...
        assert tree.cursor_node.data.obj is app.document.model.graph.nodes[1101]  # ...on the re-read document


async def test_selection_comes_back_when_a_newer_edit_lands_before_it_did(tmp_path, monkeypatch):
    """Regression: a second edit's re-read shown before the first one's selection came back dropped
    the selection (the tree stayed on the first problem): it is put back after the second one."""
    async with _far_node_edited(tmp_path, monkeypatch) as (app, pilot, where):
        assert app.edit_restoring and app.current is None  # not the edited node, for now
        assert app.apply_edit("header.flags=1")
        await _until(pilot, lambda: not app.edit_pending and not app.edit_restoring)
        await settle(pilot)
        assert problem_keys(app.document) >= {(Kind.UNSUPPORTED, "header.flags")}
        tree = app.query_one(StructureTree)
        assert tree.cursor_node.data.where == where
        assert tree.cursor_node.data.obj is app.document.model.graph.nodes[1100]


def test_overlay_front_bytes_read_from_memory_after_the_file_changed(model):
    """The edited header and manifest are in memory: reading them needs no look at the file (a stat
    per hex-pane row, each a GIL hand-over to a busy worker on the UI thread); the data region's bytes
    still come from the file, and a file changed on disk is still refused there."""
    s = EditSession(str(model))
    s.apply("header.reserved=7")
    st = s.storage()
    front = st.read(0, 64)
    stamp = os.stat(model)
    with open(model, "r+b") as f:  # changed on disk: the data region is no longer what was opened
        f.seek(stamp.st_size - 1)
        f.write(b"\x01" if f.read(1) != b"\x01" else b"\x02")
    os.utime(model, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 10**9))
    assert st.read(0, 64) == front  # from memory
    with pytest.raises(FormatError) as e:
        st.read(st.size - 1, 1)  # from the file
    assert e.value.kind == Kind.IO
    s.close()


def test_overlay_reads_match_the_written_file(model, tmp_path):
    """The overlay's bytes (the reader's and the hex pane's view) are the bytes save-as writes."""
    s = EditSession(str(model))
    s.apply('manifest.graph.doc="a longer doc string than before, so the data region moves by 64"')
    s.apply(f"bytes@{s.image.size - 2}=ff")  # a patch over the data region (the last tensor's bytes)
    st = s.storage()
    assert isinstance(st, OverlayStorage)
    out = tmp_path / "o.onemodel"
    s.save_as(str(out))
    data = out.read_bytes()
    assert st.size == len(data)
    assert st.read(0, st.size) == data
    for off, n in ((0, 64), (len(st.front) - 3, 10), (len(data) - 5, 5)):
        assert st.read(off, n) == data[off:off + n]
        assert bytes(st.view(off, n)) == data[off:off + n]
    doc = s.document()
    assert not doc.problems
    for t in doc.model.graph.initializers:
        if t.length and t.file_offset is not None and not t.is_string:
            assert bytes(t.raw()) == data[t.file_offset:t.file_offset + t.length]
    assert data[-2] == 0xFF
    s.close()


# ---------------------------------------------------------------------------------------------
# rule ids in the panes


async def test_rule_in_detail_and_problems_panes():
    """The problems and detail panes name the rule as --check does (section and id)."""
    path = HOSTILE / "InvalidModel-cycle-self.onemodel"
    app = make_app(str(path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        prob = app.document.problems[0]
        rule = rule_of(prob)
        assert rule is not None
        lines = app.query_one(DetailPane).plain_lines()  # the first problem is shown at open
        assert any(ln.startswith("rule") and rule.label() in ln for ln in lines), lines
        await pilot.press("p")
        await pilot.pause()
        row = app.screen.query_one("#problems-table").get_row_at(0)
        assert f"rule: {rule.label()}" in row[3].plain


# ---------------------------------------------------------------------------------------------
# snapshots


def test_snapshot_after_an_edit(snap_compare):
    """120x40: header.flags edited; the problem marked + in the tree, the info bar counts it."""
    async def run_before(pilot):
        await settle(pilot)
        pilot.app.reveal("header.flags")
        await settle(pilot)
        pilot.app.apply_edit("header.flags=1")
        await settle(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(make_app(str(SHOWCASE)), terminal_size=(120, 40), run_before=run_before)


def test_snapshot_json_editor_80x24(snap_compare):
    """80x24: the JSON editor on a node's first input, with a value that does not parse."""
    async def run_before(pilot):
        await settle(pilot)
        app = pilot.app
        node = app.document.model.graph.nodes[1]
        hexv = app.query_one(HexView)
        before = hexv.cursor
        app.reveal(node.where)
        # the hex pane moves to the node's manifest text when the locate thread answers: wait for
        # that, or the selection set below cancels the look-up and the pane stays at the header
        for _ in range(200):
            await settle(pilot)
            if hexv.cursor != before:
                break
            await pilot.pause(0.02)
        app.current = type(app.current)("value", app.current.label, where=f"{node.where}.inputs[0]")
        await pilot.press("E")
        await settle(pilot)
        app.screen.query_one(TextArea).text = '"unterminated'
        await pilot.pause()

    assert snap_compare(make_app(str(SHOWCASE)), terminal_size=(80, 24), run_before=run_before)


async def test_background_job_steps_aside_for_the_frames_after_a_re_read(tmp_path, monkeypatch):
    """Regression: the frames drawing the re-read document and the selection put back (the whole
    tree, detail and hex panes) shared the interpreter with the new document's background job, which
    doubled their wall time; the job now waits at its next step while each is drawn."""
    from onemodel_viewer.tui.edit.mode import FRAME_HOLD, REREAD_HOLD

    held = []
    real = make_app.__globals__["OneModelApp"].hold_background

    def hold(self, seconds):
        held.append(seconds)
        real(self, seconds)

    app = make_app(str(identity_chain(tmp_path, 1200)))
    monkeypatch.setattr(type(app), "hold_background", hold)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        where = "manifest.graph.nodes[1100]"
        app.reveal(where)
        await settle(pilot)
        held.clear()
        assert app.apply_edit(f'{where}.inputs[0]="undefined-x"')
        await _until(pilot, lambda: not app.edit_pending and not app.edit_restoring)
        await settle(pilot)
        assert held == [REREAD_HOLD, FRAME_HOLD, FRAME_HOLD]  # the re-read, then it shown, then the selection put back
        assert app.query_one(StructureTree).cursor_node.data.where == where
