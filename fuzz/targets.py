"""The fuzz targets and the invariants every input is held to (atheris: ``fuzz/run.py``; the normal
test suite: ``tests/test_fuzz_targets.py`` with hypothesis, a fixed budget and seed).

A target is ``fn(data: bytes) -> str`` (an outcome label: ``valid`` or a kind). It raises
:class:`InvariantError` when an invariant breaks, and lets any exception other than
``FormatError``/``EditError`` out (the bug we look for). Invariants, on every input:

1. diagnose mode never raises;
2. a strict open raises exactly diagnose mode's first problem (kind, where, offset, message), and
   accepts exactly when diagnose finds nothing;
3. every problem and finding has a kind (a code), a non-empty ``where``, and its offset (when it has
   one and it is in the model's own file) inside the file;
4. an input the reader accepts survives a OneModel write / strict read with equal records (the
   manifest of both, planned) and equal tensor bytes and strings;
5. every string the file can carry, rendered as the viewer renders it, has no control, escape,
   bidi or other non-printable character.

Time (2 s) and memory (256 MiB) per input are the driver's: ``run.py`` times every input and
re-runs a slow one to confirm it; the hypothesis tests measure with ``tracemalloc``.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # mutators, beside this file
_TMP = tempfile.mkdtemp(prefix="fuzz-targets-")
WEIGHTS = "w.data"
"""The external data file generated beside every fuzzed ``.onnx`` (what the seed models name)."""
WEIGHTS_SIZE = 1 << 16


class InvariantError(AssertionError):
    """An input broke one of the invariants (not a crash: a wrong answer)."""


def _need(cond: bool, what: str) -> None:
    if not cond:
        raise InvariantError(what)


def _path(name: str, data: bytes) -> str:
    p = os.path.join(_TMP, name)
    with open(p, "wb") as f:
        f.write(data)
    return p


def _weights() -> None:
    p = os.path.join(_TMP, WEIGHTS)
    if not os.path.exists(p):
        with open(p, "wb") as f:
            f.write(bytes((i * 131 + 7) & 0xFF for i in range(WEIGHTS_SIZE)))


# -- invariants ------------------------------------------------------------------------------------

def _check_record(rec, size: int, label: str) -> None:
    _need(isinstance(rec.where, str) and rec.where != "", f"{label} without a where: {rec!r}")
    _need(isinstance(rec.message, str) and rec.message != "", f"{label} without a message: {rec!r}")
    if rec.offset is not None and rec.file is None:
        _need(isinstance(rec.offset, int) and 0 <= rec.offset <= size,
              f"{label} offset {rec.offset} outside the {size}-byte file: {rec!r}")


def open_both(path: str):
    """(strict error or None, diagnose document) with invariants 1-3 checked."""
    from onemodel_viewer import format as omf
    from onemodel_viewer.format import FormatError, Kind

    size = os.path.getsize(path)
    err = None
    try:
        omf.open(path).close()
    except FormatError as e:
        err = e
    doc = omf.open(path, mode="diagnose")  # invariant 1: anything raised here is the bug
    if err is None:
        _need(not doc.problems, f"strict accepted, diagnose found {doc.problems[:1]}")
    else:
        _need(bool(doc.problems), f"strict raised {err.kind}/{err.where}, diagnose found nothing")
        first = doc.problems[0]
        _need((err.kind, err.where, err.offset, err.message) == (first.kind, first.where, first.offset, first.message),
              f"strict raised {(err.kind, err.where, err.offset, err.message)}, diagnose's first is {first!r}")
    for p in doc.problems:
        _need(isinstance(p.kind, Kind), f"problem without a kind: {p!r}")
        _check_record(p, size, "problem")
    for f in doc.findings:
        _need(isinstance(f.code, str) and f.code != "", f"finding without a code: {f!r}")
        _check_record(f, size, "finding")
    return err, doc


def _tensor_bytes(model) -> list:
    from onemodel_viewer.format.schema import all_tensors

    out = []
    for t in all_tensors(model):
        if t.is_string:
            out.append((t.dims, t.dtype, tuple(t.strings or ())))
        else:
            out.append((t.dims, t.dtype, bytes(t.raw())))
    return out


def round_trip(model, findings=()) -> None:
    """Invariant 4: write ``model`` as OneModel, read it back strictly, compare records and bytes.

    The writer may refuse (FormatError) only a model the reader accepted with a finding (an ``.ort``
    tensor whose bytes are in an external file, say): that finding said it cannot be carried over."""
    from onemodel_viewer import format as omf
    from onemodel_viewer.format import FormatError
    from onemodel_viewer.format.onemodel import writer

    try:
        blob = writer.to_bytes(model)
    except FormatError:
        if findings:
            return
        raise
    back_path = _path("roundtrip.onemodel", blob)
    back = omf.open(back_path)  # a FormatError here is a bug: the writer wrote what the reader refuses
    try:
        a = writer.manifest_dict(writer.plan(model))
        b = writer.manifest_dict(writer.plan(back.model))
        _need(a == b, "records differ after a write/read round trip")
        _need(_tensor_bytes(model) == _tensor_bytes(back.model), "tensor bytes differ after a write/read round trip")
    finally:
        back.close()


def _strings(obj, out: list, seen: set, depth: int = 0) -> None:
    """Every str/bytes reachable from a record (dataclass fields, tuples, lists), bounded."""
    if len(out) > 20000 or depth > 200:
        return
    if isinstance(obj, (str, bytes)):
        out.append(obj)
        return
    if isinstance(obj, (int, float, type(None))):
        return
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, (tuple, list)) or type(obj).__name__ == "NodeList":
        for x in obj:
            _strings(x, out, seen, depth + 1)
        return
    slots = getattr(type(obj), "__slots__", None) or getattr(type(obj), "__dataclass_fields__", None)
    if not slots:
        return
    for name in slots:
        if name in ("storage",) or name.startswith("_"):
            continue
        _strings(getattr(obj, name, None), out, seen, depth + 1)


def _safe_rendering(s) -> None:
    from onemodel_viewer.textsafe import visible, visible_bytes

    shown = visible_bytes(s) if isinstance(s, bytes) else visible(s)
    _need(shown.isprintable(), f"rendered string keeps a non-printable character: {shown!r}")
    for ch in ("\x1b", "\u202e", "\u2066", "\u200f", "\x9b"):
        _need(ch not in shown, f"rendered string keeps {ch!r}: {shown!r}")


def rendered_safely(doc) -> None:
    """Invariant 5 over the model's strings and every problem and finding."""
    out: list = []
    if doc.model is not None:
        _strings(doc.model, out, set())
    for rec in list(doc.problems) + list(doc.findings):
        out += [rec.where, rec.message] + ([rec.file] if rec.file else [])
    for s in out:
        _safe_rendering(s)


