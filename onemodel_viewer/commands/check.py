"""``onemodel-view --check [--json] [--strict] FILE...``: validate files, report every problem.

Exit status: 0 when every file is valid, 1 when any file has a problem (or, with ``--strict``,
any finding); usage errors (2) are argparse's.

``--json`` prints one JSON object per file and line::

    {"file": str, "valid": bool, "problems": [{"kind", "where", "offset", "message", "rule", "file"?}],
     "findings": [{"code", "where", "offset", "message", "file"?}],
     "files"?: [{"path", "size", "tensors", "owned", "unowned", "alignment", "shared_with"}],
     "ort"?: {"version", "payloads", "payload_alignment"}}

A problem or finding about an ONNX weights file names it in ``file`` (its location, relative to the
model's folder); ``files`` (ONNX files with external data) is the layout of each weights file
(:mod:`onemodel_viewer.analysis.layout.external`), ``shared_with`` the models checked before this
one in the same run that read the same file.

``problems[0]`` is the error strict reading raises. Output is ASCII JSON (``ensure_ascii``), so
control characters and lone surrogates from the file stay escaped. The JSON path imports
neither rich, textual, numpy nor onnx (unless the file is ONNX).

Without ``--json``: a readable report per file; every file-derived string goes through
:func:`onemodel_viewer.textsafe.visible` into a ``rich.text.Text``.

ONNX files are imported (diagnose mode) and checked with ``onnx.checker`` (with their external
data loaded as the checker needs it: :mod:`onemodel_viewer.format.onnx.checker`); a checker failure
is ``InvalidModel`` at ``onnx.checker``.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field

from ..format.errors import Finding, FormatError, Kind, Problem
from ..process import paused_gc
from . import plaintext

EXCERPT = 64
"""Bytes of hex excerpt shown around a problem's offset."""


@dataclass(slots=True)
class CheckResult:
    """One file's result."""

    file: str
    problems: list[Problem] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    source: str = "onemodel"
    files: list = field(default_factory=list, repr=False, compare=False)
    """ONNX: the :class:`~onemodel_viewer.analysis.layout.external.FileLayout` of each weights file."""
    shared: dict[str, list[str]] = field(default_factory=dict, repr=False, compare=False)
    """Weights file location -> models checked earlier in the run that read it too."""
    external: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    """Weights file location -> the path it resolved to (the only files an excerpt is read from)."""
    ort: dict | None = field(default=None, repr=False, compare=False)
    """``.ort`` files: format version, payload count and the alignment every payload offset has."""

    @property
    def valid(self) -> bool:
        return not self.problems

    def as_json(self) -> dict:
        if self.problems:
            from ..format.spec_rules import problem_json
        out = {
            "file": self.file,
            "valid": self.valid,
            "problems": [problem_json(p) for p in self.problems],
            "findings": [f.as_json() for f in self.findings],
        }
        if self.ort is not None:
            out["ort"] = self.ort
        if self.files:
            out["files"] = [dict(fl.as_json(), shared_with=self.shared.get(fl.path, [])) for fl in self.files]
        return out


_HELD: list = []
"""The last file's closed document and parsed manifest, kept by :func:`run_check` until the
next file: freeing ~10^5 records costs ~6 ms on an LLM-sized model, and the one-shot CLI ends
with ``os._exit`` (``cli.entry``), so the last file's records are never walked by the deallocator."""


def check_file(path: str, keep: list | None = None) -> CheckResult:
    """Every problem and finding of one file (never raises for file contents).

    ``keep``: a list that receives the (closed) document and parsed manifest, to free them later.
    """
    from ..format.reader import open_with_manifest

    remote = "://" in path
    if remote:  # a URL: shown without its credentials (format/remote is imported for URLs only)
        from ..format.remote.urls import redact

    result = CheckResult(redact(path) if remote else path)
    try:
        doc, parsed = open_with_manifest(path, mode="diagnose")
    except FormatError as e:  # the ONNX importer may raise even in diagnose mode
        result.problems.append(e.problem)
        result.source = "onnx"
        return result
    except (OSError, MemoryError) as e:  # pragma: no cover - defensive
        result.problems.append(Problem(Kind.IO, "file", None, f"cannot read: {e}"))
        return result
    try:
        result.source = doc.source
        result.problems.extend(doc.problems)
        if doc.source == "ort":  # the ORT reader reports its layout findings at open
            result.findings.extend(doc.findings)
            result.ort = _ort_summary(doc.extra)
        elif doc.source == "onnx":
            result.findings.extend(doc.findings)
            _external(doc, result)
            if not any(p.kind == Kind.MALFORMED and p.where == "onnx" for p in doc.problems):
                from ..format.onnx.checker import checker_problems

                external = bool(doc.external_files) or any(".external_data" in p.where for p in doc.problems)
                if remote:
                    from ..format.remote.onnx_check import remote_checker

                    problems, findings = remote_checker(path, external)
                    result.problems.extend(problems)
                    result.findings.extend(findings)
                else:
                    result.problems.extend(checker_problems(path, external))
        else:
            from ..analysis.layout.onemodel import all_findings

            try:
                result.findings.extend(all_findings(doc, parsed=parsed))
            except FormatError as e:  # the file changed under us while scanning
                result.findings.extend(doc.findings)
                result.problems.append(e.problem)
    finally:
        doc.close()
        if keep is not None:
            keep.append(doc)
            keep.append(parsed)
    return result


