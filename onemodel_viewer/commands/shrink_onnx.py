"""``--shrink`` of an ONNX file: delta debugging on the protobuf, output ``.onnx``.

The target is IN's first problem as ``--shrink`` defines it (:class:`~.shrink.Target`: the kind, the
``where`` up to array indices). When the viewer's reader accepts IN and only ``onnx.checker``
rejects it (``InvalidModel`` at ``onnx.checker``), a candidate must fail the checker with the same
first line of message, numbers masked.

Reductions, repeated until none applies or the time budget is spent, each re-tested: first every
tensor's data cut to one element (all at once, then halves of them; the target tensor's data halved
while it still fails), so that the later tests write and read a small file; the elements of every
repeated field (graph nodes, initializers, inputs, outputs, value_info, a node's attributes,
subgraphs' contents, functions, opsets, metadata, a tensor's dims...) removed in halving chunks,
last first (consumers go before their producers; the nodes that read what removed nodes made read
the graph's first input instead); a node input rewired to the graph's first input (so the producers
in front of a failing node can go); ``doc_string`` and the producer fields cleared; names (values,
nodes, tensors, graphs) renamed to short tokens, consistently everywhere, in halving groups. Generic
over the protobuf descriptors, so nested graphs (If/Loop/Scan bodies) shrink like the main graph.
The main graph keeps one output (when IN has one), and an output whose value a reduction removes
reads the last value still defined instead, so OUT's outputs name values it has.

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
from .shrink_bytes import Budget, FewestProblems, in_halving_groups, short_names

_DIGITS = re.compile(r"\d+")
_CLEAR = ("doc_string", "producer_name", "producer_version", "domain", "model_version")
"""Scalar fields set back to their default when that keeps the failure."""
_NAMES = {"NodeProto": ("input", "output", "name"), "ValueInfoProto": ("name",), "TensorProto": ("name",),
          "GraphProto": ("name",), "TensorAnnotation": ("tensor_name",), "FunctionProto": ("input", "output")}
"""The string fields holding names (renamed to short tokens); op types, domains, attribute names and
external-data entries are not names."""
MAIN_GRAPH = (("graph", None),)
"""The path of the model's graph (:func:`_resolve`)."""


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
        self.fewest = FewestProblems(target, 1)
        """The reader's target: set to IN's problem count before the search (never more problems than that)."""
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
        if self.checker is None:
            return self.fewest(self.path)
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
    from ..format.onnx.checker import checker_problems

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
        if not _fix_outputs(trial.graph, _undefined_outputs(self.model.graph)):
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
            # tensors first: every later test then writes and reads a small file, not IN's weights
            changed = self.tensors() | self.lists() | self.rewire() | self.scalars() | self.names()
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
        floor = 1 if path == MAIN_GRAPH and name == "output" else 0  # the model keeps an output
        size = n - floor
        while size >= 1:
            hi = n
            while hi > floor:
                lo = max(floor, hi - size)

                def cut(trial, lo=lo, hi=hi):
                    owner = _resolve(trial, path)
                    field = getattr(owner, name)
                    if name == "node" and owner.DESCRIPTOR.name == "GraphProto":
                        _rewire_removed(owner, lo, hi)
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

    def names(self) -> bool:
        """Names renamed to ``a``, ``b``, ... (the same name the same token everywhere), all at once,
        then in halving groups: the names the failure depends on (a checker message naming a node)
        keep theirs."""
        seen: dict = {}
        for m, f, i in _name_slots(self.model):
            seen.setdefault(getattr(m, f) if i is None else getattr(m, f)[i], None)
        tokens = short_names(set(seen))
        mapping = {}
        for name in seen:
            if len(name) > 1:
                token = next(tokens)
                if len(token) < len(name):
                    mapping[name] = token
        todo = list(mapping)

        def rename(trial, group):
            for m, f, i in list(_name_slots(trial)):
                if i is None:
                    if getattr(m, f) in group:
                        setattr(m, f, mapping[getattr(m, f)])
                elif getattr(m, f)[i] in group:
                    getattr(m, f)[i] = mapping[getattr(m, f)[i]]

        return in_halving_groups(todo, lambda group: self.attempt(lambda trial: rename(trial, group)))

    def tensors(self) -> bool:
        """Every tensor with more than one element of data: dims all 1 and one element, all at once,
        then halves of them (delta debugging: a 10 MB model has hundreds of Constant tensors, a test
        each took the whole time budget); a tensor that must keep its data (the target's length
        mismatch) has it halved while it still fails like IN."""
        paths = [path for path, name in _repeated(self.model) if name == "dims" or name.endswith("_data")]
        paths = sorted({p for p in paths if self._is_big_tensor(p)}, key=paths.index)
        return self._one_element(paths)

    def _is_big_tensor(self, path) -> bool:
        t = _resolve(self.model, path)
        if t is None or t.DESCRIPTOR.name != "TensorProto" or t.external_data:
            return False
        return _count(t.dims) > 1 or _data_len(t) > _width(t) or any(len(getattr(t, f)) > 1 for f in _TYPED)

    def _one_element(self, paths: list) -> bool:
        if not paths:
            return False

        def one(trial, paths=paths):
            for path in paths:
                t = _resolve(trial, path)
                if t is None:
                    return False
                del t.dims[:]
                t.dims.extend([1])
                if t.raw_data:
                    t.raw_data = t.raw_data[:_width(t)]
                for f in _TYPED:
                    values = getattr(t, f)
                    if len(values) > 1:
                        del values[1:]
            return None

        if self.attempt(one):
            return True
        if len(paths) == 1:
            return self._halve_data(paths[0])
        mid = len(paths) // 2
        return self._one_element(paths[:mid]) | self._one_element(paths[mid:])

    def _halve_data(self, path) -> bool:
        """The raw_data of the tensor at ``path`` cut in half as long as that still fails like IN."""
        changed = False
        while True:
            t = _resolve(self.model, path)
            if t is None or len(t.raw_data) <= 1:
                return changed

            def half(trial):
                u = _resolve(trial, path)
                u.raw_data = u.raw_data[:len(u.raw_data) // 2]

            if not self.attempt(half):
                return changed
            changed = True


def _rewire_removed(graph, lo: int, hi: int) -> None:
    """Before ``graph.node[lo:hi]`` go: the inputs of the other nodes that read what only those made
    read the graph's first input instead, so that the candidate has no undefined input the removal
    made (a cycle in the middle of 860 nodes: every removal in front of it was refused, and wiring
    the inputs one test at a time took the whole time budget)."""
    if not graph.input:
        return
    source = graph.input[0].name
    kept = [n for i, n in enumerate(graph.node) if not lo <= i < hi]
    made = {o for n in kept for o in n.output}
    gone = {o for n in graph.node[lo:hi] for o in n.output if o and o not in made}
    if not gone:
        return
    for n in kept:
        for j, value in enumerate(n.input):
            if value in gone:
                n.input[j] = source


def _name_slots(msg):
    """(message, field, index or None) of every name under ``msg`` (:data:`_NAMES`), in a fixed order."""
    stack = [msg]
    while stack:
        m = stack.pop()
        names = _NAMES.get(m.DESCRIPTOR.name, ())
        for fd, value in m.ListFields():
            if fd.name in names and fd.type == fd.TYPE_STRING:
                if _repeats(fd):
                    yield from ((m, fd.name, i) for i in range(len(value)))
                elif value:
                    yield m, fd.name, None
            elif fd.message_type is not None:
                if _repeats(fd):
                    stack.extend(reversed(value))
                else:
                    stack.append(value)


def _defined(graph) -> list[str]:
    """The values ``graph`` defines, in order: inputs, initializers, sparse initializers, node outputs."""
    out = [v.name for v in graph.input] + [t.name for t in graph.initializer]
    out += [s.values.name for s in graph.sparse_initializer]
    out += [o for n in graph.node for o in n.output]
    return [v for v in out if v]


def _undefined_outputs(graph) -> set:
    known = set(_defined(graph))
    return {o.name for o in graph.output if o.name not in known}


def _fix_outputs(graph, undefined_before: set) -> bool:
    """Outputs of ``graph`` whose value a reduction removed read the last value still defined that no
    other output reads, so the candidate does not gain an undefined output (IN's own undefined outputs,
    ``undefined_before``, stay as they are). False when no such value is left: the reduction is refused
    (the last node's outputs then stay, the model's output naming one of them)."""
    defined = _defined(graph)
    known = set(defined)
    lost = [i for i, o in enumerate(graph.output) if o.name not in known and o.name not in undefined_before]
    taken = {o.name for o in graph.output}
    spare = [v for v in reversed(dict.fromkeys(defined)) if v not in taken]
    if len(spare) < len(lost):
        return False
    for i in lost:
        graph.output[i].name = spare.pop(0)
    return True


_TYPED = ("float_data", "int32_data", "int64_data", "double_data", "uint64_data", "string_data")
"""A TensorProto's typed data fields."""


def _width(t) -> int:
    """Bytes of one element of ``t`` in raw_data (sub-byte types: the byte holding the first)."""
    from ..format.dtypes import by_code

    dt = by_code(t.data_type)
    return max(1, dt.byte_length(1)) if dt is not None and dt.bits else 1


def _data_len(t) -> int:
    return len(t.raw_data)


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
    test.fewest.limit = len(FewestProblems.problems(src) or ()) or 1
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
