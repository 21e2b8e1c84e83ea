"""Recordings against real targets: a session recorded while it is sampled, then replayed, shows
the table the live view showed for each window, figure by figure; a range's figures are its
windows'; the replay's pure sums agree with the engine's over the same stacks."""

from __future__ import annotations

import contextlib
import json
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import helpers
from pytop.core import commands
from pytop.core.counts import timed_stacks
from pytop.core.intake import take_in
from pytop.core.model import Circumstances, Snapshot, TargetInfo
from pytop.core.records import Drain
from pytop.core.snapshot import Figures, View
from pytop.core.sums import BookSums
from pytop.core.tally import CPU
from pytop.native import Engine, EngineConfig
from pytop.process.attach import attach
from pytop.record import container
from pytop.record.keys import RunRecord
from pytop.record.payloads import read_window
from pytop.record.recorder import Recorder
from pytop.record.recording import open_recording
from pytop.record.replay import Replay
from pytop.run import info_of
from pytop.sampling.sampler import Sampler, Settings


class Kept:
    def __init__(self) -> None:
        self.snapshots: list[Snapshot] = []
        self.lock = threading.Lock()

    def __call__(self, snapshot: Snapshot) -> None:
        with self.lock:
            self.snapshots.append(snapshot)


def record(pid: int, path: Path, settings: Settings, samples: int,
           during: Any = None) -> tuple[Sampler, Kept, Recorder]:
    target = attach(pid)
    info = info_of(target)
    recorder = Recorder(str(path), RunRecord(info, settings.rate, settings.cpu_budget, settings.mode, 0.0))
    sampler = Sampler(target.unwinder, info, settings, recorder=recorder)
    kept = Kept()
    with helpers.sampling(sampler, kept):
        helpers.wait_samples(sampler, samples)
        if during is not None:
            during(sampler)
            helpers.wait_samples(sampler, 2 * samples)
    kept(sampler.final_snapshot())
    recorder.close()
    target.close()
    return sampler, kept, recorder


def table(s: Snapshot) -> dict[Any, tuple[float, float, float, float, int, int]]:
    return {r.key: (r.own_pct, r.total_pct, r.own_time, r.total_time, r.own_count, r.total_count) for r in s.rows}


def threads(s: Snapshot) -> dict[Any, tuple[Any, ...]]:
    return {t.key: (t.name, t.native_id, t.samples, t.cpu_time, t.own_time, t.alive, t.active_pct)
            for t in s.thread_rows}


def same_figures(live: Snapshot, replayed: Snapshot) -> None:
    assert table(replayed) == table(live)
    assert threads(replayed) == threads(live)
    for name in ("samples", "rate", "errors", "late", "gil_pct", "active_pct", "threads", "cpu_pct", "cpu_time",
                 "attributed", "skipped", "torn", "unseen_time", "mode", "by_line"):
        assert getattr(replayed, name) == getattr(live, name), name


