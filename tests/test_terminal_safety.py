"""Terminal safety of ``--check`` output on files whose strings are terminal attacks.

Names, docs, metadata, string tensors and undefined-name messages hold Rich markup, ANSI CSI,
OSC 52 (clipboard write), OSC 8 (links), C0/C1 controls, bidi overrides/isolates and zero-width
characters (``testdata/hostile/valid-term-*`` and a few hostile files). The text report and the
JSON report must contain none of those characters raw, JSON must stay valid, and markup must
appear literally (it is text, never interpreted).
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from onemodel_viewer import cli

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "testdata" / "hostile"

# Characters that must never reach a terminal raw: C0 except newline, DEL, C1, bidi embeddings/
# overrides/isolates/marks, zero-width characters and the BOM, line/paragraph separators, surrogates.
FORBIDDEN = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f\x80-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff]"
)
SGR = re.compile("\x1b\\[[0-9;]*m")

TERM_FILES = [  # subprocess runs are slow (~1 s each): a few; the in-process test covers every file
    "valid-term-all.onemodel",
    "InvalidModel-undefined-escape-name.onemodel",
    "Malformed-magic-escape.onemodel",
]
KNOWN_CHECK_TEXT_BUGS: dict[str, str] = {}


def _run_inproc(args: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(args)
    return code, out.getvalue() + err.getvalue()


def _forbidden(text: str) -> list[str]:
    return sorted({f"U+{ord(c):04X}" for c in FORBIDDEN.findall(text)})


def _corpus_params():
    names = sorted(p.name for p in HOSTILE.glob("*.onemodel"))
    return [pytest.param(n, id=n, marks=[pytest.mark.xfail(strict=True, reason=KNOWN_CHECK_TEXT_BUGS[n])]
                         if n in KNOWN_CHECK_TEXT_BUGS else []) for n in names]


@pytest.mark.parametrize("name", _corpus_params())
def test_check_text_and_json_are_clean_for_every_corpus_file(name):
    path = str(HOSTILE / name)
    code, text = _run_inproc(["--check", path])
    assert code in (0, 1)
    assert not _forbidden(text), _forbidden(text)
    code_j, js = _run_inproc(["--check", "--json", path])
    assert code_j == code
    assert not _forbidden(js)
    lines = [line for line in js.splitlines() if line.strip()]
    assert len(lines) == 1
    json.loads(lines[0])  # valid JSON whatever the file holds
    js.encode("ascii")  # ensure_ascii: nothing but ASCII


@pytest.mark.parametrize("name", TERM_FILES)
@pytest.mark.parametrize("color", [False, True], ids=["plain", "color"])
def test_check_bytes_on_a_real_process(name, color):
    """The installed entry point, raw bytes on stdout (also with colour forced on)."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "COLUMNS")}
    env["TERM"] = "xterm-256color"
    if color:
        env["FORCE_COLOR"] = "1"
    for extra in ([], ["--json"]):
        r = subprocess.run([sys.executable, "-m", "onemodel_viewer", "--check", *extra, str(HOSTILE / name)],
                           capture_output=True, env=env, timeout=60)
        assert r.returncode in (0, 1), r.stderr[-2000:]
        text = (r.stdout + r.stderr).decode("utf-8", "surrogateescape")
        if color and not extra:
            text = SGR.sub("", text)  # Rich's own styling is allowed; nothing else may start with ESC
        assert not _forbidden(text), (_forbidden(text), text[:2000])
        for attack in ("\x1b[2J", "\x1b]52", "\x1b]8;", "\x9b31m", "\u202e"):
            assert attack not in text
        if extra:
            for line in r.stdout.decode("ascii").splitlines():
                json.loads(line)


def test_markup_and_escapes_appear_literally():
    """The undefined name '[bold red]x[/]' is shown as text, and ESC/OSC/C1 as visible escapes."""
    code, text = _run_inproc(["--check", str(HOSTILE / "InvalidModel-undefined-escape-name.onemodel")])
    assert code == 1
    flat = text.replace("\n", "")
    assert "[bold red]x[/]" in flat
    assert "\\x1b[2J" in flat and "\\x1b]52;c;SGVsbG8=\\x07" in flat and "\\x9b31m" in flat
    code, js = _run_inproc(["--check", "--json", str(HOSTILE / "InvalidModel-undefined-escape-name.onemodel")])
    msg = json.loads(js.splitlines()[0])["problems"][0]["message"]
    assert "[bold red]x[/]" in msg
    assert "\x1b" not in msg  # the message itself is already made visible


