"""The byte inspector (``i``): what the bytes under the hex cursor are.

The owning tensor's element (flat and multi-index, decoded value; for sub-byte types every
element sharing the byte) and the bytes from the cursor read as u8/i8/u16/i16/u32/i32/u64/i64/
f16/bf16/f32/f64, little endian. Reads at most 8 bytes and one element: like the hex pane's
lines, on the UI thread. The decoding is ``analysis/byteinspect.py``.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from ...format.errors import FormatError
from ...format.storage import Storage
from .bytemap import ByteMap
from ..widgets.safe import safe_str, safe_text

KIND_STYLE = {"nan": "magenta", "inf": "magenta", "none": "dim", "zero": "dim"}


class ByteInspector(Static):
    """Decoded readings of the bytes at one offset."""

    DEFAULT_CSS = """
    ByteInspector { height: 6; padding: 0 1; }
    ByteInspector.hidden { display: none; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.at: int | None = None
        self.lines_plain: list[str] = []
        """The readings as ``name value`` text (for tests)."""

    def show_at(self, storage: Storage | None, bytemap: ByteMap | None, offset: int) -> None:
        """Decode the bytes of ``storage`` at ``offset`` (the owner from ``bytemap``)."""
        from ...analysis.byteinspect import element_at, readings  # numpy: not needed for the first screen

        self.at = offset
        if storage is None:
            self.update(Text("no bytes", style="dim"))
            return
        try:
            n = max(0, min(8, storage.size - offset))
            remote = getattr(storage, "remote", False)  # a URL: from the cache only (the hex pane fetches its page)
            data = (storage.peek(offset, n) if remote else storage.read(offset, n)) if n else b""
        except (FormatError, ValueError, OSError) as e:
            self.update(Text(f"cannot read: {safe_str(str(e), 120)}", style="red"))
            return
        if data is None:
            self.update(Text(f"0x{offset:x} fetching…", style="dim"))
            return
        head = Text(f"0x{offset:x} ", style="bold")
        plain: list[str] = []
        tensors = bytemap.tensors_at(offset) if bytemap is not None else []
        if tensors:
            t = tensors[0]
            head.append_text(safe_text(t.name or "(unnamed)", style="bold", limit=40))
            head.append(f" {t.type_str()}", style="cyan")
            try:
                el = element_at(t, offset)
            except Exception as e:  # bytes out of range, a file changed on disk: say so
                el = None
                head.append(f"  element: {safe_str(str(e), 80)}", style="red")
            if el is not None:
                idx = "[" + ",".join(map(str, el.index)) + "]"
                head.append(f"\nelement #{el.first:,} {idx}", style="bold")
                if el.element_bytes:
                    head.append(f" byte {el.byte_in_element}/{el.element_bytes}", style="dim")
                elif el.last > el.first:
                    head.append(f" (#{el.first:,}..#{el.last:,} share this byte)", style="dim")
                head.append(" = ")
                for k, c in enumerate(el.cells):
                    if k:
                        head.append(", ")
                    head.append(c.text, style=KIND_STYLE.get(c.kind, "green"))
                plain.append("element " + " ".join(c.text for c in el.cells))
        elif bytemap is not None:
            head.append_text(safe_text(bytemap.owner_at(offset), style="dim", limit=60))
        grid = Table.grid(padding=(0, 1))
        for _ in range(3):
            grid.add_column(style="bold", justify="right")
            grid.add_column(min_width=12)
        rs = readings(data)
        for r in rs:
            plain.append(f"{r.name} {r.text}")
        for row in range(0, len(rs), 3):
            cells: list = []
            for r in rs[row:row + 3]:
                cells += [r.name, Text(r.text, style=KIND_STYLE.get(r.kind, ""))]
            grid.add_row(*cells)
        self.lines_plain = plain
        from rich.console import Group

        self.update(Group(head, grid))