@pytest.mark.parametrize("delay, samples", [(0.3, 900), (1.6, 2400)], ids=["a-drain-a-window", "drains-gathered"])
def test_a_replayed_window_is_the_live_window_figure_by_figure(some_interp: dict[str, Any], tmp_path: Path,
                                                               delay: float, samples: int) -> None:
    # The thread-per-request server: threads start and end all the time (their rows fold), new
    # stacks come in every window. No CPU budget: pytest's own CPU would hold the rate. At 1.6 s
    # a window, the engine is drained three or four times a window: the recording gathers their
    # time into the last drain of each run (record/gathering.py).
    path = tmp_path / "session.pytop"
    with helpers.running(some_interp, "server.py") as t:
        _, kept, recorder = record(t.pid, path, Settings(rate=300, delay=delay, cpu_budget=0), samples)
    assert recorder.dropped == 0 and recorder.failing is None
    recording = open_recording(str(path))
    if delay > 1:
        with open(path, "rb") as f:
            drains = [read_window(container.payload(f, w.frame)).drains for w in recording.windows]
        assert any(len(ds) >= 3 and not ds[0].weights and not ds[0].function_rows and ds[-1].weights
                   for ds in drains), [len(ds) for ds in drains]
    assert recording.lost_bytes == 0 and recording.run.target.pid == t.pid
    live = kept.snapshots
    assert len(recording.windows) == len(live) >= 4
    replay = Replay(recording)
    for index, shown in enumerate(live):
        again = replay.snapshot(index, View(mode="cpu", threads=True))
        same_figures(shown, again)
        assert again.run.window_seconds == shown.run.window_seconds
    assert sum(r.own_time for r in live[-1].rows) > 0.1  # the server did work: the comparison had figures
    # Stepping back, window by window, from checkpoints of the state (here every 2 windows):
    # the same figures as going forward.
    backwards = Replay(recording, checkpoint_every=2)
    for index in reversed(range(len(live))):
        same_figures(live[index], backwards.snapshot(index, View(mode="cpu", threads=True)))
    assert backwards.windows_read <= 3 * len(live)  # not from the start each time: n(n+1)/2
    # A range that starts behind the cursor (R there) learns what came before it from the
    # session's checkpoints, not from the key frame before it: the same figures either way.
    first, last = len(live) - 2, len(live) - 1
    backwards.snapshot(last, View(mode="cpu", threads=True))
    read = backwards.windows_read
    learned = backwards.snapshot(last, View(mode="cpu", threads=True), first)
    assert backwards.windows_read - read <= last - first + 2 < last + 1, (backwards.windows_read, read)
    from_key = Replay(recording)
    same_figures(from_key.snapshot(last, View(mode="cpu", threads=True), first), learned)
    from_key.close()
    backwards.close()
    # The same windows in another mode and by line, as the live view would have shown them.
    wall = replay.snapshot(len(live) - 1, View(mode="wall", by_line=True))
    assert wall.mode == "wall" and all(r.line is not None for r in wall.rows)
    replay.close()


NAPPERS = 200


def test_napping_threads_stand_live_and_in_the_recording(some_interp: dict[str, Any], tmp_path: Path) -> None:
    """A pool of threads asleep, each on its own stack: a drain that closes a window names them
    under `standing` (their time asleep) instead of handing each over whole, live and in the
    recording alike. Each napper's row still counts every sample of the run and the same wall
    time as every other napper, and a replayed window is the live one, wall time and all."""
    path = tmp_path / "session.pytop"
    with helpers.running(some_interp, "many_threads.py", str(NAPPERS)) as t:
        _, kept, recorder = record(t.pid, path, Settings(rate=200, delay=0.3, mode="wall", cpu_budget=0), 400)
    assert recorder.dropped == 0 and recorder.failing is None
    recording = open_recording(str(path))
    with open(path, "rb") as f:
        drains = [d for w in recording.windows for d in read_window(container.payload(f, w.frame)).drains]
    stood = [len(d.standing.threads) for d in drains]
    assert max(stood) >= 0.9 * NAPPERS, stood
    live = kept.snapshots
    final = live[-1]
    nappers = [row for row in final.thread_rows if row.name and row.name.startswith("worker-")]
    assert len(nappers) == NAPPERS
    process_samples = sum(p.samples for d in drains for p in d.processes)  # (the first one too)
    assert {row.samples for row in nappers} == {process_samples}, (process_samples, nappers[:3])
    assert len({row.own_time for row in nappers}) == 1 and nappers[0].own_time > 0, nappers[:3]
    replay = Replay(recording)
    for index, shown in enumerate(live):
        same_figures(shown, replay.snapshot(index, View(mode="wall", threads=True)))
    replay.close()


