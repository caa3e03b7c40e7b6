"""ONNX Runtime flatbuffer models (``.ort``): a verifying reader into the one in-memory model.

``sniff(path, first8)`` decides (the identifier ``ORTM`` at bytes 4..8, or the ``.ort``
extension); ``open_ort(path, mode, storage, report, resolve)`` verifies and imports. No UI imports, no
``onnxruntime`` or ``flatbuffers`` at run time: :mod:`.fbs` is ORT's schema as data.

Modules: :mod:`.fbs` (the schema, generated), :mod:`.verify` (the flatbuffer checks and the
byte map), :mod:`.importer` (ORT rules, records), :mod:`.facts` (what ORT adds), :mod:`.reader`
(the document). Importing this package imports none of them (the OneModel path stays cheap).
"""

from __future__ import annotations

import os

IDENTIFIER = b"ORTM"

__all__ = ["IDENTIFIER", "open_ort", "sniff"]


def sniff(path, first8: bytes) -> bool:
    """True for the ORT reader: ``ORTM`` at bytes 4..8 whatever the name, or a name ending in ``.ort``."""
    return first8[4:8] == IDENTIFIER or os.fspath(path).lower().endswith(".ort")


def open_ort(path, mode, storage, report, resolve):
    """See :func:`.reader.open_ort`."""
    from .reader import open_ort as _open

    return _open(path, mode, storage, report, resolve)
