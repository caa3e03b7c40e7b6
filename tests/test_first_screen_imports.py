"""What the viewer imports before its first complete screen (issue 19: the first screen vs a minimal Textual app).

Each run is a fresh interpreter: the app runs headless with the exit-after-first-screen hook, then the
test reads ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VALID = ROOT / "testdata" / "valid"

FIRST_SCREEN = (
    "import asyncio, json, sys\n"
    "from onemodel_viewer.tui.app import make_app\n"
    "app = make_app(sys.argv[1], exit_after_first_screen=True)\n"
    "asyncio.run(app.run_async(headless=True, size=(120, 40)))\n"
    "print(json.dumps({'rc': app.return_code, 'modules': sorted(sys.modules)}))\n"
)

NOT_BEFORE_FIRST_SCREEN = (
    "textual.widgets._sparkline",  # the statistics panel's histogram, mounted on first use
    "textual.widgets._progress_bar",  # its progress bar, likewise
    "statistics",  # imported by textual's sparkline renderable
    "onemodel_viewer.tui.widgets.prompt",  # the input prompt (/, g, edits): no prompt is open before a key
    "onnx",
    "google.protobuf",
    "numpy",
    "ml_dtypes",
)


def first_screen_modules(path: Path) -> set[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", FIRST_SCREEN, str(path)], capture_output=True, text=True,
                         env=env, cwd=str(ROOT), timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["rc"] == 0
    return set(result["modules"])


def test_first_screen_of_a_graph_imports_no_unseen_widgets_nor_tensor_libraries():
    """The statistics panel imported textual's Sparkline and ProgressBar (and, through them, ``statistics``) at
    module level, though both are mounted only when statistics are first shown: ~1.3 ms of every first screen; the
    app imported the prompt's module (its screen classes, ~1 ms) for its key handler, before any key."""
    modules = first_screen_modules(VALID / "subgraphs.onemodel")
    assert "onemodel_viewer.tui.widgets.stats_panel" in modules  # the panel itself is on the first screen
    assert sorted(m for m in NOT_BEFORE_FIRST_SCREEN if m in modules) == []


def test_viewer_imports_with_the_gc_paused():
    """The viewer paused the cyclic GC only from ``run_viewer`` on, after importing Textual, Rich and its own
    modules: collections ran during ~0.3 s of imports whose objects all live on (~5 ms of CPU)."""
    code = (
        "import gc, sys, types\n"
        "import onemodel_viewer.tui\n"
        "fake = types.ModuleType('onemodel_viewer.tui.app')\n"  # stands in for the app: reports the GC's state
        "fake.run_viewer = lambda path: print('GC enabled:', gc.isenabled()) or 0\n"
        "sys.modules['onemodel_viewer.tui.app'] = fake\n"
        "from onemodel_viewer.cli import main\n"
        "print('rc', main([sys.argv[1]]))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code, str(VALID / "subgraphs.onemodel")], capture_output=True,
                         text=True, env=env, cwd=str(ROOT), timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["GC", "enabled:", "False", "rc", "0"]