def test_a_range_is_the_sum_of_its_windows(some_interp: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "session.pytop"
    with helpers.running(some_interp, "stacks.py") as t:
        _, kept, _ = record(t.pid, path, Settings(rate=200, delay=0.25, cpu_budget=0), 600)
    replay = Replay(open_recording(str(path)))
    last = len(kept.snapshots) - 1
    first = 2
    ranged = replay.snapshot(last, View(), first, whole=True)
    windows = [replay.snapshot(i, View(), i, whole=True) for i in range(first, last + 1)]
    own: dict[Any, float] = {}
    for w in windows:
        for r in w.rows:
            own[r.key] = own.get(r.key, 0.0) + r.own_time
    got = {r.key: r.own_time for r in ranged.rows if r.own_time}
    assert got.keys() == {k for k, v in own.items() if v}
    for key, seconds in got.items():
        assert seconds == pytest.approx(own[key], abs=1e-9), key
    assert ranged.cpu_time == pytest.approx(sum(w.cpu_time for w in windows), abs=1e-9)
    assert ranged.samples == sum(w.samples for w in windows)
    # The whole recording as one window: what the live run's final totals said.
    whole = replay.snapshot(last, View(), 0, whole=True)
    assert {r.key: r.own_time for r in whole.rows} == {r.key: r.own_time for r in kept.snapshots[-1].rows}
    assert whole.cpu_time == kept.snapshots[-1].cpu_time


def test_the_replays_sums_are_the_engines(some_interp: dict[str, Any], tmp_path: Path) -> None:
    # core.sums walks the recorded stack book as native/aggregate.c walks the engine's tree:
    # held against each other on the same stacks (deep ones, recursion, threads), per function,
    # per line and per node.
    with helpers.running(some_interp, "deep_random.py") as t:
        target = attach(t.pid)
        engine = Engine(EngineConfig(rate=300, cpu_budget=0))
        figures = Figures()
        try:
            target.unwinder.set_tasks(True)
            figures.book.pids[engine.add(target.unwinder)] = t.pid
            engine.start()
            while figures.total.ticks < 600:
                time.sleep(0.2)
                take_in(figures, engine.drain())
            engine.stop()
            take_in(figures, engine.drain())
            tallies = figures.total.leaf_tallies()
            native = engine.aggregate(tallies, tables=True, nodes=True)
            pure = BookSums(figures.book).aggregate(tallies, tables=True, nodes=True)
        finally:
            engine.close()
    assert len(tallies) > 20
    assert sorted(pure.functions) == sorted(native.functions)
    assert sorted(pure.lines) == sorted(native.lines)
    assert sorted(pure.nodes) == sorted(native.nodes)
    assert pure.skipped == native.skipped


# ---- the command line: --record, pytop FILE, ranges -------------------------------------------

def report_of(result: Any) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_a_batch_recording_prints_again_as_the_run_printed_it(some_interp: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "batch.pytop"
    with helpers.running(some_interp, "stacks.py") as t:
        run = report_of(helpers.run_pytop("--batch", "--json", "--duration", "5", "--rate", "200", "--cpu-budget",
                                          "0", "--record", str(path), str(t.pid)))
    assert run["record"]["windows"] >= 3 and run["record"]["dropped"] == 0  # a window every 2 s at most
    again = report_of(helpers.run_pytop("--batch", "--json", str(path)))
    assert again["replay"]["windows"] == run["record"]["windows"]
    for key in set(run) - {"record", "replay"}:
        assert again[key] == run[key], key
    # A range: its figures are those of its windows, and it says which.
    ranged = report_of(helpers.run_pytop("--batch", "--json", "--from", "2", "--to", "4s", str(path)))
    assert 0 < ranged["replay"]["first"] <= ranged["replay"]["index"] < run["record"]["windows"] - 1
    assert 0 < ranged["cpu_time"] < run["cpu_time"]
    text = helpers.run_pytop("--batch", str(path))
    assert text.returncode == 0 and f"Replay of {path}" in text.stdout and "spinning" in text.stdout
    collapsed = helpers.run_pytop("--batch", "--format", "collapsed", str(path))
    assert collapsed.returncode == 0 and "spinning" in collapsed.stdout


def test_a_batch_recordings_windows_each_hold_their_nappers_time(some_interp: dict[str, Any],
                                                                  tmp_path: Path) -> None:
    """--batch --record cuts a window every 2 s: each holds the time its nappers slept through
    it (the drain at a cut hands over every thread, most of them standing), not the first
    windows none of it and the last all of it."""
    path = tmp_path / "batch.pytop"
    with helpers.running(some_interp, "many_threads.py", "50") as t:
        run = report_of(helpers.run_pytop("--batch", "--json", "--duration", "7", "--rate", "100", "--mode", "wall",
                                          "--cpu-budget", "0", "--record", str(path), str(t.pid)))
    assert run["record"]["windows"] >= 3 and run["record"]["dropped"] == 0
    recording = open_recording(str(path))
    book: dict[int, str] = {}
    per_window = []
    with open(path, "rb") as f:
        for w in recording.windows:
            slept: dict[int, int] = {}
            for d in read_window(container.payload(f, w.frame)).drains:
                book.update((u.thread, u.name) for u in d.threads if u.name)
                for weight in d.weights:
                    slept[weight.thread] = slept.get(weight.thread, 0) + weight.wall_ns
                for thread, wall in zip(d.standing.threads, d.standing.wall_ns):
                    slept[thread] = slept.get(thread, 0) + wall
            per_window.append(slept)
    nappers = {key for key, name in book.items() if name.startswith("worker-")}
    assert len(nappers) == 50
    for index, slept in enumerate(per_window[:-1]):  # (the last may be a moment long)
        walls = {slept.get(key, 0) for key in nappers}
        assert len(walls) == 1 and min(walls) > 0, (index, sorted(walls)[:3])


@pytest.mark.process
@pytest.mark.parametrize("args, said", [
    (["--from", "1h"], "nothing of it is in that range"),
    (["--from", "4", "--to", "2"], "--to comes before --from"),
    (["--from", "0", "--to", "0"], "the range --from to --to is empty"),
    (["--dump"], "is a recording to show again: not with --dump"),
    (["--record", "other.pytop"], "not with --record"),
])
def test_a_recording_asked_for_wrongly_says_so(tmp_path: Path, args: list[str], said: str) -> None:
    path = tmp_path / "one.pytop"
    recorder = Recorder(str(path), RunRecord(TargetInfo(1, "python x.py", "3.12.1"), 100.0, 0.05, "cpu", 1000.0))
    recorder.window(Circumstances(window_seconds=1.0, elapsed=1.0, rate_asked=100.0))
    recorder.close()
    result = helpers.run_pytop("--batch", *args, str(path), cwd=tmp_path)
    assert result.returncode == 2 and said in result.stderr and "Traceback" not in result.stderr, result.stderr


@pytest.mark.process
@pytest.mark.parametrize("content, said", [
    (b"", "is not a pytop recording"),
    (b"PYTOPREC", "cut short before its first frame"),
    (b"hello, world\n" * 10, "is not a pytop recording"),
])
def test_a_file_that_is_no_recording_says_so(tmp_path: Path, content: bytes, said: str) -> None:
    path = tmp_path / "bad.pytop"
    path.write_bytes(content)
    result = helpers.run_pytop("--batch", str(path))
    assert result.returncode == 2 and said in result.stderr and "Traceback" not in result.stderr, result.stderr


@pytest.mark.process
def test_record_needs_a_file_it_may_write(tmp_path: Path) -> None:
    (tmp_path / "link.pytop").symlink_to(tmp_path / "elsewhere")
    with helpers_sleeper() as pid:
        linked = helpers.run_pytop("--batch", "--duration", "1", "--record", str(tmp_path / "link.pytop"), str(pid))
        missing = helpers.run_pytop("--batch", "--duration", "1", "--record", str(tmp_path / "no" / "x.pytop"),
                                    str(pid))
    for result in (linked, missing):
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert not (tmp_path / "elsewhere").exists()  # a link is never followed


@contextlib.contextmanager
def helpers_sleeper() -> Iterator[int]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_a_full_disk_loses_windows_says_so_and_keeps_what_was_written(some_interp: dict[str, Any],
                                                                     tmp_path: Path) -> None:
    # RLIMIT_FSIZE makes the kernel refuse writes past a size (EFBIG), as a full disk does
    # (ENOSPC): sampling goes on, the run says what the file lacks and exits 1, and the file
    # reads to its last whole frame.
    path = tmp_path / "full.pytop"

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))

    with helpers.running(some_interp, "stacks.py") as t:
        result = helpers.run_pytop("--batch", "--json", "--duration", "8", "--rate", "300", "--record", str(path),
                                   str(t.pid), preexec_fn=small_files)
    assert result.returncode == 1, result.stderr
    assert "lost (the disk did not keep up, or failed)" in result.stderr and "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    # (what was cut short is taken back: a later, smaller window may fit, so the disk may no
    # longer fail at the end; why it failed is kept)
    assert report["record"]["dropped"] >= 1 and report["record"]["last_failure"] == "File too large"
    assert report["samples"] > 0 and report["cpu_time"] > 1.0  # sampling went on
    again = helpers.run_pytop("--batch", "--json", str(path))
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    assert 0 < json.loads(again.stdout)["cpu_time"] < report["cpu_time"]


