"""The sampler thread against real targets: rates, filters, views, reset, exit."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from typing import Any

import pytest

import helpers
from pytop.core import calltree, commands
from pytop.core.model import Snapshot
from pytop.core.threads import ThreadBook
from pytop.process.attach import attach
from pytop.run import attach_child, info_of
from pytop.sampling.sampler import Sampler, Settings


class Collected:
    def __init__(self) -> None:
        self.snapshots: list[Snapshot] = []
        self.exited = threading.Event()

    def __call__(self, snapshot: Snapshot) -> None:
        self.snapshots.append(snapshot)
        if snapshot.run.exited:
            self.exited.set()

    @property
    def last(self) -> Snapshot:
        return self.snapshots[-1]


def run_sampler(pid: int, settings: Settings, seconds: float) -> tuple[Sampler, Collected]:
    target = attach(pid)
    sampler = Sampler(target.unwinder, info_of(target), settings)
    collected = Collected()
    with helpers.sampling(sampler, collected):
        helpers.wait_samples(sampler, int(seconds * settings.rate))
    return sampler, collected


def functions(snapshot: Snapshot) -> dict[str, Any]:
    return {row.function: row for row in snapshot.rows}


# Alone: it holds the engine to its rate from its start (no slot skipped in the first three
# refreshes, 180-210 samples a second), which a machine that other tests load cannot give it
# (beside them, 11% of a first refresh's slots were skipped).
@pytest.mark.alone
def test_sampling_at_rate_with_idle_threads_left_out(some_interp: dict[str, Any]) -> None:
    # No CPU budget: here pytop's process is pytest's, whose own CPU (its polling, the callback
    # keeping every snapshot) would count against the budget and hold the rate (tested in test_harm.py).
    with helpers.running(some_interp, "stacks.py") as t:
        sampler, got = run_sampler(t.pid, Settings(rate=200, delay=0.5, cpu_budget=0), 3.0)
    final = sampler.final_snapshot()
    # Refreshes came quickly at first, then at the chosen pace: at 0.1 and 0.25 s, then every
    # 0.5 s from the last (7 in 3 s; over 2 s a loaded machine's late refreshes left 4 of 5).
    assert len(got.snapshots) >= 5, [s.run.elapsed for s in got.snapshots]
    assert [s.run.skipped_share for s in got.snapshots[:3]] == [0.0] * 3  # the engine's start is not falling behind
    assert 600 <= final.samples <= 650, final.samples
    assert 180 <= final.samples / final.run.elapsed <= 210, (final.samples, final.run.elapsed)
    assert final.rate > 100 and final.run.rate_asked == 200 and final.mode == "cpu"
    rows = functions(final)
    spinning = rows.get("Worker.spinning") or rows["spinning"]
    # Its share is its real CPU share (checked against the kernel in test_truth.py): it leads.
    assert spinning.own_time == max(row.own_time for row in final.rows) and spinning.own_time > 0.5
    assert not any(name in rows for name in ("level_two", "Worker.sleeping", "sleeping"))  # no CPU time
    assert final.threads == 3
    assert final.gil_pct > 50
    assert 10 < final.active_pct < 60  # one of three threads runs


def test_samples_taken_counts_what_is_not_drained_yet(some_interp: dict[str, Any]) -> None:
    # Waiting for N samples ends at the N-th, not at whichever drain (every 0.5 s) comes next.
    with helpers.running(some_interp, "stacks.py") as t:
        target = attach(t.pid)
        sampler = Sampler(target.unwinder, info_of(target), Settings(rate=200, delay=5.0, quick_start=False))
        with helpers.sampling(sampler, Collected()):
            helpers.wait_samples(sampler, 1)
            seen = set()
            end = time.monotonic() + 0.4
            while time.monotonic() < end:
                seen.add(sampler.samples_taken)
                time.sleep(0.02)
    assert len(seen) >= 8, sorted(seen)  # about 20 at 200 Hz; a count of drains alone gives 1 or 2


def test_a_stopped_run_lasted_until_it_stopped(some_interp: dict[str, Any]) -> None:
    # The report's duration is the sampling's: not the time until the figures are asked for
    # (giving a stopped engine's memory back once stalled 1.9 s: a 6 s run said it lasted 8).
    with helpers.running(some_interp, "stacks.py") as t:
        sampler, _ = run_sampler(t.pid, Settings(rate=200, cpu_budget=0), 1.0)
        time.sleep(3.0)
        final = sampler.final_snapshot()
    assert 0.9 < final.run.elapsed < 3.0, final.run.elapsed


def test_wall_mode_counts_every_thread(some_interp: dict[str, Any]) -> None:
    with helpers.running(some_interp, "stacks.py") as t:
        sampler, _ = run_sampler(t.pid, Settings(rate=100, mode="wall"), 1.0)
    rows = functions(sampler.final_snapshot())
    assert "level_two" in rows and rows["level_two"].own_time > 0.5


def test_gil_mode_counts_the_holder(some_interp: dict[str, Any]) -> None:
    with helpers.running(some_interp, "stacks.py") as t:
        sampler, _ = run_sampler(t.pid, Settings(rate=100, mode="gil"), 1.0)
    names = set(functions(sampler.final_snapshot()))
    assert names & {"Worker.spinning", "spinning"}
    assert not names & {"level_two", "level_one", "<module>"}


def test_the_mode_switches_live_and_keeps_history(some_interp: dict[str, Any]) -> None:
    with helpers.running(some_interp, "stacks.py") as t:
        target = attach(t.pid)
        sampler = Sampler(target.unwinder, info_of(target), Settings(rate=200, delay=5.0))
        got = Collected()
        with helpers.sampling(sampler, got):
            helpers.wait_samples(sampler, 200)
            sampler.send(commands.ChangeMode("wall"))
            wall = wait_for(got, lambda s: s.mode == "wall")
    # The sleeper's second of wall time was counted while the view showed cpu time.
    assert "level_two" in functions(wall) and functions(wall)["level_two"].own_time > 0.8


def test_a_view_asked_for_right_after_a_refresh_shows_the_last_window_again(some_interp: dict[str, Any]) -> None:
    """Within `shortest_window` of a refresh (here: always), a key's snapshot is the last
    window in the new view, not a window of a few milliseconds; the totals are today's."""
    with helpers.running(some_interp, "stacks.py") as t:
        target = attach(t.pid)
        sampler = Sampler(target.unwinder, info_of(target), Settings(rate=200, delay=0.3, shortest_window=3600))
        got = Collected()
        with helpers.sampling(sampler, got):
            helpers.wait_samples(sampler, 200)
            before = wait_for(got, lambda s: s.run.window_number > 1)
            sampler.send(commands.ChangeMode("wall"))
            wall = wait_for(got, lambda s: s.mode == "wall")
    shown_before = [s for s in got.snapshots if s.run.window_number == wall.run.window_number and s.mode == "cpu"]
    assert shown_before and wall.run.window_number >= before.run.window_number
    assert functions(wall)["level_two"].own_pct > 50  # the sleeper's share of the last whole window
    assert wall.samples >= shown_before[-1].samples  # totals as they are now


