"""The viewer's edit mode (a mixin of the app): edit the selection, see the verdict change.

Keys (the app's bindings): ``E`` edits the selection: a header field (its decoded value), a
manifest value (:class:`~.edit_screens.JsonEditor`, validated as JSON), or, with the hex pane
focused, the bytes at the hex cursor (typed as hex). ``ctrl+z`` / ``ctrl+y`` undo / redo, ``L``
lists the edits in ``--patch`` syntax, ``S`` saves the edited file as a new file.

Every edit goes to an :class:`~onemodel_viewer.format.onemodel.overlay.EditSession` (memory only; the file
is never written). The edited file is then read again in diagnose mode in a thread worker (a newer
edit cancels it and its result is dropped) and shown like a reloaded file, the selection kept:
problems that appeared are marked ``+`` in the tree's problems group and the problems screen,
problems that disappeared are listed there marked ``-``, the info bar counts both.
"""

from __future__ import annotations

import json
import os
import threading
from typing import TYPE_CHECKING, Iterable

from rich.text import Text
from textual import work
from textual.app import SystemCommand
from textual.worker import get_current_worker

from ...format.errors import FormatError
from ...process import favour_ui_thread, free_later, freeze_gc, pause_gc
from ..widgets.entries import Entry, row_keys
from ..hex.hex_view import HexView
from ..widgets.info_bar import InfoBar
from ..widgets.safe import safe_str
from ..widgets.structure_tree import StructureTree

if TYPE_CHECKING:
    from ...format.onemodel.overlay import EditSession

# the edit modules (format/edit_image, overlay, manifest_locate) are imported on the first edit:
# at start they were ~6-10 ms of the first screen's imports

__all__ = ["EditActions", "MAX_VALUE"]

MAX_VALUE = 64 << 10
"""Largest manifest value (bytes of JSON) the editor opens; select a value inside a larger one."""
HEX_PREFILL = 8
"""Bytes at the hex cursor put in the bytes prompt."""
FRAME_HOLD = 0.05
"""Seconds the background job waits when the re-read document is shown and when the selection is put
back: the frames after them redraw the whole tree, detail and hex panes (~15-25 ms of the UI thread),
and sharing the interpreter with the job (1 ms switch interval) doubled their wall time."""
REREAD_HOLD = 0.5
"""At most this many seconds the shown document's background job waits while an edit is applied and the
file read again (its results are for a document about to be replaced; sharing the interpreter with it
made some re-checks twice as long: 0.47-0.87 s instead of ~0.25 on 10,000 nodes)."""


def _key(p) -> tuple[str, str]:
    return (p.kind.value, p.where)