def _touch(doc) -> None:
    """values() and statistics of every tensor (what the viewer's panes compute from the bytes)."""
    from onemodel_viewer.analysis.stats.compute import compute_stats
    from onemodel_viewer.format import FormatError
    from onemodel_viewer.format.schema import all_tensors

    if doc.model is None:
        return
    for t in all_tensors(doc.model):
        try:
            v = t.values()
            if not t.is_string:
                _need(v.size == t.count, f"{t.where}: {v.size} values for {t.count} elements")
        except FormatError:
            pass
        if t.count <= 1 << 16:
            try:
                compute_stats(t)
            except FormatError:
                pass


def _reader_target(name: str, data: bytes) -> str:
    path = _path(name, data)
    err, doc = open_both(path)
    try:
        rendered_safely(doc)
        _touch(doc)
        if err is None and doc.model is not None:
            round_trip(doc.model, doc.findings)
    finally:
        doc.close()
    return "valid" if err is None else err.kind.value


# -- the targets -----------------------------------------------------------------------------------

def onemodel(data: bytes) -> str:
    """The OneModel reader, strict and diagnose, and everything downstream of an accepted file."""
    return _reader_target("input.onemodel", data)


def onnx(data: bytes) -> str:
    """The ONNX importer (protobuf scanner, external-data rules) with ``w.data`` generated beside it."""
    _weights()
    return _reader_target("model.onnx", data)


