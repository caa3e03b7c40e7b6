"""A read-only mapping kept as several dicts, so that filling it never resizes one huge table.

CPython resizes a dict in one C call, holding the interpreter: in the viewer's background job,
the one resize of a 699,051-entry producer (or consumer) map of a 10^6-node graph held it from
the UI thread 76-86 ms (fresh memory: page faults), on a loaded machine up to ~0.5 s; a key
press waited that long. Split in dicts of at most :data:`SHARD_SIZE` expected entries, each
resize is bounded (~1 ms) and the interpreter changes threads between them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

__all__ = ["SHARD_SIZE", "ShardMap"]

V = TypeVar("V")

SHARD_SIZE = 16_384
"""Expected entries per dict: a size of ~10^4 resizes in ~1 ms."""


class ShardMap(Mapping[str, V], Generic[V]):
    """``str -> V`` split by key hash over a power of two of dicts (one for up to :data:`SHARD_SIZE` entries).

    Filled through :meth:`shard` (the dict that holds ``key``); read like a dict. Iteration goes
    shard by shard: insertion order within each shard only.
    """

    __slots__ = ("mask", "shards")

    def __init__(self, expected: int = 0) -> None:
        n = 1
        while n * SHARD_SIZE < expected:
            n *= 2
        self.mask = n - 1
        self.shards: tuple[dict[str, V], ...] = tuple({} for _ in range(n))

    def shard(self, key: str) -> dict[str, V]:
        """The dict that holds (or would hold) ``key``."""
        return self.shards[hash(key) & self.mask]

    def __getitem__(self, key: str) -> V:
        return self.shards[hash(key) & self.mask][key]

    def get(self, key, default=None):
        return self.shards[hash(key) & self.mask].get(key, default)

    def __contains__(self, key) -> bool:
        return key in self.shards[hash(key) & self.mask]

    def __iter__(self) -> Iterator[str]:
        for s in self.shards:
            yield from s

    def __len__(self) -> int:
        return sum(len(s) for s in self.shards)

    def __repr__(self) -> str:
        return f"ShardMap({len(self)} entries in {len(self.shards)} dicts)"
