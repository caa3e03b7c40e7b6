"""``onemodel-view --diff A B --json`` / ``--summary``: differences for scripts and for people.

Exit status: 0 the models are equal, 1 they differ, 2 a file could not be
opened or read (one line on stderr naming the file and the reader's problem
kind and ``where``; never a traceback).

A file with problems (one a strict open refuses) is compared on its sound parts, as the viewer
shows it: the output lists each file's problems and the tensors whose values could not be
compared (``not_compared``, each side's reason), and the exit status is 2 (no full verdict:
``"complete": false``) whatever the parts compared say. A file of which no model could be read
at all gives only the stderr line.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from ..format.dtypes import name_of
from ..textsafe import visible


MAX_FINDINGS = 8
"""Findings listed per file in the summary (``--json`` lists every one)."""

DISAGREEMENT_CODES = ("duplicate-key", "shared-bytes")
"""Findings after which two readers of the same file may see different models."""

MAX_ROWS = 500
"""Lines of structure differences in the summary; the rest is counted (``--json`` lists everything)."""

TOP = 20
"""Most-changed tensors the summary lists by default (``--top N``)."""


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


def _open(path: str):
    """(document, parsed manifest): strict first, so a valid file costs what it did; a file with problems
    again in diagnose mode (every problem, the sound parts kept)."""
    from ..format.errors import FormatError
    from ..format.reader import open_with_manifest

    try:
        return open_with_manifest(path, mode="strict")
    except FormatError:
        return open_with_manifest(path, mode="diagnose")


def _note_problems(path: str, doc, err: TextIO) -> None:
    """One stderr line for a file compared on its sound parts only."""
    p = doc.problems[0]
    off = f" (offset {p.offset})" if p.offset is not None else ""
    more = len(doc.problems) - 1
    rest = f" (+{more:,} more problem{'' if more == 1 else 's'})" if more else ""
    print(f"onemodel-view: {visible(str(path))}: {visible(f'{p.kind.value} at {p.where}{off}: {p.message}')}{rest}; "
          "compared on its sound parts", file=err)


def run_diff(a: str, b: str, as_json: bool = False, *, top: int = TOP, out: TextIO | None = None,
             err: TextIO | None = None) -> int:
    """Compare files ``a`` and ``b`` (OneModel or ONNX, any combination); print JSON or a summary.

    The summary lists the ``top`` tensors whose values moved most (by ``rel_l2``), then every
    other difference, one line each, grouped (``graph.nodes``, ``model.opsets``...).
    """
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    from ..process import paused_gc

    # Two models' records, the side-by-side tree and the findings all live until the output is
    # written: the cyclic GC would only walk them (1 GiB benchmark pair: ~0.1 of ~1.1 CPU-s).
    with paused_gc():
        return _run(a, b, as_json, top, out, err)


def _run(a: str, b: str, as_json: bool, top: int, out: TextIO, err: TextIO) -> int:
    from concurrent.futures import ThreadPoolExecutor

    from ..analysis.diff.compare import staged
    from ..format.errors import FormatError

    docs, parsed = [], []
    try:
        for path in (a, b):
            try:
                doc, manifest = _open(path)
            except Exception as e:  # noqa: BLE001 - reported as one line, exit 2
                return _error(path, e, err)
            docs.append(doc)
            parsed.append(manifest)
        for path, doc in zip((a, b), docs):
            if doc.model is None:  # nothing sound to compare
                return _error(path, FormatError.from_problem(doc.problems[0]), err) if doc.problems else 2
        # The findings (Python work) are looked for while the tensor bytes are compared (numpy, on
        # threads that release the GIL): on the 1 GiB benchmark model that hides ~0.15 s of 1.6 s.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="omv-findings") as pool:
            try:
                st = staged(docs[0], docs[1], whole_tree=False)  # no viewer: identical nodes need no tree entry
                found = pool.submit(lambda: [_findings(d, p) for d, p in zip(docs, parsed)])
                result = st.compare_data()
            except Exception as e:  # noqa: BLE001 - e.g. a file changed on disk while being read (Io)
                return _error(_blame(docs, a, b), e, err)
            findings = found.result()
        for path, doc in zip((a, b), docs):
            if doc.problems:
                _note_problems(path, doc, err)
    finally:
        for d in docs:
            try:
                d.close()
            except Exception:  # noqa: BLE001
                pass
    complete = not docs[0].problems and not docs[1].problems and not result.not_compared
    if as_json:
        doc_json = result.as_json(a, b)
        doc_json["complete"] = complete
        from ..format.spec_rules import problem_json

        doc_json["problems"] = {"a": [problem_json(p) for p in docs[0].problems],
                                "b": [problem_json(p) for p in docs[1].problems]}
        doc_json["findings"] = {"a": [f.as_json() for f in findings[0]], "b": [f.as_json() for f in findings[1]]}
        # json.dumps, not json.dump: dump streams through the pure-Python encoder (38 ms against 14 ms
        # for the 2,458 changed tensors of the 1 GiB benchmark model); dumps runs the C one, same text
        out.write(json.dumps(doc_json, ensure_ascii=True, allow_nan=False) + "\n")
    else:
        _summary(a, b, docs, result, out, findings, top=top)
    if not complete:
        return 2
    return 0 if result.equal else 1


def _findings(doc, parsed=None) -> list:
    """What a careful reader must see about one file (duplicate keys, shared bytes...): readers may disagree
    on such a file's model, so the diff says so beside its verdict (issue: 'findings in every surface').
    ``parsed``: the manifest parsed by this very open (spares a second parse)."""
    from ..analysis.layout.onemodel import all_findings
    from ..format.errors import FormatError

    try:
        return all_findings(doc, parsed=parsed)
    except FormatError:  # e.g. the file changed on disk: the diff itself already succeeded
        return list(doc.findings)


def _blame(docs, a: str, b: str) -> str:
    """Which file an error during the comparison is about: the one that changed on disk, else both."""
    for doc, path in zip(docs, (a, b)):
        changed = getattr(doc.storage, "changed", None)
        if changed is not None and changed():
            return path
    return f"{a} / {b}"


def _plural(n: int, word: str, many: str | None = None) -> str:
    """``1 difference``, ``2 differences``, ``1,234 equivalences``."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def _cell(value: Any, limit: int = 80) -> str:
    """A compact one-line rendering of a JSON-safe value (a node summary reads ``Add(x, w) -> y``)."""
    if value is None:
        return "-"
    if isinstance(value, dict) and "op" in value and "inputs" in value:
        dom = f"{value['domain']}." if value.get("domain") else ""
        text = f"{dom}{value['op']}({', '.join(value['inputs'])}) -> {', '.join(value['outputs'])}"
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _num(v: Any, fmt: str = ".3g") -> str:
    if v is None:
        return "-"
    return format(v, fmt) if isinstance(v, (int, float)) else str(v)


