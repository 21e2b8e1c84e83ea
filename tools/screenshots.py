#!/usr/bin/env python3
"""Make screenshots/*.svg from the real app watching the real demo workload.

    python tools/screenshots.py   # writes screenshots/*.svg: main, help, by-line, threads,
                                  # callers, tree, stacks, exited, hosts, hosts-replay, replay, diff

It starts `python -m pytop.demo`, attaches with the real sampler, drives the app with Textual's
pilot in a 120x32 terminal, and saves what the screen shows; then the host's table with the demo
and a multiprocessing pool beside it (every other Python process of the machine shows too: run
it on a quiet one). The numbers are whatever the demo did on this machine.
"""

from __future__ import annotations

import asyncio
import functools
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytop.core.compare import compare
from pytop.core.snapshot import View
from pytop.process.launch import Child, attach_when_ready, demo_command
from pytop.process.stacks import stacks_now
from pytop.record.history import HistorySource
from pytop.record.host_recorder import HostRecorder
from pytop.record.host_replay import HostReplay, open_host_recording
from pytop.record.keys import RunRecord
from pytop.record.recorder import Recorder
from pytop.record.recording import open_recording
from pytop.record.replay import Replay
from pytop.record.source import ReplaySource
from pytop.replaying import recorded_span
from pytop.run import attach_child, info_of, start_history
from pytop.sampling.host import HostSampler
from pytop.sampling.sampler import Sampler, Settings
from pytop.ui.app import PytopApp
from pytop.ui.axis_line import AxisLine
from pytop.ui.compare import ComparisonApp
from pytop.ui.hosts import HostTable
from pytop.ui.picker import PickerApp

OUT = Path(__file__).resolve().parent.parent / "screenshots"
SIZE = (120, 32)
HOSTS_SIZE = (150, 32)  # the host's table has nine columns
# Three workers computing, as a server's pool would.
POOL = """\
import multiprocessing, time
def work(_):
    end = time.time() + 3600
    while time.time() < end:
        sum(range(10000))
if __name__ == "__main__":
    multiprocessing.Pool(3).map(work, range(3))
"""


async def shoot() -> None:
    child = Child(demo_command(), quiet=True)
    try:
        target = attach_when_ready(child)
        settings = Settings(delay=1.0)
        info = info_of(target)
        history = start_history(info, settings, None)  # as `pytop PID` remembers its session: its time axis
        assert not isinstance(history, str), history
        sampler = Sampler(target.unwinder, info, settings, recorder=history.recorder)
        app = PytopApp(HistorySource(sampler, history.path, private=True), sort="own_pct", stacks_now=stacks_now,
                       replay=None)
        async with app.run_test(size=HOSTS_SIZE) as pilot:
            await asyncio.sleep(5)
            app.save_screenshot("main.svg", str(OUT))
            await pilot.press("question_mark")
            await pilot.pause()
            app.save_screenshot("help.svg", str(OUT))
            await pilot.press("escape", "L", "2")
            await asyncio.sleep(2.5)
            app.save_screenshot("by-line.svg", str(OUT))
            await pilot.press("L", "1", "t")
            await asyncio.sleep(1.5)
            await pilot.press("down", "enter")  # narrow to the second busiest thread
            await asyncio.sleep(2.5)
            app.save_screenshot("threads.svg", str(OUT))
            await pilot.press("a", "t")
            await asyncio.sleep(1.5)
            await pilot.press("enter")  # callers and callees of the top function
            await asyncio.sleep(2.5)
            app.save_screenshot("callers.svg", str(OUT))
            await pilot.press("escape", "T")  # the call tree, opened along the hottest path
            await asyncio.sleep(2.5)
            app.save_screenshot("tree.svg", str(OUT))
            await pilot.press("T", "d")  # every thread's stack now, with arguments and locals
            for _ in range(100):
                await asyncio.sleep(0.1)
                if "Arguments:" in str(app.screen.query_one("#stacks-text").render()):
                    break
            app.save_screenshot("stacks.svg", str(OUT))
            await pilot.press("escape")
            child.end()
            while not (app.snapshot and app.snapshot.run.exited):
                await asyncio.sleep(0.1)
            await pilot.pause()
            app.save_screenshot("exited.svg", str(OUT))
        target.close()
        history.close()
    finally:
        child.end()