class EditActions:
    """Edit mode of the viewer app (a mixin: ``self`` is the app)."""

    edit_session: EditSession | None = None
    """The edits of this file (None until the first ``E``)."""
    edit_change: dict | None = None
    """``appeared`` / ``disappeared`` problems of the last re-read (:func:`~..format.overlay.verdict_change`)."""
    edit_pending = False
    """True while the edited file is being read again."""
    edit_restoring = False
    """True from the re-read document's arrival until the selection is back on the edited record."""
    _edit_generation = 0
    """Counts the operations submitted (the UI thread's); a re-read of an older one is dropped."""
    _edit_shown = 0
    """The session's version the shown document was read from."""
    _edit_turns: "_Turns | None" = None
    _edit_back: tuple = ()
    """What :meth:`_restore_selection` puts back: the document, the tree's cursor row then, where, hex focus and cursor."""
    _edit_stale: tuple = ()
    """Documents of earlier reads whose rows the tree still shows (closed once they are swapped)."""

    # ------------------------------------------------------------------ starting an edit
    def _session(self) -> EditSession | None:
        doc = self.document
        if doc is None or doc.source != "onemodel" or not self.path:
            self.notify("edit mode edits OneModel files; convert this one first (--convert)", severity="warning")
            return None
        if "://" in self.path:
            self.notify("edit mode edits local files; this one is at a URL (--convert it to a local file first)",
                        severity="warning")
            return None
        if self.edit_session is None or self.edit_session.path != self.path:
            from ...format.onemodel.overlay import EditSession

            # whether the manifest repeats a key, once looked for: the session keeps it only if the file
            # is still the one this document read (then the first edit does not parse the whole manifest)
            # (and the open's parse, kept by the background job: the first edit splices into it)
            shown, self.edit_base_parse = self.edit_base_parse, None
            parse = shown[1] if shown is not None and shown[0] is doc else None
            try:
                self.edit_session = EditSession(self.path, keys_unique=doc.keys_unique, proven_on=doc.storage,
                                                parse=parse, parse_span=doc.manifest_span)
            except (FormatError, OSError) as e:
                self.notify(f"cannot edit: {safe_str(str(e), 200)}", severity="error", markup=False)
                return None
        return self.edit_session

    def action_edit(self) -> None:
        """``E``: edit the selection (the hex pane focused: the bytes at its cursor)."""
        session = self._session()
        if session is None:
            return
        hexv = self.query_one(HexView)
        entry: Entry | None = self.current
        if hexv.has_focus:
            self._edit_bytes(session, hexv.cursor)
        elif entry is not None and entry.kind == "header" and isinstance(entry.obj, tuple):
            self._edit_header(session, entry.obj[0])
        elif entry is not None and entry.where.startswith("manifest"):
            self._edit_manifest(session, entry.where)
        else:
            self.notify("select a header field or a manifest record, or focus the hex pane (h), then press E",
                        severity="warning", markup=False)

    def _edit_bytes(self, session: EditSession, at: int) -> None:
        from ..widgets.prompt import Prompt

        storage = session.storage()
        at = min(at, storage.size)
        now = storage.read(at, min(HEX_PREFILL, storage.size - at)).hex(" ")

        def done(text: str | None) -> None:
            if text is not None:
                self.apply_edit(f"bytes@0x{at:x}={''.join(text.split())}")

        self.push_screen(Prompt(f"bytes at 0x{at:x}: type hex (the bytes typed replace as many)", "7b 22", now,
                                hint=f"file size {storage.size:,}; past the end extends the file"), done)

    def _edit_header(self, session: EditSession, name: str) -> None:
        from ...format.onemodel.edit_image import FIELD_NAMES
        from ..widgets.prompt import Prompt

        head = session.image.head
        if name not in FIELD_NAMES or len(head) < 64:
            self.notify("the file is shorter than the header: edit its bytes in the hex pane", severity="warning")
            return
        from ...format.document import Header

        start, size = Header.field_span(name)
        raw = bytes(head[start:start + size])
        now = json.dumps(raw.decode("latin-1")) if name == "magic" else str(int.from_bytes(raw, "little"))

        def done(text: str | None) -> None:
            if text is not None:
                self.apply_edit(f"header.{name}={text.strip()}")

        hint = 'a JSON string of 8 characters ("ONEMODEL")' if name == "magic" else f"an integer (0x.. for hex), {size} bytes"
        self.push_screen(Prompt(f"header.{name} =", "", now, hint=hint), done)

    @work(thread=True, exclusive=True, group="edit-open", exit_on_error=False, description="edit: find the value")
    def _edit_manifest(self, session: EditSession, where: str) -> None:
        """Find the value's JSON text (off the UI thread), then edit it. Through the hex pane's look-ups: they
        have walked to the selection and know if a key repeats (a walk of its own: ~70 ms, the middle node of 10,000)."""
        image, worker = session.image, get_current_worker()
        manifest = image.manifest
        span = None if manifest is None else self.manifest_spans.value_span(
            self.document, bytes(manifest), where, image.facts.keys_unique is True, lambda: worker.is_cancelled)
        if worker.is_cancelled:  # a newer E
            return
        if span is None:
            self._tell(f"{safe_str(where, 120)} is not in the manifest's bytes", "warning", 4)
            return
        s, e = span
        if e - s > MAX_VALUE:
            self._tell(f"this value is {e - s:,} bytes: select a value inside it", "warning", 4)
            return
        try:
            value = bytes(manifest[s:e]).decode("utf-8")
        except UnicodeDecodeError:
            self._tell("this value is not valid UTF-8: edit its bytes in the hex pane", "warning", 4)
            return
        try:
            self.call_from_thread(self._open_json_editor, where, value)
        except Exception:  # app shutting down
            pass

    def _open_json_editor(self, where: str, value: str) -> None:
        from .screens import JsonEditor

        def done(text: str | None) -> None:
            if text is not None:
                self.apply_edit(f"{where}={text}")

        self.push_screen(JsonEditor(where, value), done)

    # ------------------------------------------------------------------ applying, undo, redo
    def apply_edit(self, text: str) -> bool:
        """Apply one edit (``--patch`` syntax) to the overlay and re-read it, in a worker.

        False when it does not parse; an edit that cannot be applied to this file is said when the
        worker gets to it (and changes nothing).
        """
        from ...format.onemodel.edit_image import EditError, parse_edit

        session = self._session()
        if session is None:
            return False
        try:
            edit = parse_edit(text)
        except EditError as e:
            self.notify(safe_str(str(e), 300), severity="error", markup=False)
            return False
        self._submit(session, "apply", edit)
        return True

    def action_undo_edit(self) -> None:
        if self.edit_session is None:
            self.notify("nothing to undo", timeout=2)
            return
        self._submit(self.edit_session, "undo")

    def action_redo_edit(self) -> None:
        if self.edit_session is None:
            self.notify("nothing to redo", timeout=2)
            return
        self._submit(self.edit_session, "redo")

    def _submit(self, session: EditSession, op: str, edit=None) -> None:
        """Run ``op`` on the session in a worker, after the operations submitted before it (a manifest
        edit walks the manifest up to its path: ~0.2 s at the middle node of 10,000, too long for the UI thread)."""
        if self._edit_turns is None:
            self._edit_turns = _Turns()
        self._edit_generation += 1
        self.edit_pending = True
        # the re-read builds ~10 records a node: collections over them in the worker would hold the
        # interpreter (the UI) for 100s of ms; the GC stays off until the next background job ends
        # (the shown document's job ending meanwhile leaves it off)
        pause_gc()
        self.keep_gc_off = True
        favour_ui_thread(True)  # back to the default when the re-read document's job ends
        self.hold_background(REREAD_HOLD)
        self.query_one("#infobar", InfoBar).show(self._info_parts())
        # the worker starts once the frame saying "re-checking…" is drawn: a frame drawn while the
        # re-read ran shared the interpreter with it (45-90 ms of wall time instead of ~15 on 10,000 nodes)
        self.call_after_refresh(self._edit_op, session, op, edit, self._edit_generation, self._edit_turns.take())

    @work(thread=True, group="edit-ops", exit_on_error=False, description="edit: apply and re-read")
    def _edit_op(self, session: EditSession, op: str, edit, generation: int, ticket: int) -> None:
        """One operation, in submission order; the last one submitted re-reads the edited file
        (diagnose mode) and hands the document to the UI thread (older ones skip the re-read)."""
        from ...format.onemodel.edit_image import EditError

        turns = self._edit_turns
        turns.wait(ticket)
        try:
            try:
                if op == "apply":
                    session.apply(edit)
                    told = (f"edit {len(session.edits)}: {safe_str(str(edit), 120)}", "information", 3)
                else:
                    done = session.undo() if op == "undo" else session.redo()
                    told = (f"{op}ne: {safe_str(str(done), 120)}" if done is not None else f"nothing to {op}",
                            "information", 3)
            except EditError as e:
                told = (safe_str(str(e), 300), "error", 6)
            if generation != self._edit_generation:
                self._tell(*told)
                return  # a newer operation follows: it re-reads
            version = session.version
            doc = None
            if version != self._edit_shown:
                try:
                    doc = session.document()
                except Exception as e:  # noqa: BLE001 - a reader bug: say so, keep the app up
                    self._tell(f"cannot read the edited file: {safe_str(str(e), 200)}", "error", 6)
            if doc is not None:  # the marks compare with the whole verdict of the document shown: its
                # deferred checks (a big manifest's first open) end first, the background job let go on
                worker = get_current_worker()
                self.wait_for_checks(self.document, lambda: generation != self._edit_generation or worker.is_cancelled)
            try:  # what was done is told with the verdict: a toast drawn meanwhile slowed the re-read's frames
                self.call_from_thread(self._show_edited, doc, generation, version, told)
            except Exception:  # app shutting down
                pass
        finally:
            turns.done()

    def _tell(self, message: str, severity: str, timeout: float) -> None:
        try:
            self.call_from_thread(self.notify, message, severity=severity, timeout=timeout, markup=False)
        except Exception:  # app shutting down
            pass

    def _show_edited(self, doc, generation: int, version: int, told: tuple[str, str, float]) -> None:
        """The UI thread: show the re-read document (None: nothing changed), mark problems, and ``told``
        (message, severity, timeout: what the operation did); the tree keeps its rows (the problems and
        findings now; the other open rows once the graph's facts are known)."""
        self.notify(told[0], severity=told[1], timeout=told[2], markup=False)
        if generation != self._edit_generation:  # a newer operation was submitted meanwhile
            if doc is not None:
                doc.close()
            return
        self.edit_pending = False
        self.keep_gc_off = False
        if doc is None:
            favour_ui_thread(self.background_running)
            self.release_background()
            if not self.background_gc_held:
                freeze_gc()
            self.query_one("#infobar", InfoBar).show(self._info_parts())
            return
        from ...format.onemodel.overlay import verdict_change

        self._edit_shown = version
        old = self.document
        change = verdict_change(_Problems(old), _Problems(doc))
        if self.verdict_note():  # the list shown was partial (its checks failed; a reload's still run)
            change = {k: {"problems": [], "findings": []} for k in change}
            self.notify("no change marked: the problems before this edit were not all known", severity="warning",
                        timeout=4, markup=False)
        tree, hexv = self.query_one(StructureTree), self.query_one(HexView)
        pending = self._edit_back if self.edit_restoring else None
        if pending is not None and tree.cursor_node is pending[1]:
            where, in_hex, cursor = pending[2:]  # the previous re-read's selection, not put back yet
        else:
            where = self.current.where if self.current is not None else ""
            in_hex, cursor = hexv.has_focus, hexv.cursor
        self.edit_change = {k: v["problems"] for k, v in change.items()}
        self.background_gc_held = True  # the GC back on (frozen) when the job load_document starts ends
        if old is not None:
            self._edit_stale += (old,)  # its rows are shown until the selection is back
        # a selection to put back: neither the first problem highlighted nor the model described meanwhile
        # (the detail pane shows the selection as it was; the model's description took ~3 ms, the first
        # problem's detail and hex pane ~5 ms of the UI thread, and the tree jumped there and back)
        self.edit_restoring = True  # (the tree's highlights are not shown: rows of the previous read)
        self.load_document(doc, select_first=not where, later=_needs_facts)
        if doc.model is None:  # no job started
            self.background_gc_held = False
            freeze_gc()
        self.hold_background(FRAME_HOLD)
        self._mark_problems()
        # the other rows after the frame with the new verdict, once the main graph's facts are known: a
        # node's label shows the graph's types, and computing them on the UI thread (or waiting there
        # for the background job's) held it ~100 ms on 10,000 nodes
        self._edit_back = back = (doc, tree.cursor_node, where, in_hex, cursor)
        if doc.model is None:
            self.call_after_refresh(self._restore_selection, *back)
        else:
            self.call_after_refresh(self._restore_after_facts, self.facts, tree.roots, tree.loaded_rows(), back)

    @work(thread=True, group="edit-restore", exit_on_error=False, description="edit: the open rows' entries")
    def _restore_after_facts(self, facts, roots: list[Entry], loaded: set, back: tuple) -> None:
        """Off the UI thread: wait for the re-read graph's facts (the background job computes them),
        make the children of the entries whose rows are open (their labels), then swap on the UI thread."""
        doc = back[0]
        try:
            if doc is self.document:
                facts.of(doc.model.graph)
                _make_children(roots, loaded)
        except Exception:  # noqa: BLE001 - a reader bug in a lazily read node: the tree says it
            pass
        try:
            self.call_from_thread(self._restore_selection, *back)
        except Exception:  # app shutting down
            pass

    def _restore_selection(self, doc, placed, where: str, in_hex: bool, cursor: int) -> None:
        """Every row on the re-read document (unless another one is shown), then, after that frame, the
        selection shown again (each ~10-15 ms of the UI thread on 10,000 nodes, ~30 together)."""
        if self._replaced(doc):
            return
        self.hold_background(FRAME_HOLD)
        tree = self.query_one(StructureTree)
        tree.swap_entries(tree.roots)
        self._free_stale()
        self.call_after_refresh(self._show_selection_again, doc, placed, where, in_hex, cursor)

    def _show_selection_again(self, doc, placed, where: str, in_hex: bool, cursor: int) -> None:
        """The detail and hex panes on the selection again; a cursor moved meanwhile (from row ``placed``)
        stays where it is, its row shown."""
        if self._replaced(doc):
            return
        self.edit_restoring = False
        tree = self.query_one(StructureTree)
        node = tree.cursor_node
        shown = node is not None and node.data is not None and tree.node_for(node.data) is node
        if node is not placed:  # moved by the user since the re-read arrived
            if shown:
                self.show_entry(node.data)
            return
        if not where:
            return
        if shown and node.data.where == where:
            self.show_entry(node.data)
        elif self.reveal(where) is None:
            self._place_cursor(tree.roots)  # as a reload: the first problem
        if in_hex:
            hexv = self.query_one(HexView)
            hexv.focus()
            hexv.goto(min(cursor, max(0, hexv.file_size - 1)))

    def _replaced(self, doc) -> bool:
        """True when ``doc`` is no longer shown: a newer re-read restores, or the file was opened anew
        (``r``: no rows of earlier reads left, nothing to restore)."""
        if doc is self.document:
            return False
        if self._edit_back[0] is doc:  # opened anew
            self.edit_restoring = False
            self._free_stale()
        return True

    def _free_stale(self) -> None:
        """The documents of earlier reads, no longer shown, closed and freed in a thread."""
        stale, self._edit_stale = list(self._edit_stale), ()
        free_later(stale)

    # ------------------------------------------------------------------ marks
    def problem_marks(self) -> dict:
        """For the problems screen: ``appeared`` (kind/where keys) and ``gone`` (the problems that disappeared)."""
        ch = self.edit_change
        if not ch:
            return {}
        return {"appeared": {_key(p) for p in ch["appeared"]}, "gone": list(ch["disappeared"])}

    def _mark_problems(self) -> None:
        """The tree's problems group: ``+`` before appeared problems, the disappeared ones after them (``-``)."""
        ch = self.edit_change
        if not ch or not (ch["appeared"] or ch["disappeared"]):
            return
        tree = self.query_one(StructureTree)
        group = next((e for e in tree.roots if e.key == "problems"), None)
        if group is None:
            return
        appeared = {_key(p) for p in ch["appeared"]}
        gone = list(ch["disappeared"])
        factory, problems = self.factory, list(self.document.problems)

        def children() -> list[Entry]:
            out = []
            for p in problems:
                e = factory.problem_entry(p)
                if _key(p) in appeared:
                    e.label = Text("+ ", style="bold red") + e.label
                out.append(e)
            for p in gone:
                e = factory.problem_entry(p)
                # struck through in the problem's own styles: one dim run (the look of a count) was
                # dropped whole from a narrow tree ("- gone: …")
                gone_label = e.label.copy()
                gone_label.stylize("strike")
                e.label = Text("- gone: ", style="bold green") + gone_label
                out.append(e)
            return out

        group.label = group.label + Text(f"  +{len(ch['appeared'])} -{len(gone)}", style="bold magenta")
        group.children = children
        tree.refresh_entry(group)

    def edit_parts(self) -> list[tuple[Text, int, bool]]:
        """The info bar's edit-mode part (nothing until the first edit)."""
        session = self.edit_session
        doc = self.document
        if session is None or doc is None:
            return []
        from ...format.onemodel.overlay import OverlayStorage

        # no edits, or the file as on disk is shown (r reloads it; the edits stay for the next one)
        edited = bool(session.edits or session.undone) and isinstance(doc.storage, OverlayStorage)
        if not edited:  # the first edit's re-check is said too
            return [(Text("  EDIT re-checking…", style="bold magenta"), 85, False)] if self.edit_pending else []
        n = len(session.edits)
        t = Text(f"  EDITED {n} edit{'s' if n != 1 else ''}", style="bold magenta")
        if self.edit_pending:
            t.append(" re-checking…", style="magenta")
        elif self.edit_change:
            t.append(f" +{len(self.edit_change['appeared'])} -{len(self.edit_change['disappeared'])} problems",
                     style="magenta")
        return [(t, 85, False)]

    # ------------------------------------------------------------------ edit list, save as
    def action_edit_list(self) -> None:
        from .screens import EditListScreen

        session = self.edit_session
        if session is None or not (session.edits or session.undone):
            self.notify("no edits yet: E edits the selection", timeout=3)
            return
        stem = os.path.splitext(os.path.basename(session.path))[0]
        self.push_screen(EditListScreen(session.edit_list(), [str(e) for e in reversed(session.undone)],
                                        session.patch_command(f"{stem}.edited.onemodel")))

    def action_save_as(self) -> None:
        from ..widgets.prompt import Prompt

        session = self.edit_session
        if session is None or not session.edits:
            self.notify("no edits to save: E edits the selection", timeout=3)
            return
        root, ext = os.path.splitext(session.path)

        def done(text: str | None) -> None:
            if text and text.strip():
                self._save(session, os.path.expanduser(text.strip()))

        self.push_screen(Prompt("save the edited file as (a new file; never the file opened)", "",
                                f"{root}.edited{ext or '.onemodel'}"), done)

    @work(thread=True, exclusive=True, group="edit-save", exit_on_error=False, description="edit: save as")
    def _save(self, session: EditSession, dst: str) -> None:
        """Write the edited file (copies the data region: off the UI thread)."""
        try:
            session.save_as(dst)
        except (FormatError, OSError) as e:
            msg, severity = f"not saved: {safe_str(str(e), 300)}", "error"
        else:
            msg, severity = f"saved {len(session.edits)} edits to {safe_str(dst, 200)}", "information"
        try:
            self.call_from_thread(self.notify, msg, severity=severity, markup=False, timeout=6)
        except Exception:  # app shutting down
            pass

    def edit_commands(self) -> Iterable[SystemCommand]:
        yield SystemCommand("Edit", "Edit the selected header field, manifest value or hex bytes (E)", self.action_edit)
        yield SystemCommand("Undo edit", "Take back the last edit (ctrl+z)", self.action_undo_edit)
        yield SystemCommand("Redo edit", "Apply the last edit taken back (ctrl+y)", self.action_redo_edit)
        yield SystemCommand("Edit list", "The edits in --patch syntax (L)", self.action_edit_list)
        yield SystemCommand("Save edited file as", "Write the edited file to a new file (S)", self.action_save_as)


