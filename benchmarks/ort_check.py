"""Benchmark: ``--check`` of a large real ``.ort`` file against a bare walk with ORT's generated bindings.

    python -m benchmarks.ort_check [--initializers 4000] [--elements 2048] [--repeat 5]

Makes ``/tmp/omv-bench-ort/big.onnx`` (N float32 initializers of E elements, a chain of N Add
nodes) and converts it with ONNX Runtime (``optimized_model_filepath``, optimisations off) into
``big.ort`` (N=4000, E=2048: ~33 MB, 4,000 initializers). Then, alternating runs, whole
processes: ``onemodel-view --check big.ort`` and the baseline ``python -c`` that walks every node
(op type, name, inputs, outputs) and every initializer (name, dims, data type, raw_data length)
with the wheel's generated bindings, without verification and without touching a payload.
Target: the check takes at most 2x the baseline. Also: an open reads no payload bytes (the
payload pages are not resident after the reader's walk over a mapping without readahead: ``mincore``).
Needs onnxruntime (skips otherwise).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from .proc import run_proc
from .run import ov_cmd

DIR = "/tmp/omv-bench-ort"

BASELINE = r"""
import sys, importlib.util, os
spec = importlib.util.find_spec("onnxruntime")
sys.path.insert(0, os.path.join(list(spec.submodule_search_locations)[0], "tools", "ort_format_model"))
from ort_flatbuffers_py.fbs.InferenceSession import InferenceSession
with open(sys.argv[1], "rb") as f:
    buf = f.read()
s = InferenceSession.GetRootAs(buf, 0)
g = s.Model().Graph()
n = 0
for i in range(g.NodesLength()):
    node = g.Nodes(i)
    node.OpType(); node.Name()
    [node.Inputs(j) for j in range(node.InputsLength())]
    [node.Outputs(j) for j in range(node.OutputsLength())]
    n += 1
for i in range(g.InitializersLength()):
    t = g.Initializers(i)
    t.Name(); t.DataType(); [t.Dims(j) for j in range(t.DimsLength())]; t.RawDataLength()
    n += 1
print(n)
"""


def make(n: int, e: int) -> str:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    os.makedirs(DIR, exist_ok=True)
    dst = os.path.join(DIR, f"big-{n}-{e}.ort")
    if os.path.exists(dst):
        return dst
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(e).astype(np.float32), f"w{i}") for i in range(n)]
    nodes = [helper.make_node("Add", ["x" if i == 0 else f"h{i - 1}", f"w{i}"], [f"h{i}" if i < n - 1 else "y"], name=f"add{i}")
             for i in range(n)]
    g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [e])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [e])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    src = os.path.join(DIR, "big.onnx")
    onnx.save(m, src)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.optimized_model_filepath = dst
    so.add_session_config_entry("session.save_model_format", "ORT")
    ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])
    os.unlink(src)
    return dst


def payload_pages_resident(path: str) -> tuple[int, int]:
    """(resident, total) pages wholly inside initializer payloads after the reader's walk and import.

    ``posix_fadvise(DONTNEED)`` drops the file's clean pages first; the walk then reads the file
    through a mapping without readahead; payload pages that became resident were read by it.
    """
    import ctypes
    import mmap

    from onemodel_viewer import format as omf

    from onemodel_viewer.format.ort.importer import Importer
    from onemodel_viewer.format.ort.verify import Walker
    from onemodel_viewer.format.reader import Reporter

    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    # the reader's walk over a mapping without readahead (MADV_RANDOM): the kernel would otherwise
    # read the pages around every table, payloads included, and mincore could not tell who read what
    walked = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    walked.madvise(mmap.MADV_RANDOM)
    size = os.fstat(fd).st_size
    root = Walker(walked, size, Reporter(True)).root()
    imp = Importer(Reporter(True), walked, None)
    imp.session(root)
    os.close(fd)
    try:
        page = mmap.PAGESIZE
        pages = set()
        for p in imp.payloads:
            first, last = (p.offset + page - 1) // page, (p.offset + p.length) // page  # pages wholly inside the payload
            pages.update(range(first, last))
        libc = ctypes.CDLL(None, use_errno=True)
        with open(path, "rb") as f:  # a private mapping (writable for ctypes, never written): mincore sees the page cache
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
            vec = (ctypes.c_ubyte * ((size + page - 1) // page))()
            anchor = ctypes.c_char.from_buffer(mm)
            rc = libc.mincore(ctypes.c_void_p(ctypes.addressof(anchor)), ctypes.c_size_t(size), vec)
            resident = sum(1 for i in pages if vec[i] & 1) if rc == 0 else -1
            del anchor
            mm.close()
        return resident, len(pages)
    finally:
        walked.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--initializers", type=int, default=4000)
    ap.add_argument("--elements", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args(argv)
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        print("onnxruntime is not installed: skipped")
        return 0
    path = make(a.initializers, a.elements)
    check = [*ov_cmd(), "--check", path]
    base = [sys.executable, "-c", BASELINE, path]
    r = run_proc(check)
    assert r.rc == 0, r.out + r.err
    run_proc(base)
    ours, theirs = [], []
    for _ in range(a.repeat):
        ours.append(run_proc(check).seconds)
        theirs.append(run_proc(base).seconds)
    mo, mb = statistics.median(ours), statistics.median(theirs)
    size = os.path.getsize(path)
    print(f"file {path}: {size / 1e6:.1f} MB, {a.initializers} initializers, {a.initializers} nodes")
    print(f"--check (whole process)        median {mo * 1000:.0f} ms  runs {[round(x * 1000) for x in ours]}")
    print(f"bindings walk (whole process)  median {mb * 1000:.0f} ms  runs {[round(x * 1000) for x in theirs]}")
    print(f"ratio {mo / mb:.2f} (target <= 2.00): {'pass' if mo <= 2 * mb else 'FAIL'}")
    res, total = payload_pages_resident(path)
    print(f"payload pages resident after the reader's walk and import: {res} of {total} (target 0)")
    return 0 if mo <= 2 * mb else 1


if __name__ == "__main__":
    sys.exit(main())
