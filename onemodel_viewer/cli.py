"""Command line: argument parsing and dispatch. Heavy imports happen per command.

Contract (scripts rely on it; see docs/cli.md):

=====================================================  ==========================================
``onemodel-view FILE``                                 the viewer (0)
``onemodel-view --diff A B``                           the viewer in diff mode (0)
``onemodel-view --check [--json] [--strict] FILE...``  0 all valid, 1 a problem, 2 usage
``onemodel-view --diff A B --json`` / ``--summary``    0 equal, 1 different, 2 error or a file with problems
``onemodel-view --convert SRC.onnx DST.onemodel``      0 ok, 1 error
``onemodel-view --export SRC.onemodel DST.onnx``       0 ok, 1 error
``onemodel-view --patch IN OUT EDIT... [--raw]``       0 written, 1 error, 2 usage
``onemodel-view --shrink IN OUT [--seconds N]``        0 written, 1 nothing to shrink or error
``onemodel-view --extract FILE NAME OUT.npy``          0 written, 1 error
``onemodel-view --stats [--json] FILE``                0 done, 1 error
``onemodel-view --graph FILE OUT.(dot|svg) [--depth N]`` 0 written, 1 error, 2 usage
=====================================================  ==========================================
"""

from __future__ import annotations

import argparse
import os
import sys


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="onemodel-view",
        description="View, check, diff and convert OneModel (.onemodel), ONNX and ONNX Runtime (.ort) files.",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="validate FILE... and report every problem")
    mode.add_argument("--diff", action="store_true", help="compare two files A B")
    mode.add_argument("--convert", action="store_true", help="convert SRC.onnx to DST.onemodel")
    mode.add_argument("--export", action="store_true", help="export SRC (.onemodel, .onnx or .ort) to DST.onnx, or to an ONNX Runtime file when DST ends in .ort")
    mode.add_argument("--patch", action="store_true",
                      help="write IN with EDITs as OUT: header.<field>=N, <manifest path>=<JSON>, bytes@<offset>=<hex>, truncate=N")
    mode.add_argument("--shrink", action="store_true", help="write a small OUT that fails like IN's first problem")
    mode.add_argument("--extract", action="store_true", help="write tensor NAME of FILE to OUT.npy")
    mode.add_argument("--stats", action="store_true", help="statistics of every tensor of FILE")
    mode.add_argument("--graph", action="store_true", help="draw FILE as OUT.dot or OUT.svg (--depth N|full)")
    p.add_argument("--json", action="store_true", help="machine-readable output (--check, --diff, --patch, --stats)")
    p.add_argument("--raw", action="store_true", help="--patch: keep the header as it is after manifest edits")
    p.add_argument("--seconds", type=float, default=60.0, help="--shrink: time budget (default 60)")
    p.add_argument("--summary", action="store_true", help="readable report instead of the viewer (--diff)")
    p.add_argument("--top", type=int, metavar="N", default=None,
                   help="--diff --summary: list the N most-changed tensors (default 20)")
    p.add_argument("--strict", action="store_true", help="--check: findings count as failures too")
    p.add_argument("--depth", metavar="N", default=None, help="--graph: scope depth drawn, or 'full' (default: at most ~200 boxes)")
    ex = p.add_argument_group("--export external data")
    ex.add_argument("--external-data", nargs="?", const="", default=None, metavar="LOCATION",
                    help="weights to LOCATION (default DST.data, relative to DST's folder; give it as --external-data=LOC)")
    ex.add_argument("--size-threshold", metavar="BYTES", default=None, help="tensors of at least BYTES go external (default 1024)")
    ex.add_argument("--align", metavar="N", default=None, help="every external offset a multiple of N, a power of two (default 4096); "
                    "DST.ort: every tensor payload's offset (default 64)")
    ex.add_argument("--max-file-size", metavar="SIZE", default=None,
                    help="split weights over LOCATION, LOCATION.1... each at most SIZE (1MiB, 2G...) unless one tensor is larger")
    ex.add_argument("--keep-external", action="store_true",
                    help="tensors already external in an .onnx SRC keep pointing at their files; the others go to DST.data")
    p.add_argument("--download", action="store_true", help="a URL whose server ignores Range: fetch it once to a temporary file")
    p.add_argument("--deep", action="store_true", help="--check of a URL: fetch padding and unowned bytes for their findings too")
    p.add_argument("files", nargs="*", metavar="FILE")
    from . import __version__

    p.add_argument("--version", action="version", version=f"onemodel-view {__version__}")
    return p


