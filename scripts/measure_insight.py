#!/usr/bin/env python3
"""Figures for the viewer's insight views on a big model (default: the benchmark's 10,000-node model).

    python scripts/measure_insight.py [/tmp/omv-bench/4G/model.onemodel] [--repeat 7]

Prints medians (and the worst key press): used-by and parameter counts built in the worker;
key presses in the tree while that worker runs vs with no worker; the neighbourhood view
(computed + every visible line drawn, and a key press to the drawn screen); shape inference
vs ``onnx.shape_inference.infer_shapes`` on the same weightless proto. Not a test: nothing is
asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from onemodel_viewer import format as omf  # noqa: E402
from onemodel_viewer.analysis import shapes  # noqa: E402
from onemodel_viewer.analysis.neighbourhood import neighbourhood  # noqa: E402
from onemodel_viewer.analysis.params import count_model  # noqa: E402
from onemodel_viewer.analysis.usedby import UsedBy  # noqa: E402
from onemodel_viewer.tui.entries import Facts  # noqa: E402


def ms(x: float) -> str:
    return f"{x * 1000:.1f} ms"


def core(path: str, repeat: int) -> None:
    doc = omf.open(path, mode="diagnose")
    m = doc.model
    g = m.graph
    facts = Facts()
    t = time.perf_counter()
    facts.of(g)
    print(f"model: {len(g.nodes):,} nodes, {len(g.initializers):,} initializers")
    print(f"facts of the main graph (done by the existing background job): {ms(time.perf_counter() - t)}")
    ub, pc, nbt, inf, base = [], [], [], [], []
    for _ in range(repeat):
        t = time.perf_counter()
        UsedBy(m, facts).build()
        ub.append(time.perf_counter() - t)
        t = time.perf_counter()
        count_model(m)
        pc.append(time.perf_counter() - t)
        mid = len(g.nodes) // 2
        t = time.perf_counter()
        neighbourhood(g, mid, facts, up=3, down=3)
        nbt.append(time.perf_counter() - t)
    from onnx import shape_inference

    shapes.infer_types(m)  # warm-up: imports onnx
    for _ in range(repeat):
        mp = shapes.weightless_proto(m)
        t = time.perf_counter()
        shape_inference.infer_shapes(mp, check_type=False, strict_mode=False, data_prop=False)
        base.append(time.perf_counter() - t)
        t = time.perf_counter()
        r = shapes.infer_types(m)
        inf.append(time.perf_counter() - t)
    t = time.perf_counter()
    r.names(g)
    index = time.perf_counter() - t
    med = statistics.median
    print(f"used-by map (worker): {ms(med(ub))}")
    print(f"parameter counts, whole model (worker): {ms(med(pc))}")
    print(f"neighbourhood computed, 3 levels up and down: {ms(med(nbt))}")
    print(f"shape inference, ours (weightless proto + infer + pairing): {ms(med(inf))}; "
          f"infer_shapes alone on the weightless proto: {ms(med(base))}; ratio {med(inf) / med(base):.2f}x "
          f"(+ {ms(index)} indexing the main graph's {r.count:,} types, also in the worker)")


async def ui(path: str, presses: int) -> None:
    from onemodel_viewer.tui.app import make_app
    from onemodel_viewer.tui.neighbourhood_screen import NeighbourhoodScreen
    from onemodel_viewer.tui.neighbourhood_view import NeighbourhoodView
    from onemodel_viewer.tui.structure_tree import StructureTree

    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        g = app.document.model.graph
        app.reveal(g.nodes[0].where)
        await pilot.pause()
        await app.workers.wait_for_complete()  # everything quiet: the baseline
        app.query_one(StructureTree).focus()

        async def press_times(n: int) -> list[float]:
            out = []
            for _ in range(n):
                t = time.perf_counter()
                await pilot.press("down")
                out.append(time.perf_counter() - t)
            return out

        quiet = await press_times(presses)
        # a new document's insight: restart it and press keys while its worker runs
        from onemodel_viewer.tui.insight import Insight

        app.insight = Insight(app, app.document, app.facts)
        app.describer.extra, app.describer.infer = app.insight.lines, app.insight.infer_type
        app.insight.start()
        busy: list[float] = []
        t0 = time.perf_counter()
        while app.insight.inferred is None and time.perf_counter() - t0 < 30:
            busy += await press_times(1)
        print(f"key press in the tree, no worker: median {ms(statistics.median(quiet))}, worst {ms(max(quiet))}")
        print(f"key press in the tree while used-by/counts/inference run ({len(busy)} presses over "
              f"{ms(time.perf_counter() - t0)}): median {ms(statistics.median(busy))}, worst {ms(max(busy))}")
        # the neighbourhood view: key to drawn screen, and compute + draw of its lines
        mid = g.nodes[len(g.nodes) // 2]
        app.reveal(mid.where)
        await pilot.pause()
        draws = []
        for _ in range(5):
            t = time.perf_counter()
            await pilot.press("a")
            await pilot.pause()
            draws.append(time.perf_counter() - t)
            assert isinstance(app.screen, NeighbourhoodScreen)
            view = app.screen.query_one(NeighbourhoodView)
            t = time.perf_counter()
            for y in range(view.size.height):
                view.render_line(y)
            lines = time.perf_counter() - t
            await pilot.press("escape")
            await pilot.pause()
        print(f"neighbourhood view, key 'a' to drawn screen (pilot round trip): median {ms(statistics.median(draws))}; "
              f"drawing its {view.size.height} lines: {ms(lines)}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?", default="/tmp/omv-bench/4G/model.onemodel")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    core(args.model, args.repeat)
    asyncio.run(ui(args.model, 20))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
