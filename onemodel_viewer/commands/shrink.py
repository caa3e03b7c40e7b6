"""``--shrink IN OUT [--seconds N]``: a small file that fails like IN.

OUT's strict open fails with the kind of IN's first problem at the same ``where`` up to array
indices, and OUT has no more problems than IN (exactly one when IN has one: a step that breaks
something else, such as dropping ``opsets``, is refused) (``manifest.graph.nodes[430].inputs[0]`` may become ``manifest.graph.nodes[0].inputs[0]``);
for a problem of the header or the manifest as a whole (``header.*``, ``manifest``), whose ``where``
says little, the message must also match with its numbers masked (a truncated file stays
truncated, not extended). Every step is re-tested (delta debugging), so OUT is valid in every
other way that IN was.

Strategies, by where IN's first problem is:

* a manifest path: the manifest is parsed into JSON values and reduced in passes until nothing
  more goes, or the time budget is spent: array elements (nodes, initializers, inputs, outputs,
  attributes, functions, subgraphs in GRAPHS, dims, metadata, opsets...) are removed in halving
  chunks, and a name that no longer has a definition is repaired (node inputs naming it become
  ``""``, graph and function outputs naming it go); object members are removed one by one
  (docs, metadata, branches...); strings are renamed to short tokens, consistently everywhere;
  tensors shrink to one element. The data region is rebuilt from the tensors whose data is
  sound, 64-byte aligned; tensors with a defective ``data`` keep theirs verbatim.
* the manifest as a whole (invalid JSON, too deep): its bytes are removed in halving chunks.
* the header: the header alone, then with a minimal manifest, then with IN's manifest, each with
  the offending field taken from IN (or a nearby value); prefixes of IN for a short file.

While searching, candidates are written to a temporary folder with their data region left as a
hole (the strict reader never reads tensor bytes); only OUT receives bytes, and only those of
the tensors it keeps, so a multi-GB input costs its manifest in memory and little else.
Deterministic: the same IN gives the same OUT (unless the budget ends the search early, which
is said on stderr). Progress goes to stderr. OUT is written atomically; IN is never written.

An ONNX IN is shrunk on its protobuf (:mod:`.shrink_onnx`), OUT is ONNX. An ``.ort`` IN is refused
with the reason: there is no ``.ort`` writer, a Malformed ``.ort`` is broken in its flatbuffer encoding
(which converting to ONNX or OneModel does not keep) and an invalid one is refused by ``--export``.

Exit status: 0 OUT written; 1 IN is valid (nothing to shrink), cannot be read or shrunk, or OUT
is IN.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time

from ..format.errors import FormatError, Kind
from ..format.spec_rules import shape_of
from .patch import PROG, copy_range, same_file, write_all
from .shrink_bytes import (FIELDS, HEADER, Budget, FewestProblems, align, header, in_halving_groups, short_names,
                           shrink_bytes, shrink_header)

_DIGITS = re.compile(r"\d+")


class Target:
    """What a candidate must reproduce: IN's first problem, up to array indices."""

    def __init__(self, kind: Kind, where: str, message: str) -> None:
        self.kind, self.where = kind, where
        self.shape = shape_of(where)
        self.coarse = where in ("manifest", "file") or where.startswith("header")
        self.message = _DIGITS.sub("#", message)

    def matches(self, e: FormatError) -> bool:
        if e.kind != self.kind or shape_of(e.where) != self.shape:
            return False
        return not self.coarse or _DIGITS.sub("#", e.message) == self.message


class Tester:
    """Writes candidates to a temporary folder and opens them strictly."""

    def __init__(self, target: Target, suffix: str, deadline: float) -> None:
        self.target = target
        self.dir = tempfile.mkdtemp(prefix="omv-shrink-")
        self.path = os.path.join(self.dir, "candidate" + suffix)
        self.deadline = deadline
        self.tests = 0
        self.fewest = FewestProblems(target, 1)
        """Set to IN's problem count before the search (:meth:`FewestProblems.__call__` lowers it)."""

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def __call__(self, front: bytes, total: int | None = None) -> bool:
        """Does the file ``front`` (+ a hole up to ``total`` bytes) fail like the target?"""
        if time.monotonic() > self.deadline:
            raise Budget
        self.tests += 1
        with open(self.path, "wb") as f:
            f.write(front)
            if total is not None and total > len(front):
                f.truncate(total)
        return self.fewest(self.path)


