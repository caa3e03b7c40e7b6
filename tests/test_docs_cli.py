"""The CLI reference (docs/cli.md) and ``onemodel-view --help`` name the same flags: a flag added to the
parser without a line in the reference, or a documented flag the parser no longer has, fails here."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "cli.md"
FLAG = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)")


def help_flags() -> set[str]:
    out = subprocess.run([sys.executable, "-m", "onemodel_viewer", "--help"], capture_output=True, text=True,
                         cwd=ROOT, check=True, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin",
                                                    "PYTHONPATH": str(ROOT)}).stdout
    marker = "options:" if "options:" in out else "optional arguments:"  # Python 3.10+ / before
    options = out.split(marker, 1)[1]  # after the usage lines: the option list and its groups
    return {m for line in options.splitlines() for m in FLAG.findall(line.strip().split("  ")[0])}


def flag_table() -> set[str]:
    """The flags of the reference's "Flags" table (its first column)."""
    text = REFERENCE.read_text(encoding="utf-8")
    section = text.split("\n## Flags\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    return {m for row in rows for m in re.findall(r"`(--?[a-zA-Z][\w-]*)", row)}


def test_help_lists_flags():
    """The parse of --help finds the flags at all (a parse finding none would pass the test below)."""
    assert {"--check", "--diff", "--json", "--external-data", "--max-file-size", "-h"} <= help_flags()


def test_every_flag_of_help_is_in_the_reference():
    missing = help_flags() - flag_table()
    assert not missing, f"flags of onemodel-view --help without a row in docs/cli.md's Flags table: {sorted(missing)}"


def test_every_flag_of_the_reference_is_in_help():
    stale = flag_table() - help_flags()
    assert not stale, f"docs/cli.md documents flags onemodel-view --help does not have: {sorted(stale)}"


def test_every_flag_is_explained_in_the_text_too():
    """Each flag appears in the page as code (`--flag`), not only in a usage line."""
    text = REFERENCE.read_text(encoding="utf-8")
    assert all(f"`{f}" in text for f in help_flags())