def _export_options(parser, args):
    """The ExternalOptions the --export flags ask for (None: none given); usage errors are argparse's."""
    if args.export and args.files[-1:] and args.files[-1].lower().endswith(".ort"):
        return None  # DST.ort: run_export_ort reads --align (and refuses the external-data flags) itself
    given = [f for f, v in (("--external-data", args.external_data), ("--size-threshold", args.size_threshold),
                            ("--align", args.align), ("--max-file-size", args.max_file_size)) if v is not None]
    if args.keep_external:
        given.append("--keep-external")
    if not given:
        return None
    if not args.export:
        parser.error(f"{given[0]} goes with --export")
    from .format.onnx.weights import ExternalOptions, parse_size

    def size(flag: str, text: str | None, default):
        if text is None:
            return default
        try:
            return parse_size(text)
        except ValueError as e:
            parser.error(f"{flag}: {e}")

    align = size("--align", args.align, 4096)
    if align < 1 or align & (align - 1):
        parser.error(f"--align: {align} is not a power of two")
    limit = size("--max-file-size", args.max_file_size, None)
    if limit is not None and limit < 1:
        parser.error("--max-file-size must be at least 1 byte")
    return ExternalOptions(args.external_data or None, size("--size-threshold", args.size_threshold, 1024), align, limit)


_one_shot = False
"""Set by :func:`main` for the non-interactive commands: :func:`entry` may then skip interpreter teardown."""


_viewer_returned = False
"""Set by :func:`main` once the viewer's app has returned (terminal restored): :func:`entry` then skips
interpreter teardown too (freeing a 10^6-node model took ~1.7 s between the screen's end and the prompt)."""


