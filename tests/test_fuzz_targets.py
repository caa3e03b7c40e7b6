"""Every fuzz target of ``fuzz/targets.py`` as a hypothesis test: fixed budget, derandomized (CI reproducible).

Each example takes one of the target's seeds and applies its structure-aware mutator (``fuzz/mutators.py``:
JSON manifest, protobuf fields, flatbuffer tables, ``--patch`` edit lines) one to three times, with a
``random.Random`` seeded by hypothesis. The target checks the invariants itself (strict = diagnose's first
problem, diagnose never raises, problems carry kind/where/offset inside the file, accepted files survive a
OneModel write/read round trip, rendered strings are printable); here each input also stays under
256 MiB of Python allocations (``tracemalloc``) and a 30 s hang guard (a guard, not a speed test:
``fuzz/run.py`` holds the campaign to 2 s per input).
"""

from __future__ import annotations

import random
import signal
import sys
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "fuzz"))
import mutators  # noqa: E402
import targets  # noqa: E402

sys.path.pop(0)

HANG_S = 30
MEMORY = 256 << 20
BUDGET = {"onemodel": 40, "onnx": 100, "ort": 60, "writer": 60, "ort_writer": 40, "patch": 60, "text": 200}
SEEDS = {name: targets.seed_blobs(name) for name in targets.TARGETS}


class Hang(Exception):
    pass


