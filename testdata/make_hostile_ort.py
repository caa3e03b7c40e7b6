"""Write ``testdata/hostile/ort/``: hostile ``.ort`` files, one defect each, and ``expected.json``.

Needs onnxruntime (to make the base file) and flatbuffers (to build the synthetic ones), so the
generated files and the table are committed; ``tests/test_ort_hostile.py`` reads them without
either. Run from the repository root::

    python testdata/make_hostile_ort.py

``base.ort`` is ONNX Runtime's own conversion of a small model made here (an initializer, a
string initializer, an If with two subgraphs). Each hostile file patches its bytes at a place
found by walking it (the walk only locates; the expected kind, where and offset are written
here, from the patched place). Truncations and the synthetic files (other schema, nesting, a
shared sub-table bomb) are built the same way. ``expected.json``: ``{file: [kind, where, offset]}``.

``Finding-<case>.ort`` files are valid models with one finding each (no problem), listed in
``expected_findings.json`` as ``{file: [code, where, offset]}``: a data type code ONNX defines but
ORT's TensorDataType lacks. (An ``external_data_offset`` was one; it is Unsupported now.) ``--findings-only`` rebuilds just those
from the committed ``base.ort`` (ONNX Runtime's output is not byte-for-byte reproducible).
"""

from __future__ import annotations

import json
import os
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "hostile", "ort")
sys.path.insert(0, os.path.join(HERE, ".."))

from onemodel_viewer.format.ort.fbs import TABLES  # noqa: E402
from onemodel_viewer.format.ort.importer import field_pos, target_pos  # noqa: E402
from onemodel_viewer.format.ort.verify import Walker  # noqa: E402
from onemodel_viewer.format.reader import Reporter  # noqa: E402

M, I, U = "Malformed", "InvalidModel", "Unsupported"
S = "InferenceSession"
MD = S + ".model"
G = MD + ".graph"


def base_onnx() -> bytes:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    then_g = helper.make_graph([helper.make_node("Identity", ["y"], ["t_out"], name="then_id")], "then", [],
                               [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, [2, 3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["y"], ["e_out"], name="else_neg")], "else", [],
                               [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, [2, 3])])
    nodes = [
        helper.make_node("Add", ["x", "w"], ["y"], name="add0"),
        helper.make_node("If", ["cond"], ["z"], name="if0", then_branch=then_g, else_branch=else_g),
        helper.make_node("Identity", ["labels"], ["labels_out"], name="id_labels"),
    ]
    w = numpy_helper.from_array(np.arange(3, dtype=np.float32), "w")
    labels = helper.make_tensor("labels", TensorProto.STRING, [2], [b"cat", b"dog"])
    g = helper.make_graph(nodes, "base", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                                          helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3]),
                           helper.make_tensor_value_info("labels_out", TensorProto.STRING, [2])], [w, labels])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="make_hostile_ort")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m.SerializeToString()


def base_ort() -> bytes:
    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "base.onnx"), os.path.join(d, "base.ort")
        with open(src, "wb") as f:
            f.write(base_onnx())
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        so.optimized_model_filepath = dst
        so.add_session_config_entry("session.save_model_format", "ORT")
        ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])
        with open(dst, "rb") as f:
            return f.read()


def walk(buf: bytes) -> dict:
    return Walker(buf, len(buf), Reporter(True)).root()


def slot(table: str, name: str) -> int:
    return next(vo for n, vo, *_ in TABLES[table] if n == name)


def put(buf: bytearray, fmt: str, at: int, value) -> bytearray:
    struct.pack_into(fmt, buf, at, value)
    return buf


# -- synthetic buffers (flatbuffers.Builder with the slots of fbs.TABLES)


