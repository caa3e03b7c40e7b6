"""Edits of a OneModel file kept in memory: a copy-on-write overlay the reader can open (the viewer's edit mode).

:class:`EditSession` holds the edits made to one file (each a ``--patch`` edit,
:mod:`.edit_image`), with undo and redo. :meth:`EditSession.document` opens the edited file in
diagnose mode without writing it anywhere: the header, manifest and padding come from the
session's :class:`~.edit_image.Image` in memory, the data region from the file (read-only,
zero-copy views where no edit covers the bytes) through :class:`OverlayStorage`.
:meth:`EditSession.save_as` writes the edited file atomically to a new path and refuses the input
file under any name (a symlink, a hard link). The input file is never written.

:func:`verdict_change` says which problems and findings appeared and disappeared between two
verdicts (``--patch`` prints it, the viewer marks them).

Imports neither rich nor textual; cancellation is the caller's (a re-read is one call).
"""

from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING

from .edit_image import Edit, EditError, Image, parse_edit
from ..errors import FormatError, Kind
from ..output import refuse_sources
from ..storage import FileStorage, Storage

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ..document import Document

__all__ = ["BUFFER_LIMIT", "EditError", "EditSession", "OverlayStorage", "verdict_change"]

BUFFER_LIMIT = 64 << 20
"""Largest edited file whose bytes are put together whole in memory (for the padding scans of the
background findings); a larger one gives no whole buffer and those scans are skipped."""


class OverlayStorage(Storage):
    """The bytes of an :class:`Image`: its head, manifest and padding, then the source's data region
    (shifted where the manifest grew or shrank), the edits' byte patches over it, zeros past its end."""

    def __init__(self, image: Image, source: Storage, label: str) -> None:
        self.image = image
        self.source = source
        self.label = label
        self.front = image.bytes_without_tail()
        self.size = image.size
        self._whole: bytes | None = None

    def check(self) -> None:
        self.source.check()

    def _bounds(self, offset: int, length: int) -> None:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise FormatError(Kind.MALFORMED, self.label, offset, f"range {offset}+{length} outside {self.size} bytes")

    def read(self, offset: int, length: int) -> bytes:
        self._bounds(offset, length)  # no check(): the front is in memory, the source's read checks itself
        img, nf = self.image, len(self.front)
        out = bytearray(self.front[offset:offset + length])
        lo, hi = max(offset, nf) - nf, offset + length - nf  # the part in the tail, tail coordinates
        if hi > lo:
            have = max(0, min(hi, img.tail_len) - lo)
            if have:
                out += self.source.read(img.tail_start + lo, have)
            out += bytes(hi - lo - have)
            for at, chunk in img.patches:  # in order: a later patch wins
                a, b = max(at, lo), min(at + len(chunk), hi)
                if a < b:
                    out[nf + a - offset:nf + b - offset] = chunk[a - at:b - at]
        return bytes(out)

    def view(self, offset: int, length: int) -> "np.ndarray":
        import numpy as np

        self._bounds(offset, length)
        img, nf = self.image, len(self.front)
        lo, hi = offset - nf, offset + length - nf
        if lo >= 0 and hi <= img.tail_len and not any(at < hi and lo < at + len(c) for at, c in img.patches):
            return self.source.view(img.tail_start + lo, length)  # untouched source bytes: zero-copy
        return np.frombuffer(self.read(offset, length), dtype=np.uint8)

    def buffer(self):
        if self.size > BUFFER_LIMIT:
            raise FormatError(Kind.IO, self.label, None, f"an edited file over {BUFFER_LIMIT >> 20} MiB is not put together in memory")
        if self._whole is None:
            self._whole = self.read(0, self.size)
        return self._whole

    def close(self) -> None:
        """Nothing: the source storage is the session's (documents of several edits share it)."""


