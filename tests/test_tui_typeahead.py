"""Keys typed ahead into a prompt (fast typing, a terminal multiplexer sending keys, a paste of key
strokes): they reach the prompt in the order typed, editing keys (ctrl+u, backspace, enter) included.

Each test posts its keys into the app's queue in one go, before the app handles the first, at one of
the three moments a burst can arrive: together with the key that opens the prompt (they go to the
widget focused below it), after the prompt is pushed but before its input has the focus, and once the
input has the focus.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import numpy as np
import pytest
from textual import events

from onemodel_viewer.tui.hex.hex_view import HexView
from onemodel_viewer.tui.widgets.prompt import Prompt

sys.path.insert(0, str(Path(__file__).resolve().parent))
import insight_models as im  # noqa: E402

SHOWCASE = Path(__file__).resolve().parent.parent / "testdata" / "valid" / "showcase.onemodel"
NAMES = {"/": "slash", ".": "full_stop", "-": "minus", "_": "underscore", " ": "space"}


def key_event(k: str) -> events.Key:
    """A one-character string is typed, a longer one is a key name (``ctrl+u``, ``backspace``, ``enter``)."""
    return events.Key(NAMES.get(k, k), k) if len(k) == 1 else events.Key(k, None)


def post_keys(app, *keys: str) -> None:
    """Post the keys into the app's queue as a terminal sends them (see :func:`key_event`)."""
    for k in keys:
        app.post_message(key_event(k))


async def until(pilot, ok, what: str) -> None:
    """Wait until ``ok()`` holds (the bound only ends a failure)."""
    for _ in range(2000):
        if ok():
            return
        await pilot.pause()
    raise AssertionError(f"{what}: never")


async def answered(viewer, pilot, ok, what: str) -> None:
    """Wait until ``ok()`` holds with no prompt open, then settle. Not just "no prompt open": keys
    posted in one burst with the key that opens the prompt are not handled yet when they are posted,
    so no prompt is open at first (the wait ended there, and under load the assertion ran before
    the prompt had even opened)."""
    await until(pilot, lambda: ok() and not isinstance(pilot.app.screen, Prompt), what)
    await viewer.settle(pilot)


def cube(app):
    return next(t for t in app.document.model.graph.initializers if t.name == "cube")


def open_tensors(viewer, tmp_path):
    """The viewer on a file of a few initializers (the float32 ``cube`` among them)."""
    return viewer(str(im.tensors(tmp_path / "tensors.onemodel")))


async def test_keys_sent_with_the_export_key_reach_the_prompt(viewer, tmp_path):
    """e, ctrl+u, a path and enter in one burst: they all went to the tree below the prompt; ctrl+u and
    enter reached the prompt but the path's characters were lost, and enter answered with an empty path."""
    async with open_tensors(viewer, tmp_path) as pilot:
        app = pilot.app
        await viewer.select(pilot, cube(app).where)
        out = tmp_path / "with-e-q.npy"  # q: the quit key, typed into the path
        post_keys(app, "e", "ctrl+u", *str(out), "enter")
        await answered(viewer, pilot, out.exists, "the file written")
        np.testing.assert_array_equal(np.load(out), cube(app).values())


async def test_keys_sent_while_the_export_prompt_opens_reach_it(viewer, tmp_path):
    """The keys arrive once the prompt is pushed, before its input has the focus: they went to the
    prompt screen and came back to the app after keys typed later; nothing was written."""
    async with open_tensors(viewer, tmp_path) as pilot:
        app = pilot.app
        await viewer.select(pilot, cube(app).where)
        out = tmp_path / "while-opening.npy"
        app.action_export_npy()  # pushes the prompt; its input is focused later
        assert isinstance(app.screen, Prompt) and app.focused is None
        post_keys(app, "ctrl+u", *str(out), "enter")
        await answered(viewer, pilot, out.exists, "the file written")
        np.testing.assert_array_equal(np.load(out), cube(app).values())


