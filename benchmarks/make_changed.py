"""A fine-tune of a benchmark model: ``python -m benchmarks.make_changed [--size 4G] [--out /tmp/omv-bench]``.

Writes next to ``OUT/<size>/model.onemodel``:

* ``model_copy.onemodel``: a byte-for-byte copy (the "equal" side of the diff figure: same work
  to read, other pages);
* ``model_changed.onemodel``: the same file with every float16/bfloat16/float32 tensor's values
  multiplied by ``1 + 0.01 * N(0, 1)`` (one seeded generator, so the same model always gives the
  same copy). NaN and ±Inf stay what they are; every other tensor (int64 shapes...) is untouched.
  Only tensor bytes change: header and manifest are the original's.

The copies are rewritten a few MiB at a time (bounded memory) and reused while the original and
this generator are unchanged (``changed.json`` records both).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

import numpy as np

from . import make_models

CHANGED_VERSION = 1
STEP = 4 << 20
"""Elements rewritten per step."""
FLOAT_CODES = {1: np.float32, 10: np.float16, 16: None}
"""float32, float16, bfloat16 (``None``: read through ml_dtypes)."""


def _stamp(src: str) -> dict:
    st = os.stat(src)
    return {"version": CHANGED_VERSION, "source": src, "source_size": st.st_size, "source_mtime": st.st_mtime_ns}


def perturb(src: str, dst: str, seed: int = 20260117) -> int:
    """Copy ``src`` to ``dst`` and scale every float tensor there by 1 + 0.01 N(0,1); returns bytes changed."""
    import ml_dtypes

    from onemodel_viewer import format as omf
    from onemodel_viewer.format.schema import all_tensors

    doc = omf.open(src)
    spans = []
    for t in all_tensors(doc.model):
        if t.dtype in FLOAT_CODES and t.length and t.file_offset is not None:
            spans.append((t.file_offset, t.length, FLOAT_CODES[t.dtype] or ml_dtypes.bfloat16))
    doc.close()
    shutil.copyfile(src, dst + ".tmp")
    rng = np.random.default_rng(seed)
    changed = 0
    with open(dst + ".tmp", "r+b") as f:
        for off, length, dt in sorted(spans, key=lambda s: s[0]):
            item = np.dtype(dt).itemsize
            for s in range(0, length, STEP * item):
                n = min(STEP * item, length - s)
                f.seek(off + s)
                x = np.frombuffer(f.read(n), dtype=dt)
                scale = 1.0 + 0.01 * rng.standard_normal(x.size, dtype=np.float32)
                y = (x.astype(np.float32) * scale).astype(dt)
                f.seek(off + s)
                f.write(y.tobytes())
            changed += length
    os.replace(dst + ".tmp", dst)
    return changed


def ensure(summary: dict) -> dict:
    """The copy and the changed copy of ``summary["onemodel"]``; returns ``{"copy", "changed", "changed_bytes"}``."""
    src = summary.get("onemodel")
    if not src:
        return {}
    folder = os.path.dirname(src)
    stamp_path = os.path.join(folder, "changed.json")
    want = _stamp(src)
    copy, changed = os.path.join(folder, "model_copy.onemodel"), os.path.join(folder, "model_changed.onemodel")
    if os.path.exists(stamp_path):
        with open(stamp_path) as f:
            have = json.load(f)
        if all(have.get(k) == v for k, v in want.items()) and os.path.exists(copy) and os.path.exists(changed):
            return have
    if os.path.exists(stamp_path):
        os.unlink(stamp_path)
    shutil.copyfile(src, copy + ".tmp")
    os.replace(copy + ".tmp", copy)
    nbytes = perturb(src, changed)
    out = {**want, "copy": copy, "changed": changed, "changed_bytes": nbytes}
    with open(stamp_path, "w") as f:
        json.dump(out, f, indent=1)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.make_changed", description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="64M", help="weight bytes of the base model: 64M, 1G, 4G... (default 64M)")
    ap.add_argument("--out", default="/tmp/omv-bench", help="output directory (default /tmp/omv-bench)")
    args = ap.parse_args(argv)
    summary = make_models.ensure(make_models.parse_size(args.size), args.out)
    print(json.dumps(ensure(summary), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
