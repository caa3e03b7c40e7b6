"""End to end: the INSTALLED ``onemodel-view`` quits on ``q`` and ctrl+c while its background work runs (issue 11.6).

On a valid 7 MB file of 100,000 empty tensors the first screen drew, ``q`` cleared the screen and the process
stayed at 100% CPU (the byte-level findings ran for minutes, and leaving waited for them); ctrl+c printed
"interrupted" and it kept running. Marked ``e2e``; skipped when tmux is missing (see test_e2e_tmux.py).
"""

from __future__ import annotations

import pytest

from many_empties import write_empties
from test_e2e_tmux import tmux_factory  # noqa: F401 - the fixture

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def many_empties(tmp_path_factory):
    return write_empties(tmp_path_factory.mktemp("empties") / "empties.onemodel", 100_000, "inside")


@pytest.mark.parametrize("key", ["q", "C-c"])
def test_e2e_quit_while_background_work_runs(tmux_factory, many_empties, key):  # noqa: F811
    t = tmux_factory(many_empties)
    screen = t.wait_for("Structure", timeout=60)
    assert "100,001 tensors" in screen
    t.keys(key)  # at once: the background work (search index, byte-level findings) has just started
    # the assertion is "it exits": the deadline is generous, it is not a speed target
    screen = t.wait_for("__EXITED__ 0", timeout=10)
    assert "interrupted" not in screen and "Traceback" not in screen
