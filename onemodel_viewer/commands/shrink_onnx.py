"""``--shrink`` of an ONNX file: delta debugging on the protobuf, output ``.onnx``.

The target is IN's first problem as ``--shrink`` defines it (:class:`~.shrink.Target`: the kind, the
``where`` up to array indices). When the viewer's reader accepts IN and only ``onnx.checker``
rejects it (``InvalidModel`` at ``onnx.checker``), a candidate must fail the checker with the same
first line of message, numbers masked.

Reductions, repeated until none applies or the time budget is spent, each re-tested: the elements
of every repeated field (graph nodes, initializers, inputs, outputs, value_info, a node's
attributes, subgraphs' contents, functions, opsets, metadata, a tensor's dims...) removed in halving
chunks, last first (consumers go before their producers); a node input rewired to the graph's first
input (so the producers in front of a failing node can go); ``doc_string`` and the producer fields
cleared; a tensor's data cut to its first element when the tensor is not the target. Generic over the
protobuf descriptors, so nested graphs (If/Loop/Scan bodies) shrink like the main graph.

External data: candidates are tested in a temporary folder holding sparse stand-ins (same size,
no bytes) for the weights files IN names inside its folder, so a location or a range still resolves
(a symlink or hard link is not reproduced: such a target is not found and OUT is a copy of IN). OUT
keeps the locations of the tensors it keeps; the files are not copied (stderr names them).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time

from ..format.errors import FormatError, Kind
from .shrink_bytes import Budget

_DIGITS = re.compile(r"\d+")
_CLEAR = ("doc_string", "producer_name", "producer_version", "domain", "model_version")
"""Scalar fields set back to their default when that keeps the failure."""


class OnnxTester:
    """Writes candidates (serialized models) to a temporary folder and tests them."""

    def __init__(self, target, checker: str | None, deadline: float, externals: list[tuple[str, int]],
                 name: str = "candidate.onnx") -> None:
        self.target = target
        self.checker = checker
        """The masked first line of the checker's message (a checker-only target), else None."""
        self.deadline = deadline
        self.dir = tempfile.mkdtemp(prefix="omv-shrink-onnx-")
        self.path = os.path.join(self.dir, name)
        """IN's own name (a location naming the model file itself stays a self-reference)."""
        self.tests = 0
        for loc, size in externals:
            if os.path.normpath(loc) == name:
                continue
            # sparse stand-ins: the reader resolves and bounds-checks, never reads them
            p = os.path.join(self.dir, loc)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.truncate(size)

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def __call__(self, data: bytes) -> bool:
        if time.monotonic() > self.deadline:
            raise Budget
        self.tests += 1
        with open(self.path, "wb") as f:
            f.write(data)
        return fails_like(self.path, self.target, self.checker)


def masked_first_line(message: str) -> str:
    return _DIGITS.sub("#", message.split("\n", 1)[0])


def fails_like(path: str, target, checker: str | None) -> bool:
    """Does the model at ``path`` fail like the target (the strict reader, or the checker)?"""
    from ..format.reader import open_path

    try:
        open_path(path, mode="strict").close()
    except FormatError as e:
        return checker is None and target.matches(e)
    except Exception:  # noqa: BLE001 - a reader bug: not the failure we look for
        return False
    if checker is None:
        return False
    from ..format.onnx_checker import checker_problems

    probs = checker_problems(path, False)
    return bool(probs) and probs[0].kind == Kind.INVALID_MODEL and masked_first_line(probs[0].message) == checker


def external_files(model, folder: str) -> list[tuple[str, int]]:
    """(location, size) of the regular weights files ``model`` names inside ``folder`` (no symlinks)."""
    out, seen = [], set()
    base = os.path.realpath(folder)
    for t in _tensors(model):
        for e in t.external_data:
            if e.key != "location" or e.value in seen:
                continue
            seen.add(e.value)
            loc = e.value
            p = os.path.join(folder, loc)
            if os.path.isabs(loc) or ".." in re.split(r"[\\/]", loc) or os.path.islink(p) or not os.path.isfile(p):
                continue
            if not os.path.realpath(p).startswith(base + os.sep):
                continue
            out.append((loc, os.path.getsize(p)))
    return out


def _repeats(fd) -> bool:
    """A repeated field (protobuf 6 has ``is_repeated``; older versions only ``label``)."""
    rep = getattr(fd, "is_repeated", None)
    return bool(rep) if rep is not None else fd.label == fd.LABEL_REPEATED


def _tensors(msg):
    """Every TensorProto under ``msg`` (initializers, Constant attributes, subgraphs)."""
    stack = [msg]
    while stack:
        m = stack.pop()
        if m.DESCRIPTOR.name == "TensorProto":
            yield m
        for fd, value in m.ListFields():
            if fd.message_type is None:
                continue
            if _repeats(fd):
                stack.extend(value)
            else:
                stack.append(value)


def _repeated(msg, path=()):
    """(path, field name) of every non-empty repeated field under ``msg``, top-down; a path is
    ((field, index or None), ...) from the model."""
    out = []
    stack = [(msg, path)]
    while stack:
        m, p = stack.pop(0)
        for fd, value in m.ListFields():
            if _repeats(fd):
                out.append((p, fd.name))
                if fd.message_type is not None:
                    stack.extend((v, p + ((fd.name, i),)) for i, v in enumerate(value))
            elif fd.message_type is not None:
                stack.append((value, p + ((fd.name, None),)))
    return out