def test_a_window_shares_the_time_its_samples_cover(some_interp: dict[str, Any]) -> None:
    """At twelve samples a second a 0.3 s window holds three or four, each standing for the
    time since the one before: shared over the refreshes' wall clock, a sleeper's wall time
    showed 115% of every window (or half of it when sampling stalled before a refresh). Shared
    over the time its samples cover, a thread asleep all along has 100% of every window."""
    with helpers.running(some_interp, "stacks.py") as t:
        sampler, got = run_sampler(t.pid, Settings(rate=12, delay=0.3, mode="wall", cpu_budget=0), 3.0)
    windows = [s for s in got.snapshots if not s.run.exited and functions(s).get("level_two")]
    assert len(windows) >= 4, got.snapshots
    shares = [round(functions(s)["level_two"].own_pct, 1) for s in windows]
    assert all(99 <= share <= 101 for share in shares), shares


def test_the_call_tree_of_a_real_target(some_interp: dict[str, Any]) -> None:
    with helpers.running(some_interp, "stacks.py") as t:
        target = attach(t.pid)
        sampler = Sampler(target.unwinder, info_of(target), Settings(rate=200, delay=0.2))
        got = Collected()
        with helpers.sampling(sampler, got):
            helpers.wait_samples(sampler, 200)
            sampler.send(commands.ShowTree(True))
            shown = wait_for(got, lambda s: s.call_tree is not None)
            sampler.send(commands.ShowTree(False))
            hidden = wait_for(got, lambda s: s.call_tree is None)
    tree = shown.call_tree
    assert tree is not None and hidden.call_tree is None
    assert tree.total == pytest.approx(shown.attributed, rel=1e-6)  # every counted stack, once
    path = calltree.hottest_path(tree)
    assert path[-1][0] in ("Worker.spinning", "spinning"), path  # the spinner's stack is the hot one
    assert sum(child.total for child in tree.children) == pytest.approx(tree.total)