class FB:
    def __init__(self) -> None:
        import flatbuffers

        self.b = flatbuffers.Builder(1024)

    def s(self, text: str | bytes) -> int:
        return self.b.CreateString(text)

    def vec(self, offsets: list[int]) -> int:
        b = self.b
        b.StartVector(4, len(offsets), 4)
        for o in reversed(offsets):
            b.PrependUOffsetTRelative(o)
        return b.EndVector()

    def vec64(self, values: list[int]) -> int:
        b = self.b
        b.StartVector(8, len(values), 8)
        for v in reversed(values):
            b.PrependInt64(v)
        return b.EndVector()

    def table(self, tname: str, **fields) -> int:
        b = self.b
        spec = {n: (vo, kind, elem) for n, vo, kind, elem, _d in TABLES[tname]}
        b.StartObject(max(vo for vo, _k, _e in spec.values()) // 2 - 1)
        for name, value in fields.items():
            vo, kind, elem = spec[name]
            s = (vo - 4) // 2
            if kind == "scalar":
                adder = {"int8": b.PrependInt8Slot, "uint8": b.PrependUint8Slot, "int32": b.PrependInt32Slot,
                         "uint32": b.PrependUint32Slot, "int64": b.PrependInt64Slot}[elem]
                adder(s, value, value + 1)  # never equal to the default: always written
            else:
                b.PrependUOffsetTRelativeSlot(s, value, 0)
        return b.EndObject()

    def finish(self, root: int, ident: bytes | None = b"ORTM") -> bytes:
        self.b.Finish(root, file_identifier=ident)
        return bytes(self.b.Output())


def session(fb: FB, graph: int, version: str = "6") -> int:
    op = fb.table("OperatorSetId", domain=fb.s(""), version=17)
    model = fb.table("Model", ir_version=8, opset_import=fb.vec([op]), graph=graph)
    return fb.table("InferenceSession", ort_version=fb.s(version), model=model)


def nested_graphs(depth: int) -> bytes:
    """Graphs nested ``depth`` deep (main graph = 1) through If-like GRAPH attributes."""
    fb = FB()
    g = fb.table("Graph")
    for _ in range(depth - 1):
        a = fb.table("Attribute", name=fb.s("g"), type=5, g=g)
        n = fb.table("Node", op_type=fb.s("Sub"), attributes=fb.vec([a]))
        g = fb.table("Graph", nodes=fb.vec([n]))
    return fb.finish(session(fb, g))


def nested_types(depth: int) -> bytes:
    """A value whose type is a sequence of sequences ... ``depth`` deep."""
    fb = FB()
    t = fb.table("TypeInfo", value_type=1, value=fb.table("TensorTypeAndShape", elem_type=1))
    for _ in range(depth):
        t = fb.table("TypeInfo", value_type=2, value=fb.table("SequenceType", elem_type=t))
    v = fb.table("ValueInfo", name=fb.s("v"), type=t)
    g = fb.table("Graph", node_args=fb.vec([v]), inputs=fb.vec([fb.s("v")]))
    return fb.finish(session(fb, g))


def bomb(levels: int) -> bytes:
    """Each graph's one node has a GRAPHS attribute listing the same subgraph twice: 2^levels visits."""
    fb = FB()
    g = fb.table("Graph")
    for _ in range(levels):
        a = fb.table("Attribute", name=fb.s("b"), type=10, graphs=fb.vec([g, g]))
        n = fb.table("Node", op_type=fb.s("Bomb"), attributes=fb.vec([a]))
        g = fb.table("Graph", nodes=fb.vec([n]))
    return fb.finish(session(fb, g))


def shared_vector_bomb(nodes: int, inputs: int, bad: bool = False) -> bytes:
    """Regression (found by fuzzing, fuzz/README.md): one node's ``inputs`` vector of ``inputs`` entries,
    listed ``nodes`` times in the graph. Valid entries (all the shared string "x"): nodes * inputs string
    checks, within the table budget (a ~40 s hang before the work budget). ``bad``: every entry a zero
    offset instead: strict stops at the first, diagnose reported nodes * inputs problems (the 60 s hang)."""
    fb = FB()
    x = fb.s("x")
    ins = fb.vec([x] * inputs)
    if bad:
        ins_pos = len(fb.b.Bytes) - fb.b.Head()  # its 4 * inputs entries are zeroed after the finish
    n = fb.table("Node", op_type=fb.s("Sum"), inputs=ins)
    g = fb.table("Graph", nodes=fb.vec([n] * nodes))
    data = bytearray(fb.finish(session(fb, g)))
    if bad:
        start = len(data) - ins_pos  # the vector's length field, counted from the end (the builder grows down)
        assert struct.unpack_from("<I", data, start)[0] == inputs
        data[start + 4:start + 4 + 4 * inputs] = bytes(4 * inputs)
    return bytes(data)


def work_cases() -> dict[str, tuple[bytes, str, str, int]]:
    """Cases added after base.ort was made, built without regenerating it (``--work-only`` writes just
    these): the work-budget and problem-cap cases, and what fuzzing found since."""
    out = {}
    good = shared_vector_bomb(4000, 4000)
    rep = Reporter(False)
    Walker(good, len(good), rep).root()
    p = rep.problems[0]
    assert p.kind.value == U and "work budget" in p.message, p
    out["shared-vector-bomb"] = (good, U, p.where, p.offset)
    bad = shared_vector_bomb(4000, 4000, bad=True)
    first = f"{G}.nodes[0].inputs[0]"
    rep = Reporter(False)
    Walker(bad, len(bad), rep).root()
    assert rep.problems[0].where == first, rep.problems[0]
    out["shared-bad-offsets"] = (bad, M, first, rep.problems[0].offset)
    # found by fuzzing: an attribute's vtable slot for `type` pointing far past the file; diagnose mode's
    # second problem ("attribute without a type") had an offset outside the file
    with open(os.path.join(OUT, "base.ort"), "rb") as f:
        base = f.read()
    g = walk(base)["model"]["graph"]
    i = next(i for i, n in enumerate(g["nodes"]) if n.get("attributes"))
    attr = g["nodes"][i]["attributes"][0]
    at = attr["@vt"] + slot("Attribute", "type")
    # found by the onnx fuzz target (the same defect in .ort): a model without ir_version was accepted and
    # the OneModel writer then refused it
    fb = FB()
    g = fb.table("Graph")
    op = fb.table("OperatorSetId", domain=fb.s(""), version=17)
    model = fb.table("Model", opset_import=fb.vec([op]), graph=g)
    data = fb.finish(fb.table("InferenceSession", ort_version=fb.s("6"), model=model))
    out["ir-version-missing"] = (data, I, f"{MD}.ir_version", walk(data)["model"]["@"])
    # the onnx target's sparse finding, in .ort: dense dims of 2^62 elements, refused only by the OneModel reader
    fb = FB()
    vals = fb.table("Tensor", name=fb.s("sv"), dims=fb.vec64([1]), data_type=1, raw_data=fb.b.CreateByteVector(bytes(4)))
    idx = fb.table("Tensor", name=fb.s("si"), dims=fb.vec64([1]), data_type=7, raw_data=fb.b.CreateByteVector(bytes(8)))
    sp = fb.table("SparseTensor", values=vals, indices=idx, dims=fb.vec64([1 << 31, 1 << 31]))
    data = fb.finish(session(fb, fb.table("Graph", sparse_initializers=fb.vec([sp]))))
    s0 = walk(data)["model"]["graph"]["sparse_initializers"][0]
    out["sparse-dims-2pow62"] = (data, U, f"{G}.sparse_initializers[0].dims", target_pos(data, s0, "SparseTensor", "dims"))
    out["attribute-type-past-file"] = (bytes(put(bytearray(base), "<H", at, 0x8000)), M,
                                       f"{G}.nodes[{i}].attributes[0].type", at)
    return out


def write_work_cases() -> int:
    path = os.path.join(OUT, "expected.json")
    with open(path, encoding="utf-8") as f:
        expected = json.load(f)
    cases = work_cases()
    for name, (data, kind, where, offset) in sorted(cases.items()):
        fn = f"{kind}-{name}.ort"
        with open(os.path.join(OUT, fn), "wb") as f:
            f.write(data)
        expected[fn] = [kind, where, offset]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    return len(cases)


def other_schema(ident: bytes | None) -> bytes:
    """A valid flatbuffer of another schema: a root table (int32 0x41414141, a string)."""
    fb = FB()
    s = fb.s("not an ORT model")
    b = fb.b
    b.StartObject(2)
    b.PrependInt32Slot(0, 0x41414141, 0)
    b.PrependUOffsetTRelativeSlot(1, s, 0)
    return fb.finish(b.EndObject(), ident)


def external_offset() -> tuple[bytes, str, int]:
    """A graph whose one initializer has ``external_data_offset`` 0 and no raw_data (what a writer of external
    data would store): Unsupported at the field (its bytes are in a file no reader here opens)."""
    fb = FB()
    t = fb.table("Tensor", name=fb.s("w"), dims=fb.vec64([3]), data_type=1, external_data_offset=0)
    v = fb.table("ValueInfo", name=fb.s("w"),
                 type=fb.table("TypeInfo", value_type=1, value=fb.table("TensorTypeAndShape", elem_type=1)))
    g = fb.table("Graph", initializers=fb.vec([t]), node_args=fb.vec([v]), outputs=fb.vec([fb.s("w")]))
    data = fb.finish(session(fb, g))
    tensor = walk(data)["model"]["graph"]["initializers"][0]
    return data, f"{G}.initializers[0].external_data_offset", field_pos(data, tensor, "Tensor", "external_data_offset")


def finding_cases(base: bytes) -> dict[str, tuple[bytes, str, str, int]]:
    """``{case: (bytes, code, where, offset)}`` of the valid files with one finding each."""
    d = walk(base)
    g = d["model"]["graph"]
    i = next(i for i, t in enumerate(g["initializers"]) if t.get("data_type") == 1)
    init = g["initializers"][i]
    # INT4 (22), as ORT 1.32 writes it: 24 elements in the float tensor's 12 bytes
    data = put(bytearray(base), "<i", field_pos(base, init, "Tensor", "data_type"), 22)
    put(data, "<q", target_pos(base, init, "Tensor", "dims") + 4, 24)
    out = {"unloadable-dtype": (bytes(data), "ort-unloadable-dtype", f"{G}.initializers[{i}].data_type",
                                field_pos(base, init, "Tensor", "data_type"))}
    return out


def write_findings(base: bytes) -> int:
    expected = {}
    for name, (data, code, where, offset) in sorted(finding_cases(base).items()):
        fn = f"Finding-{name}.ort"
        with open(os.path.join(OUT, fn), "wb") as f:
            f.write(data)
        expected[fn] = [code, where, offset]
    with open(os.path.join(OUT, "expected_findings.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    return len(expected)


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    if "--findings-only" in sys.argv[1:]:
        with open(os.path.join(OUT, "base.ort"), "rb") as f:
            n = write_findings(f.read())
        print(f"wrote {n} finding files to {os.path.relpath(OUT)}")
        return
    if "--work-only" in sys.argv[1:]:
        print(f"wrote {write_work_cases()} work-budget files to {os.path.relpath(OUT)}")
        return
    base = base_ort()
    d = walk(base)
    g = d["model"]["graph"]
    root = d["@"]
    model = d["model"]
    init_idx = next(i for i, t in enumerate(g["initializers"]) if t.get("data_type") == 1)
    str_idx = next(i for i, t in enumerate(g["initializers"]) if t.get("data_type") == 8)
    init = g["initializers"][init_idx]
    sinit = g["initializers"][str_idx]
    IW = f"{G}.initializers[{init_idx}]"
    SW = f"{G}.initializers[{str_idx}]"
    node0 = g["nodes"][0]
    out: dict[str, tuple[bytes, str, str, int]] = {}

    def case(name: str, data: bytes | bytearray, kind: str, where: str, offset: int) -> None:
        out[name] = (bytes(data), kind, where, offset)

    def patched(fmt: str, at: int, value) -> bytearray:
        return put(bytearray(base), fmt, at, value)

    # size and identifier
    case("empty", b"", M, "file", 0)
    case("truncated-4", base[:4], M, "file", 0)
    case("truncated-7", base[:7], M, "file", 0)
    case("wrong-identifier", base[:4] + b"ORTX" + base[8:], M, "file_identifier", 4)
    case("no-identifier", base[:4] + b"\0\0\0\0" + base[8:], M, "file_identifier", 4)
    case("other-schema", other_schema(None), M, "file_identifier", 4)
    other = other_schema(b"ORTM")
    od = Walker(other, len(other), Reporter(False))
    rp = struct.unpack_from("<I", other, 0)[0]
    vt = rp - struct.unpack_from("<i", other, rp)[0]
    fo = struct.unpack_from("<H", other, vt + 4)[0]
    del od
    case("other-schema-ortm", other, M, f"{S}.ort_version", rp + fo)

    # the root offset
    case("root-offset-past-end", patched("<I", 0, len(base) + 100), M, S, 0)
    case("root-offset-zero", patched("<I", 0, 0), M, S, 0)
    case("root-offset-unaligned", patched("<I", 0, root + 1), M, S, 0)

    # vtables and tables (tables with a vtable of their own: the Model and the main Graph)
    mpos, gpos = model["@"], g["@"]
    case("vtable-past-end", patched("<i", mpos, mpos - len(base) - 8), M, MD, mpos)
    case("vtable-negative", patched("<i", mpos, mpos + 8), M, MD, mpos)
    case("vtable-odd", patched("<i", mpos, mpos - model["@vt"] + 1), M, MD, mpos)
    gvt = g["@vt"]
    case("vtable-size-2", patched("<H", gvt, 2), M, G, gvt)
    case("vtable-size-odd", patched("<H", gvt, 7), M, G, gvt)
    case("vtable-size-past-end", patched("<H", gvt, 0xFFFE), M, G, gvt)
    case("table-size-2", patched("<H", gvt + 2, 2), M, G, gvt + 2)
    case("table-size-past-end", patched("<H", gvt + 2, 0xFFFC), M, G, gvt + 2)
    tsize = struct.unpack_from("<H", base, gvt + 2)[0]
    case("field-outside-table", patched("<H", gvt + slot("Graph", "nodes"), tsize), M, f"{G}.nodes", gvt + slot("Graph", "nodes"))
    fld = field_pos(base, model, "Model", "graph")
    case("table-offset-past-end", patched("<I", fld, len(base)), M, f"{MD}.graph", fld)
    case("table-offset-zero", patched("<I", fld, 0), M, f"{MD}.graph", fld)
    case("missing-graph", patched("<H", model["@vt"] + slot("Model", "graph"), 0), M, f"{MD}.graph", mpos)
    fld = field_pos(base, d, S, "model")
    case("missing-model", patched("<H", d["@vt"] + slot(S, "model"), 0), M, f"{S}.model", root)

    # strings
    vfield = field_pos(base, d, S, "ort_version")
    vpos = target_pos(base, d, S, "ort_version")
    case("missing-version", patched("<H", d["@vt"] + slot(S, "ort_version"), 0), M, f"{S}.ort_version", root)
    case("version-9", patched("<B", vpos + 4, ord("9")), U, f"{S}.ort_version", vpos)
    case("version-0", patched("<B", vpos + 4, ord("0")), M, f"{S}.ort_version", vpos)
    case("version-x", patched("<B", vpos + 4, ord("x")), M, f"{S}.ort_version", vpos)
    case("string-offset-past-end", patched("<I", vfield, len(base)), M, f"{S}.ort_version", vfield)
    case("string-length-past-end", patched("<I", vpos, len(base)), M, f"{S}.ort_version", vpos)
    case("string-length-huge", patched("<I", vpos, 0xFFFFFFFF), M, f"{S}.ort_version", vpos)
    case("string-no-nul", patched("<B", vpos + 5, ord("!")), M, f"{S}.ort_version", vpos + 5)
    npos = target_pos(base, node0, "Node", "op_type")
    case("string-invalid-utf8", patched("<B", npos + 4, 0xFF), M, f"{G}.nodes[0].op_type", npos)

    # vectors
    ipos = target_pos(base, g, "Graph", "initializers")
    case("vector-length-huge", patched("<I", ipos, 0xFFFFFFFF), M, f"{G}.initializers", ipos)
    case("vector-length-past-end", patched("<I", ipos, len(base) // 4), M, f"{G}.initializers", ipos)
    case("vector-element-past-end", patched("<I", ipos + 4 + 4 * init_idx, len(base)), M, IW, ipos + 4 + 4 * init_idx)
    rpos = target_pos(base, init, "Tensor", "raw_data")
    case("raw-data-length-huge", patched("<I", rpos, 0xFFFFFFF0), M, f"{IW}.raw_data", rpos)
    case("raw-data-size-mismatch", patched("<I", rpos, init["raw_data"][1] - 4), I, f"{IW}.raw_data", rpos)
    dpos = target_pos(base, init, "Tensor", "dims")
    case("dims-negative", patched("<q", dpos + 4, -3), I, f"{IW}.dims[0]", dpos + 4)
    case("dims-overflow", patched("<q", dpos + 4, 1 << 62), U, f"{IW}.dims", dpos)
    case("dims-length-past-end", patched("<I", dpos, len(base)), M, f"{IW}.dims", dpos)
    tpos = field_pos(base, init, "Tensor", "data_type")
    case("data-type-unknown", patched("<i", tpos, 99), U, f"{IW}.data_type", tpos)
    case("data-type-zero", patched("<i", tpos, 0), U, f"{IW}.data_type", tpos)
    spos = target_pos(base, sinit, "Tensor", "string_data")
    case("string-data-count", patched("<I", spos, 1), I, f"{SW}.string_data", spos)
    a0 = next(n for n in g["nodes"] if n.get("attributes"))
    a0i = g["nodes"].index(a0)
    attr = a0["attributes"][0]
    atpos = field_pos(base, attr, "Attribute", "type")
    case("attribute-type-zero", patched("<i", atpos, 0), M, f"{G}.nodes[{a0i}].attributes[0].type", atpos)
    case("attribute-type-sparse", patched("<i", atpos, 11), U, f"{G}.nodes[{a0i}].attributes[0].type", atpos)
    arg = g["node_args"][0]
    tinfo = arg["type"]
    upos = field_pos(base, tinfo, "TypeInfo", "value_type")
    case("union-type-unknown", patched("<B", upos, 9), M, f"{G}.node_args[0].type.value_type", upos)
    # a required field missing: the node_arg vtable is shared, so every node_arg loses its name;
    # the first one reported is node_args[0]
    case("missing-node-arg-name", patched("<H", arg["@vt"] + slot("ValueInfo", "name"), 0), M, f"{G}.node_args[0].name", arg["@"])

    # truncations: the first object walked that ends past the cut
    case("truncated-in-root-table", base[: root + 6], *_first_failure(base, root + 6))
    case("truncated-half", base[: len(base) // 2], *_first_failure(base, len(base) // 2))
    w = Walker(base, len(base), Reporter(True))
    w.root()
    last = max(s[0] + s[1] for s in w.spans) - 1  # the last owned byte (what follows is padding)
    case("truncated-last-object", base[:last], *_first_failure(base, last))
    case("truncated-at-graph", base[: gpos + 2], *_first_failure(base, gpos + 2))

    # nesting, sharing
    deep = nested_graphs(65)
    case("graphs-nested-65", deep, U, G + ".nodes[0].attributes[0].g" * 64, _graph_at(deep, 64))
    case("types-nested-120", nested_types(120), U, *_deep_type(nested_types(120)))
    boom = bomb(40)
    case("shared-subtable-bomb", boom, U, *_budget_failure(boom))
    case("external-data-offset", *external_offset()[:1], U, *external_offset()[1:])  # was a finding (CLARIFICATIONS)
    for name, value in work_cases().items():
        case(name, *value)

    expected = {}
    for name, (data, kind, where, offset) in sorted(out.items()):
        fn = f"{kind}-{name}.ort"
        with open(os.path.join(OUT, fn), "wb") as f:
            f.write(data)
        expected[fn] = [kind, where, offset]
    with open(os.path.join(OUT, "base.ort"), "wb") as f:
        f.write(base)
    with open(os.path.join(OUT, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    n = write_findings(base)
    print(f"wrote {len(expected)} hostile files, {n} finding files and base.ort to {os.path.relpath(OUT)}")


def _first_failure(base: bytes, cut: int) -> tuple[str, str, int]:
    """For a truncation: walk the whole file and find the first object in walk order that the cut breaks.

    A table, vector or string whose bytes go past ``cut`` fails where it starts; an offset slot
    whose target (plus 4) is past the cut fails at the slot, reported for the object it points
    to. Walk order is the verifier's (fields in slot order, depth first), so this is the first.
    """
    w = Walker(base, len(base), Reporter(True))
    w.root()
    spans = w.spans
    # the verifier appends a span after checking the object; the first span ending past the cut
    # (or starting at/after it) is the first object the truncated walk cannot verify
    for start, length, kind, owner in spans:
        if kind == "root":
            continue
        if start + 4 > cut:
            return (M, owner.removeprefix("vtable of "), _referrer(base, start))
        if start + length > cut:
            if kind == "table":  # its vtable is checked first: soffset, vtable size, then the table size
                vt = start - struct.unpack_from("<i", base, start)[0]
                vsize = struct.unpack_from("<H", base, vt)[0]
                return (M, owner, start if vt + 4 > cut else vt if vt + vsize > cut else vt + 2)
            if kind == "string" and start + length - 1 <= cut:  # all but the NUL terminator
                return (M, owner, start + length - 1)
            return (M, owner.removeprefix("vtable of "), start)
    raise AssertionError("cut past every object")


def _referrer(base: bytes, target: int) -> int:
    """The offset slot that points at ``target`` (the first one, scanning 4-aligned slots)."""
    for at in range(0, target, 4):
        if at + struct.unpack_from("<I", base, at)[0] == target:
            return at
    raise AssertionError(target)


def _graph_at(buf: bytes, level: int) -> int:
    d = walk_diag(buf)["model"]["graph"]
    for _ in range(level):
        d = d["nodes"][0]["attributes"][0]["g"]
    return d["@"]


def _deep_type(buf: bytes) -> tuple[str, int]:
    """The verifier's table-depth limit (200) is reached inside the type chain: root 1, Model 2, Graph 3,
    ValueInfo 4, TypeInfo 5, then SequenceType/TypeInfo alternate: the TypeInfo at depth 201 (98 pairs on)."""
    d = walk_diag(buf)["model"]["graph"]["node_args"][0]["type"]
    for _ in range(98):
        d = d["value"]["elem_type"]
    return f"{G}.node_args[0].type" + ".value.elem_type" * 98, d["@"]


def _budget_failure(buf: bytes) -> tuple[str, int]:
    """Where the table budget runs out: the walk order is depth first, every graph's node list
    visited twice per level; count tables until the budget is passed."""
    budget = max(4096, len(buf) // 4)
    d = walk_diag(buf, budget=10**9, max_tables=budget)
    return d


def walk_diag(buf: bytes, budget=None, max_tables=None):
    if max_tables is not None:
        rep = Reporter(False)
        w = Walker(buf, len(buf), rep, budget=max_tables)
        w.root()
        p = rep.problems[0]
        return p.where, p.offset
    w = Walker(buf, len(buf), Reporter(False), max_depth=10**6)
    return w.root()


if __name__ == "__main__":
    main()
