"""``--patch IN OUT EDIT... [--raw] [--json]``: write a copy of IN with a few precise edits.

An EDIT is one of::

    header.<field>=<integer>         header.flags=1, header.data_length=0x10 (header.magic="ONEMODEX")
    <manifest path>=<JSON value>     manifest.graph.nodes[3].inputs[1]="x"
                                     manifest.graph.initializers[0].dims[0]=-2
                                     manifest.graph.nodes[2]=null      (null deletes the element or member;
                                     manifest.graph.doc=(null)          a literal null is written (null))
    bytes@<offset>=<hex>             bytes@0x40=7b22 (raw bytes at a file offset)
    truncate=<length>                cut the file to <length> bytes (or extend it with zeros)

Manifest paths are exactly the ``where`` strings the reader reports, so a problem's location can
be pasted back. A path that does not exist yet is added when its parent does (a new member at
the end of an object, or index == length appends to an array). JSON values are written
verbatim (``1.0``, ``1e3``, ``NaN`` stay as typed), after ``json`` has parsed them; the command
line's bytes go in as given (``surrogateescape``), so invalid UTF-8 can be written on purpose.

Edits apply left to right, each to the result of the previous one. After a manifest edit the
header's ``manifest_length``, ``data_offset`` and ``file_length`` move by what the manifest grew
or shrank (so a consistent header stays consistent and an inconsistent one keeps its defect) and
the data region moves with it, 64-byte aligned; ``--raw`` leaves the header as it was (the data
region still follows the manifest), to build inconsistent headers on purpose. ``bytes@`` and
``truncate`` edits are never fixed up.

OUT is written atomically (``writer.atomic_output``); IN is only read, and an OUT that is IN
(same file, any name) is refused. The data region is copied in bounded memory
(``copy_file_range``). Afterwards the command prints OUT's verdict (the ``--check`` report; with
``--json`` its object plus ``"input"``, ``"appeared"`` and ``"disappeared"``) and what changed from
IN's verdict: problems and findings (by kind/code and ``where``) that appeared and disappeared.

Exit status: 0 OUT written, 1 an edit could not be applied or OUT not written, 2 usage.

The edits and the image they apply to (:func:`parse_edit`, :class:`Image`) are in
:mod:`onemodel_viewer.format.onemodel.edit_image`, shared with the viewer's edit mode
(:mod:`onemodel_viewer.format.onemodel.overlay`).
"""

from __future__ import annotations

import json
import os
import sys

from ..format.onemodel.edit_image import CHUNK, Edit, EditError, Image, copy_range, parse_edit, write_all  # noqa: F401 (re-exported)
from ..format.errors import FormatError
from ..format.onemodel.overlay import verdict_change  # noqa: F401 (re-exported)

PROG = "onemodel-view"


# ---------------------------------------------------------------------------------------------
# the command


def same_file(a: str, b: str) -> bool:
    try:
        return os.path.exists(b) and os.path.samefile(a, b)
    except OSError:
        return False


def _error(what: str, message: str) -> None:
    from ..textsafe import visible

    print(f"{PROG}: error: {visible(what)}: {visible(message)}", file=sys.stderr)


def run_patch(src: str, dst: str, edits: list[str], raw: bool = False, as_json: bool = False) -> int:
    """``--patch``: 0 written, 1 not written (an edit cannot be applied, IO), 2 an edit does not parse."""
    from .check import check_file

    try:
        parsed = [parse_edit(e) for e in edits]
    except EditError as e:
        _error("edit", str(e))
        return 2
    if not parsed:
        _error("edit", "--patch needs at least one EDIT")
        return 2
    if same_file(src, dst):
        _error("destination", f"refusing to write the input file {dst}")
        return 1
    try:
        image = Image(src)
        for edit in parsed:
            image.apply(edit, raw=raw)
        image.write(dst)
    except EditError as e:
        _error("edit", str(e))
        return 1
    except FormatError as e:
        _error(f"{e.kind} at {e.where}", e.message)
        return 1
    except OSError as e:
        _error("file", f"{e.filename or src}: {e.strerror or e}")
        return 1
    before, after = check_file(src), check_file(dst)
    change = verdict_change(before, after)
    if as_json:
        obj = after.as_json()
        obj["input"] = src
        for side in ("appeared", "disappeared"):
            obj[side] = {k: [x.as_json() for x in v] for k, v in change[side].items()}
        sys.stdout.write(json.dumps(obj, ensure_ascii=True) + "\n")
        return 0
    from rich.console import Console
    from rich.text import Text

    from ..format.spec_rules import rule_of
    from ..textsafe import visible
    from .check import render

    console = Console(highlight=False)
    console.print(render(after))
    for side, mark, style in (("appeared", "+", "red"), ("disappeared", "-", "green")):
        items = change[side]
        if not (items["problems"] or items["findings"]):
            continue
        console.print(Text(f"{side} (compared with {visible(src, 300)}):", style="bold"))
        for p in items["problems"]:
            rule = rule_of(p)
            line = Text(f"  {mark} {p.kind.value} at ", style=style)
            line.append(visible(p.where, 300), style="cyan")
            if rule:
                line.append(f"  ({rule.section})", style="dim")
            console.print(line)
        for f in items["findings"]:
            line = Text(f"  {mark} finding {f.code} at ", style="yellow")
            line.append(visible(f.where, 300), style="cyan")
            console.print(line)
    if not any(change[s][k] for s in change for k in change[s]):
        console.print(Text("no change in the verdict", style="dim"))
    return 0
