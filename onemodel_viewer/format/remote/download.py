"""``--download``: a file whose server ignores ``Range`` is fetched once to a temporary file and mapped from there.

The temporary file lives in the system's temporary folder and is unlinked as soon as it is mapped
(the mapping keeps its bytes until the storage closes); a failed or short transfer leaves nothing.
Progress goes to ``OPTIONS["progress"]`` as for bulk reads.
"""

from __future__ import annotations

import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request

from ..errors import FormatError, Kind
from ..storage import FileStorage
from .options import OPTIONS
from .urls import redact

CHUNK = 1 << 20
TIMEOUT = 30.0


class _HttpOnly(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if urllib.parse.urlsplit(newurl).scheme.lower() not in ("http", "https"):
            raise FormatError(Kind.IO, "file", None, f"{redact(req.full_url)}: redirected to another scheme; refused")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class DownloadedStorage(FileStorage):
    """A mapped temporary copy, unlinked once mapped: nobody else can reach it by name."""

    protected = True

    def changed(self) -> bool:
        return self.revoked


def download(url: str) -> FileStorage:
    shown = redact(url)
    opener = urllib.request.build_opener(_HttpOnly)
    fd, tmp = tempfile.mkstemp(prefix="onemodel-", suffix="-" + local_name(url))
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                resp = opener.open(urllib.request.Request(url, headers={"User-Agent": "onemodel-view",
                                                                      "Accept-Encoding": "identity"}), timeout=TIMEOUT)
            except urllib.error.HTTPError as e:
                raise FormatError(Kind.IO, "file", None, f"{shown}: cannot open: HTTP {e.code}") from None
            except (urllib.error.URLError, OSError) as e:
                raise FormatError(Kind.IO, "file", None, f"{shown}: cannot download: {e.__class__.__name__}") from None
            with resp:
                declared = resp.headers.get("Content-Length")
                total = int(declared) if declared and declared.isdigit() else None
                done = 0
                try:
                    while True:
                        try:
                            chunk = resp.read(CHUNK)
                        except (OSError, ValueError) as e:
                            raise FormatError(Kind.IO, "file", None, f"{shown}: the download broke off after {done} bytes") from e
                        if not chunk:
                            break
                        out.write(chunk)
                        done += len(chunk)
                        if OPTIONS.get("progress") is not None:
                            OPTIONS["progress"](done, max(total or 0, done + 1))
                finally:  # the end, completed or not: the progress line goes
                    if OPTIONS.get("progress") is not None:
                        OPTIONS["progress"](done, done)
            if total is not None and done != total:
                raise FormatError(Kind.IO, "file", None, f"{shown}: {done} bytes downloaded, {total} announced")
        storage = DownloadedStorage(tmp, protect=False)
        storage.label = shown
        return storage
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def local_name(url: str) -> str:
    """A short name for temporary files made from ``url`` (no credentials)."""
    name = os.path.basename(redact(url).split("?", 1)[0]) or "remote"
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:80]
