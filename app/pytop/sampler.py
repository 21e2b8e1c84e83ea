"""The sampler thread: runs the unwinder at the chosen rate and publishes snapshots.

It owns the Unwinder (nothing else touches it), aggregates every sample, and at the refresh
pace (sooner while the first samples arrive, and at once when asked) builds an immutable
Snapshot and hands it to `publish` (the app's post_message). Commands from the UI (reset, view
changes, refresh now) arrive through a queue; the UI never waits on this thread and this thread
never touches the UI.

Errors are sorted by kind: the target is gone (publish a final snapshot and stop), one sample
failed (count it, keep its text), anything else (publish it as the exit reason and stop).
"""

from __future__ import annotations

import queue
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import psutil

from . import errors, priority
from .aggregate import Aggregator, FunctionTable, StackCounts
from .model import FunctionRow, Snapshot, TargetInfo
from .unwinder import Sample, SampleError, Unwinder

FIRST_REFRESHES = (0.1, 0.25, 0.5)  # seconds after start: show something quickly
JITTER = (0.5, 1.5)  # each interval is the nominal one times a factor drawn from this range
MAX_BACKLOG = 1.0  # seconds: further behind than this, the missed samples are given up
REALTIME_BUDGET = 0.5  # share of a core the sampler may use and keep a real-time priority


@dataclass(frozen=True)
class Settings:
    rate: float = 100.0
    delay: float = 1.0
    idle: bool = False  # include threads the OS reports idle
    gil_only: bool = False  # only the thread holding the GIL
    by_line: bool = False
    quick_start: bool = True  # refresh early while the first samples arrive
    realtime: bool = True  # take a real-time priority when allowed (see priority.py)


