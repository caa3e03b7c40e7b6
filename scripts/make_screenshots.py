#!/usr/bin/env python3
"""Make the README's SVG screenshots of the viewer from the bundled test files.

    python scripts/make_screenshots.py [OUT_DIR]      # default: screenshots/

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

VALID = ROOT / "testdata" / "valid"
HOSTILE = ROOT / "testdata" / "hostile"


async def settle(pilot) -> None:
    await pilot.pause()
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


SHOTS = [
    ("viewer-main.svg", VALID / "showcase.onemodel", first),
    ("viewer-node.svg", VALID / "showcase.onemodel", node),
    ("viewer-tensor-stats.svg", VALID / "showcase.onemodel", tensor),
    ("viewer-problems.svg", HOSTILE / "Malformed-file-length-truncated-data.onemodel", ("p",)),
    ("viewer-layout.svg", HOSTILE / "valid-shared-bytes.onemodel", ("l",)),
    ("viewer-help.svg", VALID / "showcase.onemodel", ("question_mark",)),
    ("viewer-hostile-names.svg", HOSTILE / "valid-term-all.onemodel", node),
]


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


async def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    ok = True
    for name, path, action in SHOTS:
        ok &= await shoot(out, name, path, action)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "screenshots")))
