"""Open an ``.ort`` file: verify, import, resolve names, collect facts and findings."""

from __future__ import annotations

from ..document import Document
from ..errors import FormatError, Kind
from ..storage import FileStorage
from .facts import VERSIONS, OrtFacts, unowned_runs
from .importer import Importer
from .verify import Walker

CANNOT_RESTORE = ("from an .ort file, not restored: the original opset list (ONNX Runtime lists every domain it "
                  "registers), which attribute values were defaults, Constant nodes (now initializers), unused "
                  "initializers, graph names (made up: main, then_branch...), tensor doc strings, inlined functions")
"""What ``--convert``/``--export`` of an ``.ort`` file say they cannot give back."""
PADDING = 8
"""Unowned runs shorter than this are the builder's alignment padding; longer ones are an ``unowned-bytes`` finding."""


def open_ort(path: str, mode: str, storage: FileStorage, report, resolve) -> Document:
    """Read ``storage`` (the file at ``path``, already open) as an ORT model.

    ``report``: a reader ``Reporter`` (strict raises the first problem); ``resolve(model, report)``
    applies the reading rules of section 3 (the OneModel reader's, passed in: no import cycle).
    The document owns ``storage`` (closed on a strict failure).
    """
    doc = Document(path, "ort", storage.size, storage=storage, mode=mode)
    try:
        _read(doc, storage, report, resolve)
    except FormatError:
        storage.close()
        raise
    except RecursionError as e:  # pragma: no cover - the depth limits come first
        storage.close()
        raise FormatError(Kind.UNSUPPORTED, "InferenceSession", None, "nested too deeply") from e
    doc.problems = report.problems
    doc.findings = report.findings
    return doc


def _read(doc: Document, storage: FileStorage, report, resolve) -> None:
    size = storage.size
    need = None
    if getattr(storage, "remote", False):  # a file at a URL: the walk fetches what it reads, payloads stay
        from ..remote.lazy import LazyCopy

        lazy = LazyCopy(storage)
        buf, need = lazy.buf, lazy.need
        walker = Walker(buf, size, report, need=need, hint=lazy.hint)
    else:
        buf = storage.buffer()
        walker = Walker(buf, size, report)
    facts = OrtFacts()
    doc.extra = facts
    root = walker.root()
    spans = walker.spans
    spans.sort()
    facts.spans = spans  # (start, length, kind, owner) tuples: ~10^5 of them in a large model, no records
    facts.starts = [s[0] for s in spans]
    facts.unowned = tuple(unowned_runs(spans, size, presorted=True))
    facts.tables_visited = walker.tables
    if root is None:
        return
    imp = Importer(report, buf, storage)
    model = imp.session(root)
    facts.version = imp.version
    facts.version_offset = imp.version_offset
    facts.readers = VERSIONS.get(imp.version, "")
    facts.kernel_type_strs = imp.kernel_type_strs(root)
    facts.runtime_optimizations = tuple(imp.optimizations)
    facts.nodes = imp.nodes
    facts.payloads = tuple(imp.payloads)
    facts.tables = imp.tables
    if model is None:
        return
    doc.model = model
    resolve(model, report)
    if not report.problems:
        payloads = {s[0] for s in spans if s[2] == "payload"}
        for start, length in facts.unowned:
            if length >= PADDING and not aligning(buf, start, length, payloads, need):
                report.finding("unowned-bytes", "file", start, f"{length} bytes at {start} that no table, vector or string owns")


MAX_ALIGN_PADDING = 1 << 20


def aligning(buf, start: int, length: int, payloads: set[int], need=None) -> bool:
    """True when the unowned run ``start..start+length`` is a writer's alignment padding: zeros right
    before a ``[uint8]`` vector whose bytes start at a multiple of a power of two larger than the run
    (``--export X.ort --align N`` writes such runs before each payload). ``need``: a file at a URL's
    lazy copy fetches the run before it is looked at (:class:`..remote.lazy.LazyCopy`)."""
    data = start + length + 4
    if data not in payloads or length >= MAX_ALIGN_PADDING:
        return False
    if length >= (data & -data):  # the largest power of two dividing the payload's offset
        return False
    if need is not None:
        need(start, length)
    return not any(buf[start:start + length])  # a mapping, bytes, or a remote file's lazy sequence
