"""``--convert SRC DST.onemodel``, ``--export SRC DST.onnx`` and ``--export SRC DST.ort [--align N]``.

Both open SRC strictly (OneModel or ONNX, the first bytes decide), write DST
through a temporary file renamed at the end, and print one line on stderr on
failure (``kind at where: message``, file strings escaped) with exit status 1;
never a traceback. Warnings (findings such as a dropped ONNX field) go to stderr
and do not fail the command.
"""

from __future__ import annotations

import os
import sys
import time

from ..format.errors import FormatError, Kind

PROG = "onemodel-view"


def _visible(text: str) -> str:
    from ..textsafe import visible

    return visible(text)


def _error(kind: Kind | str, where: str, message: str) -> int:
    print(f"{PROG}: error: {kind} at {_visible(where)}: {_visible(message)}", file=sys.stderr)
    return 1


def _open(src: str):
    """The source as a Document, strictly."""
    from ..format.reader import open_path

    return open_path(src, mode="strict")


def _same(src: str, dst: str) -> bool:
    try:
        return os.path.exists(dst) and os.path.samefile(src, dst)
    except OSError:
        return False


def _warn(doc) -> None:
    from ..analysis.layout.onemodel import all_findings

    try:
        found = all_findings(doc)  # duplicate keys, shared bytes...: what the source's readers may disagree on
    except FormatError:
        found = list(getattr(doc, "findings", ()))
    for f in found:
        print(f"{PROG}: warning: {_visible(f.where)}: {_visible(f.message)}", file=sys.stderr)
    if doc.source == "ort":  # what ONNX Runtime's converter did cannot be undone
        from ..format.ort.reader import CANNOT_RESTORE

        print(f"{PROG}: warning: {CANNOT_RESTORE}", file=sys.stderr)


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _wrote(doc, dst: str, seconds: float) -> None:
    """One line on stdout: what was written (file, size, tensors, time)."""
    from ..format.schema import all_tensors

    try:
        size = os.path.getsize(dst)
    except OSError:
        size = 0
    n = len(all_tensors(doc.model))
    print(f"wrote {_visible(dst)}: {size:,} bytes, {_plural(n, 'tensor')} in {seconds:.2f} s")


def _run(src: str, dst: str, action) -> int:
    if _same(src, dst):
        return _error(Kind.IO, "destination", f"refusing to overwrite the source file {dst}")
    try:
        doc = _open(src)
        try:
            if doc.model is None:  # pragma: no cover - strict mode raises instead
                p = doc.problems[0]
                return _error(p.kind, p.where, p.message)
            _warn(doc)
            started = time.monotonic()
            action(doc, dst)
            _wrote(doc, dst, time.monotonic() - started)
        finally:
            doc.close()
    except FormatError as e:
        return _error(e.kind, e.where, e.message)
    except OSError as e:
        return _error(Kind.IO, "file", f"{e.filename or ''}: {e.strerror or e}")
    except MemoryError:
        return _error(Kind.IO, "memory", "out of memory")
    except RecursionError:
        return _error(Kind.UNSUPPORTED, "file", "the model is nested too deeply")
    except Exception as e:  # never a traceback on the command line
        return _error("InternalError", "file", f"{type(e).__name__}: {e}")
    return 0


def run_convert(src: str, dst: str) -> int:
    """Write SRC (ONNX or OneModel) as the canonical OneModel file DST. 0 ok, 1 error."""
    from ..format.onemodel import writer
    from ..format.sparse_indices import widen_sparse_indices

    def action(doc, out):
        # sparse indices as ONNX requires them (INT64), as --export writes them: ORT narrows them
        writer.write(widen_sparse_indices(doc.model)[0], out, sources=[src, *doc.external_files])

    return _run(src, dst, action)


def run_export(src: str, dst: str, options=None, keep_external: bool = False) -> int:
    """Write SRC (OneModel, ONNX or ORT) as an ONNX file DST. 0 ok, 1 error.

    Weights go to external data as ``options`` (:class:`~..format.onnx_weights.ExternalOptions`:
    ``--external-data``, ``--size-threshold``, ``--align``, ``--max-file-size``) say, or, without
    options, to DST.data when they exceed protobuf's 2 GB. ``keep_external``: tensors already
    external in an ONNX SRC keep pointing at their files (no byte copied), the others go to the
    options' location. An ONNX SRC with external data is re-aligned streaming (a few chunks in memory).
    A model the ONNX file could not hold readably (nested deeper than protobuf decodes) is refused before
    anything is written: Unsupported at its deepest path (``onnx_export.proto_depth``).
    """
    from ..format.onnx import exporter as onnx_export

    def action(doc, out):
        opts = options
        if keep_external:
            from ..format.onnx.external import ExternalFacts
            from ..format.onnx.weights import ExternalOptions, keep_locations
            from ..format.schema import all_tensors

            opts = opts if opts is not None else ExternalOptions()
            facts = doc.extra if isinstance(doc.extra, ExternalFacts) else ExternalFacts()
            opts = ExternalOptions(opts.location, opts.threshold, opts.align, opts.max_file_size,
                                   keep_locations(facts.refs, all_tensors(doc.model), src, out))
        onnx_export.export_onnx(doc.model, out, sources=[src, *doc.external_files], options=opts)

    return _run(src, dst, action)


def run_export_ort(src: str, dst: str, args=None, parser=None, threads: int | None = None) -> int:
    """Write SRC (OneModel, ONNX or ORT) as an ONNX Runtime ``.ort`` file DST. 0 ok, 1 error.

    ``args``: the parsed command line (``--align N``, default 64; the ONNX external-data flags are
    usage errors here, through ``parser``). What the format cannot hold (local functions, Constant
    nodes) is changed as ONNX Runtime's converter does, with a warning on stderr.
    """
    from ..format.ort.writer import DEFAULT_ALIGN, write_ort

    align = DEFAULT_ALIGN
    if args is not None:
        for flag, value in (("--external-data", args.external_data), ("--size-threshold", args.size_threshold),
                            ("--max-file-size", args.max_file_size), ("--keep-external", args.keep_external or None)):
            if value is not None and parser is not None:
                parser.error(f"{flag} is for ONNX external data; a .ort destination keeps every tensor inline")
        if args.align is not None:
            from ..format.onnx.weights import parse_size

            try:
                align = parse_size(args.align)
            except ValueError as e:
                if parser is None:
                    raise
                parser.error(f"--align: {e}")
            if (align < 1 or align & (align - 1)) and parser is not None:
                parser.error(f"--align: {align} is not a power of two")

    def warn(message: str) -> None:
        print(f"{PROG}: warning: {_visible(message)}", file=sys.stderr)

    def action(doc, out):
        write_ort(doc.model, out, sources=[src, *doc.external_files], align=align, threads=threads, warn=warn)

    return _run(src, dst, action)