def _detail_text(d) -> str:
    det = d.detail or {}
    if "differing" in det:
        text = f"{det['differing']:,}" + (f" of {det['count']:,}" if "count" in det else "") + " elements differ"
        if "first_index" in det:
            text += ", first [" + ",".join(map(str, det["first_index"])) + "]"
        if "max_abs" in det:
            text += f", max abs {_num(det['max_abs'])}"
        if det.get("nonfinite"):
            text += f", {det['nonfinite']:,} non-finite"
        return text
    if det.get("order"):
        return "same entries, different order"
    if "a_value" in det:
        return f"{_cell(det['a_value'])} -> {_cell(det['b_value'])}"
    return ""


def _group(where: str) -> str:
    """What a difference is grouped under: ``graph.nodes``, ``graph.initializers``, ``model.opsets``, ``model``."""
    head = where.split("[", 1)[0]
    return head if "[" in where else (head.rsplit(".", 1)[0] if "." in head else head)


MARK = {"added": ("+", "green"), "removed": ("-", "red"), "changed": ("~", "yellow")}


def _summary(a: str, b: str, docs, result, out: TextIO, findings=((), ()), top: int = TOP) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # to a pipe or file: no wrapping at 80 columns (one line per difference stays one line)
    console = Console(file=out, highlight=False, soft_wrap=True, width=None if _is_tty(out) else 10_000)
    for label, path, doc, found in (("A", a, docs[0], findings[0]), ("B", b, docs[1], findings[1])):
        console.print(Text.assemble((f"{label} ", "bold"), visible(str(path)), f"  ({doc.source}, {doc.size:,} bytes)"))
        # what readers may disagree on first: such a file may not hold the same model for every reader
        ordered = sorted(found, key=lambda f: f.code not in DISAGREEMENT_CODES)
        for f in ordered[:MAX_FINDINGS]:
            console.print(Text.assemble(("  finding ", "yellow"), (f.code, "yellow"), " at ", visible(f.where), ": ",
                                        visible(f.message)))
        if len(ordered) > MAX_FINDINGS:
            console.print(Text(f"  … {len(ordered) - MAX_FINDINGS} more findings (onemodel-view --check lists them)",
                               style="dim"))
        for p in doc.problems[:MAX_FINDINGS]:
            console.print(Text.assemble(("  problem ", "bold red"), _problem_text(p)))
        if len(doc.problems) > MAX_FINDINGS:
            console.print(Text(f"  … {len(doc.problems) - MAX_FINDINGS:,} more problems (onemodel-view --check lists "
                               "them)", style="dim"))
    counts = {"added": 0, "removed": 0, "changed": 0}
    for d in result.differences:
        counts[d.change] = counts.get(d.change, 0) + 1
    partial = bool(docs[0].problems or docs[1].problems or result.not_compared)
    if result.equal and not partial:
        console.print(Text("equal: the two files hold the same model", style="bold green"))
    elif result.equal:
        console.print(Text("equal over the sound parts (not a full verdict: see the problems and the tensors not "
                           "compared)", style="bold yellow"))
    else:
        over = " over the sound parts (not a full verdict)" if partial else ""
        console.print(Text(f"{_plural(len(result.differences), 'difference')}{over}: {counts['added']:,} added, "
                           f"{counts['removed']:,} removed, {counts['changed']:,} changed", style="bold red"))
    if result.not_compared:
        console.print(Text(f"not compared ({_plural(len(result.not_compared), 'tensor')}: their bytes cannot be read):",
                           style="bold"))
        for n in result.not_compared[:MAX_ROWS]:
            line = Text.assemble(("  ? ", "magenta"), visible(n.where))
            for side, why in (("A", n.a), ("B", n.b)):
                if why is not None:
                    line.append_text(Text.assemble(f"  {side}: ", _problem_text(why)))
            console.print(line)
        if len(result.not_compared) > MAX_ROWS:
            console.print(Text(f"  … {len(result.not_compared) - MAX_ROWS:,} more (--json lists every one)", style="dim"))
    data = [d for d in result.differences if d.is_data]
    floats = sorted((d for d in data if "rel_l2" in d.detail), key=_rank)
    t = result.totals
    if t:
        console.print(Text.assemble(
            ("weights: ", "bold"),
            f"{t['changed_tensors']:,} of {_plural(t['float_tensors'], 'float tensor')} changed "
            f"({t['changed_elements']:,} of {t['elements']:,} elements), rel_l2 over all weights {_num(t['rel_l2'], '.4g')}"))
    if floats:
        shown = floats[: max(0, top)]
        console.print(Text(f"most changed tensors (by rel_l2; {len(shown):,} of {len(floats):,}):", style="bold"))
        table = Table(show_lines=False, expand=False, box=None, padding=(0, 2), pad_edge=False, header_style="bold")
        for col, right in (("tensor", False), ("dtype", False), ("shape", False), ("rel_l2", True),
                           ("cosine", True), ("max_abs", True), ("changed", True)):
            table.add_column(col, justify="right" if right else "left", no_wrap=True)
        for d in shown:
            det, rec = d.detail, d.a_ref
            name = rec.name if getattr(rec, "name", "") else d.where.removesuffix(".data")
            dims = "[" + ",".join(map(str, getattr(rec, "dims", ()))) + "]"
            pct = 100.0 * det["differing"] / det["count"] if det.get("count") else 0.0
            table.add_row(Text(visible(name)), name_of(rec.dtype) if rec is not None else "?", dims,
                          _num(det["rel_l2"], ".3e"), _num(det["cosine"], ".6f"), _num(det["max_abs"]),
                          f"{pct:.1f}%")
        console.print(table)
        if len(floats) > len(shown):
            console.print(Text(f"  … {len(floats) - len(shown):,} more changed float tensors (--top N shows more; "
                               "--json lists every one)", style="dim"))
    rest = [d for d in result.differences if not (d.is_data and "rel_l2" in d.detail)]
    if rest:
        groups: dict[str, list] = {}
        for d in rest:
            groups.setdefault(_group(d.where), []).append(d)
        console.print(Text(f"structure and other data ({_plural(len(rest), 'difference')}):", style="bold"))
        rows = 0
        for name, items in groups.items():
            kinds = {k: sum(1 for d in items if d.change == k) for k in ("added", "removed", "changed")}
            tally = ", ".join(f"{v:,} {k}" for k, v in kinds.items() if v)
            console.print(Text.assemble(("  " + visible(name), "bold"), f" ({tally})"))
            for d in items:
                if rows >= MAX_ROWS:
                    break
                rows += 1
                mark, style = MARK.get(d.change, ("?", ""))
                line = Text.assemble(("    " + mark + " ", style), (visible(d.where), style))
                if d.change == "added":
                    line.append("  " + visible(_cell(d.b)), style="dim")
                elif d.change == "removed":
                    line.append("  " + visible(_cell(d.a)), style="dim")
                elif not d.is_data:
                    line.append(f"  {visible(_cell(d.a))} -> {visible(_cell(d.b))}")
                detail = _detail_text(d)
                if detail:
                    line.append("  (" + visible(detail) + ")", style="dim")
                console.print(line)
        if len(rest) > MAX_ROWS:
            console.print(Text(f"  … {len(rest) - MAX_ROWS:,} more (--json lists every one)", style="dim"))
    if result.equivalences:
        console.print(Text(f"treated as the same ({_plural(len(result.equivalences), 'spec equivalence')} applied):",
                           style="bold"))
        for e in result.equivalences:
            console.print(Text("  " + visible(e)))


def _problem_text(p):
    """``Kind at where (offset N): message``, every string from the file made visible."""
    from rich.text import Text

    off = f" (offset {p.offset})" if p.offset is not None else ""
    return Text(visible(f"{p.kind.value} at {p.where}{off}: {p.message}"))


def _is_tty(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


def _rank(d) -> tuple:
    """Most changed first: larger rel_l2 (``inf`` first, ``nan`` last), then more elements changed."""
    r = d.detail["rel_l2"]
    r = float(r) if isinstance(r, str) else r
    return (0 if r == r else 1, -(r if r == r else 0.0), -d.detail["differing"], d.where)