def ort(data: bytes) -> str:
    """The ``.ort`` verifier and importer."""
    return _reader_target("input.ort", data)


def writer(data: bytes) -> str:
    """The OneModel writer on whatever the readers accept (format by content: OneModel, ORT, else ONNX)."""
    from onemodel_viewer import format as omf
    from onemodel_viewer.format import FormatError

    _weights()
    name = "w.onemodel" if data[:8] == b"ONEMODEL" else "w.ort" if data[4:8] == b"ORTM" else "w.onnx"
    path = _path(name, data)
    try:
        doc = omf.open(path)
    except FormatError as e:
        return e.kind.value
    try:
        round_trip(doc.model, doc.findings)
    finally:
        doc.close()
    return "valid"


def ort_writer(data: bytes) -> str:
    """The ``.ort`` writer on whatever the readers accept (format by content, as ``writer``): write, read the
    ``.ort`` back strictly (it must open), and every initializer of the main graph that both have by name
    holds the same bytes. Records are not compared: the writer prepares the model as ONNX Runtime's
    converter does (functions inlined, Constant nodes made initializers). The writer may refuse
    (FormatError: a model with no ORT form) but nothing else may escape."""
    from onemodel_viewer import format as omf
    from onemodel_viewer.format import FormatError
    from onemodel_viewer.format.ort.writer import write_ort

    _weights()
    name = "o.onemodel" if data[:8] == b"ONEMODEL" else "o.ort" if data[4:8] == b"ORTM" else "o.onnx"
    path = _path(name, data)
    try:
        doc = omf.open(path)
    except FormatError as e:
        return e.kind.value
    out = os.path.join(_TMP, "written.ort")
    try:
        try:
            write_ort(doc.model, out, threads=1)
        except FormatError:
            return "refused"
        back = omf.open(out)  # a FormatError here is a bug: the writer wrote what the reader refuses
        try:
            def by_name(model):
                return {t.name: (t.dtype, t.dims, tuple(t.strings or ()) if t.is_string else bytes(t.raw()))
                        for t in model.graph.initializers}

            a, b = by_name(doc.model), by_name(back.model)
            for k in a.keys() & b.keys():
                _need(a[k] == b[k], f"initializer {k!r} differs after an .ort write/read")
        finally:
            back.close()
    finally:
        doc.close()
    return "valid"


def text(data: bytes) -> str:
    """The text-safety layer: arbitrary strings (UTF-8 with escapes, UTF-16, UTF-32) as the CLI and viewer show them."""
    from onemodel_viewer.textsafe import visible, visible_bytes
    from onemodel_viewer.tui.widgets.safe import safe_str, safe_text

    strings = [data.decode("utf-8", "surrogateescape"), data.decode("latin-1")]
    for enc in ("utf-16-le", "utf-32-le"):
        cut = len(data) - len(data) % (2 if enc == "utf-16-le" else 4)
        strings.append(data[:cut].decode(enc, "surrogatepass" if enc == "utf-16-le" else "replace"))
    for s in strings:
        for shown in (visible(s), visible(s, None), visible(s, 3), safe_str(s), safe_text(s).plain, safe_str(s, 5)):
            _need(shown.isprintable(), f"rendered string keeps a non-printable character: {shown!r}")
    for shown in (visible_bytes(data), visible_bytes(data, 2), safe_str(data), safe_text(data).plain):
        _need(shown.isprintable(), f"rendered bytes keep a non-printable character: {shown!r}")
    return "valid"


# -- --patch edits and the manifest splice / locate ------------------------------------------------

PATCH_SEEDS = ("hostile/valid-base.onemodel", "valid/functions.onemodel", "valid/subgraphs.onemodel")