def test_the_refresh_interval_changes_live(some_interp: dict[str, Any]) -> None:
    with helpers.running(some_interp, "stacks.py") as t:
        target = attach(t.pid)
        sampler = Sampler(target.unwinder, info_of(target), Settings(rate=100, delay=30.0, quick_start=False))
        got = Collected()
        with helpers.sampling(sampler, got):
            sampler.send(commands.Delay(0.1))
            wait_for(got, lambda s: True)  # the refresh that the change brings at once
            began, before = time.monotonic(), len(got.snapshots)
            wait_for(got, lambda s: len(got.snapshots) >= before + 5, timeout=10)
            took = time.monotonic() - began
    assert took < 3.0, took  # five refreshes 0.1 s apart, not 30 s


def test_by_line_view_and_reset(some_interp: dict[str, Any]) -> None:
    with helpers.running(some_interp, "stacks.py") as t:
        target = attach(t.pid)
        sampler = Sampler(target.unwinder, info_of(target), Settings(rate=100, delay=5.0, mode="wall"))
        got = Collected()
        with helpers.sampling(sampler, got):
            helpers.wait_samples(sampler, 80)
            sampler.send(commands.ByLine(True))
            deadline = time.monotonic() + 5
            while not (got.snapshots and got.last.by_line) and time.monotonic() < deadline:
                time.sleep(0.01)
            by_line = got.last
            sampler.send(commands.Reset())
            while got.last is by_line and time.monotonic() < deadline:
                time.sleep(0.01)
            after_reset = got.last
    assert by_line.by_line and all(row.line for row in by_line.rows)
    spin_lines = {row.line for row in by_line.rows if row.function.endswith("spinning")}
    assert spin_lines <= set(t.info["spin_lines"]) | {t.info["threads"]["spinner"]["frames"][0]["line"]}
    assert after_reset.samples < by_line.samples and after_reset.run.elapsed < 1.0


def test_target_exit_ends_sampling_with_a_final_snapshot(some_interp: dict[str, Any]) -> None:
    with helpers.running(some_interp, "exiting.py", "600") as t:
        target = attach(t.pid)
        sampler = Sampler(target.unwinder, info_of(target), Settings(rate=200))
        got = Collected()
        with helpers.sampling(sampler, got):
            helpers.wait_samples(sampler, 100)
            os.kill(t.pid, signal.SIGUSR1)  # now exit
            assert got.exited.wait(30)
            final = got.last
            # The final figures can still be explored: by line, in another mode, a function's callers.
            sampler.send(commands.ByLine(True))
            by_line = wait_for(got, lambda s: s.by_line)
            sampler.send(commands.ByLine(False))
            sampler.send(commands.ChangeMode("wall"))
            wall = wait_for(got, lambda s: s.mode == "wall" and not s.by_line)
            churn = next(row for row in wall.rows if row.function == "churn")
            sampler.send(commands.Focus(churn.key))
            focused = wait_for(got, lambda s: s.call_graph is not None)
            sampler.send(commands.Reset())  # would throw the results away: ignored
            sampler.send(commands.ChangeMode("cpu"))
            again = wait_for(got, lambda s: s.mode == "cpu")
    assert not sampler.running
    assert final.run.exited and "exited" in (final.run.exit_reason or "")
    assert final.samples > 20
    assert any(row.function == "churn" for row in final.rows)
    for s in (by_line, wall, focused, again):
        assert s.run.exited and s.run.exit_reason == final.run.exit_reason and s.samples == final.samples
    assert all(row.line for row in by_line.rows if row.filename), by_line.rows  # not "(no Python frame)"
    assert {row.function for row in by_line.rows} == {
        row.function for row in final.rows}
    assert sum(r.own_time for r in by_line.rows) == pytest.approx(sum(r.own_time for r in final.rows))
    assert wall.attributed > final.attributed  # wall time counts the sleeping main thread too
    assert focused.call_graph is not None and focused.call_graph.focus == churn.key
    assert again.attributed == final.attributed and again.rows == final.rows


def test_threads_with_names_and_narrowing(some_interp: dict[str, Any]) -> None:
    with helpers.running(some_interp, "stacks.py") as t:
        target = attach(t.pid)
        sampler = Sampler(target.unwinder, info_of(target), Settings(rate=200, mode="wall"))
        got = Collected()
        with helpers.sampling(sampler, got):
            rows = {row.name: row for row in wait_for(got, lambda s: s.samples >= 200).thread_rows}
            assert set(rows) == {"MainThread", "sleeper", "spinner"}
            # (the spinner's share of a CPU is what a busy machine leaves it: a third with four
            # spinners on two cores)
            assert rows["spinner"].active_pct > 10 and rows["sleeper"].active_pct < 1, rows
            assert rows["sleeper"].native_id == t.info["threads"]["sleeper"]["native_id"]
            assert rows["sleeper"].top_frame == "Worker.sleeping" or rows["sleeper"].top_frame == "sleeping"
            sampler.send(commands.NarrowToThread(rows["sleeper"].key))
            deadline = time.monotonic() + 5
            while got.last.thread_filter is None and time.monotonic() < deadline:
                time.sleep(0.01)
            narrowed = got.last
    assert narrowed.thread_filter is not None and narrowed.thread_filter.name == "sleeper"
    names = {row.function for row in narrowed.rows}
    assert names & {"Worker.sleeping", "sleeping"} and not names & {"level_two", "Worker.spinning", "spinning"}


