#!/usr/bin/env python3
"""Build the ONNX external-data corpus: ``testdata/external/<case>/`` + ``expected.json``.

Each case is a folder holding ``model.onnx`` (sometimes more models) and its weights files, written
here byte by byte: tensors are ``TensorProto`` messages whose ``external_data`` entries are set by
hand, and every weights file is assembled from the case's own placement (offsets, padding, gap
fill), so the layout facts in ``expected.json`` come from what was written, not from the code
under test.

``expected.json`` maps each case to::

    {"models": {"model.onnx": {"valid": bool,
                               "problems": [[kind, where, file-or-null, offset-or-null], ...],
                               "findings": [code, ...]        # sorted, with repeats
                               "files": [{"path", "size", "tensors", "owned", "unowned", "alignment"}]}},
     "special": "fifo" | "hardlink" | null,
     "note": "..."}

``special`` cases cannot live in git (a FIFO, a second hard link): the files are written but the
special part is made by :func:`make_special` at test time (and by this script when run).
``shared`` lists the models of the case that read one weights file together.

Run ``python testdata/make_external.py`` (optionally ``--out DIR``); the output is identical on
every run. The 4 GiB sparse case is made at test time only (``big_sparse``), never committed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "external"

FLOAT, INT64 = 1, 7


def _pb():
    from onnx import TensorProto, helper

    return TensorProto, helper


def f32(n: int, start: float = 1.0) -> bytes:
    return struct.pack(f"<{n}f", *(start + i for i in range(n)))


class Tensor:
    """One external tensor: its name, dtype, dims, bytes and where they go."""

    def __init__(self, name, data: bytes, location="w.data", offset=0, *, dtype=FLOAT, dims=None, keys=None,
                 extra=(), place=True):
        self.name, self.data, self.location, self.offset = name, data, location, offset
        self.dtype = dtype
        self.dims = dims if dims is not None else [len(data) // (4 if dtype == FLOAT else 8)]
        self.keys = keys  # None: location/offset/length as placed; else the exact (key, value) entries
        self.extra = tuple(extra)
        self.place = place

    def proto(self):
        TensorProto, _ = _pb()
        t = TensorProto()
        t.name, t.data_type = self.name, self.dtype
        t.dims.extend(self.dims)
        t.data_location = TensorProto.EXTERNAL
        keys = self.keys if self.keys is not None else [("location", self.location), ("offset", str(self.offset)),
                                                         ("length", str(len(self.data)))]
        for k, v in list(keys) + list(self.extra):
            e = t.external_data.add()
            e.key, e.value = k, v
        return t


def _vi(t: Tensor):
    _, helper = _pb()
    return helper.make_tensor_value_info("y_" + t.name, t.dtype, t.dims)


def model_bytes(tensors, constants=(), subgraph_constants=(), reshape=None) -> bytes:
    """A model: each initializer through Identity to an output; Constant nodes whose value is external;
    ``reshape`` = (data, shape tensor, dims): a Reshape whose shape inference reads the shape tensor."""
    _, helper = _pb()
    nodes, outputs = [], []
    for t in tensors:
        nodes.append(helper.make_node("Identity", [t.name], ["y_" + t.name]))
        outputs.append(_vi(t))
    if reshape is not None:
        nodes.append(helper.make_node("Reshape", [reshape[0], reshape[1]], ["reshaped"]))
        outputs.append(helper.make_tensor_value_info("reshaped", FLOAT, reshape[2]))
    for t in constants:
        node = helper.make_node("Constant", [], ["y_" + t.name])
        node.attribute.append(helper.make_attribute("value", t.proto()))
        nodes.append(node)
        outputs.append(_vi(t))
    inputs = []
    if subgraph_constants:
        branch_nodes, branch_out = [], []
        for t in subgraph_constants:
            node = helper.make_node("Constant", [], ["b_" + t.name])
            node.attribute.append(helper.make_attribute("value", t.proto()))
            branch_nodes.append(node)
            branch_out.append(helper.make_tensor_value_info("b_" + t.name, t.dtype, t.dims))
        then_g = helper.make_graph(branch_nodes, "then", [], branch_out)
        else_g = helper.make_graph(
            [helper.make_node("Constant", [], ["e_" + t.name], value=helper.make_tensor("c", t.dtype, t.dims, [0] * t.dims[0]))
             for t in subgraph_constants], "else", [],
            [helper.make_tensor_value_info("e_" + t.name, t.dtype, t.dims) for t in subgraph_constants])
        inputs.append(helper.make_tensor_value_info("cond", 9, []))
        nodes.append(helper.make_node("If", ["cond"], ["if_" + t.name for t in subgraph_constants],
                                      then_branch=then_g, else_branch=else_g))
        outputs.extend(helper.make_tensor_value_info("if_" + t.name, t.dtype, t.dims) for t in subgraph_constants)
    g = helper.make_graph(nodes, "g", inputs, outputs, [t.proto() for t in tensors])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="make_external")
    m.ir_version = 8
    return m.SerializeToString()


def weights(tensors, *, fill: dict | None = None, tail: bytes = b"") -> dict[str, bytearray]:
    """Each location's bytes: tensors at their offsets, ``fill[loc]`` = (start, bytes) patches, zeros elsewhere."""
    files: dict[str, bytearray] = {}
    for t in tensors:
        if not t.place:
            continue
        buf = files.setdefault(t.location, bytearray())
        end = t.offset + len(t.data)
        if len(buf) < end:
            buf.extend(bytes(end - len(buf)))
        buf[t.offset:end] = t.data
    for loc, (start, data) in (fill or {}).items():
        buf = files[loc]
        if len(buf) < start + len(data):
            buf.extend(bytes(start + len(data) - len(buf)))
        buf[start:start + len(data)] = data
    if tail:
        next(iter(files.values())).extend(tail)
    return files