def patch_base(i: int) -> Path:
    return ROOT / "testdata" / PATCH_SEEDS[i % len(PATCH_SEEDS)]


def patch(data: bytes) -> str:
    """``--patch``: byte 0 picks a base file, the rest is up to 4 EDIT lines. Parse, apply, write, then
    the result through the OneModel invariants; a manifest edit that applied must be found again by
    ``locate`` with exactly the bytes written, and every problem's ``where`` must locate without raising."""
    from onemodel_viewer.format import FormatError
    from onemodel_viewer.format.onemodel.edit_image import EditError, Image, parse_edit
    from onemodel_viewer.format.onemodel.manifest_locate import locate, locate_nearest

    if not data:
        return "empty"
    base = patch_base(data[0])
    lines = data[1:].decode("utf-8", "surrogateescape").split("\n")[:4]
    image = Image(str(base))
    applied = 0
    for line in lines:
        try:
            edit = parse_edit(line)
        except EditError:
            continue
        if edit.op in ("truncate", "bytes") and int(edit.target) > 1 << 20:
            continue  # an edit's own size (a user asking for 2^60 bytes) is not what this target tests
        try:
            image.apply(edit)
        except (EditError, FormatError):
            continue
        applied += 1
        if edit.op == "manifest" and edit.value is not None and image.manifest is not None:
            span = locate(bytes(image.manifest), str(edit.target))
            if span is not None:
                got = bytes(image.manifest[span[0]:span[1]])
                _need(got.strip() == edit.value.strip(), f"{edit.text!r}: locate finds {got[:80]!r}, not the value written")
    out = os.path.join(_TMP, "patched.onemodel")
    try:
        image.write(out)
    except (EditError, FormatError):
        return "refused"
    err, doc = open_both(out)
    try:
        manifest = bytes(image.manifest or b"")
        for p in doc.problems[:200]:
            if p.where.startswith("manifest"):
                found = locate_nearest(manifest, p.where)
                if found is not None:
                    _need(0 <= found[0] <= found[1] <= len(manifest), f"{p.where}: span {found[:2]} outside the manifest")
        rendered_safely(doc)
    finally:
        doc.close()
    return f"applied {applied}: " + ("valid" if err is None else err.kind.value)


def _patch_paths(i: int) -> list[str]:
    from onemodel_viewer import format as omf

    out: list = []
    with omf.open(patch_base(i)) as doc:
        seen: set = set()

        def walk(obj, depth=0):
            if depth > 60 or id(obj) in seen:
                return
            seen.add(id(obj))
            where = getattr(obj, "where", None)
            if isinstance(where, str) and where.startswith("manifest"):
                out.append(where)
            if isinstance(obj, (tuple, list)) or type(obj).__name__ == "NodeList":
                for x in obj:
                    walk(x, depth + 1)
                return
            for name in getattr(type(obj), "__slots__", ()) or ():
                if name != "storage" and not name.startswith("_"):
                    v = getattr(obj, name, None)
                    if not isinstance(v, (str, bytes, int, float, type(None))):
                        walk(v, depth + 1)

        walk(doc.model)
    return out


_PATHS: dict = {}
PATCH_VALUES = ('""', "null", "(null)", "0", "-1", "1e3", "2.5", "18446744073709551616", "[]", "{}", '"\\u001b[2J"',
                '"a\\u202eb"', '"x"', "[0,1]", '{"kind":"tensor"}', "true", '"\\ud800"', "9" * 40)
PATCH_FIELDS = ("magic", "version", "flags", "manifest_offset", "manifest_length", "data_offset", "data_length",
                "file_length", "reserved")


