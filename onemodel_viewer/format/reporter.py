"""The problem reporter of the readers: strict raises the first problem, diagnose records every one.

One code path for both modes: every check calls ``report(kind, where, offset, message)``, so
strict's error is exactly diagnose's ``problems[0]``. ``offset=LOCATE`` asks for the file offset
of the JSON value at ``where`` (:class:`.manifest_locate.Locator`, failure path only; at most
``LOCATE_CAP`` look-ups each for problems and for findings).
"""

from __future__ import annotations

from .errors import Finding, FormatError, Kind, Problem
from .onemodel.manifest_locate import Locator

LOCATE_CAP = 2000
"""Diagnose mode: how many problems, and how many findings, get a located manifest offset (the first look-up in
each array is linear, later ones are cached; past the cap the offset is None)."""

LOCATE = object()
"""``offset`` argument: locate ``where`` in the manifest bytes."""


class Reporter:
    """Raises (strict) or records (diagnose) every problem: one code path for both modes."""

    __slots__ = ("strict", "problems", "findings", "manifest", "base", "locate_cap", "unique_keys", "keys_checked", "_located", "_locator")

    def __init__(self, strict: bool, locate_cap: int = LOCATE_CAP) -> None:
        self.strict = strict
        self.locate_cap = locate_cap
        self.problems: list[Problem] = []
        self.findings: list[Finding] = []
        self.manifest: bytes | None = None
        self.base = 64
        self.unique_keys = False
        self.keys_checked = False
        """Whether the parse looked for repeated keys (``unique_keys`` is then its answer)."""
        """Set once the manifest's parse proved no object repeats a key: a look-up then stops at its
        key (the same offsets; the middle node of 10,000 no longer skips the whole graph: ~170 -> ~25 ms)."""
        self._located = [0, 0]  # problems, findings
        self._locator: Locator | None = None

    def locate(self, where: str, finding: bool = False) -> int | None:
        # problems and findings have a cap each: findings (e.g. thousands of duplicate keys) must
        # not use up the look-ups of the problems, or diagnose's problems[0] would lose the offset
        # that strict's error has
        if self.manifest is None or self._located[finding] >= self.locate_cap:
            return None
        self._located[finding] += 1
        if self._locator is None:
            self._locator = Locator(self.manifest, unique_keys=self.unique_keys)
        found = self._locator.nearest(where)
        return None if found is None else self.base + found[0]

    def __call__(self, kind: Kind, where: str, offset, message: str) -> None:
        if offset is LOCATE:
            offset = self.locate(where)
        if self.strict:
            raise FormatError(kind, where, offset, message)
        self.problems.append(Problem(kind, where, offset, message))

    def finding(self, code: str, where: str, offset, message: str) -> None:
        if offset is LOCATE:
            offset = self.locate(where, finding=True)
        self.findings.append(Finding(code, where, offset, message))

    def release_manifest(self) -> None:
        """Drop the manifest bytes and the locator's decoded copy (nothing is reported after the open)."""
        self.manifest = None
        self._locator = None
