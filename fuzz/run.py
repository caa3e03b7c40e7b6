#!/usr/bin/env python3
"""Run one fuzz target (``fuzz/targets.py``) under atheris, or replay a corpus for coverage.

    python fuzz/run.py TARGET --seed DIR                  # write the target's seeds into DIR
    python fuzz/run.py TARGET DIR [libFuzzer flags]       # fuzz; DIR is the growing corpus
    python fuzz/run.py TARGET --coverage DIR [DIR...]     # lines of onemodel_viewer/format/ the files reach
    python fuzz/run.py TARGET --replay FILE...            # run files through the target, print outcomes
    python fuzz/run.py TARGET --time FILE                 # seconds of a warm run (no instrumentation)

TARGET is one of onemodel, onnx, ort, writer, patch, text. The structure-aware mutator of the
target (``mutators.py``) runs 3 times in 4, libFuzzer's own byte mutations the rest. Every input is
timed: one slower than ``SLOW_S`` is run again, warm, in a process without the instrumentation and,
if it is slow there too, reported as a crash
(``InvariantError``), as is an input that raises the peak RSS by more than ``MEMORY_MB``. Resume a
campaign by running the same command again: libFuzzer re-reads DIR.
"""

from __future__ import annotations

import os
import random
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SLOW_S = 2.0
"""An input of at most 1 MiB must be answered within this much CPU time (confirmed by a second run):
CPU time, not wall time, because the machine is shared and the campaign runs at nice 19."""
MEMORY_MB = 256
"""... and must not raise the process's peak RSS by more than this."""


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def uninstrumented_seconds(target: str, data: bytes) -> float:
    """The second (warm) run's CPU time of ``data`` in a fresh process without coverage instrumentation
    (atheris makes the code several times slower: the 2 s promise is about the tool as shipped)."""
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".input", delete=False) as f:
        f.write(data)
    try:
        out = subprocess.run([sys.executable, __file__, target, "--time", f.name], capture_output=True, text=True,
                             timeout=600).stdout.split()
        return float(out[-1]) if out else float("inf")
    except (subprocess.TimeoutExpired, ValueError):
        return float("inf")
    finally:
        os.unlink(f.name)


def checked(fn, target: str = ""):
    """``fn`` with the time and memory invariants."""
    import targets

    def one(data: bytes) -> None:
        before = _maxrss_mb()
        t0 = time.process_time()
        fn(data)
        took = time.process_time() - t0
        grew = _maxrss_mb() - before
        if grew > MEMORY_MB:
            raise targets.InvariantError(f"peak RSS grew by {grew:.0f} MiB on one {len(data)}-byte input")
        if took > SLOW_S and len(data) <= 1 << 20:
            again = uninstrumented_seconds(target, data)
            if again > SLOW_S:
                raise targets.InvariantError(f"{len(data)}-byte input took {took:.2f} s, then {again:.2f} s uninstrumented")

    return one


def _instrumented_imports() -> None:
    import importlib
    import pkgutil

    import onemodel_viewer.format as fmt

    for m in pkgutil.walk_packages(fmt.__path__, "onemodel_viewer.format."):
        importlib.import_module(m.name)
    for name in ("onemodel_viewer.textsafe", "onemodel_viewer.tui.widgets.safe", "onemodel_viewer.analysis.stats.compute"):
        importlib.import_module(name)


def coverage_of(target: str, dirs: list[str]) -> None:
    import coverage

    import targets

    files = sorted(p for d in dirs for p in Path(d).iterdir() if p.is_file())
    cov = coverage.Coverage(source=["onemodel_viewer.format"], data_file=None)
    cov.start()
    fn = targets.TARGETS[target]
    for p in files:
        try:
            fn(p.read_bytes())
        except Exception:  # noqa: BLE001 - a crash file still counts for coverage
            pass
    cov.stop()
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "coverage.json")
        cov.json_report(outfile=out)
        totals = json.load(open(out))["totals"]
    print(f"{target}: {len(files)} inputs reach {totals['covered_lines']} of {totals['num_statements']} statements "
          f"of onemodel_viewer/format/ ({totals['percent_covered']:.1f}%)")


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    target = sys.argv.pop(1)
    import targets

    if target not in targets.TARGETS:
        sys.exit(f"unknown target {target!r}: one of {', '.join(targets.TARGETS)}")
    if sys.argv[1] == "--seed":
        out = Path(sys.argv[2])
        out.mkdir(parents=True, exist_ok=True)
        blobs = targets.seed_blobs(target)
        for i, b in enumerate(blobs):
            (out / f"seed-{i:03d}").write_bytes(b)
        print(f"{len(blobs)} seeds in {out}")
        return
    if sys.argv[1] == "--coverage":
        coverage_of(target, sys.argv[2:])
        return
    if sys.argv[1] == "--time":
        fn, data = targets.TARGETS[target], Path(sys.argv[2]).read_bytes()
        for _ in range(2):
            t0 = time.process_time()
            try:
                fn(data)
            except Exception:  # noqa: BLE001 - timing only; the campaign reports the failure itself
                pass
        print(f"{time.process_time() - t0:.3f}")
        return
    if sys.argv[1] == "--replay":
        one = checked(targets.TARGETS[target], target)
        for f in sys.argv[2:]:
            t0 = time.process_time()
            try:
                one(Path(f).read_bytes())
                print(f"{f}: ok ({time.process_time() - t0:.3f} s)")
            except Exception as e:  # noqa: BLE001 - report every outcome
                print(f"{f}: {type(e).__name__}: {str(e)[:300]}")
        return
    import atheris

    with atheris.instrument_imports():
        _instrumented_imports()
        if target == "patch":
            import onemodel_viewer.commands.patch  # noqa: F401
    one = checked(targets.TARGETS[target], target)
    mutate = targets.mutator(target)

    def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
        rng = random.Random(seed)
        if rng.random() < 0.25:
            return atheris.Mutate(data, max_size)
        return mutate(data, rng, max_size)

    atheris.Setup(sys.argv, one, custom_mutator=custom_mutator)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
