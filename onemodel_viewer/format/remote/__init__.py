"""Models where they live: OneModel, ONNX and ``.ort`` files read over HTTP(S), S3, GCS and the Hugging Face Hub.

Nothing here is imported for a local path: the reader only comes here for a string that
:func:`.urls.is_url` accepts (``scheme://...``). Modules: :mod:`.urls` (what a URL is, redaction of
credentials, relative locations, the extra each scheme needs), :mod:`.http` (the range client with
its checks), :mod:`.sources` (s3, gs, hf through fsspec), :mod:`.storage` (:class:`RemoteStorage`,
the block cache), :mod:`.download` (``--download``: a server that ignores ``Range``).
"""

from __future__ import annotations

__all__ = ["open_external", "open_remote"]


def open_remote(url: str, **options):
    """A :class:`.storage.RemoteStorage` of ``url`` (``FormatError(Io)`` when it cannot be read)."""
    from .storage import open_remote as _open

    return _open(url, **options)


def open_external(importer, full: str, loc: str, where: str):
    """The storage of an ONNX model's external data at the URL ``full`` for the ONNX ``importer`` (which
    keeps it), or None once it has recorded why not (an Io problem at ``where + ".location"``)."""
    from ..errors import FormatError, Kind

    try:
        importer.storages[full] = storage = open_remote(full)
    except FormatError as e:
        importer.problem(Kind.IO, where + ".location", f"cannot read external data {loc!r}: {e.message}", file=loc)
        return None
    importer.locations[full] = loc
    return storage
