"""ONNX external data, the reading side: where a ``location`` may point, its numbers, its checksum.

Shared by the importer (:mod:`.onnx_import`), the checker (:mod:`.onnx_checker`) and the layout
report (:mod:`onemodel_viewer.analysis.layout.external`), so that all three agree on which file a
tensor reads and which bytes.

Decisions (CLARIFICATIONS, "ONNX files"):

* ``offset`` / ``length`` are plain ASCII decimal digits (:func:`parse_digits`); anything else
  (``"1_024"``, ``" 7"``, ``"+1"``, ``"-1"``, Arabic-Indic digits, ``""``) is Malformed: C and C++
  readers stop at the first non-digit where Python's ``int()`` reads on;
* a location that is empty, absolute, contains ``..`` or a NUL, resolves (symlinks followed)
  outside the model's folder, or names the model file itself is Malformed at ``.location``; the
  Hugging Face cache layout (``<cache>/snapshots/<rev>/…/model.onnx`` and its data both links
  into the same ``<cache>/blobs/``) is recognised and allowed (:func:`hf_cache_blob`);
* ``checksum`` is the SHA-1 of the location's whole file (ONNX IR): :func:`sha1_of` computes it
  once per file, reading in chunks (no mapping, bounded memory).
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass

__all__ = ["ExternalRef", "ExternalFacts", "parse_digits", "unsafe_location", "locate", "hf_cache_blob", "sha1_of",
           "open_regular", "OUTSIDE_HINT"]

OUTSIDE_HINT = ("symlinks are followed only inside the model's folder, or in a Hugging Face cache "
                "(snapshots/<rev>/ links into the same cache's blobs/); copy or move the file next to the model")
"""What to do about a location refused because it resolves outside the model's folder."""


@dataclass(frozen=True, slots=True)
class ExternalRef:
    """One tensor's external data, as resolved by the importer (its range lies inside the file)."""

    where: str
    """The tensor's ``where`` (``onnx.graph.initializers[3]``)."""
    name: str
    location: str
    """As written in the model, relative to the model's folder."""
    real: str
    """The file it resolved to (symlinks followed)."""
    offset: int
    length: int


@dataclass(frozen=True, slots=True)
class ExternalFacts:
    """What an ONNX document's external data looks like (``Document.extra`` of an ONNX document)."""

    refs: tuple[ExternalRef, ...] = ()
    """Every resolved external tensor, in the importer's order (zero-length ones included)."""
    files: tuple[tuple[str, str, int], ...] = ()
    """``(location as first written, resolved path, size)`` of each weights file, first use first."""


def parse_digits(text: str) -> int | None:
    """The value of plain ASCII decimal digits; None for anything else (signs, spaces, ``_``, other scripts)."""
    if text and text.isascii() and text.isdigit():
        return int(text)
    return None


def unsafe_location(loc: str) -> bool:
    """A location that may not even be looked up: empty, NUL, absolute (POSIX, UNC or drive), or with ``..``."""
    if not loc or "\x00" in loc:
        return True
    if os.path.isabs(loc) or loc.startswith(("/", "\\")) or (len(loc) > 1 and loc[1] == ":"):
        return True
    parts = loc.replace("\\", "/").split("/")
    return ".." in parts


def hf_cache_blob(model_path: str, full: str) -> bool:
    """Whether ``model_path`` and its data ``full`` (resolved) are the Hugging Face cache layout.

    ``<cache>/snapshots/<rev>/[sub/]model.onnx`` is a symlink into ``<cache>/blobs/`` and the
    data's location, inside the same snapshot, resolves into that same ``blobs`` folder.
    """
    model_abs = os.path.abspath(model_path)
    if not os.path.islink(model_abs):
        return False
    folder = os.path.dirname(model_abs)
    rev = folder
    while True:
        parent = os.path.dirname(rev)
        if parent == rev:
            return False
        if os.path.basename(parent) == "snapshots":
            break
        rev = parent
    blobs = os.path.realpath(os.path.join(os.path.dirname(parent), "blobs"))
    return os.path.dirname(os.path.realpath(model_abs)) == blobs and os.path.dirname(full) == blobs


def locate(model_path: str, loc: str) -> tuple[str | None, str]:
    """``(resolved path, "")`` of a safe location, or ``(None, why)`` for one refused as Malformed.

    Does not open the file (the caller stats it: missing, not regular, hard links).
    """
    if unsafe_location(loc):
        return None, f"external data location {loc!r} is absolute, empty or leaves the model's folder"
    folder = os.path.dirname(os.path.abspath(model_path))
    base = os.path.realpath(folder)
    full = os.path.realpath(os.path.join(folder, loc))
    try:
        if os.path.samefile(full, model_path):
            return None, f"external data location {loc!r} names the model file itself"
    except OSError:
        pass  # missing: the caller reports Io
    try:
        inside = os.path.commonpath([base, full]) == base and full != base
    except ValueError:
        inside = False
    if not inside and not hf_cache_blob(model_path, full):
        return None, f"external data location {loc!r} resolves outside the model's folder ({OUTSIDE_HINT})"
    return full, ""


_HASH_CHUNK = 8 << 20


def open_regular(path: str) -> int | None:
    """A read-only descriptor of ``path`` when it is a regular file with one link (never blocks on a FIFO)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        st = None
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
        os.close(fd)
        return None
    return fd


def sha1_of(path: str) -> str | None:
    """Lower-case hex SHA-1 of the whole file (None when it cannot be read)."""
    h = hashlib.sha1(usedforsecurity=False)
    fd = open_regular(path)
    if fd is None:
        return None
    try:
        pos = 0
        while True:
            chunk = os.pread(fd, _HASH_CHUNK, pos)
            if not chunk:
                break
            h.update(chunk)
            pos += len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return h.hexdigest()