class StalledDisk(container.Writer):
    """A recording's writer whose writes after the key frame wait until `disk` is set."""

    def __init__(self, path: str, disk: threading.Event):
        super().__init__(path)
        self.disk = disk
        self.stalled = threading.Event()  # a write is waiting for the disk
        self.windows_written = 0

    def write(self, kind: int, payload: bytes, start: float, end: float) -> int:
        if kind != container.KEY:
            self.stalled.set()
            self.disk.wait(60)
            self.windows_written += 1
        return super().write(kind, payload, start, end)


# Alone: beside other tests' targets (clean-clone CI run, 3.8), the stacks evicted in the drain
# that gave them time came to 2.4% of the table (0.014 s of 0.58 s), beyond the 1% below: a
# known defect (evicted stacks lose their time as stacks), written up for the planners.
@pytest.mark.alone
def test_a_slow_disk_never_holds_sampling_and_later_windows_still_read(some_interp: dict[str, Any],
                                                                       tmp_path: Path) -> None:
    # The writer's disk stands still (a write that waits) while windows keep coming: the queue
    # stays at its bound, the oldest windows give their figures up, and once the disk moves the
    # windows after them still name their stacks (the names and stacks first seen in a lost
    # window went on with the next one).
    path = tmp_path / "slow.pytop"
    with helpers.running(some_interp, "deep_random.py") as t:
        target = attach(t.pid)
        engine = Engine(EngineConfig(rate=300, cpu_budget=0))
        info = info_of(target)
        disk = threading.Event()  # set: the disk moves again
        writer = StalledDisk(str(path), disk)
        recorder = Recorder(str(path), RunRecord(info, 300.0, 0.0, "cpu", time.time()), queue_windows=3, writer=writer)
        figures = Figures()
        try:
            target.unwinder.set_tasks(True)
            figures.book.pids[engine.add(target.unwinder)] = t.pid
            engine.start()
            for n in range(12):
                time.sleep(0.15)
                drain = engine.drain()
                take_in(figures, drain)
                recorder.add(drain)
                recorder.window(Circumstances(window_seconds=0.15, elapsed=0.15 * (n + 1), rate_asked=300.0))
                assert n == 0 or writer.stalled.wait(30)  # the writer's thread stands in a write
                assert recorder.status().waiting <= 3
            # Every window was handed over while no write could end: window() never waits for
            # the disk (one that did would have stood until the disk moved, 60 s on).
            assert writer.windows_written == 0
        finally:
            engine.stop()
            engine.close()
            target.close()
    disk.set()
    status = recorder.close()
    assert status.dropped >= 8 and status.waiting == 0 and status.failing is None
    replay = Replay(open_recording(str(path)))
    last = replay.snapshot(len(replay) - 1, View())
    assert last.rows and not any(r.function == "<unknown>" for r in last.rows)
    assert replay.damaged == 0
    # The stacks of the windows kept are known: their time as stacks (with what aged out of the
    # tree) is the table's. (Within 1%: live too, a stack evicted in the drain that gave it time
    # has no frames to show, 0.1-24 ms of 4 s here; losing a window's stacks lost half.)
    profile = replay.profile(len(replay) - 1)
    as_stacks = sum(seconds for _, seconds in timed_stacks(profile.counts, profile.book, "cpu"))
    aged = sum(tally[CPU] for tally in profile.counts.aged.values()) / 1e9
    assert as_stacks + aged == pytest.approx(sum(r.own_time for r in last.rows), rel=0.01) and as_stacks > 0.1


