"""The viewer on a file at a URL: the first screen without a tensor byte, statistics on demand.

Requests and bytes are counted on the loopback range server (``tests/remote_server.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from onemodel_viewer.tui.widgets.stats_panel import StatsPanel
from onemodel_viewer.tui.widgets.structure_tree import StructureTree

sys.path.insert(0, str(Path(__file__).parent))
from remote_server import RangeServer  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "testdata"
SHOWCASE = "valid/showcase.onemodel"


@pytest.fixture(scope="module")
def server():
    with RangeServer(str(DATA)) as srv:
        yield srv


def _plain(r) -> str:
    return getattr(r, "plain", str(r))


async def test_first_screen_fetches_no_tensor_byte(server):
    from conftest import settle_located
    from onemodel_viewer.tui.app import make_app

    server.reset()
    url = server.url(SHOWCASE).replace("http://", "http://user:pw@") + "?token=secret"
    app = make_app(url)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle_located(pilot)
        info = _plain(app.query_one("#infobar").render())
        assert "127.0.0.1" in info and "secret" not in info and "pw" not in info
        tree = app.query_one(StructureTree)
        assert [n.label.plain.split()[0] for n in tree.root.children][:3] == ["header", "model", "graph"]
        doc = app.document
        st = server.stats()
        # the open: one request, the first MiB (header + manifest); then, in the background, only the
        # small tensors shape inference reads (the budget: the manifest + 1 MiB, 3 requests)
        assert server.log[0][1] == "bytes=0-1048575"
        assert st["requests"] <= 3 and st["bytes"] <= sum(doc.manifest_span) + (1 << 20)
        # statistics of a tensor past the first MiB: fetched on demand
        t = max(doc.model.graph.initializers, key=lambda t: t.file_offset + t.length)
        assert t.file_offset + t.length > 1 << 20
        app.reveal(t.where)
        await settle_located(pilot)
        panel = app.query_one(StatsPanel)
        assert panel.state == "done" and "min" in panel.summary_text()
        assert server.stats()["requests"] >= 2


async def test_edit_mode_refuses_a_url(server, monkeypatch):
    """Edit mode would have opened the URL as a local path for its overlay (and failed with a path error)."""
    from conftest import settle_located
    from onemodel_viewer.tui.app import make_app

    app = make_app(server.url(SHOWCASE))
    notes = []
    async with app.run_test(size=(120, 40)) as pilot:
        await settle_located(pilot)
        monkeypatch.setattr(app, "notify", lambda msg, **kw: notes.append(msg))
        app.action_edit()
        await pilot.pause()
        assert app.edit_session is None
        assert any("at a URL" in n for n in notes)


async def test_duplicate_keys_found_for_a_remote_file(tmp_path):
    """The background job read the manifest through ``memoryview(storage.buffer())``, which a remote
    storage has not: the viewer silently never reported ``duplicate-key`` for a file at a URL."""
    import json

    from conftest import settle_located
    from onemodel_viewer.tui.app import make_app
    from test_reader_util import model, pack, write

    text = json.dumps(model())[:-1].encode() + b',"x":{"k":0,"k":1}}'
    write(tmp_path, pack(text))
    [name] = [p.name for p in tmp_path.iterdir()]
    with RangeServer(str(tmp_path)) as srv:
        app = make_app(srv.url(name))
        async with app.run_test(size=(120, 40)) as pilot:
            await settle_located(pilot)
            [f] = [f for f in app.document.findings if f.code == "duplicate-key"]
            assert f.where == "manifest.x.k" and f.offset == 64 + text.rindex(b'"k"') + 4


async def test_hex_pane_fetches_a_remote_page_off_the_interface_thread(server):
    """The hex pane read a remote file's lines on the interface's thread: on a slow server each key waited
    for a round trip. A line whose bytes are not cached is now a placeholder while a worker fetches the page."""
    import threading

    from textual.app import App, ComposeResult

    from conftest import wait_for_workers
    from onemodel_viewer.format.remote.storage import open_remote
    from onemodel_viewer.tui.hex.hex_view import HexView

    data = (DATA / SHOWCASE).read_bytes()
    storage = open_remote(server.url(SHOWCASE))
    threads: list[str] = []
    fetch = storage.source.fetch

    def spy(lo, hi):
        threads.append(threading.current_thread().name)
        return fetch(lo, hi)

    storage.source.fetch = spy

    class One(App):
        def compose(self) -> ComposeResult:
            yield HexView()

    server.latency = 0.2
    try:
        app = One()
        async with app.run_test(size=(100, 20)) as pilot:
            hexv = app.query_one(HexView)
            hexv.set_source(storage, None)
            await pilot.pause()
            at = (1 << 20) + 4096  # past the first MiB the open fetched
            hexv.goto(at)
            await pilot.pause()
            lines = [hexv.render_line(y).text for y in range(hexv.size.height)]
            assert any("fetching…" in line for line in lines), lines
            await wait_for_workers(app)
            await pilot.pause()
            row = next(y for y in range(hexv.size.height) if f"{at:08x}" in hexv.render_line(y).text)
            shown = hexv.render_line(row).text
            assert " ".join(f"{b:02x}" for b in data[at:at + 8]) in shown and "fetching" not in shown
    finally:
        server.latency = 0.0
        storage.close()
    assert threads and "MainThread" not in threads


async def test_layout_screen_scans_a_remote_files_padding_on_demand(tmp_path, monkeypatch):
    """The layout screen of a file at a URL said "not scanned" for every padding, with no way to have them
    checked short of ``--check --deep``: ``s`` now fetches and scans them, with progress, and finds what a
    local file's screen finds."""
    from conftest import settle_located
    from onemodel_viewer.format import reader
    from onemodel_viewer.tui.app import make_app
    from onemodel_viewer.tui.screens.layout import LayoutScreen, from_analysis

    b = bytearray((DATA / "valid/types.onemodel").read_bytes())
    m_end = 64 + int.from_bytes(b[24:32], "little")
    b[int.from_bytes(b[32:40], "little") - 1] = 0x55  # a non-zero byte in the padding after the manifest
    (tmp_path / "pad.onemodel").write_bytes(bytes(b))
    local = reader.open_path(str(tmp_path / "pad.onemodel"), "strict")
    want = [(r.start, r.end, r.kind, r.note) for r in from_analysis(local)]
    local.close()
    assert (m_end, int.from_bytes(b[32:40], "little"), "padding", "NON-ZERO bytes") in want
    told: list[tuple[int, int]] = []
    real = LayoutScreen._progress
    monkeypatch.setattr(LayoutScreen, "_progress", lambda self, d, t: (told.append((d, t)), real(self, d, t)))
    with RangeServer(str(tmp_path)) as srv:
        app = make_app(srv.url("pad.onemodel"))
        async with app.run_test(size=(120, 40)) as pilot:
            await settle_located(pilot)
            await pilot.press("l")
            await settle_located(pilot)
            screen = app.screen
            assert isinstance(screen, LayoutScreen)
            shallow = [(e.start, e.end, e.kind, e.note) for e in screen.extents]
            assert (m_end, int.from_bytes(b[32:40], "little"), "padding", "not scanned") in shallow
            assert screen.to_scan > 0 and "s: fetch and scan" in str(screen.query_one("#layout-title").render())
            total = screen.to_scan
            await pilot.press("s")
            await settle_located(pilot)
            assert [(e.start, e.end, e.kind, e.note) for e in screen.extents] == want
            assert told[0] == (0, total) and all(t == total for _d, t in told)