def test_gc_share(interp: dict[str, Any]) -> None:
    """The share of samples taken while the target's collector ran, on every version."""
    shares = {}
    for mode in ("collect", "off"):
        with helpers.running(interp, "garbage.py", mode) as t:
            # One window for the whole run (as --batch does), so the final snapshot covers it all.
            sampler, _ = run_sampler(t.pid, Settings(rate=200, delay=3600, quick_start=False), 1.5)
            shares[mode] = sampler.final_snapshot().gc_pct
    assert shares["off"] == 0.0
    assert shares["collect"] is not None and shares["collect"] > 20, shares


def wait_for(got: Collected, test: Any, timeout: float = 20) -> Snapshot:
    helpers.wait_until(lambda: got.snapshots and test(got.last), timeout,
                       lambda: f"last snapshot: {got.last if got.snapshots else None}")
    return got.last


def test_subprocesses_are_followed(some_interp: dict[str, Any]) -> None:
    with helpers.running(some_interp, "parent.py", "2") as t:
        children = t.info["children"]
        target = attach(t.pid)
        sampler = Sampler(target.unwinder, info_of(target), Settings(rate=100, delay=0.3), attach_child)
        got = Collected()
        with helpers.sampling(sampler, got):
            both = wait_for(got, lambda s: set(s.run.processes) == {t.pid, *children} and
                            {r.pid for r in s.rows if r.function == "child_work"} == set(children))
            busy = {r.pid: r for r in both.rows if r.function == "child_work"}
            assert all(row.own_time > 0 for row in busy.values())
            assert {row.pid for row in both.thread_rows} == {t.pid, *children}
            sampler.send(commands.NarrowToProcess(children[0]))
            narrowed = wait_for(got, lambda s: s.process_filter == children[0])
            assert {row.pid for row in narrowed.rows} == {children[0]}
            os.kill(children[1], signal.SIGKILL)
            wait_for(got, lambda s: children[1] not in s.run.processes)
        target.close()
    assert not got.last.run.exited  # the parent still runs


def test_reused_thread_ids_are_different_threads(some_interp: dict[str, Any]) -> None:
    with helpers.running(some_interp, "sequential_threads.py") as t:
        sampler, _ = run_sampler(t.pid, Settings(rate=200, mode="wall", delay=0.25), 2.0)
        rows = sampler.final_snapshot().thread_rows
    main = [row for row in rows if row.thread_id == t.info["threads"]["main"]["thread_id"]]
    assert len(main) == 1  # a thread state made for a new thread carries its creator's id at first
    workers = [row for row in rows if row.thread_id != t.info["threads"]["main"]["thread_id"]]
    assert len(workers) >= 4  # about 6 came and went
    assert len({row.key for row in workers}) == len(workers)
    numbers = sorted(int(row.name.rsplit("-", 1)[1]) for row in workers)
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), numbers  # none taken for the one before
    assert all(row.native_id and row.thread_id for row in rows if not row.native)  # no thread without its ids
    assert not any(row.native for row in rows)  # a starting thread is not mistaken for one without Python
    by_id: dict[int, int] = {}
    for row in workers:
        by_id[row.thread_id] = by_id.get(row.thread_id, 0) + 1
    assert max(by_id.values()) >= 2, "expected glibc to reuse a thread id"
    assert sum(row.alive for row in workers) <= 1
    # names are read when a thread is first seen: every one has its own, finished ones keep it
    assert all(re.fullmatch(r"worker-\d+", row.name or "") for row in workers), [row.name for row in workers]
    assert len({row.name for row in workers}) == len(workers)  # a reused id does not bring back an old name
    assert sum(not row.alive for row in workers) >= 3