# ---------------------------------------------------------------------------------------------
# the manifest as JSON values


def _containers(root):
    """Every dict and list under ``root`` (iterative, top-down)."""
    stack = [root]
    while stack:
        v = stack.pop()
        yield v
        items = v.values() if type(v) is dict else v
        stack.extend(x for x in reversed(list(items)) if type(x) in (dict, list))


def _is_int(v) -> bool:
    return type(v) is int


def _sound_data(t: dict, data_length: int) -> bool:
    d = t.get("data")
    if type(d) is not dict or set(d) != {"offset", "length"}:
        return False
    off, ln = d["offset"], d["length"]
    return _is_int(off) and _is_int(ln) and off >= 0 and ln >= 0 and (
        ln == 0 or (off % 64 == 0 and off + ln <= data_length))


class Tree:
    """IN's manifest as JSON values, its data region, and the undo log of the step being tried."""

    def __init__(self, value: dict, data_offset: int, data_length: int) -> None:
        self.value = value
        self.data_offset, self.data_length = data_offset, data_length
        self.undo: list = []

    # -- reversible mutations ------------------------------------------------------------------

    def set(self, c, k, v) -> None:
        old = c[k]
        c[k] = v
        self.undo.append(lambda: c.__setitem__(k, old))

    def replace_list(self, lst: list, new: list) -> None:
        old = lst[:]
        lst[:] = new
        self.undo.append(lambda: lst.__setitem__(slice(None), old))

    def replace_dict(self, d: dict, new: dict) -> None:
        old = dict(d)
        d.clear()
        d.update(new)
        self.undo.append(lambda: (d.clear(), d.update(old)))

    def rollback(self) -> None:
        while self.undo:
            self.undo.pop()()

    # -- names ----------------------------------------------------------------------------------

    def defined(self) -> set:
        """Every name defined anywhere (graph/function inputs, initializers, node outputs)."""
        out: set = set()
        for c in _containers(self.value):
            if type(c) is not dict:
                continue
            if "op" in c and type(c.get("outputs")) is list:
                out.update(x for x in c["outputs"] if type(x) is str)
            if type(c.get("nodes")) is list:
                for key in ("inputs", "initializers"):
                    for x in c.get(key) if type(c.get(key)) is list else ():
                        out.add(x if type(x) is str else x.get("name") if type(x) is dict else None)
                for s in c.get("sparse_initializers") if type(c.get("sparse_initializers")) is list else ():
                    if type(s) is dict and type(s.get("values")) is dict:
                        out.add(s["values"].get("name"))
        return out

    def repair(self, before: set) -> None:
        """References to names defined before and nowhere now: node inputs become "", outputs go."""
        gone = before - self.defined()
        gone.discard("")
        if not gone:
            return
        for c in list(_containers(self.value)):
            if type(c) is not dict:
                continue
            ins = c.get("inputs")
            if "op" in c and type(ins) is list and any(type(x) is str and x in gone for x in ins):
                self.replace_list(ins, ["" if type(x) is str and x in gone else x for x in ins])
            outs = c.get("outputs")
            if type(c.get("nodes")) is list and type(outs) is list:
                keep = [o for o in outs if (o if type(o) is str else o.get("name") if type(o) is dict else None) not in gone]
                if len(keep) != len(outs):
                    self.replace_list(outs, keep)

    # -- bytes --------------------------------------------------------------------------------

    def build(self) -> tuple[bytes, int, list[tuple[int, int, int]]]:
        """(header + manifest + padding, file length, [(file offset, IN file offset, length)] of tensor bytes)."""
        moved, copies, cursor = [], [], 0
        for c in _containers(self.value):
            if type(c) is dict and "data" in c and _sound_data(c, self.data_length):
                d = c["data"]
                off, ln = d["offset"], d["length"]
                new = 0
                if ln:
                    new = align(cursor)
                    cursor = new + ln
                    copies.append((new, self.data_offset + off, ln))
                moved.append((d, off))
                d["offset"] = new
        try:
            text = json.dumps(self.value, separators=(",", ":"), ensure_ascii=False, allow_nan=True)
            try:
                manifest = text.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: keep it escaped, as IN had it
                manifest = json.dumps(self.value, separators=(",", ":"), allow_nan=True).encode("ascii")
        finally:
            for d, off in moved:
                d["offset"] = off
        do = align(64 + len(manifest))
        front = header(len(manifest), cursor) + manifest + bytes(do - 64 - len(manifest))
        return front, do + cursor, [(do + o, s, n) for o, s, n in copies]


