"""The documentation site builds with ``mkdocs build --strict``: a link to a page or an anchor that is not
there, a page missing from the navigation, a snippet include (the key tables, SECURITY.md,
benchmarks/RESULTS.md) that is not there, or an API object mkdocstrings cannot find fails it. mkdocs and
its plugins come with the test extra (and the docs extra)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mkdocs_build_strict(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    site = tmp_path / "site"
    assert (site / "screenshots" / "viewer-main.svg").is_file()  # the screenshots reach the site
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert "onemodel_viewer.format.open" in api
    assert ":class:<code>" not in api  # scripts/mkdocs_hooks.py drops the docstrings' reST roles
    assert "OneModelApp" in (site / "viewer" / "index.html").read_text(encoding="utf-8")


def test_every_screenshot_appears_in_the_docs():
    """Each picture scripts/make_screenshots.py makes is shown where the docs describe it, and each picture
    a page shows exists."""
    import re

    text = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").rglob("*.md"))
    shown = set(re.findall(r"\]\((?:\.\./)*screenshots/([\w.-]+\.svg)\)", text))
    made = {p.name for p in (ROOT / "screenshots").glob("*.svg")}
    assert made, "no screenshots found"
    assert made - shown == set(), "screenshots no page shows"
    assert shown - made == set(), "pictures the docs show that are not in screenshots/"


def test_the_readme_fits_on_a_screen_and_keeps_the_set_up_commands():
    """At most 8 KB (the rest is in docs/); .ci/run greps the test command out of it, so both set-up lines
    stay exactly as they are, 4-space indented."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) <= 8 * 1024
    lines = text.splitlines()
    assert "    pip install -e . && onemodel-view testdata/valid/showcase.onemodel" in lines
    assert "    pip install -e '.[test]' && python -m pytest -q -n 2" in lines


# Named in the docs but not files of this repository: the spec's documents, a user's config, and files
# named relative to a folder the text gives (benchmarks/RESULTS.md, testdata/*/expected.json).
NOT_HERE = {"onemodel-format.md", "CLARIFICATIONS.md", ".pre-commit-config.yaml", "RESULTS.md", "expected.json"}


def test_the_files_the_docs_name_exist():
    """A module or file named as code (`format/ort/fbs.py`, `tests/test_reader.py`, `scripts/...`) is
    there: from the repository root, the package folder or tests/ (a module moved without its page fails)."""
    import re

    named = set()
    for page in (ROOT / "docs").rglob("*.md"):
        named |= set(re.findall(r"`([\w./-]+\.(?:py|md|yaml|yml|tcss|json))`", page.read_text(encoding="utf-8")))
    assert len(named) > 20
    gone = sorted(n for n in named - NOT_HERE
                  if not any((base / n).exists() for base in (ROOT, ROOT / "onemodel_viewer", ROOT / "tests")))
    assert not gone, f"files the docs name that are not there: {gone}"
