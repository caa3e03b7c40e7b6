"""Shared set-up of the viewer's Pilot tests: the ``viewer`` fixture, and ``async def`` tests run with asyncio.

A Pilot test opens a file and works on the settled first screen::

    async def test_something(viewer):
        async with viewer(SHOWCASE) as pilot:        # make_app + run_test(size=(120, 40)) + settle
            app = pilot.app
            await pilot.press("u")
            await viewer.settle(pilot)

``viewer(path)`` skips the test when ``path`` is a generated file that is missing; ``document=``,
``size=`` and any other ``make_app`` keyword are passed on.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
from pathlib import Path
from typing import AsyncIterator

import pytest

VIEWER_SIZE = (120, 40)
"""The terminal size a Pilot test gets unless it asks for another."""


def pytest_pyfunc_call(pyfuncitem):
    """Run an ``async def`` test with ``asyncio.run`` (no async plugin is a test dependency)."""
    fn = pyfuncitem.obj
    if not inspect.iscoroutinefunction(fn):
        return None
    args = {name: pyfuncitem.funcargs[name] for name in inspect.signature(fn).parameters}
    asyncio.run(fn(**args))
    return True


async def wait_for_workers(app) -> None:
    """Wait until no worker of ``app`` runs. A worker cancelled because an exclusive newer one took
    its place is not a failure: Textual's ``wait_for_complete`` raised WorkerCancelled for a hex
    look-up superseded by the next one (under load in a full ``-n 2`` run). A worker that failed
    still raises."""
    from textual.worker import WorkerCancelled, WorkerState

    for _ in range(10_000):
        running = [w for w in app.workers if w.state in (WorkerState.PENDING, WorkerState.RUNNING)]
        if not running:
            return
        for worker in running:
            try:
                await worker.wait()
            except WorkerCancelled:
                pass
    raise AssertionError("workers kept starting")


async def settle_located(pilot) -> None:
    """Let pending messages and every worker finish, then the debounced manifest look-up of the
    selection (started on a timer, :data:`~onemodel_viewer.tui.app.LOCATE_DELAY`) start and end too:
    it moves the hex pane. Snapshots need this: with a delay long enough to miss the look-up, four
    of the nine main snapshots differ (test_snapshot_help failed in CI that way, under load)."""
    from onemodel_viewer.tui.app import LOCATE_DELAY

    await pilot.pause()
    await wait_for_workers(pilot.app)
    await pilot.pause(LOCATE_DELAY)
    await wait_for_workers(pilot.app)
    await pilot.pause()


class Viewer:
    """Opens the viewer under Pilot, settled (the ``viewer`` fixture)."""

    @staticmethod
    def need(path: str | Path) -> Path:
        """``path``, or skip the test when the generated file is not there."""
        path = Path(path)
        if not path.exists():
            pytest.skip(f"{path.name} not generated yet")
        return path

    @staticmethod
    async def settle(pilot) -> None:
        """Let pending messages and every worker finish."""
        await pilot.pause()
        await wait_for_workers(pilot.app)
        await pilot.pause()

    async def select(self, pilot, where: str) -> None:
        """Select the record at ``where`` (as a link or a search does) and let its detail settle."""
        pilot.app.reveal(where)
        await self.settle(pilot)
        await pilot.pause(0.05)
        await self.settle(pilot)

    @contextlib.asynccontextmanager
    async def __call__(self, path: str | Path | None = None, *, size: tuple[int, int] = VIEWER_SIZE,
                       settle: bool = True, **make_app_kwargs) -> AsyncIterator:
        from onemodel_viewer.tui.app import make_app

        app = make_app(str(self.need(path)) if path is not None else None, **make_app_kwargs)
        async with app.run_test(size=size) as pilot:
            if settle:
                # the first screen's manifest look-up starts on a timer once that screen is drawn: let
                # it start and end too (under load it moved the hex cursor after a test's own move)
                await settle_located(pilot)
            yield pilot


@pytest.fixture
def viewer() -> Viewer:
    return Viewer()


def first_failure(path) -> tuple[str, str | None] | None:
    """``(kind, where)`` of the strict open's refusal of ``path``, or None when the file opens."""
    from onemodel_viewer import format as omf

    try:
        omf.open(path).close()
    except omf.FormatError as e:
        return e.kind.value, e.where
    return None