def _resolve(msg, path):
    for name, i in path:
        f = getattr(msg, name)
        if i is None:
            msg = f
        elif i < len(f):
            msg = f[i]
        else:
            return None
    return msg


class OnnxShrinker:
    """Greedy reductions of one ModelProto, each kept only when the candidate still fails like IN."""

    def __init__(self, model, test: OnnxTester, log) -> None:
        self.model = model
        self.size = model.ByteSize()
        self.test = test
        self.log = log

    def attempt(self, mutate, smaller: bool = True) -> bool:
        """Apply ``mutate`` to a copy; keep the copy when it still fails like the target.

        ``smaller`` (all but rewiring): only a smaller file counts. Rewiring keeps the size about the
        same; it ends because an input once wired to the graph input is not wired again.
        """
        trial = type(self.model)()
        trial.CopyFrom(self.model)
        if mutate(trial) is False:
            return False
        data = trial.SerializeToString()
        if len(data) >= self.size + (0 if smaller else 64):
            return False
        if self.test(data):
            self.model, self.size = trial, len(data)
            return True
        return False

    def run(self) -> None:
        changed = True
        while changed:
            changed = self.lists() | self.rewire() | self.scalars() | self.tensors()
            self.log(f"{self.model.ByteSize()} bytes, {self.test.tests} tests")

    def lists(self) -> bool:
        """Remove elements of repeated fields, halving chunks, last first; start again after a success."""
        any_change = False
        restart = True
        while restart:
            restart = False
            for path, name in _repeated(self.model):
                owner = _resolve(self.model, path)
                if owner is None:
                    continue
                if self._reduce(path, name, len(getattr(owner, name))):
                    any_change = restart = True
                    break
        return any_change

    def _reduce(self, path, name, n: int) -> bool:
        changed = False
        size = n
        while size >= 1:
            hi = n
            while hi > 0:
                lo = max(0, hi - size)

                def cut(trial, lo=lo, hi=hi):
                    field = getattr(_resolve(trial, path), name)
                    del field[lo:hi]

                if self.attempt(cut):
                    changed = True
                    n -= hi - lo
                hi = lo
            size //= 2
        return changed

    def rewire(self) -> bool:
        """A node input read from the graph's first input instead of its producer (which the next
        pass can then remove): a chain in front of the failing node goes."""
        changed = False
        for path, name in _repeated(self.model):
            if name != "input" or not path or path[-1][0] != "node":
                continue
            graph = _resolve(self.model, path[:-1])
            node = _resolve(self.model, path)
            if graph is None or node is None or not graph.input:
                continue
            source = graph.input[0].name
            for j, value in enumerate(node.input):
                if value in ("", source):
                    continue

                def wire(trial, path=path, j=j, source=source):
                    _resolve(trial, path).input[j] = source

                changed |= self.attempt(wire, smaller=False)
        return changed

    def scalars(self) -> bool:
        changed = False
        stack = [()]
        while stack:
            path = stack.pop()
            m = _resolve(self.model, path)
            if m is None:
                continue
            for fd, value in m.ListFields():
                if fd.name in _CLEAR and not _repeats(fd) and fd.message_type is None:
                    def clear(trial, path=path, name=fd.name):
                        _resolve(trial, path).ClearField(name)

                    changed |= self.attempt(clear)
                elif fd.message_type is not None:
                    if _repeats(fd):
                        stack.extend(path + ((fd.name, i),) for i in range(len(value)))
                    else:
                        stack.append(path + ((fd.name, None),))
        return changed

    def tensors(self) -> bool:
        """A tensor with more than one element: dims all 1 and one element of data."""
        changed = False
        for path, name in _repeated(self.model):
            owner = _resolve(self.model, path)
            if owner is None or owner.DESCRIPTOR.name != "TensorProto" or name != "dims":
                continue
            if len(owner.dims) == 0 or all(d == 1 for d in owner.dims) or owner.external_data:
                continue

            def one(trial, path=path):
                t = _resolve(trial, path)
                if t is None:
                    return False
                width = len(t.raw_data) // max(1, _count(t.dims))
                del t.dims[:]
                t.dims.extend([1])
                if t.raw_data:
                    t.raw_data = t.raw_data[:width]
                for f in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data", "string_data"):
                    values = getattr(t, f)
                    if len(values) > 1:
                        del values[1:]
                return None

            changed |= self.attempt(one)
        return changed


def _count(dims) -> int:
    n = 1
    for d in dims:
        n *= max(0, d)
    return n


def shrink_onnx(src: str, target, checker: str | None, deadline: float, say):
    """The shrunk model's bytes, (its bytes, tests, whether the budget ended it); None when IN's
    failure is not reproduced outside IN's folder (OUT is then a copy of IN)."""
    import onnx

    with open(src, "rb") as f:
        data = f.read()
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception:  # noqa: BLE001 - not protobuf: nothing to reduce at this level
        return None, 0, False
    test = OnnxTester(target, checker, deadline, external_files(model, os.path.dirname(os.path.abspath(src))),
                      os.path.basename(src))
    budget = False
    try:
        if not test(model.SerializeToString()):
            return None, test.tests, False
        shrinker = OnnxShrinker(model, test, say)
        try:
            shrinker.run()
        except Budget:
            budget = True
        out = shrinker.model
        locs = sorted({e.value for t in _tensors(out) for e in t.external_data if e.key == "location"})
        if locs:
            say(f"OUT names external data files it does not contain: {', '.join(locs)} (IN's; copy them beside OUT)")
        return out.SerializeToString(), test.tests, budget
    finally:
        test.close()
