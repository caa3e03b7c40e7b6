"""The viewer's background job (tui/background.py): one thread after the first screen, the GC held off
while it runs, nothing that walks the whole model on the UI thread."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

from onemodel_viewer.process import pause_gc
from onemodel_viewer.tui.app import OneModelApp, make_app
from conftest import hold_method, wait_for_workers  # noqa: E402 - the shared Pilot helpers

ROOT = Path(__file__).resolve().parent.parent
SHOWCASE = str(ROOT / "testdata" / "valid" / "showcase.onemodel")
SIZE = (120, 40)


def hold_job(monkeypatch) -> tuple[threading.Event, threading.Event]:
    """Make the background job wait (in its thread) before its search-index step: (reached, go)."""
    return hold_method(monkeypatch, OneModelApp, "_prepare_search")


async def wait_for(event: threading.Event, pilot) -> None:
    for _ in range(300):
        if event.is_set():
            return
        await pilot.pause(0.02)
    raise AssertionError("the background job never got there")


async def test_background_worker_is_not_described_by_its_arguments(monkeypatch):
    """Regression: Textual describes a worker by the repr of its arguments unless given a description;
    the repr of the document walked its whole model on the UI thread (10^6 nodes: every node record
    built, ~9 s with the keys waiting)."""
    reached, go = hold_job(monkeypatch)
    app = make_app(SHOWCASE)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(reached, pilot)
            jobs = [w for w in app.workers if w.group == "background"]
            assert len(jobs) == 1
            assert "Document(" not in jobs[0].description and len(jobs[0].description) < 100
            go.set()
            await wait_for_workers(app)
    finally:
        go.set()


async def test_insight_runs_in_the_background_job_not_a_thread_of_its_own(monkeypatch):
    """The insight (used-by, params, inferred types) is held until the background job runs it: before,
    its thread started with the first detail pane, before the first screen, and took the interpreter
    from the UI thread."""
    reached, go = hold_job(monkeypatch)
    app = make_app(SHOWCASE)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(reached, pilot)
            assert app.insight is not None and app.insight.held
            assert not [w for w in app.workers if w.group == "insight"]
            app.insight.start()  # a request while held: still no thread of its own
            assert not [w for w in app.workers if w.group == "insight"]
            # the job reached the search step: the insight results are there (it ran them first)
            assert app.insight.used_by is not None and app.insight.model_params is not None
            go.set()
            await wait_for_workers(app)
            await pilot.pause()
            assert app._search_index is not None
    finally:
        go.set()


async def test_gc_stays_off_while_the_background_job_runs(monkeypatch):
    """run_viewer opens with the GC off: it stays off until the background job ends, then comes back on.
    Before, it came back on at the first screen and full collections over the job's millions of new
    records held the interpreter 0.4-1.8 s at a time (10^6-node model): the keys waited."""
    reached, go = hold_job(monkeypatch)
    was = gc.isenabled()
    pause_gc()
    app = make_app(SHOWCASE)
    app.resume_gc_after_first_screen = True  # as run_viewer does
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(reached, pilot)
            await pilot.pause()
            assert not gc.isenabled()  # first screen drawn, job running
            go.set()
            await wait_for_workers(app)
            for _ in range(50):
                if gc.isenabled():
                    break
                await pilot.pause(0.02)
            assert gc.isenabled()
    finally:
        go.set()
        gc.unfreeze()
        if was:
            gc.enable()


async def test_gc_back_on_at_the_first_screen_when_there_is_no_job():
    """A file without a model (nothing for a background job): the GC comes back on at the first screen."""
    was = gc.isenabled()
    pause_gc()
    app = make_app(str(ROOT / "testdata" / "hostile" / "Malformed-file-10-bytes.onemodel"))
    app.resume_gc_after_first_screen = True
    try:
        async with app.run_test(size=SIZE) as pilot:
            assert app.document is not None and app.document.model is None
            for _ in range(50):
                if gc.isenabled():
                    break
                await pilot.pause(0.02)
            assert gc.isenabled()
    finally:
        gc.unfreeze()
        if was:
            gc.enable()


def test_the_viewer_process_leaves_without_freeing_the_model(monkeypatch):
    """Once the viewer's app has returned, the process ends with os._exit (as the one-shot commands do):
    the normal interpreter exit freed the whole model first (10^6 nodes: ~1.7 s after the screen's end)."""
    import os
    import sys

    from onemodel_viewer import cli
    from onemodel_viewer.tui import app as app_module

    class Left(Exception):
        pass

    def fake_exit(code):
        raise Left(code)

    monkeypatch.setattr(app_module, "run_viewer", lambda path: 3)
    monkeypatch.setattr(os, "_exit", fake_exit)
    monkeypatch.setattr(cli, "_viewer_returned", False)
    monkeypatch.setattr(sys, "argv", ["onemodel-view", SHOWCASE])
    try:
        cli.entry()
    except Left as e:
        assert e.args == (3,)
    else:
        raise AssertionError("entry() returned")


def test_the_detail_pane_never_waits_for_a_big_graphs_facts(monkeypatch):
    """A big graph's producers/consumers (and operator counts) come from the background job: until they
    are known the detail pane is drawn without them, then again with its links. Before, describing a
    node or the graph computed them on the UI thread or waited for the job (10^6 nodes: seconds)."""
    import onemodel_viewer.format as omf
    from onemodel_viewer.analysis import facts as facts_module
    from onemodel_viewer.analysis.facts import Facts
    from onemodel_viewer.tui.widgets.describe import Describer
    from onemodel_viewer.tui.widgets.entries import EntryFactory

    monkeypatch.setattr(facts_module, "QUICK_NODES", 1)  # every graph counts as big
    with omf.open(SHOWCASE, mode="diagnose") as doc:
        facts = Facts()
        d = Describer(doc, facts)
        factory = EntryFactory(doc, facts)
        g = doc.model.graph
        node = factory.node_entry(g.nodes[1], g)
        graph = factory.graph_entry(g)
        before = [t.plain for t, _ in d.describe(node)]
        links_before = [link for _, link in d.describe(node) if link is not None]
        assert any("being worked out" in x for x in before)
        assert any("being counted" in t.plain for t, _ in d.describe(graph))
        assert facts.quick(g) is None  # nothing was computed for it meanwhile
        facts.of(g)  # what the background job does
        after = [t.plain for t, _ in d.describe(node)]
        links_after = [link for _, link in d.describe(node) if link is not None]
        assert not any("being worked out" in x for x in after)
        assert len(links_after) > len(links_before)
        ops = [t.plain for t, _ in d.describe(graph)]
        assert not any("being counted" in x for x in ops) and any(g.nodes[0].op in x for x in ops)


def test_job_cancel_waits_in_the_jobs_thread_while_input_is_answered():
    """The background job's cancel flag is its yield point: asked from the job's thread while the UI
    answers a key (``input_until`` ahead), it waits; on the UI thread it never does. Before, the job
    and the UI thread shared the interpreter during every key: 100-250 ms per key on 10^6 nodes."""
    import time

    from onemodel_viewer.tui.background import JobCancel

    cancel = JobCancel()
    cancel.input_until = time.monotonic() + 600
    assert cancel.is_set() is False  # the main thread (the UI's): no wait
    got: list[bool] = []
    t = threading.Thread(target=lambda: got.append(cancel.is_set()))
    t.start()
    t.join(0.3)
    assert t.is_alive() and not got  # held while input is being answered
    cancel.input_until = 0.0
    t.join(30)
    assert got == [False]
    cancel.input_until = time.monotonic() + 600
    cancel.set()  # a cancel (quit, reload) ends the wait at once
    t = threading.Thread(target=lambda: got.append(cancel.is_set()))
    t.start()
    t.join(30)
    assert got == [False, True]


async def test_a_key_press_holds_the_background_job(monkeypatch):
    """A key sets the running job's hold (the job waits at its next step while the key is answered)."""
    from onemodel_viewer.tui.background import JobCancel

    reached, go = hold_job(monkeypatch)
    app = make_app(SHOWCASE)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(reached, pilot)
            cancel = app._background_cancel
            assert isinstance(cancel, JobCancel) and cancel.input_until == 0.0
            await pilot.press("down")
            for _ in range(300):  # the key's events are handled on the app's loop: wait for it
                if cancel.input_until > 0.0:
                    break
                await pilot.pause(0.02)
            assert cancel.input_until > 0.0
            go.set()
            await app.workers.wait_for_complete()
    finally:
        go.set()


def test_facts_computed_in_steps_are_the_same_facts():
    """``Facts.of(g, step)``: the records are built and the maps filled a few thousand nodes at a time,
    ``step`` called in between (the viewer's job yields to input there); the facts are the same."""
    import onemodel_viewer.format as omf
    from onemodel_viewer.analysis.facts import Facts

    with omf.open(SHOWCASE, mode="diagnose") as a, omf.open(SHOWCASE, mode="diagnose") as b:
        calls: list[int] = []
        stepped = Facts().of(a.model.graph, step=lambda: calls.append(1))
        plain = Facts().of(b.model.graph)
        assert calls and a.model.graph.nodes.built
        assert stepped.producer == plain.producer and stepped.consumers == plain.consumers
        assert stepped.ops == plain.ops and set(stepped.types) == set(plain.types)


def test_direct_readers_never_wait_for_a_big_graphs_facts(monkeypatch):
    """The used-by line before the used-by map is built lists a value's direct readers: for a big graph
    whose facts the job is still computing it lists none (yet). Before, it waited on the UI thread for
    the job's facts (10^6 nodes: seconds)."""
    import onemodel_viewer.format as omf
    from onemodel_viewer.analysis import facts as facts_module
    from onemodel_viewer.analysis.facts import Facts
    from onemodel_viewer.tui.insight import Insight

    monkeypatch.setattr(facts_module, "QUICK_NODES", 1)  # every graph counts as big
    with omf.open(SHOWCASE, mode="diagnose") as doc:
        facts = Facts()
        ins = Insight(None, doc, facts, held=True)
        g = doc.model.graph
        name = next(x for n in g.nodes for x in n.inputs if x)
        assert ins.direct_uses(g, name) == []
        assert facts.known(g) is None  # nothing computed for it meanwhile
        facts.of(g)
        assert ins.direct_uses(g, name)


async def test_duplicate_keys_are_found_by_the_background_job(monkeypatch, tmp_path):
    """The viewer's open leaves ``duplicate-key`` to the background job (a 10^6-node manifest: 0.24 s
    off the first screen); the finding then arrives in the document, the findings group and the info bar,
    and the job lets the parse go. The info bar says findings are being looked for until the job ends."""
    import json

    from onemodel_viewer.tui.widgets.info_bar import InfoBar
    from onemodel_viewer.tui.widgets.structure_tree import StructureTree
    from test_reader_util import model, pack, write

    text = json.dumps(model())[:-1].encode() + b',"x":{"k":0,"k":1}}'
    path = str(write(tmp_path, pack(text)))
    reached, go = hold_job(monkeypatch)
    app = make_app(path)
    assert app.unchecked_manifest is not None
    assert not [f for f in app.document.findings if f.code == "duplicate-key"]  # not looked for at open
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(reached, pilot)
            await pilot.pause()
            assert app.unchecked_manifest is None
            [f] = [f for f in app.document.findings if f.code == "duplicate-key"]
            assert f.where == "manifest.x.k" and f.offset == 64 + text.rindex(b'"k"') + 4
            n = len(app.document.findings)
            info = app.query_one("#infobar", InfoBar).render().plain
            assert f"{n} finding" in info and "checking for more findings…" in info  # the job runs on
            [group] = [e for e in app.query_one(StructureTree).roots if e.key == "findings"]
            assert f"({n})" in str(group.label)
            go.set()
            await wait_for_workers(app)
            for _ in range(100):
                if not app.findings_pending:
                    break
                await pilot.pause(0.02)
            await pilot.pause()
            assert "checking" not in app.query_one("#infobar", InfoBar).render().plain
    finally:
        go.set()


async def test_the_footer_builds_its_keys_once_at_start(monkeypatch):
    """The viewer's start-up changed its bindings three times, the shown keys the same each time:
    Textual's footer mounted its 8 keys three times (~1/8 of the app's start-up CPU)."""
    from textual.widgets._footer import FooterKey

    from onemodel_viewer.tui.widgets.footer import ScreenFooter

    built: list[str] = []
    real = FooterKey.__init__

    def counting(self, key, *args, **kwargs):
        built.append(key)
        real(self, key, *args, **kwargs)

    monkeypatch.setattr(FooterKey, "__init__", counting)
    app = make_app(SHOWCASE)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_workers(app)
        await pilot.pause()
        keys = [k.key for k in app.query_one(ScreenFooter).query(FooterKey)]
        assert "q" in keys and sorted(built) == sorted(keys)  # once each


async def test_a_replaced_documents_garbage_is_not_kept_frozen(monkeypatch):
    """Regression (the viewer soak: RSS 244 -> 881 MiB over 29 min, ~2.7 MiB per file opened, while the
    count of tracked objects stayed flat): the end of each document's background job froze everything
    alive, and frozen objects are never collected; each file opened after the first left the previous
    one's widgets, rows and rendered lines (cycles) frozen for good. After the next freeze, what is
    frozen must be (almost) all alive: a full collection of it finds next to nothing."""
    from onemodel_viewer import process
    from onemodel_viewer.tui.background import open_for_viewer

    monkeypatch.setattr(process, "_frozen", False)
    monkeypatch.setattr(process, "_garbage_frozen", False, raising=False)
    was = gc.isenabled()
    app = make_app(SHOWCASE)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for_workers(app)
            await pilot.pause()
            process.freeze_gc()  # as the end of the first document's job does (run_viewer's app)
            for name in ("valid-base.onemodel", "Malformed-file-10-bytes.onemodel"):
                doc, unchecked = open_for_viewer(str(ROOT / "testdata" / "hostile" / name))
                app.load_document(doc, unchecked)
                await wait_for_workers(app)
                await pilot.pause()
            process.freeze_gc()  # as the next job's end does
            frozen = gc.get_freeze_count()
            gc.unfreeze()
            dead = gc.collect()
            assert dead * 20 < frozen, (dead, frozen)  # before the fix: 18,789 of 127,315; after: 0
    finally:
        gc.unfreeze()
        if was:
            gc.enable()