async def shoot_hosts(record: str) -> None:
    """The host's table, the pool opened under the cursor; its looks recorded to `record`."""
    child = Child(demo_command(), quiet=True)
    pool = subprocess.Popen([sys.executable, "-c", POOL], start_new_session=True)  # its workers with it
    recorder = HostRecorder(record, 1.0, 0.05)
    try:
        ready = attach_when_ready(child)  # (the demo's threads are running: its rows are real)
        if ready is not None:
            ready.close()
        app = PickerApp(refresh_seconds=1.0, sampler=functools.partial(HostSampler, attach_child), recorder=recorder)
        async with app.run_test(size=HOSTS_SIZE) as pilot:
            await asyncio.sleep(5)  # the busiest processes' first window of samples
            await pilot.press("1")
            while f"pool:{pool.pid}" not in app.keys:
                await asyncio.sleep(0.2)
            app.query_one(HostTable).move_cursor(app.keys.index(f"pool:{pool.pid}"))
            await pilot.press("space")
            await asyncio.sleep(1.5)
            app.save_screenshot("hosts.svg", str(OUT))
    finally:
        recorder.close()
        os.killpg(pool.pid, signal.SIGKILL)
        pool.wait()
        child.end()


async def shoot_hosts_replay(record: str) -> None:
    """The host's table recorded, shown again a few looks back, the demo's hottest functions
    said (Enter on its row)."""
    replay = HostReplay(open_host_recording(record))
    app = PickerApp(replay=replay)
    async with app.run_test(size=HOSTS_SIZE) as pilot:
        for _ in range(200):  # its time axis read (a worker thread)
            await pilot.pause(0.05)
            if "CPU to" in str(app.query_one(AxisLine).render()):
                break
        for _ in range(3):
            await pilot.press("left_square_bracket")
        demo = next((key for key in app.keys if "pytop.demo" in app.lines[key].row.described), None)
        if demo is not None:
            app.query_one(HostTable).move_cursor(app.keys.index(demo))
            await pilot.press("enter")
        await pilot.pause()
        app.save_screenshot("hosts-replay.svg", str(OUT))
    replay.close()


async def shoot_replay() -> None:
    """A recording of the demo shown again, the cursor a few windows back."""
    child = Child(demo_command(), quiet=True)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "demo.pytop")
        try:
            target = attach_when_ready(child)
            settings = Settings(delay=1.0)
            info = info_of(target)
            recorder = Recorder(path, RunRecord(info, settings.rate, settings.cpu_budget, settings.mode, time.time()))
            sampler = Sampler(target.unwinder, info, settings, recorder=recorder)
            sampler.start(lambda snapshot: None)
            await asyncio.sleep(12)
            sampler.stop()
            recorder.close()
            target.close()
        finally:
            child.end()
        home = os.getcwd()
        os.chdir(directory)  # the header names the file as a user would have given it
        try:
            replay = Replay(open_recording("demo.pytop"))
        finally:
            os.chdir(home)
        app = PytopApp(ReplaySource(replay, View()), sort="own_pct", replay=True)
        async with app.run_test(size=SIZE) as pilot:
            await asyncio.sleep(1)
            for _ in range(4):
                await pilot.press("left_square_bracket")
                await asyncio.sleep(0.3)
            app.save_screenshot("replay.svg", str(OUT))
        replay.close()
        os.chdir(directory)
        try:  # the recording's second half against its first
            comparison = compare(recorded_span("demo.pytop:0-6", View())[0], recorded_span("demo.pytop:6-", View())[0])
        finally:
            os.chdir(home)
        diff = ComparisonApp(comparison)
        async with diff.run_test(size=SIZE) as pilot:
            await pilot.pause()
            diff.save_screenshot("diff.svg", str(OUT))


def main() -> int:
    OUT.mkdir(exist_ok=True)
    asyncio.run(shoot())
    with tempfile.TemporaryDirectory() as directory:
        record = os.path.join(directory, "host.pytop")
        asyncio.run(shoot_hosts(record))
        asyncio.run(shoot_hosts_replay(record))
    asyncio.run(shoot_replay())
    print(f"wrote {', '.join(sorted(p.name for p in OUT.glob('*.svg')))} in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