def digest(path) -> str:
    """SHA-256 of a file's bytes (to show a command left its input as it was)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def hold_method(monkeypatch, cls, name: str):
    """Make ``cls.name`` wait, in the thread that calls it, until the test lets it go: ``(reached, go)``,
    two ``threading.Event``s (``reached`` set when the call has come, the call made once ``go`` is set)."""
    import threading

    reached, go = threading.Event(), threading.Event()
    real = getattr(cls, name)

    def held(self, *args, **kwargs):
        reached.set()
        go.wait(30)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, held)
    return reached, go


def hold_checks(monkeypatch):
    """Make the viewer's background job wait (in its thread) before the deferred checks of its two-step
    open: ``(reached, go)`` (:func:`hold_method` on ``OneModelApp._finish_checks``)."""
    from onemodel_viewer.tui.app import OneModelApp

    return hold_method(monkeypatch, OneModelApp, "_finish_checks")


@contextlib.asynccontextmanager
async def held_checks(monkeypatch, path, size: tuple[int, int] = VIEWER_SIZE) -> AsyncIterator:
    """The viewer on ``path`` under Pilot, once its background job waits before the deferred checks
    (:func:`hold_checks`): ``(app, pilot, go)``. ``go.set()`` lets the checks run; it is set on the way
    out whatever happened, so that no job is left waiting."""
    from onemodel_viewer.tui.app import make_app

    reached, go = hold_checks(monkeypatch)
    app = make_app(str(path))
    try:
        async with app.run_test(size=size) as pilot:
            await until(pilot, reached.is_set)
            await pilot.pause()
            yield app, pilot, go
    finally:
        go.set()


def slow_facts(monkeypatch, seconds: float) -> None:
    """The graph's facts (``Facts._compute``) take ``seconds`` more: whatever waits for them after an
    edit's verdict (the swapped rows, the selection shown again) comes that much later."""
    import time

    from onemodel_viewer.analysis.facts import Facts

    real = Facts._compute

    def slow(self, graph, *args):
        time.sleep(seconds)
        return real(self, graph, *args)

    monkeypatch.setattr(Facts, "_compute", slow)


def identity_chain(tmp_path, n: int) -> Path:
    """``chain.onemodel`` in ``tmp_path``: ``n`` Identity nodes in a chain (the tree groups them by 1,000
    when ``n`` > 1,000), for the tests of what an edit's re-check does to a long node list."""
    from onemodel_viewer.format.schema import Graph, Model, Node, OperatorSet, Type, ValueInfo
    from onemodel_viewer.format.onemodel.writer import write

    nodes = tuple(Node("Identity", f"n{i}", inputs=(f"v{i}",), outputs=(f"v{i + 1}",)) for i in range(n))
    t = Type("tensor", elem=1, shape=(1,))
    g = Graph("chain", inputs=(ValueInfo("v0", t),), outputs=(ValueInfo(f"v{n}", t),), nodes=nodes)
    path = tmp_path / "chain.onemodel"
    write(Model(ir_version=8, graph=g, opsets=(OperatorSet("", 17),)), path)
    return path


async def until(pilot, done, seconds: float = 20.0) -> None:
    """Pause until ``done()`` (a state, never a count of pauses); fail after ``seconds`` (Pilot tests of work
    that ends in another thread: an edit's re-check, a background job)."""
    import time

    end = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < end, "state not reached"
        await pilot.pause(0.01)


JSON_KEYS = ('"a"', '"\\u0061"', '"b"', '":"', '"\\u003a"', '"\\\\u003a"', '"é"', '"\\u00e9"', '"k:v"')
"""Object keys (JSON text) for :func:`json_text`: one key spelt two ways (``"a"`` and ``"\\u0061"``, ``"é"``
and ``"\\u00e9"``), colons in keys spelt out and escaped, and ``"\\\\u003a"`` (an escaped backslash: no colon)."""

JSON_SCALARS = ("1", '"s"', '"a:b"', '"\\u003a"', "null", "[]", "{}")
"""Leaf values (JSON text) for :func:`json_text`, colons inside strings among them."""


def json_text(scalars=JSON_SCALARS, keys=JSON_KEYS, depth: int = 0):
    """A hypothesis strategy for JSON text: one of ``scalars``, or arrays and objects (keys drawn from
    ``keys``, so they may repeat) nested up to five levels deep around them (the duplicate-key tests)."""
    from hypothesis import strategies as st

    scalar = st.sampled_from(scalars)
    if depth > 4:
        return scalar
    inner = st.deferred(lambda: json_text(scalars, keys, depth + 1))
    arr = st.lists(inner, max_size=3).map(lambda xs: "[" + ",".join(xs) + "]")
    obj = st.lists(st.tuples(st.sampled_from(keys), inner), max_size=4).map(
        lambda kv: "{" + ",".join(f"{k}:{v}" for k, v in kv) + "}")
    return st.one_of(scalar, arr, obj)