def patch_edit_line(rng: random.Random, base: int) -> str:
    if base not in _PATHS:
        _PATHS[base] = _patch_paths(base)
    paths = _PATHS[base] or ["manifest.graph"]
    r = rng.randrange(10)
    if r < 6:
        path = rng.choice(paths)
        if rng.random() < 0.5:
            path += rng.choice((".name", ".dims[0]", ".inputs[0]", ".doc", ".dtype", ".data.offset", ".data.length",
                                "[0]", ".x", "[99]", '["a=b"]'))
        return f"{path}={rng.choice(PATCH_VALUES)}"
    if r == 6:
        return f"header.{rng.choice(PATCH_FIELDS)}={rng.choice((0, 1, 63, 64, 65, 4096, 2**63, 2**64 - 1))}"
    if r == 7:
        return f"bytes@{rng.randrange(4096)}={rng.randbytes(rng.randint(0, 8)).hex()}"
    if r == 8:
        return f"truncate={rng.randrange(8192)}"
    return rng.choice(("manifest=", "manifest.graph.nodes[", "header.x=1", "bytes@=", "truncate=-1",
                       "manifest.graph.nodes[0].name=\"\\u0000\"", "manifest[\"graph\"]=1"))


def mutate_patch(data: bytes, rng: random.Random, max_size: int = 1 << 20) -> bytes:
    from mutators import mutate_bytes

    if rng.random() < 0.2 and data:
        return mutate_bytes(data, rng, max_size)
    base = data[0] if data else rng.randrange(len(PATCH_SEEDS))
    lines = data[1:].decode("utf-8", "surrogateescape").split("\n") if data else []
    lines = [ln for ln in lines if ln][:3]
    if lines and rng.random() < 0.3:
        lines[rng.randrange(len(lines))] = patch_edit_line(rng, base % len(PATCH_SEEDS))
    else:
        lines.append(patch_edit_line(rng, base % len(PATCH_SEEDS)))
    return (bytes([base]) + "\n".join(lines[-4:]).encode("utf-8", "surrogateescape"))[:max_size]



# -- seeds -----------------------------------------------------------------------------------------

def _small(paths, limit=300_000) -> list[Path]:
    return sorted(p for p in paths if p.is_file() and p.stat().st_size < limit)


def seeds(target: str) -> list[Path]:
    """The seed files of a target (valid files of its format)."""
    hostile, valid = ROOT / "testdata" / "hostile", ROOT / "testdata" / "valid"
    if target == "onemodel":
        return _small([p for p in hostile.glob("valid-*.onemodel") if p.stem != "valid-zero-count-huge-dims"]
                      + list(valid.glob("*.onemodel")))
    if target == "onnx":
        return _small(list(valid.glob("*.onnx")) + list((ROOT / "testdata" / "external").glob("*/model.onnx")))
    if target == "ort":
        return _small((hostile / "ort").glob("*.ort"), 16_000)
    if target in ("writer", "ort_writer"):
        return seeds("onemodel")[:8] + seeds("onnx")[:8] + seeds("ort")
    return []


def seed_blobs(target: str) -> list[bytes]:
    if target == "patch":
        rng = random.Random(0)
        return [bytes([i]) + patch_edit_line(rng, i).encode("utf-8", "surrogateescape") for i in range(len(PATCH_SEEDS))]
    if target == "text":
        return [_as_bytes(s) for s in ("plain", "a\x1b[31mb", "\u202eevil", "\u2066x", "é中😀", "\ud800x", "\x00\x7f\x85")]
    return [p.read_bytes() for p in seeds(target)]


def _as_bytes(x) -> bytes:
    return x if isinstance(x, bytes) else x.encode("utf-8", "surrogatepass")


TARGETS = {"onemodel": onemodel, "onnx": onnx, "ort": ort, "writer": writer, "ort_writer": ort_writer, "patch": patch,
           "text": text}


def mutator(target: str):
    from mutators import mutate_bytes, structured

    return {"onemodel": structured("onemodel"), "onnx": structured("protobuf"), "ort": structured("flatbuffer"),
            "writer": mutate_bytes, "ort_writer": mutate_bytes, "patch": mutate_patch, "text": mutate_bytes}[target]


def cleanup() -> None:
    shutil.rmtree(_TMP, ignore_errors=True)