def main(argv: list[str] | None = None) -> int:
    global _one_shot, _viewer_returned
    parser = build_parser()
    args = parser.parse_args(argv)
    files = args.files
    _one_shot = bool(args.check or args.convert or args.export or args.patch or args.shrink or args.extract or args.stats or args.graph
                     or (args.diff and (args.json or args.summary)))

    def need(n: int | None, what: str) -> None:
        if (n is None and not files) or (n is not None and len(files) != n):
            parser.error(f"{what}")

    if args.json and not (args.check or args.diff or args.patch or args.stats):
        parser.error("--json goes with --check, --diff, --patch or --stats")
    if args.raw and not args.patch:
        parser.error("--raw goes with --patch")
    if args.seconds != 60.0 and not args.shrink:
        parser.error("--seconds goes with --shrink")
    if args.summary and not args.diff:
        parser.error("--summary goes with --diff")
    if args.top is not None and not (args.diff and args.summary):
        parser.error("--top goes with --diff --summary")
    if args.top is not None and args.top < 0:
        parser.error("--top needs a count of 0 or more")
    if args.strict and not args.check:
        parser.error("--strict goes with --check")
    if args.depth is not None and not args.graph:
        parser.error("--depth goes with --graph")
    export_options = _export_options(parser, args)
    if args.deep and not args.check:
        parser.error("--deep goes with --check")
    if any("://" in f for f in files):  # URLs: format/remote (fsspec for s3, gs, hf) is imported for them only
        from .commands.remote import prepare

        if prepare(files, download=args.download, deep=args.deep,
                   progress=bool(args.diff or args.stats or args.convert or args.export or args.extract)):
            return 1

    try:
        if args.check:
            need(None, "--check needs at least one FILE")
            from .commands.check import run_check

            return run_check(files, as_json=args.json, strict=args.strict)
        if args.convert:
            need(2, "--convert needs SRC.onnx DST.onemodel")
            from .commands.convert import run_convert

            return run_convert(files[0], files[1])
        if args.export and len(files) == 2 and files[1].lower().endswith(".ort"):
            from .commands.convert import run_export_ort

            return run_export_ort(files[0], files[1], args, parser)
        if args.export:
            need(2, "--export needs SRC.onemodel DST.onnx")
            from .commands.convert import run_export

            return run_export(files[0], files[1], export_options, keep_external=args.keep_external)
        if args.patch:
            if len(files) < 3:
                parser.error("--patch needs IN OUT EDIT...")
            from .commands.patch import run_patch

            return run_patch(files[0], files[1], files[2:], raw=args.raw, as_json=args.json)
        if args.shrink:
            need(2, "--shrink needs IN OUT")
            from .commands.shrink import run_shrink

            return run_shrink(files[0], files[1], seconds=args.seconds)
        if args.extract:
            need(3, "--extract needs FILE NAME OUT.npy")
            from .commands.extract import run_extract

            return run_extract(files[0], files[1], files[2])
        if args.stats:
            need(1, "--stats needs one FILE")
            from .commands.stats import run_stats

            return run_stats(files[0], as_json=args.json)
        if args.graph:
            need(2, "--graph needs FILE OUT.dot (or OUT.svg)")
            from .commands.graph import run_graph
            return run_graph(files[0], files[1], args.depth)
        if args.diff:
            need(2, "--diff needs two files A B")
            if args.json or args.summary:
                from .commands.diff import run_diff

                return run_diff(files[0], files[1], as_json=args.json,
                                **({"top": args.top} if args.top is not None else {}))
            from .tui.app import run_diff_viewer

            return run_diff_viewer(files[0], files[1])
        need(1, "give one FILE to view (or --check/--diff/--convert/--export)")
        from .process import pause_gc

        pause_gc()  # from before the viewer's imports, not only from run_viewer on (no collections: ~5 ms less CPU)
        from .tui.app import run_viewer

        code = run_viewer(files[0])
        _viewer_returned = True
        return code
    except KeyboardInterrupt:
        print("onemodel-view: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader of our output went away (`| head`): stop quietly, as a shell tool would (128 + SIGPIPE)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


def _threads_still_busy(wait: float = 0.3) -> bool:
    """Whether a non-daemon thread (a viewer's worker) is still running after up to ``wait`` seconds.

    Interpreter exit joins such threads: ``q`` (or ctrl+c) during the viewer's background work used to
    leave the process running, screen cleared, until the work ended (minutes on 100,000 empty tensors).
    Idle executor threads, let go when the viewer's loop closed, end within the wait.
    """
    import threading
    import time

    me = threading.current_thread()
    deadline = time.monotonic() + wait
    try:
        for t in threading.enumerate():
            if t is not me and not t.daemon:
                t.join(max(0.0, deadline - time.monotonic()))
    except KeyboardInterrupt:  # a second ctrl+c: leave at once
        return True
    return any(t is not me and not t.daemon and t.is_alive() for t in threading.enumerate())


def entry() -> None:
    code = main()
    if _one_shot or _threads_still_busy() or _viewer_returned:
        # A one-shot command has written everything and closed its files (temp files are renamed or removed
        # before main returns): freeing a large parsed model and every module at exit only costs time
        # (~10 ms of a --check). Flush and leave. The viewer too, once its app has returned (Textual's own
        # cleanup is done then) and its worker threads have ended or, still busy after the wait (they
        # only read), are abandoned.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (BrokenPipeError, OSError):  # e.g. `| head` closed the pipe: nothing left to say
                pass
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
