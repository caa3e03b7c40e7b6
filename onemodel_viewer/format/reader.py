"""The OneModel reader: header, manifest, schema, reading rules (spec sections 1-3), strict or diagnose.

``open_path(path, mode)`` sniffs the first 8 bytes: ``ONEMODEL`` goes to this reader; a file
that does not end in ``.onemodel``, has at least 8 bytes and does not start with something close
to the magic goes to the ONNX importer (``onnx_import.import_onnx``); anything else is read here
(and fails at ``header.magic``).

The parts: :mod:`.reporter` (strict raises, diagnose records: one code path for both modes),
:mod:`.builder` / :mod:`.builder_tensor` (JSON values -> records), :mod:`.rules` (section 3's
reading rules, ``resolve(model, report)``, shared with the ONNX and ORT importers), and this
module: opening, sniffing, the header and manifest steps.

Decisions the spec leaves open (see also CLARIFICATIONS.md, ``header.py`` and ``manifest.py``):

* A ``where`` points at the JSON value that holds the offending thing. Names: a duplicate
  definition is reported at the second definition's name string (``...inputs[1].name``,
  ``...initializers[2].name``, ``...sparse_initializers[0].values.name``,
  ``...nodes[3].outputs[0]``); an undefined name at the reference (``...nodes[3].inputs[1]``,
  ``...outputs[0].name``, ``manifest.functions[0].outputs[1]``). A graph or function output named
  ``""`` is such an undefined name (``""`` as an omitted operand is for node operands only).
* Tensor element count at 2^60 or more: **Unsupported** at ``...dims`` (the reader does not
  handle it; it is not "impossible"). A negative dim: InvalidModel at ``...dims[i]``.
* Tensor ``data``: negative or non-integer offset/length: Malformed at ``.data.offset`` /
  ``.data.length``; length not ``ceil(count*bits/8)``: InvalidModel at ``.data.length``; length
  over 2^31-1: Unsupported at ``.data.length``; offset not a multiple of 64 (length > 0):
  Malformed at ``.data.offset``; ``offset + length > data_length``: Malformed at ``.data``.
  The two range problems carry the claimed file offset (data_offset + offset).
* A string tensor with ``data``: Malformed at ``.data``; a non-string tensor with ``strings``:
  Malformed at ``.strings``; string count not the element count: InvalidModel at ``.strings``.
* base64 must be canonical RFC 4648 (alphabet, padding, zero pad bits): else Malformed.
* Sparse tensors: ``values`` and ``indices`` required, ``dims`` optional.
* Opset entries: ``version`` required, ``domain`` optional. Function nodes may use the domains of
  the function's ``opsets`` or the model's.
* An attribute ``ref`` outside a function, or naming neither an ``attribute_names`` entry nor an
  ``attribute_defaults`` name of its function: **InvalidModel** at ``...attributes[k].ref``
  (an undefined reference, like an undefined value name).
* Nesting: the main graph and each function body are level 1; a graph in a node attribute, a
  type in a graph (value infos, TYPE_PROTO attributes) or in a type is one more. Level 65 is
  Unsupported at that graph's/type's path.
* A node referring to an outer-scope value through a subgraph depends on that value's producer
  (implicit input) for the dependency order, as in ONNX.
* A cycle: InvalidModel at the first (lowest-index) node of one cycle, ``...nodes[i]``;
  diagnose mode still orders every node (the unorderable ones last, in stored order).
* A path that is not a regular file (FIFO, device, directory) or cannot be opened: Io at ``file``.

``open_with_manifest(path, mode)`` is ``open_path`` plus the parsed manifest JSON (``--check``
proves the manifest canonical from it: ``analysis.layout.noncanonical(doc, parsed)``).
``open_deferred(path)`` is the viewer's first-screen open: the checks of bulk node lists and the
reading rules wait for the ``finish`` it returns (the viewer's background job runs it first).

Records: graphs of ``BULK_NODES`` nodes or more get a :class:`~.schema.NodeList`. Every node is
checked at open, but the records of nodes whose attributes hold only numbers (INT, INTS, FLOAT,
FLOATS) are built on the first read of the list (``--check`` and name resolution never build
them: resolution reads each node's inputs, outputs and domain from the checked JSON). Anything
doubtful is built at open through the per-node path, so problems are the same either way
(``tests/test_reader_lazy.py`` reads every bundled file and mutation both ways).

Findings reported at open time (cheap): ``wide-data-offset``, ``missing-graph-array``,
``out-of-order`` (at the first node stored before something it reads), and in diagnose mode
``duplicate-key`` (strict opens skip its detection: it costs ~13% of an open).
``analysis.layout.all_findings`` adds the rest (padding, unowned/shared bytes, canonical form).
"""