def _ort_summary(facts) -> dict | None:
    """``{"version", "payloads", "payload_alignment"}``: the largest power of two (up to 1 MiB) that divides
    every non-empty payload's offset, None without payloads (``--export X.ort --align N`` gives N)."""
    if facts is None or not hasattr(facts, "payloads"):
        return None
    offsets = [p.offset for p in facts.payloads if p.length]
    align = min((o & -o if o else 1 << 20) for o in offsets) if offsets else None
    return {"version": facts.version, "payloads": len(facts.payloads),
            "payload_alignment": None if align is None else min(align, 1 << 20)}


def _external(doc, result: CheckResult) -> None:
    """The weights files' layout and findings (ONNX with external data)."""
    if not doc.external_files:
        return
    from ..analysis.layout.external import external_findings, external_layout

    result.files = external_layout(doc)
    result.findings.extend(external_findings(result.files))
    result.external = {fl.path: fl.real for fl in result.files}


def _file_key(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return path
    return (st.st_dev, st.st_ino)


def run_check(files: list[str], as_json: bool = False, strict: bool = False) -> int:
    rc = 0
    console = None
    readers: dict[object, list[tuple[str, str]]] = {}  # weights file -> (model, location) of each model reading it
    for path in files:
        # Reading a file allocates ~10^5 objects that stay alive until its report is out: the
        # cyclic GC would only walk them (measured: ~15% of a --check of an LLM-sized file).
        # Per file, so a long list of files does not grow without collection.
        _HELD.clear()  # the previous file's records
        with paused_gc():
            result = check_file(path, _HELD)
        for fl in result.files:
            seen = readers.setdefault(_file_key(fl.real), [])
            result.shared[fl.path] = [m for m, _loc in seen if m != path]
            seen.append((path, fl.path))
        if result.problems or (strict and result.findings):
            rc = 1
        if as_json:
            sys.stdout.write(json.dumps(result.as_json(), ensure_ascii=True) + "\n")
            sys.stdout.flush()
        elif not sys.stdout.isatty():  # a pipe or a file: plain text, and no rich to import (commands/plaintext.py)
            sys.stdout.write(str(render(result, strict, plaintext)) + "\n")
        else:
            if console is None:
                from rich.console import Console

                console = Console(highlight=False)
            console.print(render(result, strict))
    shared = [(key, seen) for key, seen in readers.items() if len({m for m, _loc in seen}) > 1]
    if shared and not as_json:
        if console is None:
            sys.stdout.write(str(_shared_summary(shared, plaintext)) + "\n")
        else:
            console.print(_shared_summary(shared))
    return rc


def _shared_summary(shared, kit=None):
    Text = _kit(kit)[0]

    from ..textsafe import visible

    out = Text("models sharing a weights file:", style="bold")
    for _key, seen in shared:
        out.append("\n  ")
        out.append(", ".join(f"{visible(m, 200)} ({visible(loc, 200)})" for m, loc in seen))
    return out


# ---------------------------------------------------------------------------------------------
# the readable report


def _excerpt(path: str, offset: int) -> tuple[int, bytes] | None:
    """(start, bytes) of about EXCERPT bytes around ``offset``, 16-byte aligned."""
    start = max(0, (offset // 16) * 16 - 16)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if offset < 0 or start >= size:  # a claimed offset past the end (even past 2^63): nothing to show
                return None
            f.seek(start)
            data = f.read(EXCERPT)
    except (OSError, ValueError, OverflowError):
        return None
    return (start, data) if data else None


def _kit(kit) -> tuple:
    """(Text, Group): rich's, or ``kit``'s (:mod:`.plaintext`)."""
    if kit is not None:
        return kit.Text, kit.Group
    from rich.console import Group
    from rich.text import Text

    return Text, Group


def render(result: CheckResult, strict: bool = False, kit=None):
    """A ``rich`` renderable for one file's result (``kit``: :mod:`.plaintext`, whose ``str()`` is the plain text)."""
    Text, Group = _kit(kit)

    from ..textsafe import visible

    parts = []
    title = Text()
    title.append(visible(result.file, 400), style="bold")
    if result.valid and not (strict and result.findings):
        title.append("  valid", style="bold green")
    else:
        title.append("  INVALID" if not result.valid else "  findings", style="bold red" if not result.valid else "bold yellow")
    title.append(f"  ({len(result.problems)} problem{'s' * (len(result.problems) != 1)}, "
                 f"{len(result.findings)} finding{'s' * (len(result.findings) != 1)})", style="dim")
    parts.append(title)
    from ..format.spec_rules import rule_of

    for i, p in enumerate(result.problems):
        rule = rule_of(p)
        parts.append(_item(result, f"{p.kind.value}", p.where, p.offset, p.message, "red", first=i == 0,
                           rule=rule.label() if rule else None, file=p.file, kit=kit))
    for f in result.findings:
        parts.append(_item(result, f"finding {f.code}", f.where, f.offset, f.message, "yellow", first=False,
                           file=f.file, kit=kit))
    if result.files:
        parts.append(_files_table(result, kit))
    return Group(*parts)


def _files_table(result: CheckResult, kit=None):
    """The weights files as a small table: location, size, tensors, owned, unowned, alignment."""
    Text = _kit(kit)[0]

    from ..textsafe import visible

    rows = [("weights file", "size", "tensors", "owned", "unowned", "alignment")]
    for fl in result.files:
        shared = result.shared.get(fl.path)
        name = visible(fl.path, 200) + (f"  (also read by {', '.join(visible(m, 200) for m in shared)})" if shared else "")
        rows.append((name, f"{fl.size:,}", f"{fl.tensors:,}", f"{fl.owned:,}", f"{fl.unowned:,}",
                     "-" if fl.alignment is None else f"{fl.alignment:,}"))
    widths = [max(len(r[i]) for r in rows) for i in range(1, 6)]
    out = Text()
    for k, r in enumerate(rows):
        out.append("  " + "  ".join([r[i].rjust(widths[i - 1]) for i in range(1, 6)]) + "  " + r[0],
                   style="bold" if k == 0 else "")
        if k + 1 < len(rows):
            out.append("\n")
    return out


def _item(result: CheckResult, label: str, where: str, offset: int | None, message: str, color: str, first: bool,
          rule: str | None = None, file: str | None = None, kit=None):
    Text, Group = _kit(kit)

    from ..textsafe import visible

    line = Text("  ")
    line.append(label, style=f"bold {color}")
    line.append(" at ")
    line.append(visible(where, 300), style="cyan")
    if offset is not None:
        line.append(f"  offset {offset:#x} ({offset})", style="magenta")
    if file is not None:
        line.append("  in ")
        line.append(visible(file, 300), style="bold magenta")
    if first and label[0].isupper():
        line.append("  [strict error]", style="dim")
    msg = Text("    ")
    msg.append(visible(message, 500))
    rows = [line, msg]
    if rule:
        rows.append(Text(f"    rule: {rule}", style="dim"))
    # the excerpt comes from the file the offset is in; a weights file only once the importer resolved it
    source = result.file if file is None else result.external.get(file)
    if offset is not None and source is not None and os.path.isfile(source):
        ex = _excerpt(source, offset)
        if ex is not None:
            rows.append(_hex(ex[0], ex[1], offset, kit))
    return Group(*rows)


def _hex(start: int, data: bytes, mark: int, kit=None):
    Text = _kit(kit)[0]

    out = Text()
    for row in range(0, len(data), 16):
        chunk = data[row : row + 16]
        addr = start + row
        out.append(f"    {addr:08x}  ", style="dim")
        for k in range(16):
            if k < len(chunk):
                style = "reverse bold" if addr + k == mark else ""
                out.append(f"{chunk[k]:02x}", style=style)
            else:
                out.append("  ")
            out.append(" " if k != 7 else "  ")
        out.append(" ")
        for k, b in enumerate(chunk):
            ch = chr(b) if 0x20 <= b < 0x7F else "."
            out.append(ch, style="reverse bold" if addr + k == mark else "")
        if row + 16 < len(data):
            out.append("\n")
    return out
