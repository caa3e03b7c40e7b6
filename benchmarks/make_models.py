"""Deterministic LLM-shaped test models for the benchmarks (files under /tmp only).

``python -m benchmarks.make_models [--size 64M|1G|4G|...] [--out /tmp/omv-bench]`` writes into
``OUT/<size>/``:

* ``model_ext.onnx`` + ``model_ext.onnx.data``: ONNX with external data (tensors of 1 KiB and
  more), the weight file written stream-wise, a few MiB at a time;
* ``model_inline.onnx``: the same model with every tensor inline (only when under 2 GB);
* ``model.onemodel``: ``onemodel-view --convert model_ext.onnx model.onemodel``;
* ``model_other_writer.onemodel``: the same model as another writer would write it (spec 2):
  every object's fields in reverse order, optional fields written out at their defaults
  (``doc: ""``, ``ref: ""``, ``metadata: []``...), a space after ``:`` and ``,``; valid, and
  not what this project's writer emits from byte 1 on;
* ``model_late_default.onemodel``: ``model.onemodel``'s manifest with one explicit default in its
  last node (``"doc":""``, valid): the writer's bytes up to that node, the worst case of the
  ``noncanonical-manifest`` comparison.

The model: token embedding (float32, a quarter of the size, ~1 GiB at 4G: the tensor the
stats benchmark uses), then transformer layers: LayerNorm (float32), q/k/v/o MatMuls
(float16), rotary embedding, KV-cache Concats, Softmax attention, Reshape with int64 shape
constants, a SwiGLU MLP (float16; float32 in every 4th layer), residual Adds, a dynamic
shape chain (Shape/Gather/Unsqueeze/Concat). Layer 3's ``wq`` holds NaN and ±Inf, one
float32 MLP weight a NaN. About 2,460 tensors and 10,000 nodes at 4 GiB. Weights are
slices of a fixed random pool (seeded), so the same size always gives the same bytes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np

GENERATOR_VERSION = 3
INLINE_LIMIT = 2_000_000_000
"""Inline ONNX only under this size (protobuf's 2 GB limit)."""
EXTERNAL_MIN = 1024
"""Tensors of this many bytes or more go to the external data file."""
POOL_BYTES = 16 << 20
ALIGN = 64

_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    """``64M`` -> 67108864; plain numbers are bytes."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    if t and t[-1] in _UNITS:
        return int(float(t[:-1]) * _UNITS[t[-1]])
    return int(t)


@dataclass(frozen=True)
class Shape:
    """Dimensions of the generated model."""

    hidden: int
    ffn: int
    heads: int
    layers: int
    vocab: int


def plan(size: int) -> Shape:
    """Pick dimensions so the weights come to about ``size`` bytes."""
    scale = math.sqrt(size / (4 << 30))
    hidden = int(min(768, max(64, 64 * round(768 * scale / 64))))
    ffn = 4 * hidden
    heads = max(1, hidden // 64)
    vocab = max(16, round(size / 4 / (4 * hidden)))
    emb = vocab * hidden * 4
    attn = 4 * hidden * hidden * 2
    mlp16 = 3 * hidden * ffn * 2
    per_layer = attn + (3 * mlp16 + 2 * mlp16) / 4
    layers = max(2, round((size - emb) / per_layer))
    return Shape(hidden, ffn, heads, layers, vocab)


class _Weights:
    """Streams tensor bytes into the external data file and records where each went."""

    def __init__(self, f, location: str) -> None:
        rng = np.random.default_rng(20260101)
        self.pool32 = (rng.standard_normal(POOL_BYTES // 4) * 0.02).astype(np.float32)
        self.pool16 = (rng.standard_normal(POOL_BYTES // 2) * 0.02).astype(np.float16)
        self.f = f
        self.location = location
        self.pos = 0

    def write(self, arr_or_spec, dtype: np.dtype, count: int, seed: int, patch: dict[int, float] | None = None) -> tuple[int, int]:
        """Write ``count`` elements (from the pool, or ``arr_or_spec`` when an array); (offset, length)."""
        pad = (-self.pos) % ALIGN
        if pad:
            self.f.write(b"\0" * pad)
            self.pos += pad
        offset = self.pos
        if isinstance(arr_or_spec, np.ndarray):
            data = np.ascontiguousarray(arr_or_spec, dtype=dtype).tobytes()
            self.f.write(data)
            self.pos += len(data)
            return offset, len(data)
        pool = self.pool32 if np.dtype(dtype) == np.float32 else self.pool16
        start = (seed * 7919) % pool.size
        left = count
        first = True
        while left > 0:
            n = min(left, pool.size - start)
            piece = pool[start : start + n]
            if first and patch:
                piece = piece.copy()
                for i, v in patch.items():
                    if i < n:
                        piece[i] = v
            self.f.write(piece.tobytes())
            left -= n
            start = 0
            first = False
        nbytes = count * np.dtype(dtype).itemsize
        self.pos += nbytes
        return offset, nbytes


def build(out_dir: str, size: int) -> dict:
    """Write the external-data ONNX model; returns a summary dict."""
    import onnx
    from onnx import TensorProto, helper

    shape = plan(size)
    h, ffn, heads, L, vocab = shape.hidden, shape.ffn, shape.heads, shape.layers, shape.vocab
    hd = h // heads
    os.makedirs(out_dir, exist_ok=True)
    onnx_path = os.path.join(out_dir, "model_ext.onnx")
    data_name = "model_ext.onnx.data"
    inits: list = []
    nodes: list = []
    inputs: list = []
    outputs: list = []
    F32, F16, I64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64
    np_of = {F32: np.float32, F16: np.float16, I64: np.int64}

    with open(os.path.join(out_dir, data_name), "wb") as f:
        w = _Weights(f, data_name)
        seed = [0]

        def tensor(name: str, dt: int, dims: list[int], values=None, patch=None) -> str:
            seed[0] += 1
            count = math.prod(dims)
            npdt = np_of[dt]
            t = TensorProto()
            t.name = name
            t.data_type = dt
            t.dims.extend(dims)
            if values is None and dt in (F32, F16) and count * np.dtype(npdt).itemsize < EXTERNAL_MIN:
                rng = np.random.default_rng(seed[0])
                values = 1.0 + 0.01 * rng.standard_normal(count)
            if values is not None and np.asarray(values).nbytes * (np.dtype(npdt).itemsize / np.asarray(values).itemsize) < EXTERNAL_MIN:
                t.raw_data = np.asarray(values, dtype=npdt).tobytes()
            else:
                off, length = w.write(np.asarray(values) if values is not None else None, npdt, count, seed[0], patch)
                t.data_location = TensorProto.EXTERNAL
                for k, v in (("location", data_name), ("offset", str(off)), ("length", str(length))):
                    e = t.external_data.add()
                    e.key, e.value = k, v
            inits.append(t)
            return name

        def node(op: str, ins: list[str], outs: list[str], name: str, **attrs) -> None:
            nodes.append(helper.make_node(op, ins, outs, name=name, **attrs))

        inputs.append(helper.make_tensor_value_info("input_ids", I64, [1, "seq"]))
        inputs.append(helper.make_tensor_value_info("attention_bias", F16, [1, 1, "seq", "total"]))
        inputs.append(helper.make_tensor_value_info("rope_cos", F16, ["seq", hd // 2]))
        inputs.append(helper.make_tensor_value_info("rope_sin", F16, ["seq", hd // 2]))
        emb = tensor("model.embed_tokens.weight", F32, [vocab, h])
        node("Gather", [emb, "input_ids"], ["hidden.0"], "embed", axis=0)
        half = tensor("rope.half", I64, [1], np.array([hd // 2]))
        zero = tensor("rope.zero", I64, [1], np.array([0]))
        end = tensor("rope.end", I64, [1], np.array([hd]))
        axis3 = tensor("rope.axis", I64, [1], np.array([3]))
        one = tensor("const.one", I64, [1], np.array([1]))
        hid = tensor("const.hidden", I64, [1], np.array([h]))
        two = tensor("const.two", I64, [], np.array(2))
        x = "hidden.0"
        for i in range(L):
            p = f"model.layers.{i}"
            mlp_dt = F32 if i % 4 == 0 else F16
            inputs.append(helper.make_tensor_value_info(f"past.{i}.key", F16, [1, heads, "past", hd]))
            inputs.append(helper.make_tensor_value_info(f"past.{i}.value", F16, [1, heads, "past", hd]))
            ln1w, ln1b = tensor(f"{p}.ln1.weight", F32, [h]), tensor(f"{p}.ln1.bias", F32, [h])
            patch = {0: np.nan, 5: np.inf, 9: -np.inf} if i == 3 else None
            wq = tensor(f"{p}.attn.q_proj.weight", F16, [h, h], patch=patch)
            wk = tensor(f"{p}.attn.k_proj.weight", F16, [h, h])
            wv = tensor(f"{p}.attn.v_proj.weight", F16, [h, h])
            wo = tensor(f"{p}.attn.o_proj.weight", F16, [h, h])
            hs = tensor(f"{p}.attn.heads_shape", I64, [4], np.array([1, -1, heads, hd]))
            osh = tensor(f"{p}.attn.out_shape", I64, [3], np.array([1, -1, h]))
            sc = tensor(f"{p}.attn.scale", F16, [], np.array(1 / math.sqrt(hd)))
            ln2w, ln2b = tensor(f"{p}.ln2.weight", F32, [h]), tensor(f"{p}.ln2.bias", F32, [h])
            mpatch = {3: np.nan} if mlp_dt == F32 and i == 4 else None
            wg = tensor(f"{p}.mlp.gate_proj.weight", mlp_dt, [h, ffn], patch=mpatch)
            wu = tensor(f"{p}.mlp.up_proj.weight", mlp_dt, [h, ffn])
            wd = tensor(f"{p}.mlp.down_proj.weight", mlp_dt, [ffn, h])
            ls1, ls2 = tensor(f"{p}.ls1", F32, [h]), tensor(f"{p}.ls2", F32, [h])
            idx1 = tensor(f"{p}.seq_index", I64, [], np.array(1))
            n = lambda s: f"{p}.{s}"  # noqa: E731 - value names
            # attention bias for this step: expand to [1, 1, seq, past + seq]
            node("Shape", [x], [n("in_shape")], n("bias.in_shape"))
            node("Gather", [n("in_shape"), idx1], [n("in_seq")], n("bias.in_seq"), axis=0)
            node("Shape", [f"past.{i}.key"], [n("past_shape")], n("bias.past_shape"))
            node("Gather", [n("past_shape"), two], [n("past_len")], n("bias.past_len"), axis=0)
            node("Add", [n("past_len"), n("in_seq")], [n("total_len")], n("bias.total_len"))
            node("Unsqueeze", [n("in_seq"), zero], [n("in_seq1")], n("bias.in_seq1"))
            node("Unsqueeze", [n("total_len"), zero], [n("total1")], n("bias.total1"))
            node("Concat", [one, one, n("in_seq1"), n("total1")], [n("bias_shape")], n("bias.shape"), axis=0)
            node("Expand", ["attention_bias", n("bias_shape")], [n("bias")], n("bias.expand"))
            node("Cast", [n("bias")], [n("bias16")], n("bias.cast"), to=F16)
            node("LayerNormalization", [x, ln1w, ln1b], [n("ln1")], n("ln1"), axis=-1, epsilon=1e-5)
            node("Cast", [n("ln1")], [n("ln1.h")], n("ln1.cast"), to=F16)
            for proj, wt in (("q", wq), ("k", wk), ("v", wv)):
                node("MatMul", [n("ln1.h"), wt], [n(proj)], n(f"attn.{proj}_proj"))
                node("Reshape", [n(proj), hs], [n(f"{proj}.heads")], n(f"attn.{proj}_reshape"))
                node("Transpose", [n(f"{proj}.heads")], [n(f"{proj}.t")], n(f"attn.{proj}_transpose"), perm=[0, 2, 1, 3])
            for proj in ("q", "k"):  # rotary embedding
                node("Slice", [n(f"{proj}.t"), zero, half, axis3], [n(f"{proj}.r1")], n(f"rope.{proj}.slice1"))
                node("Slice", [n(f"{proj}.t"), half, end, axis3], [n(f"{proj}.r2")], n(f"rope.{proj}.slice2"))
                node("Neg", [n(f"{proj}.r2")], [n(f"{proj}.r2n")], n(f"rope.{proj}.neg"))
                node("Concat", [n(f"{proj}.r2n"), n(f"{proj}.r1")], [n(f"{proj}.rot")], n(f"rope.{proj}.concat"), axis=-1)
                node("Concat", ["rope_cos", "rope_cos"], [n(f"{proj}.cos")], n(f"rope.{proj}.cos"), axis=-1)
                node("Concat", ["rope_sin", "rope_sin"], [n(f"{proj}.sin")], n(f"rope.{proj}.sin"), axis=-1)
                node("Mul", [n(f"{proj}.t"), n(f"{proj}.cos")], [n(f"{proj}.c")], n(f"rope.{proj}.mulcos"))
                node("Mul", [n(f"{proj}.rot"), n(f"{proj}.sin")], [n(f"{proj}.s")], n(f"rope.{proj}.mulsin"))
                node("Add", [n(f"{proj}.c"), n(f"{proj}.s")], [n(f"{proj}.rope")], n(f"rope.{proj}.add"))
            node("Concat", [f"past.{i}.key", n("k.rope")], [f"present.{i}.key"], n("cache.k"), axis=2)
            node("Concat", [f"past.{i}.value", n("v.t")], [f"present.{i}.value"], n("cache.v"), axis=2)
            outputs.append(helper.make_tensor_value_info(f"present.{i}.key", F16, [1, heads, "total", hd]))
            outputs.append(helper.make_tensor_value_info(f"present.{i}.value", F16, [1, heads, "total", hd]))
            node("Transpose", [f"present.{i}.key"], [n("kT")], n("attn.k_t"), perm=[0, 1, 3, 2])
            node("MatMul", [n("q.rope"), n("kT")], [n("scores")], n("attn.scores"))
            node("Mul", [n("scores"), sc], [n("scaled")], n("attn.scale"))
            node("Add", [n("scaled"), n("bias16")], [n("masked")], n("attn.mask"))
            node("Softmax", [n("masked")], [n("probs")], n("attn.softmax"), axis=-1)
            node("MatMul", [n("probs"), f"present.{i}.value"], [n("ctx")], n("attn.ctx"))
            node("Transpose", [n("ctx")], [n("ctx.t")], n("attn.ctx_transpose"), perm=[0, 2, 1, 3])
            node("Reshape", [n("ctx.t"), osh], [n("ctx.flat")], n("attn.ctx_reshape"))
            node("MatMul", [n("ctx.flat"), wo], [n("attn.out")], n("attn.o_proj"))
            node("Cast", [n("attn.out")], [n("attn.out32")], n("attn.cast"), to=F32)
            node("Mul", [n("attn.out32"), ls1], [n("attn.scaled")], n("attn.layer_scale"))
            node("Add", [x, n("attn.scaled")], [n("res1")], n("res1"))
            node("LayerNormalization", [n("res1"), ln2w, ln2b], [n("ln2")], n("ln2"), axis=-1, epsilon=1e-5)
            mlp_in = n("ln2")
            if mlp_dt == F16:
                node("Cast", [n("ln2")], [n("ln2.h")], n("ln2.cast"), to=F16)
                mlp_in = n("ln2.h")
            node("MatMul", [mlp_in, wg], [n("gate")], n("mlp.gate_proj"))
            node("MatMul", [mlp_in, wu], [n("up")], n("mlp.up_proj"))
            node("Sigmoid", [n("gate")], [n("gate.sig")], n("mlp.sigmoid"))
            node("Mul", [n("gate"), n("gate.sig")], [n("silu")], n("mlp.silu"))
            node("Mul", [n("silu"), n("up")], [n("prod")], n("mlp.mul"))
            node("MatMul", [n("prod"), wd], [n("down")], n("mlp.down_proj"))
            mlp_out = n("down")
            if mlp_dt == F16:
                node("Cast", [n("down")], [n("down32")], n("mlp.cast"), to=F32)
                mlp_out = n("down32")
            node("Mul", [mlp_out, ls2], [n("mlp.scaled")], n("mlp.layer_scale"))
            node("Add", [n("res1"), n("mlp.scaled")], [n("res2")], n("res2"))
            node("Shape", [n("res2")], [n("shape")], n("shape"))
            node("Gather", [n("shape"), idx1], [n("seq")], n("shape.seq"), axis=0)
            node("Unsqueeze", [n("seq"), zero], [n("seq1")], n("shape.unsqueeze"))
            node("Concat", [one, n("seq1"), hid], [n("dyn_shape")], n("shape.concat"), axis=0)
            node("Reshape", [n("res2"), n("dyn_shape")], [n("out")], n("shape.reshape"))
            x = f"hidden.{i + 1}"
            node("Identity", [n("out")], [x], n("out"))
        fw, fb = tensor("model.norm.weight", F32, [h]), tensor("model.norm.bias", F32, [h])
        node("LayerNormalization", [x, fw, fb], ["final"], "model.norm", axis=-1, epsilon=1e-5)
        node("Transpose", [emb], ["lm_head.weight"], "lm_head.transpose", perm=[1, 0])
        node("MatMul", ["final", "lm_head.weight"], ["logits"], "lm_head")
        outputs.insert(0, helper.make_tensor_value_info("logits", F32, [1, "seq", vocab]))
        data_bytes = w.pos

    graph = helper.make_graph(nodes, "llm", inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="omv-bench",
                              producer_version=str(GENERATOR_VERSION), ir_version=8)
    with open(onnx_path, "wb") as f:
        f.write(model.SerializeToString())
    summary = {
        "size": size, "hidden": h, "ffn": ffn, "heads": heads, "layers": L, "vocab": vocab,
        "tensors": len(inits), "nodes": len(nodes), "data_bytes": data_bytes,
        "embedding": "model.embed_tokens.weight", "embedding_bytes": vocab * h * 4,
        "manifest_onnx_bytes": os.path.getsize(onnx_path), "generator": GENERATOR_VERSION,
    }
    return summary


def write_inline(out_dir: str) -> str:
    """``model_inline.onnx``: every external tensor read back into ``raw_data``."""
    import onnx
    from onnx.external_data_helper import load_external_data_for_model

    src = os.path.join(out_dir, "model_ext.onnx")
    m = onnx.load(src, load_external_data=False)
    load_external_data_for_model(m, out_dir)
    dst = os.path.join(out_dir, "model_inline.onnx")
    with open(dst + ".tmp", "wb") as f:
        f.write(m.SerializeToString())
    os.replace(dst + ".tmp", dst)
    return dst


def convert(out_dir: str) -> tuple[str | None, str]:
    """``model.onemodel`` through the project's converter; (path or None, message)."""
    src = os.path.join(out_dir, "model_ext.onnx")
    dst = os.path.join(out_dir, "model.onemodel")
    cmd = [sys.executable, "-m", "onemodel_viewer", "--convert", src, dst]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(dst):
        return None, (r.stderr or r.stdout).strip()[-500:]
    return dst, "ok"


_HEADER = "<8sIIQQQQQQ"


def _reorder(v):
    """Every object's keys in reverse order (arrays keep theirs: they are ordered data)."""
    if isinstance(v, dict):
        return {k: _reorder(v[k]) for k in reversed(list(v))}
    if isinstance(v, list):
        return [_reorder(x) for x in v]
    return v


def _explicit_defaults(m: dict) -> None:
    """Write the optional fields (spec 2) this project's writer omits at their default."""
    for k in ("producer_name", "producer_version", "domain", "doc"):
        m.setdefault(k, "")
    m.setdefault("model_version", 0)
    m.setdefault("metadata", [])
    m.setdefault("functions", [])
    graphs = [m["graph"]] + [f for f in m["functions"]]
    while graphs:
        g = graphs.pop()
        for k in ("name", "doc"):
            g.setdefault(k, "")
        for t in g.get("initializers", []):
            t.setdefault("doc", "")
        for n in g.get("nodes", []):
            n.setdefault("doc", "")
            for a in n.get("attributes", []):
                a.setdefault("doc", "")
                a.setdefault("ref", "")
                if a.get("type") == 5:
                    graphs.append(a["value"])
                elif a.get("type") == 10:
                    graphs.extend(a["value"])
                elif a.get("type") == 4:
                    a["value"].setdefault("doc", "")


def _rewrite(src: str, dst: str, manifest: bytes) -> None:
    """``src`` with its manifest replaced by ``manifest`` (data region copied in the kernel, a few MiB at a time)."""
    import struct

    with open(src, "rb") as f:
        magic, version, flags, mo, ml, do, dl, fl, reserved = struct.unpack(_HEADER, f.read(64))
        new_do = -(-(64 + len(manifest)) // ALIGN) * ALIGN
        tmp = dst + ".tmp"
        with open(tmp, "wb") as g:
            g.write(struct.pack(_HEADER, magic, version, flags, 64, len(manifest), new_do, dl, new_do + dl, reserved))
            g.write(manifest)
            g.write(b"\0" * (new_do - 64 - len(manifest)))
            g.flush()
            left, pos = dl, do
            while left > 0:
                n = os.copy_file_range(f.fileno(), g.fileno(), min(left, 64 << 20), pos)
                if n <= 0:
                    raise OSError("copy_file_range copied nothing")
                pos += n
                left -= n
    os.replace(tmp, dst)


def other_writers(out_dir: str) -> tuple[str, str]:
    """``model_other_writer.onemodel`` and ``model_late_default.onemodel`` from ``model.onemodel``."""
    import struct

    src = os.path.join(out_dir, "model.onemodel")
    other = os.path.join(out_dir, "model_other_writer.onemodel")
    late = os.path.join(out_dir, "model_late_default.onemodel")
    with open(src, "rb") as f:
        h = struct.unpack(_HEADER, f.read(64))
        f.seek(h[3])
        manifest = f.read(h[4])
    m = json.loads(manifest)
    _explicit_defaults(m)
    _rewrite(src, other, json.dumps(_reorder(m), ensure_ascii=False).encode("utf-8"))
    cut = manifest.rindex(b'{"name":')  # the last node of the main graph (nodes are the graph's last field)
    _rewrite(src, late, manifest[:cut] + b'{"doc":"",' + manifest[cut + 1 :])
    return other, late


def ensure(size: int, out: str, *, quiet: bool = False) -> dict:
    """Build the models for ``size`` unless an up-to-date set is already there; returns the summary."""
    label = size_label(size)
    out_dir = os.path.join(out, label)
    stamp = os.path.join(out_dir, "summary.json")
    if os.path.exists(stamp):
        with open(stamp) as f:
            summary = json.load(f)
        files = [os.path.join(out_dir, n) for n in ("model_ext.onnx", "model_ext.onnx.data")]
        if summary.get("generator") == GENERATOR_VERSION and all(os.path.exists(p) for p in files):
            if summary.get("onemodel") and not os.path.exists(summary["onemodel"]):
                summary["onemodel"], summary["convert_message"] = convert(out_dir)
            elif not summary.get("onemodel"):
                summary["onemodel"], summary["convert_message"] = convert(out_dir)
            _ensure_other_writers(summary, out_dir)
            with open(stamp, "w") as f:
                json.dump(summary, f, indent=1)
            return summary
    t0 = time.perf_counter()
    summary = build(out_dir, size)
    if not quiet:
        print(f"wrote {out_dir}/model_ext.onnx: {summary['tensors']} tensors, {summary['nodes']} nodes, "
              f"{summary['data_bytes'] / 2**20:.0f} MiB in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    summary["dir"] = out_dir
    summary["onnx_ext"] = os.path.join(out_dir, "model_ext.onnx")
    summary["onnx_inline"] = write_inline(out_dir) if summary["data_bytes"] < INLINE_LIMIT - (64 << 20) else None
    summary["onemodel"], summary["convert_message"] = convert(out_dir)
    if not quiet and summary["onemodel"] is None:
        print(f"--convert failed: {summary['convert_message']}", file=sys.stderr)
    _ensure_other_writers(summary, out_dir)
    with open(stamp, "w") as f:
        json.dump(summary, f, indent=1)
    return summary


def _ensure_other_writers(summary: dict, out_dir: str) -> None:
    """Add the other-writer files to ``summary`` (made from ``model.onemodel`` when missing)."""
    if not summary.get("onemodel"):
        summary["onemodel_other_writer"] = summary["onemodel_late_default"] = None
        return
    paths = [os.path.join(out_dir, n) for n in ("model_other_writer.onemodel", "model_late_default.onemodel")]
    if not all(os.path.exists(p) for p in paths):
        paths = list(other_writers(out_dir))
    summary["onemodel_other_writer"], summary["onemodel_late_default"] = paths


def size_label(size: int) -> str:
    for unit in ("G", "M", "K"):
        if size % _UNITS[unit] == 0:
            return f"{size // _UNITS[unit]}{unit}"
    return str(size)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.make_models", description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="64M", help="weight bytes: 8M, 64M, 1G, 4G... (default 64M)")
    ap.add_argument("--out", default="/tmp/omv-bench", help="output directory (default /tmp/omv-bench)")
    args = ap.parse_args(argv)
    summary = ensure(parse_size(args.size), args.out)
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