def test_a_reset_in_the_view_keeps_the_recording_whole(some_interp: dict[str, Any], tmp_path: Path) -> None:
    # R throws the view's figures away; the recording keeps them, as a window of their own, and
    # marks the next window as the one after a reset.
    path = tmp_path / "reset.pytop"
    with helpers.running(some_interp, "stacks.py") as t:
        sampler, kept, _ = record(t.pid, path, Settings(rate=200, delay=0.3, cpu_budget=0), 300,
                                  during=lambda s: s.send(commands.Reset()))
    live_final = kept.snapshots[-1]
    replay = Replay(open_recording(str(path)))
    windows = [read_window(payload) for frame, payload in container.frames(str(path))
               if frame.kind == container.WINDOW]
    assert sum(w.reset for w in windows) == 1
    whole = replay.snapshot(len(replay) - 1, View(), 0, whole=True)
    assert whole.samples == sum(d.ticks for w in windows for d in w.drains) > live_final.samples
    after = next(i for i, w in enumerate(windows) if w.reset)
    since = replay.snapshot(len(replay) - 1, View(), after, whole=True)
    assert since.samples == live_final.samples  # from the reset on: what the view counted
    assert {r.key: r.own_time for r in since.rows} == {r.key: r.own_time for r in live_final.rows}


