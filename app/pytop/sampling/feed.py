"""The feed: what comes in. The native engine samples on its own thread; the feed drains it into
the figures, hands it the processes to sample (the target, its Python subprocesses, the program
a process exec'd) and keeps what the engine says about itself (its rate, its CPU, its errors).

It runs on the sampler's thread only (sampler.py owns that thread and decides when each step
runs); the figures it fills are closed into snapshots by windows.py."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

from ..core.intake import take_in
from ..core.model import Circumstances, RecordStatus, TargetInfo
from ..core.records import Drain
from ..core.snapshot import Figures
from ..native import Closed, Engine, Unwinder
from .processes import ProcessSet
from .pushing import PushWindow

STOP_SECONDS = 5.0  # how long a stop waits for the engine's thread


class DrainSink(Protocol):
    """Where --record's windows go (record.recorder.Recorder; run.py wires it): every drain as
    taken in, and each window's close with what the view showed of it. Called on the sampler's
    thread: neither may wait for anything."""

    def add(self, drain: Drain) -> None: ...
    def schedule(self) -> tuple[int, int, float, float, float]: ...
    def window(self, circumstances: Circumstances, reset: bool = False, figures: Figures | None = None,
               last: bool = False) -> None:
        """figures: the live view's, after the window (a key frame's totals come from them);
        last: the run's last window."""
    def status(self) -> RecordStatus: ...


@dataclass
class EngineNews:
    """What the engine said of itself at the last drain."""

    realtime: bool = False  # it got its real-time priority
    rate_now: float = 0.0  # samples a second it aims at now (the budget may hold it below the rate asked)
    budget_limited: bool = False  # held below the rate asked by pytop's CPU budget
    sampler_cpu: float = 0.0  # its thread's CPU seconds
    start_up_cpu: float = 0.0  # pytop's process CPU when its first read ended (0: not yet)
    stacks_dropped: int = 0  # stacks that found no room
    stack_nodes: int = 0  # the size of its stack tree
    stacks_coarsened: int = 0  # stacks kept as their frames only (no room for them whole)


class Feed:
    def __init__(self, engine: Engine, processes: ProcessSet, stopping: threading.Event):
        """processes: the target and its family, as the run watches them. stopping: set when
        pytop is asked to stop (an engine that ends then has not seen its processes end)."""
        self.engine = engine
        self.processes = processes
        self.figures = Figures()
        self.news = EngineNews()
        self.last_error: str | None = None  # the last failed sample's reason, since the reset
        self.end: str | None = None  # why the run ended, once every process has gone
        self._stopping = stopping
        self._process_of: dict[int, int] = {}  # pid -> the engine's process for it now
        # CLOCK_MONOTONIC of the latest tick drained, resets or not: where the time of the
        # samples drained next begins (each sample's time is that since the one before).
        self.sampled_until: float | None = None
        self.sampled_from: float | None = None  # ... and where the first one's time began
        self.push_window: PushWindow | None = None  # --push: what is drained goes there too
        self.recorder: DrainSink | None = None  # --record: ... and there

    @property
    def sampling(self) -> bool:
        """The engine's thread is still taking samples."""
        return self.engine.is_open and not self.engine.stopped

    @property
    def watching(self) -> bool:
        """At least one process has been handed to the engine."""
        return bool(self._process_of)

    def samples_taken(self) -> int:
        """Samples since the reset, drained or not (any thread may ask). The drained count is
        read first: a drain in between can only make the sum short, never count twice."""
        drained = self.figures.total.ticks
        try:
            return drained + self.engine.pending_ticks()
        except Closed:  # the engine has stopped, and its last ticks were drained before it closed
            return self.figures.total.ticks

    def reset(self) -> None:
        """Count from now: what was drained before is thrown away (names and threads are kept)."""
        book = self.figures.book
        self.figures = Figures(book=book, threads=self.figures.threads)
        self.figures.threads.reset()
        self.last_error = None

    def add(self, unwinder: Unwinder, pid: int, whole_life: bool = False) -> None:
        """Hand a process to the engine (whole_life: its CPU before its first sample counts).
        Its asyncio tasks are always recorded where the target says which task runs (3.14+):
        the view shows or hides them (cheap: no read without a running loop, and a task's name
        is read once). Raises RuntimeError once the engine has ended."""
        unwinder.set_tasks(True)
        process = self.engine.add(unwinder, whole_life)
        self.figures.book.pids[process] = pid
        self._process_of[pid] = process

    def drain(self, whole: bool = True) -> Drain:
        """Take in what the engine counted (whole=False: only the threads with news)."""
        d = self.engine.drain(whole)
        take_in(self.figures, d)
        if self.push_window is not None:
            self.push_window.add(d)
        if self.recorder is not None:
            self.recorder.add(d)
        if d.ticks:
            if self.sampled_until is None:  # the run's first sample stands for one slot of the schedule
                self.sampled_from = d.first_at - d.slot_seconds / max(d.ticks + d.skipped, 1)
            self.sampled_until = d.last_at
        for p in d.processes:
            if p.error:
                self.last_error = p.error
            if p.status and self._process_of.get(p.pid) == p.process:  # not a process that exec'd and was followed
                self.processes.gone(p.pid)
        self.news = EngineNews(d.realtime, d.rate_now, d.budget_limited, d.cpu_seconds, d.start_up_cpu,
                               d.stacks_dropped, d.stack_nodes, d.stacks_coarsened)
        if not d.running and d.end is not None and not self._stopping.is_set() and self.end is None:
            self.end = d.end  # every process has gone (not: pytop was asked to stop)
        return d

    def drain_if_sampling(self) -> None:
        if self.sampling:
            self.drain()

    def drain_if_open(self) -> None:
        """What a stopped engine still holds too (an export after the end)."""
        if self.engine.is_open:
            self.drain()

    def follow_execs(self) -> TargetInfo | None:
        """A watched process that exec'd another program: its old run ends, saying so, and the
        new program is sampled from now on if it is Python. Returns the new program of the
        run's own target, if it exec'd one (the header names it)."""
        target = None
        for pid, followed, why in self.processes.execs():
            process = self._process_of.get(pid)
            if followed is not None:
                unwinder, info = followed
                try:
                    self.add(unwinder, pid)
                except RuntimeError:
                    unwinder.close()  # the engine has ended
                else:
                    if pid == self.processes.root:
                        target = info
            if process is not None:
                self.engine.retire(process, why)
        return target

    def discover(self, parent_only: bool) -> bool:
        """Start sampling new Python subprocesses. parent_only: the target is not Python and
        watched only for its descendants; returns whether it still is (it has ended: the run
        ends with the last live process, if any)."""
        self.processes.work_elsewhere()  # (it looks only every few seconds)
        for pid, unwinder, whole_life in self.processes.discover():
            try:
                self.add(unwinder, pid, whole_life)
            except RuntimeError:
                unwinder.close()  # the engine has ended: nothing more to sample
        if parent_only and not self.processes.root_alive():
            self.engine.wait_for_processes(False)
            if not self._process_of:
                self.end = f"process {self.processes.root} has exited; it started no Python program pytop could read"
            return False
        return parent_only

    def shut(self) -> None:
        """Stop the engine's thread and take in what it still holds. The engine stays open (a
        view of the final figures still sums stacks with it) until close()."""
        if self.sampling and self.engine.stop(STOP_SECONDS):
            self.drain()

    def close(self) -> None:
        self.shut()
        self.engine.close()

