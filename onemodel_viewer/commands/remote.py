"""What the command line does before any command reads a URL (``scheme://...`` among the files).

* A URL whose client is missing (``s3://`` without s3fs...) or whose scheme is not read: one line on
  stderr naming the ``pip install`` that fixes it, exit status 1, before anything else runs.
* ``--download`` and ``--deep`` become the remote storage's defaults
  (:data:`onemodel_viewer.format.remote.storage.OPTIONS`).
* ``--diff``, ``--stats``, ``--convert``, ``--export``, ``--extract`` of a URL: a progress line on
  stderr (bytes fetched, rate) while tensor bytes are fetched, when stderr is a terminal; nothing
  extra when it is piped.

Imported only when a file is a URL.
"""

from __future__ import annotations

import sys

from ..format.remote.options import OPTIONS
from ..format.remote.urls import SCHEMES, is_url, missing_extra, redact, scheme


def prepare(files: list[str], *, download: bool, deep: bool, progress: bool) -> int:
    """0 when every URL among ``files`` can be read; else 1 after the one-line message."""
    for f in files:
        if not is_url(f):
            continue
        sch = scheme(f)
        if sch not in SCHEMES:
            print(f"onemodel-view: {redact(f)}: {sch}:// URLs are not supported (http, https, s3, gs, hf are)",
                  file=sys.stderr)
            return 1
        need = missing_extra(f)
        if need:
            print(f"onemodel-view: {need}", file=sys.stderr)
            return 1
    OPTIONS["download"] = download
    OPTIONS["deep"] = deep
    if progress and sys.stderr.isatty():
        OPTIONS["progress"] = _bar()
    return 0


def _bar():
    """A rich progress line on stderr (bytes fetched, rate); returns the ``(nbytes)`` hook."""
    from rich.console import Console
    from rich.progress import DownloadColumn, Progress, SpinnerColumn, TextColumn, TransferSpeedColumn

    bar = Progress(SpinnerColumn(), TextColumn("fetching"), DownloadColumn(), TransferSpeedColumn(),
                   console=Console(file=sys.stderr), transient=True)
    task = bar.add_task("fetch", total=None)
    started: list = []

    def hook(n: int) -> None:
        if not started:
            started.append(True)
            bar.start()
            import atexit

            atexit.register(bar.stop)
        bar.advance(task, n)

    return hook
