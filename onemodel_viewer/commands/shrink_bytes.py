"""``--shrink``'s strategies for a problem of the header or of the manifest as a whole.

The header alone, then with a minimal manifest, then with IN's manifest, each with the offending
field taken from IN (or a nearby value); for invalid or too-deep JSON, the manifest's bytes are
removed in halving chunks. ``test`` is :class:`.shrink.Tester`: it writes a candidate and reports
whether its strict open fails like IN's, raising :class:`Budget` when the time is spent.
"""

from __future__ import annotations

from ..format.onemodel.header import STRUCT

HEADER = STRUCT  # the header layout (spec section 1.1), as the reader reads it
FIELDS = ("magic", "version", "flags", "manifest_offset", "manifest_length", "data_offset", "data_length",
           "file_length", "reserved")
MIN_MANIFEST = (b'{"format":"onemodel","version":1,"ir_version":3,"opsets":[],"graph":{"inputs":[],"outputs":[],'
                 b'"value_info":[],"initializers":[],"sparse_initializers":[],"nodes":[]}}')


def align(n: int) -> int:
    return (n + 63) // 64 * 64


def header(mlen: int, dlen: int, **over) -> bytes:
    do = align(64 + mlen)
    values = dict(zip(FIELDS, (b"ONEMODEL", 1, 0, 64, mlen, do, dlen, do + dlen, 0)))
    values.update(over)
    return HEADER.pack(*values.values())


class Budget(Exception):
    """The time budget is spent."""


class FewestProblems:
    """The "valid in every other way" half of a shrink's test: a candidate's diagnose-mode problems
    start with the target and are no more than the fewest any accepted candidate had (IN's to begin
    with). So a step that breaks something else (dropping ``opsets`` breaks rule 4 on every node)
    is refused, and OUT of an IN with one problem has exactly that one."""

    def __init__(self, target, limit: int) -> None:
        self.target = target
        self.limit = max(1, limit)

    @staticmethod
    def problems(path: str) -> list | None:
        """``path``'s diagnose-mode problems (None: it could not be opened at all)."""
        from ..format.errors import FormatError
        from ..format.reader import open_path

        try:
            doc = open_path(path, mode="diagnose")
        except FormatError:
            return None
        except Exception:  # noqa: BLE001 - a reader bug: not the failure we look for
            return None
        try:
            return list(doc.problems)
        finally:
            doc.close()

    def __call__(self, path: str) -> bool:
        probs = self.problems(path)
        if not probs or not self.target.matches(probs[0]) or len(probs) > self.limit:
            return False
        self.limit = len(probs)
        return True


def short_names(taken: set):
    """a, b, ..., z, aa, ab, ... skipping strings already in use (the names a shrink renames to)."""
    n = 1
    while True:
        for i in range(26 ** n):
            s, x = "", i
            for _ in range(n):
                s, x = chr(97 + x % 26) + s, x // 26
            if s not in taken:
                yield s
        n += 1


# ---------------------------------------------------------------------------------------------
# header and manifest-bytes strategies


def in_halving_groups(items: list, accept) -> bool:
    """Delta debugging over ``items``: all of them at once, then halves, quarters, ... down to one each.
    ``accept(group)`` applies a group (a set) to a trial and re-tests it: True when the change is kept
    (its items are then done). True when any group was kept."""
    changed = False
    k = max(1, len(items))
    while items:
        i = 0
        while i < len(items):
            group = set(items[i:i + k])
            if accept(group):
                changed = True
                items = items[:i] + items[i + k:]
            else:
                i += k
        if k == 1:
            break
        k = max(1, k // 2)
    return changed


def shrink_header(raw_head: bytes, size: int, manifest: bytes | None, test) -> bytes | None:
    """Smallest candidate (bytes) for a problem of the header."""
    where = test.target.where
    if where in ("header", "header.magic") or len(raw_head) < 64:
        with open(test.src, "rb") as f:
            head = f.read(4096)
        for n in sorted({0, 1, 4, 7, 8, 9, 16, 32, 63, 64, min(size, 4096)}):
            if n <= size and test(head[:n]):
                return head[:n]
        return None
    h = dict(zip(FIELDS, HEADER.unpack(raw_head)))
    field = where.split(".", 1)[1] if "." in where else ""
    consistent = {"file_length": size, "manifest_offset": 64, "data_offset": align(64 + h["manifest_length"]),
                  "data_length": size - h["data_offset"]}
    for body in (b"", MIN_MANIFEST, manifest):
        if body is None:
            continue
        base = dict(zip(FIELDS, HEADER.unpack(header(len(body), 0))))
        v, c = h.get(field), base.get(field)
        if v is None or c is None:
            return None
        variants = [v]
        if field in consistent:
            variants.append(c + v - consistent[field])
        variants += [c + 1, c - 1, c + 64, c - 64, 1 << 63, (1 << 64) - 1, 0]
        for value in dict.fromkeys(x for x in variants if 0 <= x < 1 << (32 if field in ("version", "flags") else 64)):
            front = header(len(body), 0, **{field: value}) + body
            front += bytes(align(len(front)) - len(front))
            if test(front):
                return front
    return None


def shrink_bytes(manifest: bytes, test, data_offset: int = 0, data_length: int = 0):
    """Remove chunks of the manifest's bytes while the candidate fails like IN (halving chunks).

    The data region is left out when the failure does not need it, else kept as IN has it.
    Returns (front, file length, copies), or None when not even IN's manifest reproduces it.
    """
    def front(m: bytes) -> bytes:
        return header(len(m), dlen) + m + bytes(align(64 + len(m)) - 64 - len(m))

    for dlen in dict.fromkeys((0, data_length)):
        if test(front(manifest), len(front(manifest)) + dlen):
            break
    else:
        return None
    m = manifest
    k = max(1, len(m) // 2)
    try:
        while m:
            i = 0
            while i < len(m):
                cand = m[:i] + m[i + k:]
                if test(front(cand), len(front(cand)) + dlen):
                    m = cand
                else:
                    i += k
            if k == 1:
                break
            k //= 2
    except Budget:
        test.budget_spent = True
    out = front(m)
    return out, len(out) + dlen, ([(len(out), data_offset, dlen)] if dlen else [])
