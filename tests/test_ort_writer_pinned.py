"""The exact bytes ``write_ort`` writes, pinned: a SHA-256 prefix per model and alignment, taken from the
writer as first merged (commit 490a6df, before the speed work of issue 26). Any change in the layout (table order,
vtable sharing, string placement, padding, payload positions) fails here; if one is ever meant, it
must be checked again against ONNX Runtime (tests/test_ort_writer.py) before the pins are renewed.

Sources: the ``testdata/valid`` models the writer accepts (the .onnx files, and the .onemodel files
without an .onnx twin: every .onemodel twin writes the same bytes as its .onnx) and the 4 MiB
benchmark model (``benchmarks.make_models``, ~1,400 nodes: the LLM-shaped graph the benchmark times).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnx")

from onemodel_viewer import format as omf  # noqa: E402
from onemodel_viewer.format.ort.writer import write_ort  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
VALID = ROOT / "testdata" / "valid"
PINNED = {
    "dtypes.onnx": {1: "d6c0448261b8c7b2fa385d458a862f0f", 64: "8a909de4301273fd6466824bf3b3fa6c", 4096: "5a9a5799ce3de8c3c5f657a499811fb2"},
    "external.onnx": {1: "393d34df463557ec779d59582ea15777", 64: "75e5015056c8f69735bfc79625bff280", 4096: "287f97df281fe92d143928df6560c3c3"},
    "functions.onnx": {1: "b1c6d8e47daa1af9cbd210ad347452b1", 64: "3dd774f846e7ba3d6bea8dee79890c74", 4096: "f9396c61847332eac61c3a29ed67eab5"},
    "out_of_order.onnx": {1: "e7778338a527eade1fc0aeb7e04ba45a", 64: "e7778338a527eade1fc0aeb7e04ba45a", 4096: "e7778338a527eade1fc0aeb7e04ba45a"},
    "shared_bytes.onemodel": {1: "9ad8ffc135ddb6cbab1e458de39a4ba7", 64: "b07d71904039c48a3559c4d6551ce228", 4096: "2f67d48b408999966a427df824da766f"},
    "showcase.onnx": {1: "91f760513ffc772dc7f9a73511009a77", 64: "2417694767b83c2fc7e05ddae255d931", 4096: "24bdba233b989151213fc78fbba66396"},
    "sparse.onnx": {1: "e69e808eca5b881f04fd367429fe11f4", 64: "b1d6cc1f9c6ab644d93e8ef8aff81f8b", 4096: "0398e5c6ef2b1f220dfc1b32e6ea1a5b"},
    "strings.onnx": {1: "e600847ed870b5ef0d174a0921c50c52", 64: "e600847ed870b5ef0d174a0921c50c52", 4096: "e600847ed870b5ef0d174a0921c50c52"},
    "subgraphs.onnx": {1: "05928912924fd5b5e02f04a680052919", 64: "c361ddac9c16a42474b0307d80e9bf60", 4096: "4f1cb668f2e5aeb2b10ce620a6ee01ba"},
    "typed.onnx": {1: "1b8e43bfadad01fc54c5079c867bea27", 64: "eab4411c6d3f4fb1535f49f6c47b9dd8", 4096: "8c1740a1328f64c2f86e0c19c7d21ffa"},
    "unknown_fields.onemodel": {1: "d6c0448261b8c7b2fa385d458a862f0f", 64: "8a909de4301273fd6466824bf3b3fa6c", 4096: "5a9a5799ce3de8c3c5f657a499811fb2"},
}
BENCH_GENERATOR = 3
"""``benchmarks.make_models.GENERATOR_VERSION`` the benchmark model's pins were taken with."""
BENCH_PINNED = {1: "601ce52e064321b720626b2dd5269865", 64: "71245ce1401ead839ab8882a101b95ff", 4096: "e2d2f6a1c880da2aac57bb88728107d7"}


def written_hashes(src: Path, tmp_path: Path) -> dict[int, str]:
    doc = omf.open(str(src), mode="strict")
    out = {}
    try:
        for align in (1, 64, 4096):
            dst = tmp_path / f"{src.stem}-{align}.ort"
            write_ort(doc.model, dst, align=align, threads=2, warn=lambda _m: None)
            out[align] = hashlib.sha256(dst.read_bytes()).hexdigest()[:32]
            dst.unlink()
    finally:
        doc.close()
    return out


@pytest.mark.parametrize("name", sorted(PINNED))
def test_testdata_model_written_bytes_pinned(tmp_path, name):
    assert written_hashes(VALID / name, tmp_path) == PINNED[name]


def test_benchmark_model_written_bytes_pinned(tmp_path):
    """The 4 MiB benchmark model (the many-node graph whose planning the speed work changed)."""
    root = str(ROOT)
    if root not in sys.path:  # `benchmarks` is not an installed package
        sys.path.insert(0, root)
    from benchmarks import make_models

    if make_models.GENERATOR_VERSION != BENCH_GENERATOR:
        pytest.skip("the benchmark model generator changed: take new pins with the writer of the last pin")
    make_models.build(str(tmp_path / "bench"), make_models.parse_size("4M"))
    assert written_hashes(tmp_path / "bench" / "model_ext.onnx", tmp_path) == BENCH_PINNED
