"""The format, statistics and CLI tests on the other supported Pythons (3.12, 3.13).

    nox                  # both: python3.12 and python3.13 must be on PATH
    nox -s tests-3.13    # one of them
    nox -- -x            # arguments after -- go to pytest

``.ci/run`` runs the whole suite on 3.11 (the README's test command) and then these sessions.
The TUI tests (snapshots, tmux) run on 3.11 only: their rendering is pinned there.
"""

from __future__ import annotations

import glob

import nox

nox.options.sessions = ["tests"]
nox.options.error_on_missing_interpreters = True  # a Python that is not there fails the run, never skips it
if hasattr(nox.options, "download_python"):  # nox 2025 and later could fetch a missing Python
    nox.options.download_python = "never"  # use the machine's interpreters only
nox.options.envdir = "build/nox"  # under build/, which git ignores

CORE_TESTS = (
    "tests/test_manifest*.py",
    "tests/test_document.py",
    "tests/test_process.py",
    "tests/test_spec_rules.py",
    "tests/test_dtype_enums.py",
    "tests/test_reader*.py",
    "tests/test_hostile*.py",
    "tests/test_dtypes.py",
    "tests/test_external_check.py",
    "tests/test_ort_hostile.py",
    "tests/test_ort_facts.py",
    "tests/test_writer*.py",
    "tests/test_storage.py",
    "tests/test_roundtrip.py",
    "tests/test_onnx_bridge.py",
    "tests/test_stats*.py",
    "tests/test_check_cli.py",
    "tests/test_convert_cli.py",
    "tests/test_diff_cli.py",
    "tests/test_diff_hostile.py",
)
"""Test files of the format, stats and CLI layers (shell patterns; each must match a file)."""


def core_test_files() -> list[str]:
    files: list[str] = []
    for pattern in CORE_TESTS:
        found = sorted(glob.glob(pattern))
        if not found:
            raise RuntimeError(f"noxfile.py: no test file matches {pattern!r}")
        files += found
    return files


@nox.session(python=["3.12", "3.13"])
def tests(session: nox.Session) -> None:
    """Install the package with its test extras and run the format, stats and CLI tests."""
    session.install("-e", ".[test]")
    session.run("python", "-m", "pytest", "-q", "-n", "2", *core_test_files(), *session.posargs)
