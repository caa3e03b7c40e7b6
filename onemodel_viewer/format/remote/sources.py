"""S3 (``s3://``, s3fs), GCS (``gs://``, gcsfs) and the Hugging Face Hub (``hf://``, huggingface_hub) through fsspec.

Same interface as :class:`.http.HttpSource` (``first``, ``fetch``, ``size``, ``requests``,
``received``, ``close``). Credentials come from each library's standard place (the environment,
``~/.aws``, gcloud's, the HF token store); nothing here reads or shows them. Each answer's length is
checked; the size and ETag the store reported at open are checked again by each range read that
returns them (s3fs and gcsfs do not: a changed object is caught by its length or by the store's
version id where the filesystem uses one).
"""

from __future__ import annotations

import threading

from ..errors import FormatError, Kind
from .urls import check_scheme, redact, scheme


def filesystem(url: str):
    """``(fsspec filesystem, path inside it)`` for ``url`` (its client imported here, never before)."""
    check_scheme(url)
    import fsspec

    sch = scheme(url)
    if sch == "gcs":
        url = "gs" + url[3:]
    if sch == "hf":
        import huggingface_hub  # noqa: F401 - registers hf:// with fsspec
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except ImportError as e:  # pragma: no cover - check_scheme looked first
        raise FormatError(Kind.UNSUPPORTED, "file", None, f"{sch}:// URLs need a client: {e}") from e
    return fs, path


class FsspecSource:
    """One object in a store fsspec reads."""

    def __init__(self, url: str, fs=None, path: str | None = None) -> None:
        self.url = url
        self.shown = redact(url)
        if fs is None:
            fs, path = filesystem(url)
        self.fs = fs
        self.path = path
        self.size: int | None = None
        self.etag: str | None = None
        self.requests = 0
        self.received = 0
        self.cancelled = threading.Event()
        self._lock = threading.Lock()

    def _fail(self, e: Exception) -> FormatError:
        if isinstance(e, FileNotFoundError):
            return FormatError(Kind.IO, "file", None, f"{self.shown}: cannot open: not found")
        if isinstance(e, PermissionError):
            return FormatError(Kind.IO, "file", None, f"{self.shown}: cannot open: forbidden")
        return FormatError(Kind.IO, "file", None, redact(f"{self.shown}: cannot read: {e.__class__.__name__}: {e}")[:300])

    def first(self, n: int) -> bytes:
        try:
            with self._lock:
                self.requests += 1
            info = self.fs.info(self.path)
        except Exception as e:  # noqa: BLE001 - each store has its own errors
            raise self._fail(e) from e
        if info.get("type", "file") != "file":
            raise FormatError(Kind.IO, "file", None, f"{self.shown}: cannot read: not a file")
        size = info.get("size")
        if not isinstance(size, int) or size < 0:
            raise FormatError(Kind.IO, "file", None, f"{self.shown}: the store reports no size")
        self.size = size
        self.etag = info.get("ETag") or info.get("etag")
        if size == 0:
            return b""
        return self.fetch(0, min(n, size))

    def fetch(self, start: int, end: int) -> bytes:
        if self.size is None:
            raise RuntimeError("first() comes first")
        if self.cancelled.is_set():
            raise FormatError(Kind.IO, "file", None, f"{self.shown}: cancelled")
        with self._lock:
            self.requests += 1
        try:
            body = self.fs.cat_file(self.path, start=start, end=end)
        except Exception as e:  # noqa: BLE001
            raise self._fail(e) from e
        with self._lock:
            self.received += len(body)
        if len(body) != end - start:
            raise FormatError(Kind.IO, "file", start, f"{self.shown}: {len(body)} bytes sent for {end - start} asked at "
                              f"{start}: the file changed on the server since it was opened; reload it")
        return body

    def close(self) -> None:
        self.cancelled.set()