def _needs_facts(entry: Entry) -> bool:
    """A row left on the previous read until the re-read graph's facts are known: an open row but the
    problems and findings (their rows need no facts)."""
    return entry.key not in ("problems", "findings")


def _make_children(roots: list[Entry], loaded: set, path: tuple = ()) -> None:
    """Make (off the UI thread) the children of the entries whose rows are open (``loaded``: the tree's
    :meth:`~.StructureTree.loaded_rows`), kept for the tree's swap: a group's 1,000 node labels took ~20 ms
    on the UI thread (10,000 nodes)."""
    for entry, key in zip(roots, row_keys(roots)):
        if path + (key,) in loaded and entry.children is not None:
            made = entry.children()
            entry.children = lambda made=made: made
            _make_children(made, loaded, path + (key,))


class _Turns:
    """Tickets served in order: the edit operations' workers run one at a time, in submission order."""

    def __init__(self) -> None:
        self.cv = threading.Condition()
        self.issued = 0
        self.serving = 0

    def take(self) -> int:
        """The next ticket (the UI thread only)."""
        self.issued += 1
        return self.issued - 1

    def wait(self, ticket: int) -> None:
        with self.cv:
            self.cv.wait_for(lambda: self.serving == ticket)

    def done(self) -> None:
        with self.cv:
            self.serving += 1
            self.cv.notify_all()


class _Problems:
    """A document's problems only (the findings of a re-read arrive later, in the background)."""

    def __init__(self, doc) -> None:
        self.problems = list(doc.problems) if doc is not None else []
        self.findings: list = []

