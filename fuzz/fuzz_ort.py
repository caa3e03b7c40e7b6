#!/usr/bin/env python3
"""Coverage-guided fuzzing of the ``.ort`` reader (atheris), through the same harness as OneModel.

``fuzz_reader.exercise`` opens its input by content, and ``ORTM`` at bytes 4..8 selects the ORT
reader whatever the name: strict and diagnose opens, every tensor's ``values()`` and statistics,
the diff against a OneModel file, ``--check`` both ways. Only ``FormatError`` may escape.

    python fuzz/fuzz_ort.py --seed /tmp/ort-corpus          # seed: testdata/hostile/ort/*.ort
    python fuzz/fuzz_ort.py /tmp/ort-corpus -max_total_time=300 -timeout=10 -rss_limit_mb=2048

``tests/test_ort_fuzz.py`` runs the harness on the seeds and on hypothesis mutations of base.ort.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "testdata" / "hostile" / "ort"


def seed_files() -> list[Path]:
    return sorted(SEEDS.glob("*.ort"))


def exercise(data: bytes) -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        import fuzz_reader
    finally:
        sys.path.pop(0)
    return fuzz_reader.exercise(data)


def main() -> None:
    if len(sys.argv) >= 3 and sys.argv[1] == "--seed":
        out = Path(sys.argv[2])
        out.mkdir(parents=True, exist_ok=True)
        for p in seed_files():
            shutil.copy(p, out / p.name)
        print(f"copied {len(seed_files())} seeds to {out}")
        return
    import atheris

    with atheris.instrument_imports():
        import onemodel_viewer.format.ort.importer  # noqa: F401
        import onemodel_viewer.format.ort.verify  # noqa: F401

    def test_one_input(data: bytes) -> None:
        exercise(data)

    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
