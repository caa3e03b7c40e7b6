#!/usr/bin/env python3
"""Soak the viewer: one long-running app (Textual Pilot, headless) opens every hostile file in turn,
moves through the tree, asks for statistics, values, hex, layout, neighbourhood and problems views,
edits a header field and undoes it; then the next file. Passes repeat until the time is up.

    python fuzz/soak.py --minutes 30 [--every N] [--report fuzz/soak-report.md] [--files FILE...]

After each pass over the files: the process's RSS (after a ``gc.collect()``) and the worst key
latency of the pass (wall time from the key press until the app is idle again, and the CPU time the
process spent meanwhile, which a shared machine does not inflate). The run fails (exit 1) on any
exception out of the app, an RSS more than 10% above the first pass's, or a key slower than 100 ms
of CPU after the first pass (which imports each screen on its first use). Not part of the test suite (it runs for minutes); its last report is committed under fuzz/.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import glob
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZE = (120, 40)
KEY_LIMIT_S = 0.100
VIEWS = ("s", "v", "a", "u", "p", "l")
"""statistics, values, neighbourhood ("around"), used-by, problems, layout: each opened, then closed."""
MEMORY_SLACK = 0.10


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def hostile_files() -> list[str]:
    h = ROOT / "testdata" / "hostile"
    files = sorted(glob.glob(str(h / "*.onemodel"))) + sorted(glob.glob(str(h / "ort" / "*.ort")))
    files += sorted(glob.glob(str(ROOT / "testdata" / "external" / "*" / "model.onnx")))
    return [f for f in files if os.path.getsize(f) <= 4 << 20]


class Soak:
    def __init__(self) -> None:
        self.worst_wall = (0.0, "")
        self.worst_cpu = (0.0, "")
        self.keys = 0
        self.errors: list[str] = []

    async def idle(self, pilot) -> None:
        from textual.worker import WorkerCancelled, WorkerState

        await pilot.pause()
        for _ in range(200):
            running = [w for w in pilot.app.workers if w.state in (WorkerState.PENDING, WorkerState.RUNNING)]
            if not running:
                break
            for w in running:
                try:
                    await asyncio.wait_for(w.wait(), 30)
                except (WorkerCancelled, asyncio.TimeoutError):
                    pass
                except Exception as e:  # noqa: BLE001 - a worker's failure is a finding of the soak
                    self.errors.append(f"worker {w.name}: {type(e).__name__}: {e}")
        await pilot.pause()

    async def key(self, pilot, key: str, label: str) -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        await pilot.press(key)
        await pilot.pause()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        self.keys += 1
        if wall > self.worst_wall[0]:
            self.worst_wall = (wall, f"{key} on {label}")
        if cpu > self.worst_cpu[0]:
            self.worst_cpu = (cpu, f"{key} on {label}")

    async def back(self, pilot, label: str) -> None:
        """Close any screen pushed over the main one."""
        for _ in range(3):
            if len(pilot.app.screen_stack) <= 1:
                return
            await self.key(pilot, "escape", label)

    async def one_file(self, pilot, path: str) -> str:
        from onemodel_viewer.format.errors import FormatError
        from onemodel_viewer.tui.background import open_for_viewer

        app = pilot.app
        label = os.path.relpath(path, ROOT)
        try:
            doc, unchecked = open_for_viewer(path)
        except FormatError:
            return "refused"
        app.load_document(doc, unchecked)
        await self.idle(pilot)
        for k in ("down", "right", "down", "down", "end", "home", "down", "down"):
            await self.key(pilot, k, label)
        for view in VIEWS:
            await self.key(pilot, view, label)
            await self.idle(pilot)
            await self.back(pilot, label)
        await self.key(pilot, "h", label)  # the hex pane: move its cursor
        for k in ("down", "pagedown", "end"):
            await self.key(pilot, k, label)
        await self.key(pilot, "shift+tab", label)
        if doc.source == "onemodel" and doc.header is not None:
            try:
                app.reveal("header.flags")
            except Exception:  # noqa: BLE001 - no header row in this file
                pass
            await self.idle(pilot)
            await self.key(pilot, "E", label)
            screen = app.screen
            inp = screen.query("#prompt-input")
            if inp:
                inp.first().value = "1"
                await self.key(pilot, "enter", label)
                await self.idle(pilot)
                await self.key(pilot, "ctrl+z", label)
                await self.idle(pilot)
            await self.back(pilot, label)
        return "opened"

    async def run(self, files: list[str], minutes: float) -> list[dict]:
        from onemodel_viewer.tui.app import OneModelApp

        app = OneModelApp()
        passes: list[dict] = []
        end = time.monotonic() + minutes * 60
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            while True:
                t0 = time.monotonic()
                self.worst_wall = self.worst_cpu = (0.0, "")
                keys0 = self.keys
                outcomes: dict[str, int] = {}
                for path in files:
                    try:
                        got = await self.one_file(pilot, path)
                    except Exception as e:  # noqa: BLE001 - the soak's finding: reported, the run goes on
                        got = "error"
                        self.errors.append(f"{os.path.relpath(path, ROOT)}: {type(e).__name__}: {e}")
                    outcomes[got] = outcomes.get(got, 0) + 1
                    if time.monotonic() > end + 600:
                        break
                gc.collect()
                passes.append({"pass": len(passes) + 1, "seconds": round(time.monotonic() - t0, 1),
                               "files": outcomes, "keys": self.keys - keys0, "rss_mb": round(rss_mb(), 1),
                               "worst_key_wall_ms": round(self.worst_wall[0] * 1000, 1), "worst_wall": self.worst_wall[1],
                               "worst_key_cpu_ms": round(self.worst_cpu[0] * 1000, 1), "worst_cpu": self.worst_cpu[1]})
                print(passes[-1], flush=True)
                if time.monotonic() > end:
                    break
        return passes


def report(passes: list[dict], errors: list[str], minutes: float, files: int, out: Path) -> bool:
    first = passes[0]["rss_mb"]
    last = passes[-1]["rss_mb"]
    warm = passes[1:] or passes  # the first pass imports each screen's modules on its first use
    worst_cpu = max(p["worst_key_cpu_ms"] for p in warm)
    worst_wall = max(p["worst_key_wall_ms"] for p in warm)
    mem_ok = last <= first * (1 + MEMORY_SLACK)
    ok = not errors and mem_ok and worst_cpu <= KEY_LIMIT_S * 1000
    lines = ["# Viewer soak report", "",
             f"Run: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {minutes:g} minutes asked, "
             f"{sum(p['seconds'] for p in passes) / 60:.1f} minutes run, {len(passes)} passes over {files} files "
             f"(of the hostile OneModel, .ort and ONNX files and the external-data models), one app (Textual Pilot, headless, {SIZE[0]}x{SIZE[1]}).",
             "", f"Verdict: {'PASS' if ok else 'FAIL'}: {len(errors)} exceptions; RSS after the last pass {last} MiB, "
             f"after the first {first} MiB ({'within' if mem_ok else 'NOT within'} 10%); worst key after the first pass "
             f"{worst_cpu} ms of CPU "
             f"(limit {KEY_LIMIT_S * 1000:g} ms), {worst_wall} ms wall (a shared 2-core machine, other jobs running).", "",
             "| pass | seconds | files (outcome: count) | keys | RSS MiB | worst key CPU ms (key on file) | worst key wall ms |",
             "|---|---|---|---|---|---|---|"]
    for p in passes:
        lines.append(f"| {p['pass']} | {p['seconds']} | {p['files']} | {p['keys']} | {p['rss_mb']} | "
                     f"{p['worst_key_cpu_ms']} ({p['worst_cpu']}) | {p['worst_key_wall_ms']} ({p['worst_wall']}) |")
    if errors:
        lines += ["", "## Exceptions", ""] + [f"- `{e[:300]}`" for e in errors[:50]]
    out.write_text("\n".join(lines) + "\n")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--report", default=str(ROOT / "fuzz" / "soak-report.md"))
    ap.add_argument("--files", nargs="*", help="files to open (default: every hostile file)")
    ap.add_argument("--every", type=int, default=1,
                    help="open every N-th of the files (a pass over all ~330 takes ~25 min on a shared 2-core machine)")
    args = ap.parse_args()
    files = (args.files or hostile_files())[::max(1, args.every)]
    soak = Soak()
    passes = asyncio.run(soak.run(files, args.minutes))
    ok = report(passes, soak.errors, args.minutes, len(files), Path(args.report))
    print(Path(args.report).read_text())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
