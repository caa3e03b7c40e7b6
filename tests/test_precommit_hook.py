"""The pre-commit hook of ``.pre-commit-hooks.yaml`` (``onemodel-view --check`` on ``.onemodel``, ``.onnx``
and ``.ort`` files), run by pre-commit itself on a temporary git repository holding one valid model, one
broken model and a text file the hook must not be given.

The slow test is what a user does: ``pre-commit try-repo`` against this checkout, which builds a
virtual environment and pip-installs the package into it from the package index (~40-65 s on 2 busy
cores with pip's cache warm). The fast one runs the same hook definition (entry, files, types, read
from the file) as a local ``language: system`` hook with this checkout's ``onemodel-view``, so the hook's
behaviour is tested on every run without an install.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
HOOKS = ROOT / ".pre-commit-hooks.yaml"
VALID = ROOT / "testdata" / "valid" / "dtypes.onemodel"
BROKEN = ROOT / "testdata" / "hostile" / "Unsupported-flags-1.onemodel"  # Unsupported at header.flags


def hook() -> dict:
    (only,) = yaml.safe_load(HOOKS.read_text(encoding="utf-8"))
    return only


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args], cwd=repo, check=True,
                   capture_output=True)


def model_repo(tmp_path: Path, *, broken: bool) -> Path:
    """A git repository with good.onemodel, notes.txt (not a model: --check would fail on it) and,
    when ``broken``, bad.onemodel; everything staged."""
    repo = tmp_path / "models"
    repo.mkdir()
    git(repo, "init", "-q")
    shutil.copy(VALID, repo / "good.onemodel")
    (repo / "notes.txt").write_text("not a model\n", encoding="utf-8")
    if broken:
        shutil.copy(BROKEN, repo / "bad.onemodel")
    git(repo, "add", ".")
    return repo


def env_for(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / "onemodel-view"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m onemodel_viewer "$@"\n', encoding="utf-8")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONPATH": str(ROOT),
            "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "PRE_COMMIT_COLOR": "never", "COLUMNS": "160"}


def pre_commit(repo: Path, env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_the_hook_definition():
    h = hook()
    assert h["id"] == "onemodel-view-check"
    assert h["entry"] == "onemodel-view --check"
    assert h["language"] == "python"
    assert h["files"] == r"\.(onemodel|onnx|ort)$"


@pytest.mark.parametrize("broken", [False, True], ids=["valid only", "with a broken file"])
def test_the_hook_run_by_pre_commit(tmp_path, broken):
    repo = model_repo(tmp_path, broken=broken)
    h = hook()
    local = {"id": h["id"], "name": h["name"], "entry": h["entry"], "language": "system", "files": h["files"],
             "types": h.get("types", ["file"])}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{"repo": "local", "hooks": [local]}]}),
                                                  encoding="utf-8")
    git(repo, "add", ".pre-commit-config.yaml")
    done = pre_commit(repo, env_for(tmp_path), "run", "--all-files", "--verbose")
    out = done.stdout
    assert "good.onemodel  valid  (0 problems, 0 findings)" in out
    assert "notes.txt" not in out  # only model files are given to --check
    if broken:
        assert done.returncode == 1, out
        assert "Failed" in out
        assert "bad.onemodel  INVALID  (1 problem, 16 findings)" in out
        assert "Unsupported at header.flags  offset 0xc (12)" in out
    else:
        assert done.returncode == 0, out
        assert "Passed" in out


@pytest.mark.slow
def test_pre_commit_try_repo_installs_and_runs_the_hook(tmp_path):
    """The hook as a user gets it: pre-commit clones this checkout (its uncommitted changes too), installs
    the package in a virtual environment of its own and runs the hook; the broken file fails the run."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: pre-commit try-repo needs one")
    repo = model_repo(tmp_path, broken=True)
    env = env_for(tmp_path)
    env["PATH"] = os.environ.get("PATH", "")  # the hook's own environment, not this checkout's command
    env.pop("PYTHONPATH")
    done = pre_commit(repo, env, "try-repo", str(ROOT), "onemodel-view-check", "--all-files", timeout=900)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "good.onemodel  valid  (0 problems, 0 findings)" in out
    assert "bad.onemodel  INVALID  (1 problem, 16 findings)" in out
    assert "notes.txt" not in out