class EditSession:
    """The edits made to one OneModel file, in memory; undo, redo, the edit list, save-as."""

    def __init__(self, path: str, keys_unique: bool | None = None, proven_on: Storage | None = None,
                 parse: dict | None = None, parse_span: tuple[int, int] | None = None) -> None:
        """``keys_unique``: whether no object of the file's manifest repeats a key, as proven on the
        bytes of ``proven_on`` (the shown document's storage: its open or its background job looked);
        the first manifest edit then does not parse the whole manifest to learn it (10^6 nodes: ~3.5 s).
        ``parse``: the manifest span ``parse_span`` (offset, length) of those bytes, parsed (the shown
        document's open): the first edit splices its value into it (:meth:`.Image.learn_parse`).
        Both kept only when ``proven_on`` is this file, unchanged on disk since it was opened, once the
        session has read it (:meth:`.FileStorage.changed`: size, mtime, inode, device; a lease broken)."""
        self.path = os.fspath(path)
        self.base = Image(self.path)
        """The file as read (never changed)."""
        self.source = FileStorage(self.path)
        """The file's bytes, read-only (the data region of every edited version)."""
        if keys_unique is not None and self.base.manifest is not None and _same_bytes(proven_on, self.path):
            self.base.facts.keys_unique = keys_unique
            if parse is not None:
                self.base.learn_parse(parse, parse_span, keys_unique)
        self.edits: list[Edit] = []
        self.undone: list[Edit] = []
        """Edits taken back, the last one first to redo."""
        self._images: list[Image] = [self.base]
        """The image after 0, 1, ... ``len(edits)`` edits."""
        self.version = 0
        """Counts the changes (apply, undo, redo): a re-read is current while it has not moved."""

    @property
    def image(self) -> Image:
        return self._images[-1]

    @property
    def keys_unique(self) -> bool:
        """Whether the current image's manifest is known to repeat no key (kept through manifest edits:
        :func:`~.reader.open_storage` then need not look for duplicates)."""
        return self.image.facts.keys_unique is True

    def apply(self, edit: str | Edit) -> Edit:
        """Apply one edit (``--patch`` syntax, or parsed); raises :class:`EditError`. Clears the redo list."""
        e = parse_edit(edit) if isinstance(edit, str) else edit
        img = self.image.copy()
        img.apply(e)
        self.edits.append(e)
        self._images.append(img)
        self.undone.clear()
        self.version += 1
        return e

    def undo(self) -> Edit | None:
        if not self.edits:
            return None
        e = self.edits.pop()
        self._images.pop()
        self.undone.append(e)
        self.version += 1
        return e

    def redo(self) -> Edit | None:
        if not self.undone:
            return None
        e = self.undone.pop()
        img = self.image.copy()
        img.apply(e)
        self.edits.append(e)
        self._images.append(img)
        self.version += 1
        return e

    def edit_list(self) -> list[str]:
        """Each edit in ``--patch`` syntax, oldest first."""
        return [str(e) for e in self.edits]

    def patch_command(self, out: str = "OUT.onemodel") -> str:
        """The shell command that makes the same file: ``onemodel-view --patch IN OUT EDIT...``."""
        return " ".join(shlex.quote(a) for a in ["onemodel-view", "--patch", self.path, out, *self.edit_list()])

    def storage(self) -> OverlayStorage:
        return OverlayStorage(self.image, self.source, self.path)

    def document(self, mode: str = "diagnose") -> "Document":
        """The edited file opened by the reader (diagnose mode: every problem, never raises for contents)."""
        from ..reader import open_storage

        image, keep = self.image, []
        doc = open_storage(self.path, self.storage(), mode=mode, keys_unique=self.keys_unique,
                           parse=image.manifest_parse(), keep=keep)
        if keep and not keep[0].stdlib and image.manifest_parse() is None:  # orjson's values: spliced into next
            for other in self._images:  # one parse and what was spliced into it: ~5x the manifest's bytes each
                if other.facts is not image.facts:
                    other.facts.value = None
            image.learn_parse(keep[0].value, doc.manifest_span, doc.keys_unique)
        return doc

    def save_as(self, dst: str) -> None:
        """Write the edited file to ``dst`` atomically; ``FormatError(Io)`` when ``dst`` is the input file."""
        dst = os.fspath(dst)
        refuse_sources(dst, [self.path])  # os.path.samefile: the same file under any name (symlink, hard link)
        self.image.write(dst)

    def close(self) -> None:
        self.source.close()


def _same_bytes(storage: Storage | None, path: str) -> bool:
    """Whether ``storage`` holds the bytes the file at ``path`` has now (it is that file, not changed since it was opened)."""
    if not isinstance(storage, FileStorage) or storage.changed():
        return False
    try:
        return os.path.samefile(storage.path, path)
    except OSError:
        return False


def verdict_change(before, after) -> dict:
    """Problems and findings (keyed by kind/code and where) that appeared in ``after`` / disappeared from ``before``.

    ``before`` and ``after`` have ``problems`` and ``findings`` (a document, a ``--check`` result).
    """
    def keys(result):
        return ({(p.kind.value, p.where): p for p in result.problems}, {(f.code, f.where): f for f in result.findings})

    (bp, bf), (ap, af) = keys(before), keys(after)
    return {
        "appeared": {"problems": [ap[k] for k in ap if k not in bp], "findings": [af[k] for k in af if k not in bf]},
        "disappeared": {"problems": [bp[k] for k in bp if k not in ap], "findings": [bf[k] for k in bf if k not in af]},
    }