def lowbit(n: int) -> int:
    return n & -n


def facts(tensors, files: dict[str, bytes]) -> list[dict]:
    """The expected ``files`` entries, from the placement (first-use order)."""
    out = []
    order = []
    for t in tensors:
        if t.place and t.location not in order and t.location in files:
            order.append(t.location)
    for loc in order:
        mine = [t for t in tensors if t.place and t.location == loc]
        covered = set()
        for t in mine:
            covered.update(range(t.offset, t.offset + len(t.data)))
        offs = [t.offset for t in mine if t.data and t.offset]
        align = None
        if offs:
            align = min(lowbit(o) for o in offs)
        size = len(files[loc])
        out.append({"path": loc, "size": size, "tensors": len(mine), "owned": len(covered),
                    "unowned": size - len(covered), "alignment": align})
    return out


def aligned(tensors, align: int, location="w.data"):
    """Place ``tensors`` one after the other in ``location``, each offset a multiple of ``align``."""
    pos = 0
    for t in tensors:
        pos = -(-pos // align) * align
        t.location, t.offset = location, pos
        pos += len(t.data)
    return tensors


def _valid(files_facts, findings=()):
    return {"valid": True, "problems": [], "findings": sorted(findings), "files": files_facts}


def _bad(kind, where, file=None, offset=None, findings=(), files_facts=None):
    return {"valid": False, "problems": [[kind, where, file, offset]], "findings": sorted(findings),
            "files": files_facts if files_facts is not None else []}


W0 = "onnx.graph.initializers[0].external_data"


def cases():
    """(name, builder) pairs; a builder writes into a folder and returns the case's expected models."""
    out = []

    def case(fn):
        out.append((fn.__name__.replace("_", "-"), fn))
        return fn

    def write(d, tensors, *, model="model.onnx", placed=None, counted=None, fill=None, tail=b"", constants=(), sub=(),
              reshape=None):
        """Write the weights of ``placed`` (default: every tensor) and the model; the expected files entries
        and unaligned-external-data findings of ``counted`` (default: every tensor)."""
        every = list(tensors) + list(constants) + list(sub)
        files = weights(every if placed is None else placed, fill=fill, tail=tail)
        for loc, data in files.items():
            (d / loc).parent.mkdir(parents=True, exist_ok=True)
            (d / loc).write_bytes(bytes(data))
        (d / model).write_bytes(model_bytes(tensors, constants, sub, reshape))
        counted = every if counted is None else counted
        unaligned = ["unaligned-external-data" for t in counted if t.place and t.data and t.offset % 64]
        return facts(counted, files), unaligned

    def three():
        return [Tensor("a", f32(256)), Tensor("b", f32(100, 7)), Tensor("c", f32(300, -3))]

    def valid(d, ts, extra_findings=(), **kw):
        f, unaligned = write(d, ts, **kw)
        return {"model.onnx": _valid(f, list(extra_findings) + unaligned)}

    @case
    def aligned_4096(d):
        return valid(d, aligned(three(), 4096))

    @case
    def aligned_64(d):
        return valid(d, aligned(three(), 64))

    @case
    def packed(d):
        """What onnx.save_model(size_threshold=0) writes: tensors end to end, Reshape's shape tensor external too."""
        ts = aligned(three() + [Tensor("shape", struct.pack("<2q", 2, 150), dtype=INT64, dims=[2])], 1)
        return valid(d, ts, reshape=("c", "shape", [2, 150]))

    @case
    def one_file_per_tensor(d):
        ts = three()
        for t in ts:
            t.location, t.offset = t.name + ".bin", 0
        return valid(d, ts)

    @case
    def split_set(d):
        ts = three()
        for t, loc in zip(ts, ("w.data", "w.data.1", "w.data.2")):
            t.location, t.offset = loc, 0
        return valid(d, ts, ["split-external-data"])

    @case
    def shared_two_models(d):
        """Two models in one folder reading one weights file, each its own tensors."""
        ts = aligned(three(), 4096)
        fa, _ = write(d, ts[:2], model="a.onnx", placed=ts, counted=ts[:2])
        fb, _ = write(d, ts[2:], model="b.onnx", placed=ts, counted=ts[2:])
        return {"a.onnx": _valid(fa, ["unowned-bytes"]), "b.onnx": _valid(fb, ["unowned-bytes"])}

    @case
    def constant_external(d):
        """Constant nodes whose value tensors are external (attribute tensors), one in an If branch."""
        ts = aligned([Tensor("w", f32(64)), Tensor("k", f32(16, 9)), Tensor("s", f32(8, 5))], 64)
        return valid(d, ts[:1], constants=ts[1:2], sub=ts[2:])

    @case
    def gap_nonzero(d):
        """Non-zero bytes between two tensors, more than the file's alignment apart."""
        ts = [Tensor("a", f32(16), offset=0), Tensor("b", f32(16), offset=8192 + 64)]
        return valid(d, ts, ["unowned-bytes"], fill={"w.data": (1000, b"\xff" * 24)})

    @case
    def tail_bytes(d):
        return valid(d, aligned(three(), 64), ["unowned-bytes"], tail=bytes(100))

    @case
    def overlap(d):
        ts = [Tensor("a", f32(64), offset=0), Tensor("b", f32(64, 50), offset=128)]
        ts[1].data = ts[0].data[128:] + f32(32, 2)
        return valid(d, ts, ["shared-bytes"])

    @case
    def nonzero_padding(d):
        return valid(d, aligned(three(), 4096), ["nonzero-padding"], fill={"w.data": (1100, b"\x01")})

    @case
    def empty_tensor(d):
        return valid(d, aligned(three(), 64) + [Tensor("z", b"", offset=0, dims=[0])])

    @case
    def symlink_inside(d):
        """The data is a symlink to a file in a subfolder of the model's folder (onnx.checker refuses every symlink)."""
        ts = aligned(three(), 64, "store/real.data")
        f, _ = write(d, ts)
        (d / "model.onnx").write_bytes(model_bytes([Tensor(t.name, t.data, "w.data", t.offset) for t in ts]))
        os.symlink("store/real.data", d / "w.data")
        return {"model.onnx": _valid([dict(f[0], path="w.data")])}

    @case
    def hf_cache(d):
        """The Hugging Face cache: snapshots/<rev>/model.onnx and its data are links into ../../blobs/."""
        ts = aligned(three(), 4096, "model.onnx.data")
        blobs, snap = d / "blobs", d / "snapshots" / "0123abcd"
        blobs.mkdir()
        snap.mkdir(parents=True)
        data = bytes(weights(ts)["model.onnx.data"])
        model = model_bytes(ts)
        for content in (data, model):
            (blobs / hashlib.sha1(content).hexdigest()).write_bytes(content)
        os.symlink("../../blobs/" + hashlib.sha1(model).hexdigest(), snap / "model.onnx")
        os.symlink("../../blobs/" + hashlib.sha1(data).hexdigest(), snap / "model.onnx.data")
        return {"snapshots/0123abcd/model.onnx": _valid(facts(ts, {"model.onnx.data": data}))}

    @case
    def duplicate_key(d):
        ts = aligned(three(), 64)
        ts[0].extra = (("location", "w.data"),)
        return valid(d, ts, ["duplicate-key"])

    @case
    def checksum_ok(d):
        ts = aligned(three(), 64)
        ts[0].extra = (("checksum", hashlib.sha1(bytes(weights(ts)["w.data"])).hexdigest()),)
        return valid(d, ts)

    @case
    def checksum_bad(d):
        ts = aligned(three(), 64)
        ts[0].extra = (("checksum", "0" * 40),)
        return valid(d, ts, ["checksum-mismatch"])

    def broken(d, keys, problem, findings=("unowned-bytes",), prepare=None):
        """The first tensor's external_data replaced by ``keys``; the other two stay readable."""
        ts = aligned(three(), 64)
        ts[0].keys = keys
        f, unaligned = write(d, ts, counted=ts[1:])
        if prepare is not None:
            prepare(d)
        return {"model.onnx": _bad(*problem, findings=list(findings) + unaligned, files_facts=f)}

    # -- numbers: only plain ASCII decimal digits (CLARIFICATIONS)
    for label, text, key in (("offset-underscore", "1_024", "offset"), ("offset-arabic-indic", "\u0661\u0660", "offset"),
                             ("offset-space", " 0", "offset"), ("offset-plus", "+0", "offset"),
                             ("offset-negative", "-0", "offset"), ("offset-empty", "", "offset"),
                             ("offset-hex", "0x0", "offset"), ("length-underscore", "1_024", "length"),
                             ("length-fullwidth", "\uff11\uff10\uff12\uff14", "length"), ("length-exponent", "1e3", "length"),
                             ("length-negative", "-1024", "length")):
        def number(d, text=text, key=key):
            kv = dict(location="w.data", offset="0", length="1024")
            kv[key] = text
            return broken(d, list(kv.items()), ("Malformed", f"{W0}.{key}"))
        out.append((label, number))

    @case
    def length_mismatch(d):
        return broken(d, [("location", "w.data"), ("offset", "0"), ("length", "1000")], ("InvalidModel", f"{W0}.length"))

    @case
    def range_past_end(d):
        ts = aligned(three(), 64)
        ts[2].offset, ts[2].place = 4000, False  # the file ends at 1424
        f, _ = write(d, ts, counted=ts[:2])
        return {"model.onnx": _bad("Malformed", "onnx.graph.initializers[2].external_data.offset", "w.data", 4000, [], f)}

    @case
    def location_self(d):
        return broken(d, [("location", "model.onnx"), ("offset", "0"), ("length", "1024")],
                      ("Malformed", f"{W0}.location", "model.onnx"))

    def mkdir_sub(d):
        (d / "sub").mkdir()
        # git keeps no empty folder: a file inside keeps the case reproducible from a clone
        (d / "sub" / "README").write_text("a folder where the model names a weights file\n")

    def second_file(d):
        (d / "linked.data").write_bytes(f32(256))

    for label, loc, kind, file, prepare in (("location-absolute", "/etc/passwd", "Malformed", None, None),
                                            ("location-dotdot", "../w.data", "Malformed", None, None),
                                            ("location-empty", "", "Malformed", None, None),
                                            ("location-nul", "w.da\x00ta", "Malformed", None, None),
                                            ("location-drive", "C:\\w.data", "Malformed", None, None),
                                            ("location-missing-file", "nope.data", "Io", "nope.data", None),
                                            ("location-directory", "sub", "Io", "sub", mkdir_sub),
                                            ("location-fifo", "fifo.data", "Io", "fifo.data", None),
                                            ("location-hardlink", "linked.data", "Malformed", "linked.data", second_file)):
        def location(d, loc=loc, kind=kind, file=file, prepare=prepare):
            return broken(d, [("location", loc), ("offset", "0"), ("length", "1024")], (kind, f"{W0}.location", file),
                          prepare=prepare)
        out.append((label, location))

    @case
    def location_symlink_escape(d):
        """The data is a symlink out of the model's folder."""
        (d / "outside").mkdir()
        (d / "outside" / "secret.data").write_bytes(b"S" * 1024)
        inner = d / "model"
        inner.mkdir()
        os.symlink("../outside/secret.data", inner / "escape.data")
        models = broken(inner, [("location", "escape.data"), ("offset", "0"), ("length", "1024")],
                        ("Malformed", f"{W0}.location", "escape.data"))
        return {"model/model.onnx": models["model.onnx"]}

    return out


SPECIAL = {"location-fifo": "fifo", "location-hardlink": "hardlink"}


def make_special(case_dir: Path, case: str) -> None:
    """The part of a case git cannot hold: a FIFO, a second hard link."""
    kind = SPECIAL.get(case)
    if kind == "fifo":
        p = case_dir / "fifo.data"
        if not p.exists():
            os.mkfifo(p)
    elif kind == "hardlink":
        p = case_dir / "linked-again.data"
        if not p.exists():
            os.link(case_dir / "linked.data", p)


def build(out: Path, special: bool = True) -> dict:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    expected = {}
    for name, fn in cases():
        d = out / name
        d.mkdir()
        models = fn(d)
        expected[name] = {"models": models, "special": SPECIAL.get(name), "note": (fn.__doc__ or "").strip()}
        if special:
            make_special(d, name)
    (out / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True, ensure_ascii=True) + "\n")
    return expected


def big_sparse(folder: Path, *, size: int = (4 << 30) + (64 << 10)) -> tuple[Path, list[tuple[str, int, int]]]:
    """A model whose sparse weights file is ``size`` bytes, with tensors past 2^32 (made at test time).

    Returns the model path and ``(name, offset, length)`` of each tensor.
    """
    folder.mkdir(parents=True, exist_ok=True)
    ts = [Tensor("lo", f32(1024, 1), offset=0), Tensor("mid", f32(1024, 2), offset=(1 << 31) + 4096),
          Tensor("hi", f32(1024, 3), offset=(1 << 32) + 8192), Tensor("end", f32(1024, 4), offset=size - 4096)]
    with open(folder / "w.data", "wb") as f:
        f.truncate(size)
        for t in ts:
            f.seek(t.offset)
            f.write(t.data)
    (folder / "model.onnx").write_bytes(model_bytes(ts))
    return folder / "model.onnx", [(t.name, t.offset, len(t.data)) for t in ts]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    build(args.out, special=False)
    print(f"wrote {len(cases())} cases to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
