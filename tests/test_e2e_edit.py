"""End to end: edit mode in the INSTALLED ``onemodel-view`` (tmux), keys in, screen text out (issue 18).

A header field and a manifest value edited, the re-check marking the problems that appear, undo
marking them gone, the edit list, save-as refusing the input's path and writing a new file that is
the ``--patch`` of the same edits. The input file is byte-identical at the end. Marked ``e2e``;
skipped when tmux is missing (see test_e2e_tmux.py).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from test_e2e_tmux import SHOWCASE, need, tmux_factory  # noqa: F401 - the fixture

pytestmark = pytest.mark.e2e

RENAMED = '{"name":"renamed_ids","type":{"kind":"tensor","elem":7,"shape":["batch","seq"]}}'
"""The graph's first input (``input_ids``, read by two nodes) renamed: both nodes' inputs become undefined."""


def _installed() -> str:
    exe = shutil.which("onemodel-view")
    assert exe is not None  # the tmux session ran it
    return exe


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _info_bar(screen: str) -> str:
    return screen.splitlines()[0] if screen else ""


def _input_holds(screen: str, text: str) -> bool:
    """A prompt's input box (``▊ … ▎``) holding ``text`` (a long one scrolled: its last 40 characters or more)."""
    for line in screen.splitlines():
        if "▊" in line and "▎" in line and "▔" not in line and "▁" not in line:
            shown = line.split("▊", 1)[1].rsplit("▎", 1)[0].strip()
            if shown == text or (len(shown) >= 40 and text.endswith(shown)):
                return True
    return False


def _box_paragraph(screen: str, title: str) -> str:
    """The text of a dialog below its line ``title`` up to the next empty line, without spaces."""
    lines = screen.splitlines()
    at = next(i for i, line in enumerate(lines) if title in line)
    left = lines[at].index(title)
    right = lines[at].index("│", left)
    out = []
    for line in lines[at + 1:]:
        inner = line[left:right].rstrip()
        if not inner:
            break
        out.append(inner)
    return "".join("".join(out).split())  # wrapped at spaces: compared without them


def test_e2e_edit_header_and_manifest_recheck_undo_list_save_as(tmux_factory, tmp_path):
    model = tmp_path / "m.onemodel"
    shutil.copyfile(need(SHOWCASE), model)
    before = _digest(model)
    t = tmux_factory(str(model))
    t.wait_until(lambda s: "Structure" in s and "valid" in _info_bar(s), "the first screen")

    # a header field: the tree's header group, its flags field (the detail pane names it)
    t.keys("Up", "Right")  # from the model up to the header group, opened (keys are read in order)
    t.wait_for("├ flags 0")
    t.keys("Down", "Down", "Down")
    t.wait_for("field   header.flags")
    t.keys("E")
    t.wait_for("header.flags =")
    t.wait_until(lambda s: _input_holds(s, "0"), "the prompt holding the decoded value")
    t.keys("C-u")
    t.wait_until(lambda s: _input_holds(s, ""), "the emptied input")
    t.keys("1", literal=True)
    t.wait_until(lambda s: _input_holds(s, "1"), "the typed value")
    t.keys("Enter")
    t.wait_until(lambda s: "EDITED 1 edit +1 -0 problems" in _info_bar(s), "the re-check of edit 1")
    # the problem that appeared, marked in the tree
    t.wait_until(lambda s: "+ Unsupported header.flags" in s and "problems (1)  +1 -0" in s, "the problem marked")
    t.wait_for("value   1 (0x1)")  # the selection kept: the field, with its new value

    # a manifest value: the graph's first input, as JSON, renamed
    t.search("input_ids", "match 1/1: value input_ids")
    t.keys("E")
    t.wait_for("edit manifest.graph.inputs[0]")
    t.wait_for('{"name":"input_ids","type":{"kind":"tensor"')  # the value's text as the file has it
    replaced = lambda s: '{"name":"renamed_ids"' in s and '"input_ids"' not in s and "not JSON" not in s  # noqa: E731
    for _ in range(5):
        # F7 selects all, the typed text replaces it; an F7 read before the editor had the focus did
        # nothing (the text went before the old one): select all and type again, it converges
        t.keys("F7")
        t.keys(RENAMED, literal=True)
        try:
            t.wait_until(replaced, "the typed value", timeout=3)
            break
        except AssertionError:
            continue
    t.wait_until(replaced, "the typed value")
    t.keys("C-s")
    t.wait_until(lambda s: "EDITED 2 edits +2 -0 problems" in _info_bar(s), "the re-check of edit 2")
    t.wait_until(lambda s: s.count("+ InvalidModel manifest.graph.nodes") == 2 and "problems (3)  +2 -0" in s,
                 "two undefined inputs marked")
    t.wait_for("renamed_ids int64[batch,seq]")  # the tree on the edited file, the selection put back
    t.wait_for("used by   no node")  # on the renamed input

    # undo: the two problems marked gone
    t.keys("C-z")
    t.wait_until(lambda s: "EDITED 1 edit +0 -2 problems" in _info_bar(s), "the re-check of the undo")
    t.wait_until(lambda s: s.count("- gone: InvalidModel") == 2, "two problems marked gone")
    t.wait_for("input_ids int64[batch,seq]")

    # the edit list: the edit left, the one undone, the --patch command
    t.keys("L")
    command = "".join(f"onemodel-view --patch {model} m.edited.onemodel header.flags=1".split())  # (wrapped)
    def listed(s: str) -> bool:  # the whole dialog drawn (a capture under load had only its top rows)
        if "1 edit (--patch syntax)" not in s or "y copy the command" not in s:
            return False
        try:
            return _box_paragraph(s, "the same file from the command line:") == command
        except (StopIteration, ValueError):
            return False

    screen = t.wait_until(listed, "the edit list with the --patch command")
    assert "1  header.flags=1" in screen and "undone" in screen and "renamed_ids" in screen
    t.keys("Escape")
    t.wait_until(lambda s: "--patch syntax" not in s, "the edit list closed")

    # save as: the input's own path is refused, a new path is written
    for name, expect in ((str(model), "not saved: "), (str(tmp_path / "out.onemodel"), "saved 1 edits to")):
        t.keys("S")
        t.wait_for("save the edited file as")
        t.wait_until(lambda s: _input_holds(s, str(tmp_path / "m.edited.onemodel")), "the suggested name")
        t.keys("C-u")
        t.wait_until(lambda s: _input_holds(s, ""), "the emptied input")
        t.keys(name, literal=True)
        t.wait_until(lambda s: _input_holds(s, name), "the typed path")
        t.keys("Enter")
        t.wait_for("not saved: Io at destination: the destination is a file" if expect == "not saved: " else expect)
        assert _digest(model) == before
    out = tmp_path / "out.onemodel"
    assert out.exists()
    t.keys("q")
    t.wait_for("__EXITED__ 0")
    assert _digest(model) == before

    # the saved file is the --patch of the edits left, and fails as the viewer said
    patched = tmp_path / "patched.onemodel"
    r = subprocess.run([_installed(), "--patch", str(model), str(patched), "header.flags=1"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == patched.read_bytes()
    r = subprocess.run([_installed(), "--check", "--json", str(out)], capture_output=True, text=True)
    assert r.returncode == 1
    problems = json.loads(r.stdout)["problems"]
    assert [(p["kind"], p["where"]) for p in problems] == [("Unsupported", "header.flags")]
    assert _digest(model) == before