def test_a_failure_in_pytop_ends_the_run_with_the_error(some_interp: dict[str, Any], monkeypatch: Any) -> None:
    """A bug in pytop's own figures must not freeze the view: the run ends, the error shows."""
    calls = {"n": 0}
    real = ThreadBook.update

    def failing(self: ThreadBook, *args: Any, **kwargs: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("figures broke")
        real(self, *args, **kwargs)

    monkeypatch.setattr(ThreadBook, "update", failing)
    with helpers.running(some_interp, "stacks.py") as t:
        target = attach(t.pid)
        sampler = Sampler(target.unwinder, info_of(target), Settings(rate=200, delay=0.3))
        got = Collected()
        with helpers.sampling(sampler, got):
            assert got.exited.wait(20)
            deadline = time.monotonic() + 10
            while sampler.running and time.monotonic() < deadline:
                time.sleep(0.01)
    assert not sampler.running and not sampler.feed.engine.is_open  # the engine's thread ended and was freed
    assert got.last.run.failure == "RuntimeError: figures broke" and got.last.run.exited


def test_a_code_object_at_a_reused_address_is_named_anew(interp: dict[str, Any]) -> None:
    """Each round's function runs `work` seconds of CPU, at the address of the last round's:
    a function credited with more than its own round was named from a dead object (twice its
    round, when its name outlived it), and a round with no row of its own between two that have
    one was named so whole. Where in a stall of the sampler one round ended is not known (each
    side gets half), so a stall widens the margin, and a round can have a stall at either end: a
    saturated machine stalls the sampler for 100 ms at a time, often (CI's run of 2026-12-07 gave
    0.133 s to rounds of 0.04 s between two stalls of 0.1 s). Rounds are longer than such a stall,
    so none hides a round whole; a longer stall: the run is taken again. (At the rate asked: no
    CPU budget.)"""
    for _ in range(3):
        with helpers.running(interp, "short_lived_code.py") as t:
            sampler, _ = run_sampler(t.pid, Settings(rate=1000, mode="cpu", delay=0.25, cpu_budget=0), 3.0)
        final = sampler.final_snapshot()
        work = t.info["work"]
        gap = final.longest_delay + 1 / final.run.rate_asked  # the longest time between two samples
        if gap < work:
            break
    rows = [row for row in final.rows if row.function.startswith("work_")]
    # As many rounds as the CPU the kernel counted for the target allows (a busy machine gives it
    # less than the 3 s sampled): most of them seen.
    assert len(rows) >= max(5, 0.5 * final.cpu_time / work), ([row.function for row in rows], final.cpu_time)
    rounds = sorted(int(row.function.removeprefix("work_")) for row in rows)
    if gap < work:
        assert rounds == list(range(rounds[0], rounds[-1] + 1)), (rounds, final.longest_delay)
    worst = max(rows, key=lambda row: row.own_time)
    assert worst.own_time <= 1.25 * work + gap, (worst.function, worst.own_time, final.longest_delay)


def test_a_stopped_target_is_shown_stopped(some_interp: dict[str, Any]) -> None:
    with helpers.running(some_interp, "stacks.py") as t:
        target = attach(t.pid)
        sampler = Sampler(target.unwinder, info_of(target), Settings(rate=100, delay=0.2))
        got = Collected()
        sampler.start(got)
        try:
            os.kill(t.pid, signal.SIGSTOP)
            stopped = wait_for(got, lambda s: s.run.stopped == (t.pid,))
            os.kill(t.pid, signal.SIGCONT)
            running = wait_for(got, lambda s: not s.run.stopped)
        finally:
            os.kill(t.pid, signal.SIGCONT)
            sampler.stop()
    assert not stopped.run.exited and not running.run.exited


def test_thread_rows_only_while_the_view_wants_them(some_interp: dict[str, Any]) -> None:
    """The live view asks for every thread's row only while it shows the threads panel; a view
    narrowed to one thread still gets that thread's row, and the header its count."""
    with helpers.running(some_interp, "many_threads.py", "20") as t:
        target = attach(t.pid)
        sampler = Sampler(target.unwinder, info_of(target), Settings(rate=200, delay=0.2))
        got = Collected()
        with helpers.sampling(sampler, got):
            every = wait_for(got, lambda s: len(s.thread_rows) >= 21)
            sampler.send(commands.ShowThreads(False))
            hidden = wait_for(got, lambda s: not s.thread_rows and s.samples > every.samples)
            assert hidden.threads >= 21
            one = next(row for row in every.thread_rows if not row.native)
            sampler.send(commands.NarrowToThread(one.key))
            narrowed = wait_for(got, lambda s: s.thread_filter is not None)
            assert [row.key for row in narrowed.thread_rows] == [one.key] and narrowed.thread_filter.key == one.key
            sampler.send(commands.ShowThreads(True))
            wait_for(got, lambda s: len(s.thread_rows) >= 21)
        target.close()
