"""The dependency pass of a large graph in arrays, and the stable dependency sort in compiled code.

For a graph of at least :data:`BIG` nodes whose stored order could not be proven the dependency order
(:func:`.rules._defined_in_order`), :func:`inputs_pass` looks every node input up once (one C-level
``map`` over the flat input names) into an int64 array: the inputs no definition names flag their node
(as the per-node loop of :mod:`.rules` does), and ``producer >= node`` anywhere means the nodes are out of
order. :class:`Deps` keeps those producers as CSR arrays; :meth:`Deps.order` is the same order as
:meth:`.rules.Resolver.topo` (Kahn's algorithm taking the smallest ready index first) from the compiled
``topo`` of ``onemodel_viewer.ckernels``. Without the compiled module (or below :data:`BIG`
nodes) :mod:`.rules` runs its Python loops and heap instead: 2,000,000 nodes stored in reverse
dependency order took tens of seconds there, ~0.1 s of C here.
"""

from __future__ import annotations

from itertools import chain, repeat
from typing import TYPE_CHECKING

from ..kernels import KERNELS

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

BIG = 20_000
"""Nodes from which a graph's dependency pass runs here (numpy is imported for it: ~0.1 s)."""


def available(n: int) -> bool:
    """Whether a graph of ``n`` nodes takes this path."""
    return KERNELS is not None and n >= BIG


class Deps:
    """Node ``i``'s producers (node indices, duplicates kept) ``prods[ptr[i]:ptr[i + 1]]``; a sequence of lists."""

    __slots__ = ("ptr", "prods")

    def __init__(self, ptr: "np.ndarray", prods: "np.ndarray") -> None:
        self.ptr = ptr
        self.prods = prods

    def __len__(self) -> int:
        return self.ptr.size - 1

    def __getitem__(self, i: int) -> list[int]:
        return self.prods[self.ptr[i] : self.ptr[i + 1]].tolist()

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def order(self) -> tuple[list[int], int]:
        """(the stable dependency order of the nodes it could order, how many that is: fewer than all: a cycle)."""
        import numpy as np

        out = np.empty(len(self), dtype=np.int64)
        emitted = KERNELS.topo(self.ptr, self.prods, out)
        return out[:emitted].tolist(), emitted


def inputs_pass(ins_col: list, defs: dict, flagged: set) -> tuple["np.ndarray", "np.ndarray", bool]:
    """(each input's node, each input's definition: node index, -1 outside the nodes, -2 none; in order).

    Adds to ``flagged`` every node with a non-empty input no definition names."""
    import numpy as np

    n = len(ins_col)
    counts = np.fromiter(map(len, ins_col), dtype=np.int64, count=n)
    names = list(chain.from_iterable(ins_col))
    found = np.fromiter(map(defs.get, names, repeat(-2)), dtype=np.int64, count=len(names))
    node_of = np.repeat(np.arange(n, dtype=np.int64), counts)
    for k in np.flatnonzero(found == -2).tolist():
        if names[k]:  # "" is an omitted operand, not a reference
            flagged.add(int(node_of[k]))
    in_order = not bool(np.any(found >= node_of))
    return node_of, found, in_order


def deps(node_of: "np.ndarray", found: "np.ndarray", n: int, implicit: dict[int, list[int]]) -> Deps:
    """The producers of each of ``n`` nodes: its inputs' (from :func:`inputs_pass`) and ``implicit[i]`` (what its
    subgraphs read from this graph)."""
    import numpy as np

    keep = found >= 0
    owners, prods = node_of[keep], found[keep]
    if implicit:
        extra_owner = np.fromiter(chain.from_iterable(repeat(i, len(v)) for i, v in implicit.items()), dtype=np.int64)
        extra = np.fromiter(chain.from_iterable(implicit.values()), dtype=np.int64)
        owners = np.concatenate([owners, extra_owner])
        prods = np.concatenate([prods, extra])
        by = np.argsort(owners, kind="stable")
        owners, prods = owners[by], prods[by]
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owners, minlength=n), out=ptr[1:])
    return Deps(ptr, np.ascontiguousarray(prods))
