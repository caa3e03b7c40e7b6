"""Every shell example in the documentation runs, against the bundled ``testdata/``, and prints what
the page says it prints.

An example is a fenced ``console`` (or ``shell``) block in ``docs/**.md`` or ``README.md``; each line
starting with ``$ `` is a command (run by bash), the lines after it up to the next ``$ `` line are its
expected output (stdout and stderr together, as a terminal shows them). Output that varies from run to
run is written ``...``: a line that is only ``...`` stands for any number of lines, ``...`` inside a
line for any text. The commands of one page run in order in one fresh folder holding a copy of
``testdata/`` (so they read ``testdata/valid/...`` as from the repository root, and what they write
stays there), with ``onemodel-view`` being this checkout's code on the running Python (and ``python`` that Python).

Each fenced ``python`` block runs too (from the same kind of folder) and must exit with status 0.
Blocks in other languages (``bash``, ``sh``, ``text``...) are not run: install steps and commands that
open the viewer are written there.

    python tests/test_docs_examples.py docs/cli.md   # prints what each example of a page really prints
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUN = {"console", "shell"}
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)")


@dataclass
class Example:
    page: str
    line: int  # 1-based line of the command in the page
    command: str
    expected: list[str]


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def examples(path: Path, root: Path = ROOT) -> list[Example]:
    """The commands of ``path``'s console blocks with their expected output."""
    page = str(path.relative_to(root))
    out: list[Example] = []
    fence = None
    lang = ""
    indent = 0
    first = 0  # index in out of the open block's first command
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if fence is None:
            m = FENCE.match(raw)
            if m:
                fence, lang, indent, first = m["fence"], m["lang"], len(m["indent"]), len(out)
            continue
        if raw.strip().startswith(fence) and raw.strip().strip(fence[0]) == "":
            fence = None
            continue
        if lang not in RUN:
            continue
        line = raw[indent:] if raw[:indent].strip() == "" else raw
        if line.startswith("$ "):
            out.append(Example(page, number, line[2:], []))
        elif len(out) > first:
            out[-1].expected.append(line.rstrip())
    return out


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """(line of the fence, code) of each fenced ``python`` block of ``path``."""
    out: list[tuple[int, str]] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == m["fence"]), len(lines))
        if m["lang"] == "python":
            out.append((i + 1, "\n".join(line[len(m["indent"]):] for line in lines[i + 1:end])))
        i = end + 1
    return out


def matches(expected: list[str], actual: list[str]) -> bool:
    """``expected`` against ``actual`` with ``...`` wildcards (a whole line: any lines; in a line: any text)."""
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head == "...":
        return any(matches(rest, actual[i:]) for i in range(len(actual) + 1))
    if not actual:
        return False
    pattern = ".*".join(re.escape(part) for part in head.split("..."))
    return re.fullmatch(pattern, actual[0]) is not None and matches(rest, actual[1:])


def workspace(tmp: Path) -> dict[str, str]:
    """``tmp`` with a copy of testdata/ and an ``onemodel-view`` that runs this checkout; the environment."""
    def skip(folder: str, names: list[str]) -> set[str]:
        """Scripts, caches and what is neither a file, a folder nor a link (a FIFO left by make_external.py)."""
        def special(name: str) -> bool:
            mode = os.lstat(os.path.join(folder, name)).st_mode
            return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))
        return {n for n in names if n == "__pycache__" or n.endswith(".py") or special(n)}

    shutil.copytree(ROOT / "testdata", tmp / "testdata", symlinks=True, ignore=skip)
    bin_dir = tmp / ".bin"
    bin_dir.mkdir()
    for name, args in (("onemodel-view", "-m onemodel_viewer "), ("python", "")):  # python: the tests' own
        exe = bin_dir / name
        exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" {args}"$@"\n', encoding="utf-8")
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV_"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(ROOT), COLUMNS="160",
               LINES="40", NO_COLOR="1", TERM="dumb", LC_ALL="C.UTF-8", PYTHONIOENCODING="utf-8")
    return env


def run(example: Example, cwd: Path, env: dict[str, str]) -> list[str]:
    done = subprocess.run(["bash", "-c", example.command], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    return [line.rstrip() for line in done.stdout.decode("utf-8", "replace").splitlines()]


DOCUMENTED = [p for p in pages() if examples(p)]
WITH_PYTHON = [p for p in pages() if python_blocks(p)]


def test_the_docs_have_examples():
    """The pages' examples are found at all (a parser that finds none would pass every page)."""
    assert sum(len(examples(p)) for p in DOCUMENTED) >= 10


@pytest.mark.parametrize("page", DOCUMENTED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_of_the_page_prints_what_it_says(page, tmp_path):
    env = workspace(tmp_path)
    failures = []
    for ex in examples(page):
        actual = run(ex, tmp_path, env)
        if not matches(ex.expected, actual):
            failures.append(f"{ex.page}:{ex.line}: $ {ex.command}\n--- expected\n" + "\n".join(ex.expected)
                            + "\n--- got\n" + "\n".join(actual))
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("page", WITH_PYTHON, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_python_example_of_the_page_runs(page, tmp_path):
    env = workspace(tmp_path)
    for line, code in python_blocks(page):
        done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"{page.relative_to(ROOT)}:{line}: the example fails:\n{done.stderr}"


@pytest.mark.parametrize("expected, actual, ok", [
    (["a", "b"], ["a", "b"], True),
    (["a", "b"], ["a", "c"], False),
    (["a"], ["a", "b"], False),
    (["a", "..."], ["a", "b", "c"], True),
    (["...", "c"], ["a", "b", "c"], True),
    (["...", "d"], ["a", "b", "c"], False),
    (["wrote x in ... s"], ["wrote x in 0.01 s"], True),
    (["wrote x in ... s"], ["wrote y in 0.01 s"], False),
    (["a.b"], ["axb"], False),  # only ... is special
])
def test_the_wildcards(expected, actual, ok):
    assert matches(expected, actual) is ok


def test_an_example_that_cannot_run_fails(tmp_path):
    """A command that does not exist, or prints something else, does not match its page."""
    page = tmp_path / "page.md"
    page.write_text("```console\n$ onemodel-view --no-such-flag testdata/valid/showcase.onemodel\n"
                    "testdata/valid/showcase.onemodel  valid  (0 problems, 0 findings)\n```\n", encoding="utf-8")
    (ex,) = examples(page, tmp_path)
    env = workspace(tmp_path)
    assert not matches(ex.expected, run(ex, tmp_path, env))
    ex.command = "onemodel-view --check testdata/valid/showcase.onemodel"
    assert matches(ex.expected, run(ex, tmp_path, env))


if __name__ == "__main__":  # print each example's real output, to write a page
    import tempfile

    for arg in sys.argv[1:]:
        with tempfile.TemporaryDirectory() as tmp:
            env = workspace(Path(tmp))
            for ex in examples(Path(arg).resolve()):
                print(f"$ {ex.command}")
                print("\n".join(run(ex, Path(tmp), env)))
                print()
