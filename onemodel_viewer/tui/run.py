"""Running a Textual app so that leaving it never waits for a worker thread (the viewer and the diff viewer)."""

from __future__ import annotations

import asyncio
from typing import Any

from textual.app import App

__all__ = ["run_app"]


def run_app(app: App) -> Any:
    """``app.run()`` on an event loop of its own, closed without waiting for worker threads.

    ``asyncio.run`` (what ``App.run()`` uses) joins the loop's executor threads, where Textual runs
    thread workers: ``q`` during a long background job cleared the screen and the process ran on until
    the job ended (minutes on 100,000 empty tensors). Here the loop's pending tasks are cancelled and
    the executor is let go; a thread still busy is the caller's to abandon (``cli.entry`` exits with
    ``os._exit`` when one is left).
    """
    loop = asyncio.new_event_loop()
    try:
        return app.run(loop=loop)
    finally:
        try:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for t in pending:
                t.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()  # shuts the default executor down without waiting for its threads
