#!/usr/bin/env python3
"""Make the SVG screenshots of the viewer (screenshots/, shown in docs/) from the bundled test files.

    python scripts/make_screenshots.py [OUT_DIR [NAME...]]   # default: screenshots/, every picture

Each picture is the app driven headlessly (Textual's Pilot) at 120x40, after its
workers finished, so the pictures are the same on every machine.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from onemodel_viewer.tui.app import make_app  # noqa: E402
from onemodel_viewer.tui.diff.app import make_diff_app  # noqa: E402

VALID = ROOT / "testdata" / "valid"
HOSTILE = ROOT / "testdata" / "hostile"


async def settle(pilot) -> None:
    """Messages and workers done, then the selection's debounced manifest look-up (it moves the hex
    pane) started and done too, as the snapshot tests wait (tests/conftest.settle_located)."""
    from onemodel_viewer.tui.app import LOCATE_DELAY

    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause(LOCATE_DELAY)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def first(pilot) -> None:
    await settle(pilot)


async def node(pilot) -> None:
    await settle(pilot)
    g = pilot.app.document.model.graph
    pick = next((n for n in g.nodes if n.op == "MatMul"), g.nodes[0])
    pilot.app.reveal(pick.where)
    await settle(pilot)


async def tensor(pilot) -> None:
    await settle(pilot)
    pilot.app.reveal(pilot.app.document.model.graph.initializers[0].where)
    await settle(pilot)


def then(select, *keys):
    """Select the record ``select(model)`` returns, then press ``keys``."""

    async def run(pilot) -> None:
        await settle(pilot)
        pilot.app.reveal(select(pilot.app.document.model))
        await settle(pilot)
        await pilot.pause(0.3)
        await settle(pilot)
        for k in keys:
            await pilot.press(k)
            await settle(pilot)

    return run


def _node(op):
    return lambda m: next(n for n in m.graph.nodes if n.op == op).where


def _init(name):
    return lambda m: next(t for t in m.graph.initializers if t.name == name).where


SHOTS = [
    ("viewer-main.svg", VALID / "showcase.onemodel", first),
    ("viewer-node.svg", VALID / "showcase.onemodel", node),
    ("viewer-tensor-stats.svg", VALID / "showcase.onemodel", tensor),
    ("viewer-problems.svg", HOSTILE / "Malformed-file-length-truncated-data.onemodel", ("p",)),
    ("viewer-layout.svg", HOSTILE / "valid-shared-bytes.onemodel", ("l",)),
    ("viewer-help.svg", VALID / "showcase.onemodel", ("question_mark",)),
    ("viewer-hostile-names.svg", HOSTILE / "valid-term-all.onemodel", node),
    ("viewer-neighbourhood.svg", VALID / "showcase.onemodel", then(_node("MatMul"), "a", "plus", "down")),
    ("viewer-values.svg", VALID / "showcase.onemodel", then(_init("embed.positions"), "v", "down", "right")),
    ("viewer-parameters.svg", VALID / "showcase.onemodel", then(lambda m: m.graph.where, "P")),
    ("viewer-operator-help.svg", VALID / "showcase.onemodel", then(_node("LayerNormalization"), "o")),
    ("viewer-byte-inspector.svg", VALID / "showcase.onemodel",
     then(_init("embed.positions"), "i", "h", "right", "right", "right", "right", "right")),
    ("viewer-used-by.svg", VALID / "subgraphs.onemodel", then(lambda m: m.graph.inputs[0].where, "u")),
    ("viewer-outline.svg", VALID / "showcase.onemodel", ("O",)),
]


def changed_copy(tmp: Path) -> Path:
    """showcase.onemodel with the sign of three elements of ``layers.0.attn.q.weight`` flipped (the diff picture's B),
    beside a copy of the original (the picture shows both names, the same on every machine)."""
    from onemodel_viewer import format as omf

    src = VALID / "showcase.onemodel"
    with omf.open(str(src)) as doc:
        t = next(t for t in doc.model.graph.initializers if t.name == "layers.0.attn.q.weight")
        start = t.file_offset
    data = bytearray(src.read_bytes())
    for element in (37, 300, 301):  # bfloat16, little endian: the sign bit is in the second byte
        data[start + 2 * element + 1] ^= 0x80
    (tmp / src.name).write_bytes(src.read_bytes())
    out = tmp / "showcase-edited.onemodel"
    out.write_bytes(bytes(data))
    return out


DIFF_SHOTS = [
    ("viewer-diff.svg", ("d",)),
    ("viewer-diff-stats.svg", ("s",)),
]
"""Diff mode, showcase.onemodel against :func:`changed_copy`: the keys pressed after the first screen."""


async def shoot_diff(out: Path, name: str, keys: tuple) -> bool:
    import os
    import tempfile

    here, dest = os.getcwd(), out.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        b = changed_copy(Path(tmp))
        os.chdir(tmp)  # relative names in the picture
        try:
            app = make_diff_app("showcase.onemodel", b.name)
            async with app.run_test(size=(120, 40)) as pilot:
                await settle(pilot)
                await pilot.press(*keys)
                await settle(pilot)
                app.save_screenshot(filename=name, path=str(dest))
            for d in app.docs:
                d.close()
        finally:
            os.chdir(here)
    print(out / name)
    return True


async def shoot(out: Path, name: str, path: Path, action) -> bool:
    if not path.exists():
        print(f"skip {name}: {path} is missing", file=sys.stderr)
        return False
    app = make_app(str(path))
    async with app.run_test(size=(120, 40)) as pilot:
        if isinstance(action, tuple):
            await settle(pilot)
            await pilot.press(*action)
            await settle(pilot)
        else:
            await action(pilot)
        app.save_screenshot(filename=name, path=str(out))
    print(out / name)
    return True


async def main(out: Path, only: list[str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    ok = True
    for name, path, action in SHOTS:
        if only and not any(o in name for o in only):
            continue
        ok &= await shoot(out, name, path, action)
    for name, keys in DIFF_SHOTS:
        if only and not any(o in name for o in only):
            continue
        ok &= await shoot_diff(out, name, keys)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "screenshots", sys.argv[2:])))