class Sampler:
    def __init__(self, unwinder: Unwinder, target: TargetInfo, settings: Settings):
        self.unwinder = unwinder
        self.target = target
        self.settings = settings
        self.publish: Callable[[Snapshot], None] = lambda snapshot: None
        self.aggregator = Aggregator(self._describe)
        self._commands: queue.SimpleQueue[tuple[str, object]] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pytop-sampler", daemon=True)
        self._process = _process(target.pid)
        self.realtime = False
        self._cpu_mark: tuple[float, float] | None = None
        self._reset_stats()

    # ---- called from other threads -------------------------------------------------------

    def start(self, publish: Callable[[Snapshot], None]) -> None:
        """Start sampling; `publish` gets every snapshot, on the sampler thread."""
        self.publish = publish
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def reset(self) -> None:
        self._commands.put(("reset", None))

    def refresh_now(self) -> None:
        self._commands.put(("refresh", None))

    def set_by_line(self, by_line: bool) -> None:
        self._commands.put(("by_line", by_line))

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def statistics(self) -> dict[str, float]:
        """How sampling went since the last reset (read once the thread has stopped)."""
        elapsed = max(time.monotonic() - self.started, 1e-9)
        return {"samples": self.samples, "late": self.late, "errors": self.errors,
                "elapsed": elapsed, "rate": self.samples / elapsed, "target_rate": self.settings.rate}

    # ---- the sampler thread --------------------------------------------------------------

    def _reset_stats(self) -> None:
        self.started = time.monotonic()
        self.samples = self.errors = self.late = 0
        self.window_samples = self.window_late = 0
        self.last_error: str | None = None
        self.behind = 0.0  # seconds behind the schedule, given-up time included
        self.given_up = 0.0
        self._last_taken = 0.0
        self.threads_seen = 0
        self.aggregator.reset()

    def _describe(self, code_id: int) -> tuple[str, str]:
        code = self.unwinder.code(code_id)
        return code.qualname, code.filename

    def _handle_commands(self) -> bool:
        """Apply queued commands; True if a refresh should happen now."""
        refresh = False
        while True:
            try:
                command, value = self._commands.get_nowait()
            except queue.Empty:
                return refresh
            if command == "reset":
                self._reset_stats()
            elif command == "by_line":
                self.settings = replace(self.settings, by_line=bool(value))
            refresh = True

    def _run(self) -> None:
        self.realtime = self.settings.realtime and priority.make_realtime()
        interval = 1.0 / self.settings.rate
        due = time.monotonic()
        early = FIRST_REFRESHES if self.settings.quick_start else ()
        refreshes = [self.started + s for s in early if s < self.settings.delay]
        next_refresh = refreshes.pop(0) if refreshes else self.started + self.settings.delay
        exit_reason = None
        try:
            while not self._stop.is_set():
                if self._handle_commands():
                    self._publish()
                    next_refresh = time.monotonic() + self.settings.delay
                now = time.monotonic()
                if now >= next_refresh:
                    self._publish()
                    next_refresh = refreshes.pop(0) if refreshes else now + self.settings.delay
                if next_refresh < due:  # the refresh comes first: wait for it here
                    self._stop.wait(next_refresh - now)
                    continue
                lag = self._take_sample(due, interval)  # waits for `due` in C, without the GIL
                due += interval * random.uniform(*JITTER)
                if lag > MAX_BACKLOG:  # catching up would only mean sampling back to back
                    self.given_up += lag
                    due = time.monotonic()
                self.behind = self.given_up + max(lag, 0.0)
        except errors.TargetExited as exc:
            exit_reason = str(exc)
        except errors.PytopError as exc:
            exit_reason = str(exc)
        if not self._stop.is_set():
            self._publish(exited=True, reason=exit_reason or "sampling stopped")

    def _take_sample(self, due: float, interval: float) -> float:
        """One sample at `due`; returns how late it was taken."""
        try:
            sample = self.unwinder.sample(due)
            taken_at = sample.taken_at
        except SampleError as exc:
            sample, taken_at = None, exc.taken_at
            self.errors += 1
            self.last_error = str(exc)
        lag = taken_at - due
        late = lag > interval
        self.samples += 1
        self.window_samples += 1
        self.late += late
        self.window_late += late
        dt = taken_at - self._last_taken if self._last_taken else interval
        self._last_taken = taken_at
        if sample is not None:
            self._aggregate(sample, dt)
        return lag

    def _aggregate(self, sample: Sample, dt: float) -> None:
        settings = self.settings
        stacks = []
        gil = False
        active = torn = 0
        for thread in sample.threads:
            gil |= thread.gil
            active += thread.active
            if thread.status:
                torn += 1
                continue
            if settings.gil_only and not thread.gil:
                continue
            if not settings.idle and not thread.active and not thread.gil:
                continue
            stacks.append(((thread.thread_id, thread.native_id), thread.stack))
        if torn:
            self.errors += 1
            self.last_error = f"{torn} thread stack{'s' if torn > 1 else ''} changed while read"
        self.threads_seen = len(sample.threads)
        self.aggregator.add_sample(dt, stacks, gil, active, len(sample.threads))

    def _publish(self, exited: bool = False, reason: str | None = None) -> None:
        self._check_budget()
        self.publish(self._close_window(exited, reason))

    def _check_budget(self) -> None:
        """Give the real-time priority back if sampling costs more than its budget."""
        now = (time.thread_time(), time.monotonic())
        mark, self._cpu_mark = self._cpu_mark, now
        if not self.realtime or mark is None or now[1] - mark[1] < 0.5:
            return
        if (now[0] - mark[0]) / (now[1] - mark[1]) > REALTIME_BUDGET:
            priority.drop_realtime()
            self.realtime = False

    def _close_window(self, exited: bool = False, reason: str | None = None) -> Snapshot:
        window, figures = self.aggregator.close_window()
        snapshot = self._snapshot(window, figures, exited, reason)
        self.window_samples = self.window_late = 0
        return snapshot

    def final_snapshot(self) -> Snapshot:
        """Once the thread has stopped: the figures of the last window and since the reset."""
        if self.running:
            raise RuntimeError("final_snapshot() needs the sampler stopped")
        return self._close_window()

    def _snapshot(self, window: StackCounts, figures: FunctionTable, exited: bool,
                  reason: str | None) -> Snapshot:
        by_line = self.settings.by_line
        rows = build_rows(self.aggregator.totals, figures, window.duration, by_line)
        cpu, rss = _usage(self._process)
        elapsed = max(time.monotonic() - self.started, 1e-9)
        late_share = self.window_late / self.window_samples if self.window_samples else 0.0
        return Snapshot(
            target=self.target,
            rows=rows,
            by_line=by_line,
            samples=self.samples,
            elapsed=elapsed,
            rate=window.samples / window.duration if window.duration else 0.0,
            errors=self.errors,
            last_error=self.last_error,
            late=self.late,
            behind=self.behind if late_share > 0.1 else 0.0,
            gil_pct=100.0 * window.gil_samples / window.samples if window.samples else 0.0,
            active_pct=(100.0 * window.active_thread_samples / window.thread_samples
                        if window.thread_samples else 0.0),
            threads=self.threads_seen,
            cpu_pct=cpu,
            rss=rss,
            exited=exited,
            exit_reason=reason,
            settings={"rate": self.settings.rate, "late_share": late_share},
        )


def build_rows(totals: FunctionTable, window: FunctionTable, window_seconds: float,
               by_line: bool) -> tuple[FunctionRow, ...]:
    """Every function seen since the last reset, with the current window's percentages."""
    now = window.rows(by_line)
    scale = 100.0 / window_seconds if window_seconds > 0 else 0.0
    rows = []
    for key, total in totals.rows(by_line).items():
        recent = now.get(key)
        function, filename, line = key
        rows.append(FunctionRow(
            key=key, function=function, filename=filename, line=line if by_line else None,
            own_pct=recent.own_time * scale if recent else 0.0,
            total_pct=recent.total_time * scale if recent else 0.0,
            own_time=total.own_time, total_time=total.total_time,
            own_count=int(total.own_count), total_count=int(total.total_count),
        ))
    return tuple(rows)


def _process(pid: int) -> psutil.Process | None:
    try:
        process = psutil.Process(pid)
        process.cpu_percent(None)  # start the measurement
        return process
    except psutil.Error:
        return None


def _usage(process: psutil.Process | None) -> tuple[float | None, int | None]:
    if process is None:
        return None, None
    try:
        with process.oneshot():
            return process.cpu_percent(None), process.memory_info().rss
    except psutil.Error:
        return None, None