from __future__ import annotations

import os
import stat
import sys
import threading
from typing import TYPE_CHECKING, Callable

from ..process import paused_gc
from .onemodel import header as _header
from . import ort as _ort
from .document import HEADER_SIZE, Document
from .errors import Finding, FormatError, Kind
from .manifest_path import join
from .reporter import LOCATE, LOCATE_CAP, Reporter
from .rules import Stopped, resolve
from .storage import FileStorage

if TYPE_CHECKING:  # pragma: no cover
    from .onemodel import manifest as _manifest
    from .onemodel.builder import Builder

# The manifest parser and the builder are imported where a OneModel manifest is read: a process that
# opens only ONNX files (--convert of one, its --check) does not load them (~8 ms CPU at start)

__all__ = ["BULK_NODES", "LOCATE_CAP", "Reporter", "duplicate_key_findings", "open_deferred", "open_path", "open_storage",
           "open_with_manifest", "resolve", "sniff_onemodel"]

BULK_NODES = 32
"""Graphs with at least this many nodes, all stored as writers store them (:func:`.builder.plain_nodes`), get a lazily built :class:`~.schema.NodeList`."""


def duplicate_key_findings(manifest: bytes, base: int = 64, parsed: _manifest.Parsed | None = None,
                           step=None) -> list[Finding] | None:
    """``duplicate-key`` findings of a manifest that parses (else []).

    ``parsed``: the manifest's parse, which spares parsing it again; its duplicate keys are detected
    now if they were not (:func:`.manifest.with_duplicates`, with ``step``: a piece at a time; None
    when ``step()`` said stop).
    """
    from .onemodel import manifest as _manifest

    report = Reporter(False, LOCATE_CAP)
    report.manifest = manifest
    report.base = base
    if parsed is None:
        try:
            parsed = _manifest.parse(manifest, base)
        except FormatError:
            return []
    parsed = _manifest.with_duplicates(manifest, parsed, step)
    if parsed is None:
        return None
    _finding_duplicates(report, parsed)
    return report.findings


def _finding_duplicates(report: Reporter, parsed: _manifest.Parsed) -> None:
    if not parsed.duplicates:
        return
    dup_ids = {id(d): keys for d, keys in parsed.duplicates}
    stack = [(parsed.value, "manifest")]
    while stack and dup_ids:
        v, w = stack.pop()
        if type(v) is dict:
            keys = dup_ids.pop(id(v), None)
            if keys is not None:
                for k in dict.fromkeys(keys):
                    report.finding(
                        "duplicate-key", join(w, k), LOCATE,
                        f"key {k!r} appears more than once in this object (the last one is used)",
                    )
            for k, x in v.items():
                if type(x) in (dict, list):
                    stack.append((x, join(w, k)))
        elif type(v) is list:
            for i, x in enumerate(v):
                if type(x) in (dict, list):
                    stack.append((x, f"{w}[{i}]"))