def guarded(fn, data: bytes) -> str:
    def on_alarm(signum, frame):
        raise Hang(f"no result after {HANG_S} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, HANG_S)
    tracemalloc.start()
    try:
        out = fn(data)
        peak = tracemalloc.get_traced_memory()[1]
        assert peak < MEMORY, f"{peak >> 20} MiB allocated for a {len(data)}-byte input"
        return out
    finally:
        tracemalloc.stop()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _mutated(name: str, which: int, seed: int, rounds: int) -> bytes:
    blobs = SEEDS[name]
    data = blobs[which % len(blobs)]
    rng = random.Random(seed)
    mutate = targets.mutator(name)
    for _ in range(rounds):
        data = mutate(data, rng, 1 << 20)
    return data


def _test(name: str):
    @settings(max_examples=BUDGET[name], deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.integers(0, 1 << 16), st.integers(0, (1 << 32) - 1), st.integers(1, 3))
    def test(which, seed, rounds):
        guarded(targets.TARGETS[name], _mutated(name, which, seed, rounds))

    test.__doc__ = f"The {name} fuzz target on {BUDGET[name]} structure-aware mutations of its seeds."
    return test


test_fuzz_onemodel = _test("onemodel")
test_fuzz_onnx = _test("onnx")
test_fuzz_ort = _test("ort")
test_fuzz_writer = _test("writer")
test_fuzz_ort_writer = _test("ort_writer")
test_fuzz_patch = _test("patch")
test_fuzz_text = _test("text")


@pytest.mark.parametrize("name", sorted(targets.TARGETS))
def test_seeds_pass_the_invariants(name):
    """The unmutated seeds: every target accepts its own (valid) seeds' invariants."""
    outcomes = [guarded(targets.TARGETS[name], b) for b in SEEDS[name]]
    assert len(outcomes) == len(SEEDS[name]) > 0
    if name in ("onemodel", "writer", "ort_writer"):
        assert "valid" in outcomes


def test_invariant_breach_is_reported():
    """The invariant checks can fail: a reader whose strict error differs from diagnose's first problem."""
    from onemodel_viewer import format as omf

    real_open = omf.open

    def lying_open(path, mode="strict"):
        if mode == "strict":
            raise omf.FormatError(omf.Kind.MALFORMED, "header.magic", 0, "made up")
        return real_open(path, mode)

    omf.open = lying_open
    try:
        with pytest.raises(targets.InvariantError, match="strict raised"):
            targets.onemodel((ROOT / "testdata" / "hostile" / "valid-base.onemodel").read_bytes())
    finally:
        omf.open = real_open


def test_flatbuffer_mutator_reaches_shared_vectors():
    """The .ort mutator makes the class of input behind the diagnose-mode hang (a vector whose entries all
    point at one object after it): without it blind byte flips did not find the hang in 9,484 runs."""
    base = (ROOT / "testdata" / "hostile" / "ort" / "base.ort").read_bytes()
    fanned = 0
    for seed in range(300):
        out = mutators.mutate_flatbuffer(base, random.Random(seed))
        objs = mutators.flatbuffer_objects(out)
        for start, length, kind in objs:
            n = (length - 4) // 4
            if kind != "vector" or n < 2 or start + 4 + 4 * n > len(out):
                continue
            tg = {start + 4 + 4 * i + int.from_bytes(out[start + 4 + 4 * i:start + 8 + 4 * i], "little") for i in range(n)}
            if len(tg) == 1:
                fanned += 1
                break
    assert fanned >= 10, fanned


def _corpus_files() -> list[Path]:
    h = ROOT / "testdata" / "hostile"
    files = sorted(h.glob("*.onemodel")) + sorted((h / "ort").glob("*.ort")) + sorted((h / "onnx").glob("*.onnx"))
    files += sorted((ROOT / "testdata" / "external").glob("*/*.onnx"))
    return [p for p in files if p.stat().st_size < 2 << 20]


@pytest.mark.parametrize("path", _corpus_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_hostile_corpus_keeps_the_invariants(path):
    """Invariants 1-3 and 5 on every committed hostile file. Regression (found by the ort target): a field
    whose vtable slot points past the file gave diagnose mode a second problem with an offset outside
    the file (``Malformed-attribute-type-past-file.ort``)."""
    err, doc = targets.open_both(str(path))
    try:
        targets.rendered_safely(doc)
    finally:
        doc.close()


ONNX_HOSTILE = ROOT / "testdata" / "hostile" / "onnx"
ONNX_EXPECTED = __import__("json").loads((ONNX_HOSTILE / "expected.json").read_text())


@pytest.mark.parametrize("name", sorted(ONNX_EXPECTED))
def test_onnx_findings_fail_at_their_where(name):
    """ONNX inputs the onnx target found (testdata/hostile/onnx): strict raises the pinned kind and where,
    and diagnose mode has exactly that one problem. Regression: a model without ``ir_version`` was accepted
    by the reader and then refused by the OneModel writer (``--convert`` failed on a "valid" file)."""
    from onemodel_viewer import format as omf

    want = ONNX_EXPECTED[name]
    assert sorted(p.name for p in ONNX_HOSTILE.glob("*.onnx")) == sorted(ONNX_EXPECTED)
    with pytest.raises(omf.FormatError) as e:
        omf.open(ONNX_HOSTILE / name)
    assert (e.value.kind.value, e.value.where) == (want["kind"], want["where"])
    with omf.open(ONNX_HOSTILE / name, mode="diagnose") as doc:
        assert [(p.kind.value, p.where) for p in doc.problems] == [(want["kind"], want["where"])]


def test_protobuf_mutator_swaps_nested_fields_as_copies():
    """Regression: swapping two fields where one sat inside the other made a message contain itself, and
    serialising it recursed without end (three onnx campaign runs died in the mutator)."""
    fields = mutators.parse_fields(SEEDS["onnx"][0])
    outer = next(f for f in fields if isinstance(f[2], list) and any(isinstance(x[2], list) for x in f[2]))
    inner = next(x for x in outer[2] if isinstance(x[2], list))
    mutators.swap_fields(outer, inner)
    fields.append(inner)  # a later step of the same mutation may put the inner field back in the tree
    assert isinstance(mutators.serialise(fields), bytes)


def test_ort_writer_refuses_an_opset_version_past_int32(tmp_path):
    """Regression (found by the ort_writer target): a model whose opset version does not fit a C int made
    the .ort writer's schema look-up raise onnx's TypeError; it is refused as Unsupported at the node."""
    from onemodel_viewer import format as omf
    from onemodel_viewer.format.ort.writer import write_ort

    sys.path.insert(0, str(ROOT / "testdata"))
    try:
        import make_hostile_ort as mh
    finally:
        sys.path.pop(0)
    fb = mh.FB()
    tt = fb.table("TypeInfo", value_type=1, value=fb.table("TensorTypeAndShape", elem_type=1))
    args = fb.vec([fb.table("ValueInfo", name=fb.s(n), type=tt) for n in ("x", "y")])
    node = fb.table("Node", op_type=fb.s("Relu"), inputs=fb.vec([fb.s("x")]), outputs=fb.vec([fb.s("y")]))
    g = fb.table("Graph", inputs=fb.vec([fb.s("x")]), outputs=fb.vec([fb.s("y")]), node_args=args, nodes=fb.vec([node]))
    op = fb.table("OperatorSetId", domain=fb.s(""), version=1 << 40)
    model = fb.table("Model", ir_version=8, opset_import=fb.vec([op]), graph=g)
    src = tmp_path / "big-opset.ort"
    src.write_bytes(fb.finish(fb.table("InferenceSession", ort_version=fb.s("6"), model=model)))
    with omf.open(src) as doc:
        with pytest.raises(omf.FormatError) as e:
            write_ort(doc.model, tmp_path / "out.ort", threads=1)
    assert e.value.kind == omf.Kind.UNSUPPORTED and "opset" in e.value.message
    assert not (tmp_path / "out.ort").exists()