class Shrinker:
    """The passes over a :class:`Tree`; each step is kept only when the candidate still fails like IN."""

    def __init__(self, tree: Tree, test: Tester, log) -> None:
        self.tree, self.test, self.log = tree, test, log
        self.defs = tree.defined()

    def attempt(self, mutate) -> bool:
        t = self.tree
        t.undo.clear()
        if mutate() is False:
            t.rollback()
            return False
        t.repair(self.defs)
        front, total, _ = t.build()
        if self.test(front, total):
            t.undo.clear()
            self.defs = t.defined()
            return True
        t.rollback()
        return False

    def run(self) -> None:
        passes = (("arrays", self.arrays), ("tensors", self.tensors), ("members", self.members),
                  ("strings", self.strings), ("numbers", self.numbers))
        while True:
            changed = False
            for name, fn in passes:
                before = len(self.tree.build()[0])
                start, tests = time.monotonic(), self.test.tests
                changed |= fn()
                self.log(f"{name}: manifest {before} -> {len(self.tree.build()[0])} bytes "
                         f"({self.test.tests - tests} tests, {time.monotonic() - start:.1f} s)")
            if not changed:
                return

    def arrays(self) -> bool:
        changed = False
        stack = [self.tree.value]
        while stack:
            c = stack.pop()
            if type(c) is list:
                changed |= self.reduce_list(c)
            items = c.values() if type(c) is dict else c
            stack.extend(x for x in reversed(list(items)) if type(x) in (dict, list))
        return changed

    def reduce_list(self, lst: list) -> bool:
        changed = False
        k = max(1, len(lst) // 2)
        while lst:
            i = 0
            while i < len(lst):
                new = lst[:i] + lst[i + k:]
                if self.attempt(lambda: self.tree.replace_list(lst, new)):
                    changed = True
                else:
                    i += k
            if k == 1:
                break
            k //= 2
        return changed

    def members(self) -> bool:
        changed = False
        for c in list(_containers(self.tree.value)):
            if type(c) is not dict:
                continue
            for key in list(c):
                if key in c and self.attempt(lambda: self.tree.replace_dict(c, {k: v for k, v in c.items() if k != key})):
                    changed = True
        return changed

    def tensors(self) -> bool:
        from ..format.dtypes import DTYPES

        def small(t: dict) -> list[dict]:
            """One-element versions of tensor ``t`` (a length that did not match its dims keeps not matching)."""
            dims, info = t.get("dims"), DTYPES.get(t.get("dtype")) if _is_int(t.get("dtype")) else None
            if type(dims) is not list or not all(_is_int(d) and d >= 0 for d in dims) or info is None:
                return []
            count = 1
            for d in dims:
                count *= d
            if info.bits == 0 and count <= 1:
                return []
            if info.bits == 0:
                s = t.get("strings")
                return [{**t, "dims": [], "strings": s[:1]}] if type(s) is list and len(s) == count else []
            if not _sound_data(t, self.tree.data_length):
                return []
            off, ln, one, exp = t["data"]["offset"], t["data"]["length"], info.byte_length(1), info.byte_length(count)
            if ln == exp:
                lengths = [one] if count > 1 else []
            else:
                lengths = [x for x in (one + ln - exp, 0, one + 1) if 0 <= x < ln and x != one]
            return [{**t, "dims": [], "data": {"offset": off, "length": x}} for x in lengths]

        found = [(c, v) for c in _containers(self.tree.value) if type(c) is dict and "dims" in c
                 for v in (small(c),) if v]
        if not found:
            return False
        if self.attempt(lambda: [self.tree.replace_dict(c, v[0]) for c, v in found]):
            return True
        changed = False
        for c, variants in found:
            for v in variants:
                if self.attempt(lambda: self.tree.replace_dict(c, v)):
                    changed = True
                    break
        return changed

    def _slots(self):
        """(container, key) of every string value, keys of 'format' and 'kind' excepted."""
        for c in list(_containers(self.tree.value)):
            pairs = c.items() if type(c) is dict else enumerate(c)
            for k, v in list(pairs):
                if type(v) is str and v and k not in ("format", "kind"):
                    yield c, k

    def strings(self) -> bool:
        seen: dict = {}
        for c, k in self._slots():
            seen.setdefault(c[k], None)
        names = iter(short_names(set(seen)))
        todo = [s for s in seen if len(s) > 2]
        mapping = {s: next(names) for s in todo}

        def rename(group: set):
            for c, k in list(self._slots()):
                if c[k] in group:
                    self.tree.set(c, k, mapping[c[k]])

        return in_halving_groups(todo, lambda group: self.attempt(lambda: rename(group)))

    def numbers(self) -> bool:
        """Large integers outside tensor data (attribute values, versions): 0, then 1."""
        changed = False
        for c in list(_containers(self.tree.value)):
            if type(c) is not dict:
                continue
            for k, v in list(c.items()):
                if _is_int(v) and abs(v) > 1 and k not in ("offset", "length", "dtype", "type", "version", "elem", "key"):
                    changed |= self.attempt(lambda: self.tree.set(c, k, 0)) or self.attempt(lambda: self.tree.set(c, k, 1))
        return changed


# ---------------------------------------------------------------------------------------------
# the command


def _say(text: str) -> None:
    from ..textsafe import visible

    print(f"{PROG}: shrink: {visible(text)}", file=sys.stderr, flush=True)


def run_shrink(src: str, dst: str, seconds: float = 60.0) -> int:
    """``--shrink``: 0 OUT written; 1 nothing to shrink or an error."""
    from ..format.reader import open_path

    t0 = time.monotonic()
    if same_file(src, dst):
        _say(f"refusing to write the input file {dst}")
        return 1
    try:
        doc = open_path(src, mode="strict")
    except FormatError as e:
        first = e
    else:
        source = doc.source
        doc.close()
        if source == "onnx":
            from .check import check_file

            probs = check_file(src).problems
            if probs:
                return _shrink_onnx(src, dst, probs[0], seconds, t0)
        _say(f"{src} is valid: nothing to shrink")
        return 1
    source = _source(src)
    if source == "ort":
        _say(f"{first.kind} at {first.where}: an .ort file is not shrunk (there is no .ort writer, and its defects "
             "are in the flatbuffer encoding, which a conversion to ONNX or OneModel does not keep)")
        return 1
    if source == "onnx":
        return _shrink_onnx(src, dst, first, seconds, t0)
    if first.where == "file":
        _say(f"{first.kind} at {first.where}: shrinking this is not supported")
        return 1
    _say(f"target: {first.kind} at {first.where}")
    target = Target(first.kind, first.where, first.message)
    suffix = os.path.splitext(dst)[1] or ".onemodel"
    test = Tester(target, suffix, t0 + seconds)
    test.fewest.limit = len(FewestProblems.problems(src) or ()) or 1
    test.src = src
    test.budget_spent = False
    size = os.path.getsize(src)
    copies: list = []
    try:
        with open(src, "rb") as f:
            head = f.read(64)
            h = dict(zip(FIELDS, HEADER.unpack(head))) if len(head) == 64 else None
            manifest = None
            if h is not None and 64 + h["manifest_length"] <= size and h["manifest_length"] <= 512 << 20:
                f.seek(64)
                manifest = f.read(h["manifest_length"])
        if first.where == "header" or first.where.startswith("header."):
            front = shrink_header(head, size, manifest, test)
            total = len(front) if front is not None else None
        else:
            found = None
            if manifest is not None and first.where != "manifest":
                found = _shrink_tree(manifest, h, test)
            elif manifest is not None:
                found = shrink_bytes(manifest, test)
            front, total, copies = found if found is not None else (None, None, [])
    except Budget:
        test.budget_spent = True
        front = None
    finally:
        test.close()
    if front is None:
        _say("no smaller file fails the same way: OUT is a copy of IN")
        front, total, copies = b"", size, [(0, 0, size)]
    elif total > size:
        front, total, copies = b"", size, [(0, 0, size)]
    try:
        _write(src, dst, front, total, copies)
    except FormatError as e:
        _say(f"{e.kind} at {e.where}: {e.message}")
        return 1
    try:
        open_path(dst, mode="strict").close()
        verdict = "opens without a problem (unexpected)"
    except FormatError as e:
        verdict = f"{e.kind} at {e.where}"
    note = " (time budget spent: not minimal)" if test.budget_spent else ""
    _say(f"{src} ({size} bytes) -> {dst} ({total} bytes): {verdict}; {test.tests} tests, "
         f"{time.monotonic() - t0:.1f} s{note}")
    return 0


def _source(path: str) -> str:
    """Which reader ``path`` goes to: ``onemodel``, ``onnx`` or ``ort`` (by its first bytes and name)."""
    from ..format import ort
    from ..format.reader import sniff_onemodel

    try:
        with open(path, "rb") as f:
            first = f.read(8)
        size = os.path.getsize(path)
    except OSError:
        return "onemodel"
    if first != b"ONEMODEL" and ort.sniff(path, first):
        return "ort"
    return "onemodel" if sniff_onemodel(path, first, size) else "onnx"


def _shrink_onnx(src: str, dst: str, first, seconds: float, t0: float) -> int:
    """An ONNX IN (:mod:`.shrink_onnx`): OUT is ONNX."""
    from ..format.reader import open_path
    from .shrink_onnx import fails_like, masked_first_line, shrink_onnx

    if first.where == "onnx":
        _say(f"{first.kind} at onnx: IN is not a protobuf this can reduce (OUT would be IN)")
        return 1
    checker = masked_first_line(first.message) if first.where == "onnx.checker" else None
    _say(f"target: {first.kind} at {first.where}" + (" (onnx.checker)" if checker else ""))
    target = Target(first.kind, first.where, first.message)
    front, tests, budget = shrink_onnx(src, target, checker, t0 + seconds, _say)
    size = os.path.getsize(src)
    if front is None:
        _say("no smaller file fails the same way: OUT is a copy of IN")
        copies, total, front = [(0, 0, size)], size, b""
    else:
        copies, total = [], len(front)
    try:
        _write(src, dst, front, total, copies)
    except FormatError as e:
        _say(f"{e.kind} at {e.where}: {e.message}")
        return 1
    if checker is None:
        try:
            open_path(dst, mode="strict").close()
            verdict = "opens without a problem (unexpected)"
        except FormatError as e:
            verdict = f"{e.kind} at {e.where}"
    else:
        verdict = "onnx.checker fails the same way" if fails_like(dst, target, checker) else "onnx.checker passes (unexpected)"
    note = " (time budget spent: not minimal)" if budget else ""
    _say(f"{src} ({size} bytes) -> {dst} ({total} bytes, ONNX): {verdict}; {tests} tests, "
         f"{time.monotonic() - t0:.1f} s{note}")
    return 0


def _shrink_tree(manifest: bytes, h: dict, test: Tester):
    try:
        value = json.loads(manifest)
    except (ValueError, RecursionError):
        value = None
    tree = Tree(value, h["data_offset"], h["data_length"]) if type(value) is dict else None
    if tree is None or not test(*tree.build()[:2]):
        # not JSON to Python, or it does not survive re-encoding (1e400 is inf): work on its bytes
        return shrink_bytes(manifest, test, h["data_offset"], h["data_length"])
    try:
        Shrinker(tree, test, _say).run()
    except Budget:
        tree.rollback()
        test.budget_spent = True
    return tree.build()


def _write(src: str, dst: str, front: bytes, total: int | None, copies: list) -> None:
    from ..format.onemodel.writer import atomic_output

    total = len(front) if total is None else total
    with open(src, "rb") as f, atomic_output(dst) as out:
        write_all(out, front)
        if total > len(front):
            out.truncate(total)
        for at, src_off, n in copies:
            copy_range(f.fileno(), out, src_off, n, at)
