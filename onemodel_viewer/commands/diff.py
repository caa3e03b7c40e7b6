"""``onemodel-view --diff A B --json`` / ``--summary``: differences for scripts and for people.

Exit status: 0 the models are equal, 1 they differ, 2 a file could not be
opened or read (one line on stderr naming the file and the reader's problem
kind and ``where``; never a traceback).
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from ..textsafe import visible


MAX_FINDINGS = 8
"""Findings listed per file in the summary (``--json`` lists every one)."""

DISAGREEMENT_CODES = ("duplicate-key", "shared-bytes")
"""Findings after which two readers of the same file may see different models."""

MAX_ROWS = 500
"""Rows of the summary table; the rest is counted (``--json`` lists everything)."""


def _error(path: str, exc: BaseException, err: TextIO) -> int:
    from ..format.errors import FormatError

    if isinstance(exc, FormatError):
        where = f" at {exc.where}" if exc.where else ""
        off = f" (offset {exc.offset})" if exc.offset is not None else ""
        msg = f"{exc.kind.value}{where}{off}: {exc.message}"
    elif isinstance(exc, OSError):
        msg = f"Io: {exc.strerror or exc}"
    else:
        msg = f"internal error: {type(exc).__name__}: {exc}"
    print(f"onemodel-view: {visible(str(path))}: {visible(msg)}", file=err)
    return 2


def run_diff(a: str, b: str, as_json: bool = False, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Compare files ``a`` and ``b`` (OneModel or ONNX, any combination); print JSON or a summary."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    from .. import format as omf
    from ..analysis.diff import diff

    docs = []
    try:
        for path in (a, b):
            try:
                docs.append(omf.open(path))
            except Exception as e:  # noqa: BLE001 - reported as one line, exit 2
                return _error(path, e, err)
        try:
            result = diff(docs[0], docs[1])
        except Exception as e:  # noqa: BLE001 - e.g. a file changed on disk while being read (Io)
            return _error(_blame(docs, a, b), e, err)
        findings = [_findings(d) for d in docs]
    finally:
        for d in docs:
            try:
                d.close()
            except Exception:  # noqa: BLE001
                pass
    if as_json:
        doc_json = result.as_json(a, b)
        doc_json["findings"] = {"a": [f.as_json() for f in findings[0]], "b": [f.as_json() for f in findings[1]]}
        json.dump(doc_json, out, ensure_ascii=True, allow_nan=False)
        out.write("\n")
    else:
        _summary(a, b, docs, result, out, findings)
    return 0 if result.equal else 1


def _findings(doc) -> list:
    """What a careful reader must see about one file (duplicate keys, shared bytes...): readers may disagree
    on such a file's model, so the diff says so beside its verdict (issue: 'findings in every surface')."""
    from ..analysis.layout import all_findings
    from ..format.errors import FormatError

    try:
        return all_findings(doc)
    except FormatError:  # e.g. the file changed on disk: the diff itself already succeeded
        return list(doc.findings)


def _blame(docs, a: str, b: str) -> str:
    """Which file an error during the comparison is about: the one that changed on disk, else both."""
    for doc, path in zip(docs, (a, b)):
        changed = getattr(doc.storage, "changed", None)
        if changed is not None and changed():
            return path
    return f"{a} / {b}"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _detail_text(d) -> str:
    det = d.detail or {}
    if "differing" in det:
        text = f"{det['differing']:,}" + (f"/{det['count']:,}" if "count" in det else "") + " differ"
        if "first_index" in det:
            text += " from [" + ",".join(map(str, det["first_index"])) + "]"
        for key, label in (("max_abs", "max abs"), ("max_rel", "rel")):
            if key in det:
                v = det[key]
                text += f", {label} " + (f"{v:.3g}" if isinstance(v, float) else str(v))
        if det.get("nonfinite"):
            text += f", {det['nonfinite']} non-finite"
        return text
    if det.get("order"):
        return "same entries, different order"
    if "a_value" in det:
        return f"{_cell(det['a_value'])} -> {_cell(det['b_value'])}"
    return ""


def _summary(a: str, b: str, docs, result, out: TextIO, findings=((), ())) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(file=out, highlight=False, soft_wrap=False)
    for label, path, doc, found in (("A", a, docs[0], findings[0]), ("B", b, docs[1], findings[1])):
        console.print(Text.assemble((f"{label} ", "bold"), visible(str(path)), f"  ({doc.source}, {doc.size:,} bytes)"),
                      soft_wrap=True)
        # what readers may disagree on first: such a file may not hold the same model for every reader
        ordered = sorted(found, key=lambda f: f.code not in DISAGREEMENT_CODES)
        for f in ordered[:MAX_FINDINGS]:
            console.print(Text.assemble(("  finding ", "yellow"), (f.code, "yellow"), " at ", visible(f.where), ": ",
                                        visible(f.message)), soft_wrap=True)
        if len(ordered) > MAX_FINDINGS:
            console.print(Text(f"  … {len(ordered) - MAX_FINDINGS} more findings (onemodel-view --check lists them)",
                               style="dim"))
    counts = {"added": 0, "removed": 0, "changed": 0}
    for d in result.differences:
        counts[d.change] = counts.get(d.change, 0) + 1
    if result.equal:
        console.print(Text("equal: the two files hold the same model", style="bold green"))
    else:
        console.print(Text(
            f"{len(result.differences):,} difference{'' if len(result.differences) == 1 else 's'}: {counts['added']:,} added, {counts['removed']:,} removed, "
            f"{counts['changed']:,} changed",
            style="bold red",
        ))
        table = Table(show_lines=False, expand=False, box=None, padding=(0, 1), header_style="bold")
        table.add_column("change", no_wrap=True)
        table.add_column("where / A -> B / detail", overflow="fold")
        style = {"added": "green", "removed": "red", "changed": "yellow"}
        for d in result.differences[:MAX_ROWS]:
            cell = Text(visible(d.where), style="bold")
            cell.append("\n  A ", style="dim")
            cell.append(visible(_cell(d.a)) if d.a is not None else "-")
            cell.append("\n  B ", style="dim")
            cell.append(visible(_cell(d.b)) if d.b is not None else "-")
            detail = _detail_text(d)
            if detail:
                cell.append("\n  " + visible(detail), style="dim")
            table.add_row(Text(d.change, style=style.get(d.change, "")), cell)
        console.print(table)
        if len(result.differences) > MAX_ROWS:
            console.print(Text(f"... and {len(result.differences) - MAX_ROWS:,} more (use --json for all)"))
    if result.equivalences:
        console.print(Text("treated as the same (spec equivalences):", style="bold"))
        for e in result.equivalences:
            console.print(Text("  " + visible(e)))