async def test_the_live_view_steps_back_into_its_own_recording_and_comes_back(some_interp: dict[str, Any],
                                                                             tmp_path: Path) -> None:
    # --record in the live view: [ shows the session's windows so far while sampling goes on,
    # > comes back to the present, whose samples kept counting meanwhile.
    from pytop.record.history import HistorySource
    from pytop.ui.app import PytopApp
    from ui_fakes import shown as header_shown

    path = tmp_path / "live.pytop"
    with helpers.running(some_interp, "stacks.py") as t:
        target = attach(t.pid)
        info = info_of(target)
        settings = Settings(rate=200, delay=0.25, cpu_budget=0)
        recorder = Recorder(str(path), RunRecord(info, settings.rate, settings.cpu_budget, settings.mode, time.time()))
        sampler = Sampler(target.unwinder, info, settings, recorder=recorder)
        source = HistorySource(sampler, str(path))
        app = PytopApp(source, replay=None)
        try:
            async with app.run_test(size=(120, 30)) as pilot:
                async def header_says(text: str) -> str:
                    return await header_shown(app, pilot, text, seconds=10.0)

                async def until(done: Callable[[], bool]) -> None:
                    # (waiting on the app's loop, not blocking it: the screen takes in each window
                    # meanwhile, as it would for a user)
                    for _ in range(1000):
                        if done():
                            return
                        await pilot.pause(0.02)
                    raise AssertionError("never came")

                await header_says("recorded ")
                await until(lambda: sampler.samples_taken >= 300)
                # The session so far as a time axis, the present at its cursor: a click on its
                # first bar goes into the past there (once the recording holds a few windows:
                # before, there is no past to go to).
                await until(lambda: len(open_recording(str(path)).windows) >= 3)
                live = (await header_says("CPU to ")).splitlines()
                axis = next(i for i, text in enumerate(live) if text.startswith("CPU to "))
                await pilot.click("#header", offset=(1 + live[axis].index(": ") + 2 + 9 + 2, axis))
                past = await header_says("The past (> back to live)")
                assert int(past.split("window ")[1].split()[0]) <= 3 and "CPU to " in past, past
                await pilot.press("greater_than_sign")
                for _ in range(200):
                    await pilot.pause(0.02)
                    if not source.in_past:
                        break
                await pilot.press("left_square_bracket")
                past = await header_says("The past (> back to live)")
                assert source.in_past and "window " in past
                shown = app.main.snapshot
                assert shown is not None and shown.run.replay is not None
                samples_then = sampler.samples_taken
                await pilot.press("left_square_bracket", "R")
                await header_says("(R: the range starts at the cursor)")
                helpers.wait_samples(sampler, samples_then + 100)  # sampling went on
                await pilot.press("greater_than_sign")
                await header_says("Samples: ")
                for _ in range(200):
                    await pilot.pause(0.02)
                    if app.main.snapshot is not None and app.main.snapshot.run.replay is None:
                        break
                assert not source.in_past and app.main.snapshot is not None
                assert app.main.snapshot.run.replay is None and app.main.snapshot.samples >= samples_then
        finally:
            source.stop()
            recorder.close()
            target.close()


def test_a_window_too_short_to_say_its_cpu_does_not(tmp_path: Path) -> None:
    """A run's last window lasts a few milliseconds (its final read) and takes in the counts'
    lag: its CPU share is not said (it was shown as thousands of percent), the windows before
    say theirs, and the totals keep all of it."""
    from record_fakes import TARGET, drain

    path = tmp_path / "short-end.pytop"
    recorder = Recorder(str(path), RunRecord(TARGET, 1000.0, 0.05, "cpu", 1.0))
    for n, seconds in ((1, 1.0), (2, 0.003)):
        recorder.add(drain(n) if n == 1 else Drain(**{**drain(n).__dict__, "functions": (), "nodes": (),
                                                      "retired": (), "evicted": ()}))
        recorder.window(Circumstances(window_seconds=seconds, elapsed=n + seconds, rate_asked=1000.0, window_number=n))
    recorder.close()
    player = Replay(open_recording(str(path)))
    try:
        whole, short = player.snapshot(0, View()), player.snapshot(1, View())
    finally:
        player.close()
    assert whole.cpu_pct is not None and 0 < whole.cpu_pct < 200
    assert short.cpu_pct is None and short.cpu_time > whole.cpu_time
