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
from onemodel_viewer.tui.widgets.entries import Facts  # noqa: E402


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


async def ui(path: str, rounds: int) -> None:
    from onemodel_viewer.tui.app import make_app
    from onemodel_viewer.tui.insight import Insight
    from onemodel_viewer.tui.screens.neighbourhood import NeighbourhoodScreen
    from onemodel_viewer.tui.screens.neighbourhood_view import NeighbourhoodView

    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        g = app.document.model.graph
        gaps: list[float] = []
        last = [time.perf_counter()]

        def tick() -> None:
            now = time.perf_counter()
            gaps.append(now - last[0])
            last[0] = now

        async def watch(until) -> tuple[float, float]:
            gaps.clear()
            last[0] = time.perf_counter()
            timer = app.set_interval(0.005, tick)
            t0 = time.perf_counter()
            while not until() and time.perf_counter() - t0 < 60:
                await asyncio.sleep(0.005)
            timer.stop()
            return max(gaps), time.perf_counter() - t0

        quiet, _ = await watch(lambda: False if time.perf_counter() - last[0] < 0 else len(gaps) > 200)
        print(f"UI event loop, quiet: longest gap between 5 ms ticks {ms(quiet)}")
        worst = []
        for _ in range(rounds):
            ins = app.insight = Insight(app, app.document, app.facts)
            app.describer.extra, app.describer.infer = ins.lines, ins.infer_type
            ins.start()
            w_ub, took_ub = await watch(lambda: ins.model_params is not None)
            w_inf, took_inf = await watch(lambda: ins.inferred is not None or "inferred" in ins.errors)
            worst.append((w_ub, took_ub, w_inf, took_inf))
        med = statistics.median
        print(f"used-by + parameter counts in the worker: done after {ms(med(x[1] for x in worst))}, longest UI gap "
              f"meanwhile {ms(med(x[0] for x in worst))} (median of {rounds}; worst {ms(max(x[0] for x in worst))})")
        print(f"then shape inference (the helper process): {ms(med(x[3] for x in worst))}, longest UI gap "
              f"{ms(med(x[2] for x in worst))} (worst {ms(max(x[2] for x in worst))})")
        mid = g.nodes[len(g.nodes) // 2]
        app.reveal(mid.where)
        await pilot.pause()
        await app.workers.wait_for_complete()
        for key, cls in (("a", NeighbourhoodScreen), ("p", None)):
            times = []
            for _ in range(rounds):
                base = app.screen
                t = time.perf_counter()
                await pilot.press(key)
                while app.screen is base:
                    await asyncio.sleep(0.001)
                await pilot.pause()
                times.append(time.perf_counter() - t)
                if cls is not None:
                    view = app.screen.query_one(NeighbourhoodView)
                    t = time.perf_counter()
                    for y in range(max(1, view.size.height)):
                        view.render_line(y)
                    draw = time.perf_counter() - t
                await pilot.press("escape")
                await pilot.pause()
            what = "neighbourhood view (a)" if cls else "the existing problems screen (p), for comparison"
            print(f"{what}: key to drawn screen (pilot) median {ms(med(times))}"
                  + (f"; its {view.size.height} lines drawn in {ms(draw)}" if cls else ""))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?", default="/tmp/omv-bench/4G/model.onemodel")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    core(args.model, args.repeat)
    asyncio.run(ui(args.model, 5))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
