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

import io
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
    _redact_streams([f for f in files if is_url(f)])
    OPTIONS["download"] = download
    OPTIONS["deep"] = deep
    if progress and sys.stderr.isatty():
        OPTIONS["progress"] = _bar()
    return 0


def _bar():
    """A rich progress line on stderr while a bulk read runs (bytes fetched of the read's total, rate);
    returns the ``(done, total)`` hook. The line goes (and the cursor comes back) when each read ends:
    the one-shot commands leave with ``os._exit``, which would skip stopping it."""
    import threading

    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    bar = Progress(TextColumn("fetching"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                   console=Console(file=sys.stderr), transient=True)
    tasks: dict[int, object] = {}
    lock = threading.Lock()

    def hook(done: int, total: int) -> None:
        me = threading.get_ident()
        with lock:
            task = tasks.get(me)
            if done >= total:
                if task is not None:
                    bar.remove_task(task)
                    del tasks[me]
                    if not tasks:
                        bar.stop()
                return
            if task is None:
                if not tasks:
                    bar.start()
                task = tasks[me] = bar.add_task("fetch", total=total)
            bar.update(task, completed=done, total=total)

    return hook


class RedactingStream(io.TextIOBase):
    """A text stream that writes through to ``stream`` with each URL's credentials replaced: the URLs
    given on the command line by their redacted form, and anywhere else their user-info and query string
    (commands print the paths they were given; no report, error or JSON may show a token)."""

    def __init__(self, stream, urls: list[str]) -> None:
        self._stream = stream
        self._pairs = sorted({(u, redact(u)) for u in urls if redact(u) != u}, key=lambda p: -len(p[0]))
        secrets = set()
        for u in urls:
            rest = u.split("://", 1)[1]
            authority = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
            if "@" in authority:
                secrets.add(authority.rsplit("@", 1)[0] + "@")
            for sep in "?#":
                if sep in rest:
                    secrets.add(rest[rest.index(sep):])
        self._secrets = sorted((s for s in secrets if len(s) > 1), key=len, reverse=True)

    def write(self, text: str) -> int:
        for raw, shown in self._pairs:
            text = text.replace(raw, shown)
        for secret in self._secrets:
            text = text.replace(secret, "…@" if secret.endswith("@") else "?…")
        return self._stream.write(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _redact_streams(urls: list[str]) -> None:
    if any(redact(u) != u for u in urls):
        sys.stdout = RedactingStream(sys.stdout, urls)
        sys.stderr = RedactingStream(sys.stderr, urls)