def sniff_onemodel(path: str, first8: bytes, size: int) -> bool:
    """True when the file goes to the OneModel reader (spec section 5 plus damaged-file rules)."""
    if first8 == _header.MAGIC:
        return True
    if os.fspath(path).lower().endswith(".onemodel") or size < 8:
        return True
    return _header.looks_like_magic(first8)


def _regular_file(path: str) -> None:
    """Refuse what is not a regular file before opening it (a FIFO would block, a device never end)."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise FormatError(Kind.IO, "file", None, f"cannot open: {e.strerror or e}") from e
    if not stat.S_ISREG(st.st_mode):
        what = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise FormatError(Kind.IO, "file", None, f"cannot read: {what}")


def open_path(path, mode: str = "strict") -> Document:
    """Open a OneModel (or, by its first bytes, ONNX) file. See the module docstring."""
    return _open(path, mode, None)


def open_with_manifest(path, mode: str = "diagnose", duplicates: bool = True) -> tuple[Document, _manifest.Parsed | None]:
    """:func:`open_path`, plus the parsed manifest JSON when the OneModel reader parsed one.

    ``--check`` uses the parsed value to prove the manifest canonical cheaply
    (:func:`onemodel_viewer.analysis.layout.onemodel.noncanonical`); plain opens drop it.
    ``duplicates=False``: a diagnose open leaves ``duplicate-key`` to the caller, as a strict open
    does (``parsed.checked_duplicates`` False: :func:`duplicate_key_findings` finds them from it).
    """
    keep: list = []
    doc = _open(path, mode, keep, duplicates)
    return doc, (keep[0] if keep else None)


def open_deferred(path) -> tuple[Document, _manifest.Parsed | None, Callable[..., bool] | None]:
    """A diagnose open for a first screen: ``(document, parse, finish)``.

    As ``open_with_manifest(path, "diagnose", duplicates=False)``, but the checks of bulk node lists
    (:meth:`.builder.Builder.check_deferred`), the reading rules (:func:`.rules.resolve`: each graph's
    ``order``) and the ``missing-graph-array`` findings wait for ``finish(step=None)``: until then
    ``doc.problems`` and ``doc.findings`` hold only what the parse and the other records found, and
    :func:`~.schema.nodes_with_contents` of such a list sees only the records built so far (10^6 nodes:
    ~1 s of a ~2.3 s open, CPU). ``finish`` adds the rest to ``doc.problems`` and ``doc.findings``
    where the open would have put them, those of a node record built before it too (call it once, from
    any one thread; ``step()`` is asked between its parts: True stops it, and it returns False). ``finish`` is None when nothing waits (an ONNX
    or ``.ort`` file, a manifest that does not parse).
    """
    keep: list = []
    doc = _open(path, "diagnose", keep, False, defer=True)
    return doc, (keep[0] if keep else None), (keep[1] if len(keep) > 1 else None)


def open_storage(path, storage, mode: str = "diagnose", keys_unique: bool = False, parse: dict | None = None,
                 keep: list | None = None) -> Document:
    """Read the OneModel file whose bytes ``storage`` holds (an edited file in memory:
    :class:`~.overlay.OverlayStorage`); ``path`` names it. Like :func:`open_path` otherwise.

    ``keys_unique``: the caller has proved that no object of the manifest repeats a key (an edit
    session keeps that proof through its edits), so a diagnose open does not look for duplicates
    again: its proof re-encoded the whole manifest, 3-12 ms on 10,000 nodes in one call that no other
    thread (the UI's) could interrupt. ``parse`` (with ``keys_unique``): the manifest's bytes parsed
    already (an edit session splices each edit into the parse before it), so they are not parsed
    again: one ``orjson.loads`` of 10,000 nodes' 2.3 MB holds the interpreter 10-30 ms. ``keep``
    gets the :class:`~.manifest.Parsed` the open made or took."""
    if mode not in ("strict", "diagnose"):
        raise ValueError(f"mode must be 'strict' or 'diagnose', not {mode!r}")
    report = Reporter(mode == "strict", LOCATE_CAP)
    doc = Document(os.fspath(path), "onemodel", storage.size, storage=storage, mode=mode)
    _read(doc, storage.read(0, min(HEADER_SIZE, storage.size)), report, keep, unique=keys_unique,
          parse=parse if keys_unique else None)
    doc.problems = report.problems
    doc.findings = report.findings
    return doc


def _open(path, mode: str, keep: list | None, duplicates: bool = True, defer: bool = False) -> Document:
    if mode not in ("strict", "diagnose"):
        raise ValueError(f"mode must be 'strict' or 'diagnose', not {mode!r}")
    path = os.fspath(path)
    strict = mode == "strict"
    report = Reporter(strict, LOCATE_CAP)
    name = path
    try:
        if "://" in path:  # a URL (format/remote is imported for URLs only)
            from .remote.urls import is_url, name_of

            if is_url(path):
                from .remote import open_remote

                name = name_of(path)  # what the sniffers look at: no query string
                storage = open_remote(path)
        if name is path:
            _regular_file(path)
            storage = FileStorage(path)
    except FormatError as e:
        if strict:
            raise
        return Document(path, "onemodel", 0, problems=[e.problem])
    try:
        first = storage.read(0, min(HEADER_SIZE, storage.size))
        if first[:8] != _header.MAGIC and _ort.sniff(name, first[:8]):  # "ORTM" at 4..8, or a .ort name
            return _ort.open_ort(path, mode, storage, report, resolve)
        if not sniff_onemodel(name, first[:8], storage.size):
            from .onnx.importer import import_onnx

            if name is path:
                storage.close()
                return import_onnx(path, mode=mode)
            return import_onnx(path, mode=mode, storage=storage)
        doc = Document(path, "onemodel", storage.size, storage=storage, mode=mode)
        _read(doc, first, report, keep, duplicates, defer)
    except FormatError:
        storage.close()
        raise
    doc.problems = report.problems
    doc.findings = report.findings
    return doc


def _read(doc: Document, first: bytes, report: Reporter, keep: list | None = None, duplicates: bool = True,
          defer: bool = False, unique: bool = False, parse: dict | None = None) -> None:
    storage = doc.storage
    size = storage.size
    verdict = _header.check(first, size, report)
    h = verdict.header
    doc.header = h
    if h is None:
        return
    mlen = h.manifest_length
    if h.manifest_offset == 64 and 64 + mlen <= size:
        doc.manifest_span = (64, mlen)
    if verdict.data_ok:
        doc.data_span = (h.data_offset, h.data_length)
        aligned = _header.align_up(64 + mlen)
        if h.data_offset > aligned:
            report.finding(
                "wide-data-offset", "header.data_offset", 32,
                f"data_offset {h.data_offset} is beyond the next multiple of 64 after the manifest ({aligned})",
            )
    if not verdict.manifest_ok:
        return
    data = storage.span(64, mlen)  # the mapping's bytes, not a copy (10^6 nodes: 139 MB)
    report.manifest = data
    try:
        with paused_gc():  # ~10^5 records that all stay alive: collecting during the build is ~1/3 of an open
            built = _with_stack_room(_parse_and_build, data, h, verdict, report, storage, keep, duplicates, defer,
                                     unique, parse)
    finally:
        # lazily built node lists keep the builder (and this reporter) alive: not the manifest bytes
        report.release_manifest()
        data.release()
    doc.model = built
    if report.keys_checked:
        doc.keys_unique = report.unique_keys


_STACK_ROOM = 800
"""Frames the parse, build and resolve of the deepest legal model need, with room to spare (64
nested graphs: 514 measured on Python 3.11, 386 on 3.12 and 3.13; 63 nested types: 137)."""


def _with_stack_room(fn, *args):
    """``fn(*args)``, on a fresh thread's stack when this thread is within :data:`_STACK_ROOM`
    frames of the recursion limit: a deep caller gets no RecursionError from a legal model, and
    the limit, like every process-wide setting, stays as it is (any thread may open a file)."""
    limit = sys.getrecursionlimit()
    depth, f = 0, sys._getframe()
    while f is not None and depth + _STACK_ROOM <= limit:
        depth += 1
        f = f.f_back
    if depth + _STACK_ROOM <= limit:
        return fn(*args)
    out: list = []

    def run() -> None:
        try:
            out.append((True, fn(*args)))
        except BaseException as e:  # noqa: BLE001 - handed back to the caller's thread
            out.append((False, e))

    t = threading.Thread(target=run, name="onemodel-open", daemon=True)
    t.start()
    t.join()
    ok, result = out[0]
    if not ok:
        raise result
    return result


def _parse_and_build(data, h, verdict, report: Reporter, storage, keep: list | None, duplicates: bool = True,
                     defer: bool = False, unique: bool = False, parse: dict | None = None):
    """The model of the manifest ``data`` (None when diagnose mode could not parse it); ``defer``: see
    :func:`open_deferred` (``keep`` gets the parse, then ``finish``); ``parse``: ``data`` parsed already,
    no key repeated (see :func:`open_storage`)."""
    # Duplicate keys are findings; detecting them costs, so strict opens leave them to
    # analysis.layout.all_findings (diagnose mode, used by --check, finds them; the viewer's
    # background job, after the first screen: 10^6 nodes, 0.24 s)
    from .onemodel import manifest as _manifest
    from .onemodel.builder import Builder

    if parse is not None:
        parsed = _manifest.Parsed(parse, [], True)
    elif report.strict:
        parsed = _manifest.parse(data, 64, duplicates=False)
    else:
        parsed = _parse_diagnose(data, report, duplicates, unique)
    if parsed is None:
        return None
    _finding_duplicates(report, parsed)
    report.unique_keys = parsed.checked_duplicates and not parsed.duplicates
    report.keys_checked = parsed.checked_duplicates
    builder = Builder(
        report,
        h.data_offset if verdict.data_ok else None,
        h.data_length if verdict.data_ok else None,
        storage if verdict.data_ok else None,
        BULK_NODES,
        defer,
    )
    model = builder.model(parsed.value, h.version)
    if keep is not None:
        keep.append(parsed)
    if defer:
        span = (64, len(data))
        keep.append(lambda step=None: _finish(model, builder, report, storage, span, step))
    else:
        _rules(model, builder, report)
    return model


def _rules(model, builder: Builder, report: Reporter, step=None) -> None:
    """What the open does once the records are built: the reading rules, then the arrays read as empty."""
    resolve(model, report, step)
    for w in builder.missing_arrays:
        report.finding("missing-graph-array", w, LOCATE, f"{w.rsplit('.', 1)[1]} is absent (read as empty)")


def _finish(model, builder: Builder, report: Reporter, storage, span: tuple[int, int], step) -> bool:
    """:func:`open_deferred`'s ``finish``: the deferred node checks and :func:`_rules`, the manifest
    mapped again meanwhile (problems get their offsets)."""
    data = storage.span(*span)
    report.manifest = data
    try:
        with paused_gc():
            if not _with_stack_room(builder.check_deferred, step) or (step is not None and step()):
                return False
            _with_stack_room(_rules, model, builder, report, step)
        return True
    except Stopped:
        return False
    finally:
        report.release_manifest()
        data.release()


def _parse_diagnose(data: bytes, report: Reporter, duplicates: bool = True, unique: bool = False):
    """``unique``: the caller proved that no key repeats (see :func:`open_storage`)."""
    from .onemodel import manifest as _manifest

    try:
        parsed = _manifest.parse(data, 64, duplicates and not unique)
    except FormatError as e:
        report.problems.append(e.problem)
        return None
    if unique:
        parsed.checked_duplicates = True
    return parsed