async def test_keys_sent_on_both_sides_of_the_input_taking_the_focus_keep_their_order(viewer, tmp_path):
    """Half the path sent to the export prompt screen before its input had the focus (held), the rest
    and enter sent to the input once focused, before it handled its focus event: the held half is
    typed first (the input types held keys as it takes the focus; keys sent to it wait behind that
    event). The keys are posted where the app forwards them: to the screen while nothing has the
    focus, then to the focused input."""
    from onemodel_viewer.tui.widgets.prompt import PromptInput

    async with open_tensors(viewer, tmp_path) as pilot:
        app = pilot.app
        await viewer.select(pilot, cube(app).where)
        out = str(tmp_path / "both-sides.npy")
        app.action_export_npy()
        prompt = app.screen
        assert isinstance(prompt, Prompt)
        while not prompt.query(PromptInput):
            await asyncio.sleep(0)
        field = prompt.query_one(PromptInput)
        assert not prompt.ready  # the input has not handled a focus event yet
        for k in ("ctrl+u", *out[:10]):
            prompt.post_message(key_event(k))
        prompt.set_focus(field)
        for k in (*out[10:], "enter"):
            field.post_message(key_event(k))
        await answered(viewer, pilot, Path(out).exists, "the file written")
        np.testing.assert_array_equal(np.load(out), cube(app).values())


async def test_editing_keys_sent_to_the_focused_prompt_keep_their_order(viewer, tmp_path):
    """ctrl+u, a path and enter sent at once to the export prompt with the focus (tmux under load):
    the characters were typed at once but ctrl+u and enter acted only after their way up to the app
    (bindings are looked up there), so ctrl+u erased the path and enter answered with nothing."""
    async with open_tensors(viewer, tmp_path) as pilot:
        app = pilot.app
        await viewer.select(pilot, cube(app).where)
        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, Prompt) and app.focused is not None, "the focused prompt")
        out = tmp_path / "focused.npy"
        post_keys(app, "ctrl+u", *str(out), "enter")
        await answered(viewer, pilot, out.exists, "the file written")
        np.testing.assert_array_equal(np.load(out), cube(app).values())


@pytest.mark.parametrize("with_g", [True, False], ids=["with-g", "focused"])
async def test_backspace_typed_ahead_into_the_goto_prompt_erases_the_key_before_it(viewer, with_g):
    """1 2 backspace 3 enter in one burst into the go-to prompt goes to offset 13, sent with the g or once
    the prompt has the focus (there backspace acted after the 3, on its way up: offset 12)."""
    async with viewer(SHOWCASE) as pilot:
        app = pilot.app
        hexv = app.query_one(HexView)
        if with_g:
            post_keys(app, "g")
        else:
            await pilot.press("g")
            await until(pilot, lambda: isinstance(app.screen, Prompt) and app.focused is not None, "the focused prompt")
        post_keys(app, "1", "2", "backspace", "3", "enter")
        await answered(viewer, pilot, lambda: hexv.cursor == 13, "the hex cursor at 13")


async def test_a_slash_typed_ahead_into_the_goto_prompt_is_a_character(viewer):
    """g / backspace 4 0 enter in one burst: the '/' typed ahead into the go-to prompt is a character of
    the answer (erased by the backspace), never the viewer's search key; the hex cursor goes to 40."""
    async with viewer(SHOWCASE) as pilot:
        app = pilot.app
        hexv = app.query_one(HexView)
        post_keys(app, "g", "/", "backspace", "4", "0", "enter")
        await answered(viewer, pilot, lambda: hexv.cursor == 40, "the hex cursor at 40")


async def test_keys_typed_ahead_into_the_diff_viewers_goto_prompt_reach_it(tmp_path):
    """g 1 2 backspace 3 enter in one burst in the diff viewer: the keys sent with the g went to the diff
    tree below the prompt and were dropped (the diff viewer did not hand stray keys to the prompt)."""
    from conftest import wait_for_workers
    from onemodel_viewer.tui.diff.app import make_diff_app

    app = make_diff_app(str(SHOWCASE), str(SHOWCASE))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for_workers(app)
        await pilot.pause()
        hexv = app.focused_hex()
        post_keys(app, "g", "1", "2", "backspace", "3", "enter")
        await until(pilot, lambda: hexv.cursor == 13 and not isinstance(app.screen, Prompt), "the hex cursor at 13")
        await wait_for_workers(app)
        await pilot.pause()
        assert hexv.cursor == 13