def test_bidi_name_visible():
    code, text = _run_inproc(["--check", str(HOSTILE / "InvalidModel-undefined-bidi-name.onemodel")])
    assert code == 1
    assert "\\u202e" in text.replace("\n", "")


def test_huge_undefined_name_is_truncated(tmp_path):
    """A 1 MB undefined name does not produce a 1 MB report line."""
    sys.path.insert(0, str(ROOT / "testdata"))
    try:
        import make_hostile as mh
    finally:
        sys.path.pop(0)
    m = mh.base()
    m["graph"]["nodes"][2]["inputs"][1] = "\x1b[31m" + "N" * 1_000_000
    p = tmp_path / "long.onemodel"
    p.write_bytes(mh.build(m))
    code, text = _run_inproc(["--check", str(p)])
    assert code == 1
    assert len(text) < 50_000
    assert not _forbidden(text)
    code, js = _run_inproc(["--check", "--json", str(p)])
    json.loads(js.splitlines()[0])  # JSON may carry the full name (for scripts), escaped
    js.encode("ascii")


def test_hostile_file_name(tmp_path):
    """The file NAME itself can be an attack: it is printed in every report."""
    evil = tmp_path / "x\x1b]52;c;SGVsbG8=\x07\u202e[bold]y.onemodel"
    evil.write_bytes((HOSTILE / "Malformed-version-0.onemodel").read_bytes())
    code, text = _run_inproc(["--check", str(evil)])
    assert code == 1
    assert not _forbidden(text), _forbidden(text)
    assert "[bold]y" in text.replace("\n", "")
    code, js = _run_inproc(["--check", "--json", str(evil)])
    assert not _forbidden(js)
    assert json.loads(js.splitlines()[0])["file"] == str(evil)


def test_undecodable_file_name(tmp_path):
    """A file name that is not UTF-8 (surrogateescape'd by Python) must not crash the report or the JSON."""
    name = os.fsencode(str(tmp_path)) + b"/bad\xff\x1b.onemodel"
    with open(name, "wb") as f:
        f.write((HOSTILE / "Malformed-version-0.onemodel").read_bytes())
    r = subprocess.run([os.fsencode(sys.executable), b"-m", b"onemodel_viewer", b"--check", b"--json", name],
                       capture_output=True, timeout=60)
    assert r.returncode == 1, r.stderr[-2000:]
    json.loads(r.stdout.decode("ascii").splitlines()[0])
    r = subprocess.run([os.fsencode(sys.executable), b"-m", b"onemodel_viewer", b"--check", name],
                       capture_output=True, timeout=60)
    assert r.returncode == 1, r.stderr[-2000:]
    assert not _forbidden(r.stdout.decode("utf-8", "surrogateescape"))


KNOWN_DIFF_BUGS: dict[str, str] = {}


def _diff_params():
    names = sorted(json.loads((HOSTILE / "expected.json").read_text()))
    return [pytest.param(n, id=n, marks=[pytest.mark.xfail(strict=True, reason=KNOWN_DIFF_BUGS[n])]
                         if n in KNOWN_DIFF_BUGS else []) for n in names]


@pytest.mark.parametrize("name", _diff_params())
def test_diff_cli_on_corpus_file(name):
    """--diff --json / --summary with a corpus file on either side: exit 2 (error) for a hostile file, 0/1 for
    a valid one, never a traceback, and the output is clean (valid JSON, no raw controls)."""
    from onemodel_viewer.commands.diff import run_diff

    entry = json.loads((HOSTILE / "expected.json").read_text())[name]
    base = str(HOSTILE / "valid-base.onemodel")
    p = str(HOSTILE / name)
    for a, b in ((base, p), (p, base)):
        for as_json in (True, False):
            out, err = io.StringIO(), io.StringIO()
            with redirect_stdout(out), redirect_stderr(err):
                rc = run_diff(a, b, as_json=as_json)
            assert rc in ({0, 1} if entry["kind"] is None else {2}), (rc, err.getvalue()[-500:])
            text = out.getvalue() + err.getvalue()
            assert not _forbidden(text), (as_json, _forbidden(text))
            if as_json and rc != 2:
                json.loads(out.getvalue())
