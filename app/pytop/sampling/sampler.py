"""The sampler: takes samples in one thread (sampling.py), aggregates them and publishes
snapshots from another.

The aggregating thread owns every figure. Its inbox brings samples, commands from the UI (reset,
view changes, refresh now) and the end of sampling; at the refresh pace (sooner while the first
samples arrive, and at once after a command) it builds an immutable Snapshot and hands it to
`publish` (the app's post_message). The UI never waits on these threads, they never touch the UI.

Errors are sorted by kind: a process is gone (drop it; publish a final snapshot when none is
left), one sample failed (count it, keep its text), a thread's stack changed while read (count
it, leave that stack out).
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..core.aggregate import Aggregator, FunctionTable, StackCounts, rows_of
from ..core.callgraph import call_graph
from ..core.model import RowKey, Snapshot, TargetInfo, ThreadKey, ThreadRow
from ..native import SELECT_ALL, SELECT_BUSY, SELECT_GIL, RawSample, Unwinder
from ..report import export
from ..target.threadnames import ThreadNames
from .processes import Attach, ProcessSet
from .taker import SampleTaker, Taken

FIRST_REFRESHES = (0.1, 0.25, 0.5)  # seconds after start: show something quickly
DISCOVERY_SECONDS = 1.0  # how often to look for new subprocesses


@dataclass(frozen=True)
class Settings:
    rate: float = 100.0
    delay: float = 1.0
    idle: bool = False  # include threads the OS reports idle
    gil_only: bool = False  # only the thread holding the GIL
    by_line: bool = False
    quick_start: bool = True  # refresh early while the first samples arrive
    realtime: bool = True  # take a real-time priority when allowed (see priority.py)
    blocking: bool = False  # stop the target's threads while each sample is read


@dataclass
class Selection:
    """What the UI asked to look at."""

    thread: ThreadKey | None = None  # narrow to one thread
    process: int | None = None  # narrow to one process
    focus: RowKey | None = None  # callers and callees of this row

    def keeps(self, thread_key: tuple[int, ...]) -> bool:
        if self.thread is not None:
            return thread_key == self.thread
        return self.process is None or thread_key[0] == self.process

    @property
    def narrowed(self) -> bool:
        return self.thread is not None or self.process is not None


class Sampler:
    def __init__(self, unwinder: Unwinder, target: TargetInfo, settings: Settings,
                 names: ThreadNames | None = None, attach: Attach | None = None):
        """attach: with --subprocesses, how to start watching a new descendant."""
        self.target = target
        self.settings = settings
        self.publish: Callable[[Snapshot], None] = lambda snapshot: None
        self.select = SELECT_ALL if settings.idle else SELECT_GIL if settings.gil_only else SELECT_BUSY
        unwinder.set_select(self.select)
        self.processes = ProcessSet(target.pid, unwinder, names, self._attach_with(attach) if attach else None)
        self.aggregator = Aggregator(lambda pid, code_id: self._describe(pid, code_id))
        self.selection = Selection()
        self.exported: tuple[str, ...] = ()
        self._thread_names: dict[ThreadKey, str] = {}  # a finished thread keeps the name it had
        self._inbox: queue.SimpleQueue[tuple[str, object]] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._taker = SampleTaker({target.pid: unwinder}, settings.rate, settings.realtime,
                                  deliver=lambda taken: self._inbox.put(("sample", taken)),
                                  finished=lambda reason: self._inbox.put(("finished", reason)),
                                  blocking=settings.blocking)
        self._thread = threading.Thread(target=self._run, name="pytop-aggregator", daemon=True)
        self._reset_stats()

    # ---- called from other threads -------------------------------------------------------

    def start(self, publish: Callable[[Snapshot], None]) -> None:
        """Start sampling; `publish` gets every snapshot, on the aggregating thread."""
        self.publish = publish
        self._thread.start()
        self._taker.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._taker.stop(timeout)
        self._stop.set()
        self._inbox.put(("wake", None))
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        self.processes.close()

    def reset(self) -> None:
        self._inbox.put(("reset", None))

    def refresh_now(self) -> None:
        self._inbox.put(("refresh", None))

    def set_by_line(self, by_line: bool) -> None:
        self._inbox.put(("by_line", by_line))

    def set_thread(self, key: ThreadKey | None) -> None:
        """Narrow the figures to one thread (a ThreadRow.key), or None for all."""
        self._inbox.put(("thread", key))

    def set_process(self, pid: int | None) -> None:
        """Narrow the figures to one process, or None for all."""
        self._inbox.put(("process", pid))

    def set_focus(self, key: RowKey | None) -> None:
        """Follow the callers and callees of one function (a FunctionRow.key), or stop."""
        self._inbox.put(("focus", key))

    def export(self, directory: str) -> None:
        """Write what was sampled since the last reset to files in `directory`; their names come
        in the next snapshot's `exported`."""
        self._inbox.put(("export", directory))

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    @property
    def realtime(self) -> bool:
        return self._taker.realtime

    def statistics(self) -> dict[str, float]:
        """How sampling went since the last reset (read once the threads have stopped)."""
        elapsed = max(time.monotonic() - self.started, 1e-9)
        return {"samples": self.samples, "late": self.late, "errors": self.errors,
                "elapsed": elapsed, "rate": self.samples / elapsed, "target_rate": self.settings.rate}

    def final_snapshot(self) -> Snapshot:
        """Once stopped: the figures of the last window and since the reset."""
        if self.running:
            raise RuntimeError("final_snapshot() needs the sampler stopped")
        self._drain()
        return self._close_window()

    # ---- the aggregating thread ----------------------------------------------------------

    def _reset_stats(self) -> None:
        self.started = time.monotonic()
        self.samples = self.errors = self.late = 0
        self.window_samples = self.window_late = 0
        self.last_error: str | None = None
        self.behind = 0.0  # seconds behind the schedule, given-up time included
        self.threads_seen = 0
        self._last_taken = 0.0
        self.aggregator.reset()
        for watched in self.processes.watched.values():
            watched.unwinder.reset_thread_stats()

    def _attach_with(self, attach: Attach) -> Attach:
        def attach_selecting(pid: int) -> tuple[Unwinder, ThreadNames | None]:
            unwinder, names = attach(pid)
            unwinder.set_select(self.select)
            return unwinder, names

        return attach_selecting

    def _describe(self, pid: int, code_id: int) -> tuple[str, str]:
        code = self.processes.unwinder(pid).code(code_id)
        return code.qualname, code.filename

    def _run(self) -> None:
        early = FIRST_REFRESHES if self.settings.quick_start else ()
        refreshes = [self.started + s for s in early if s < self.settings.delay]
        next_refresh = refreshes.pop(0) if refreshes else self.started + self.settings.delay
        next_discovery = time.monotonic() + 0.2
        while not self._stop.is_set():
            try:
                kind, value = self._inbox.get(timeout=max(0.0, min(next_refresh, next_discovery) - time.monotonic()))
            except queue.Empty:
                kind, value = "tick", None
            if kind == "finished":
                self._drain()
                self._publish(exited=True, reason=str(value))
                return
            if time.monotonic() >= next_discovery:
                for pid, unwinder in self.processes.discover():
                    self._taker.add(pid, unwinder)
                next_discovery = time.monotonic() + DISCOVERY_SECONDS
            if self._handle(kind, value):
                self._publish()
                next_refresh = time.monotonic() + self.settings.delay
            elif time.monotonic() >= next_refresh:
                self._publish()
                next_refresh = refreshes.pop(0) if refreshes else time.monotonic() + self.settings.delay

    def _handle(self, kind: str, value: object) -> bool:
        """Apply one inbox item; True if a refresh should follow at once."""
        if kind == "sample":
            self._count(value)  # type: ignore[arg-type]
            return False
        if kind == "reset":
            self._reset_stats()
        elif kind == "by_line":
            self.settings = replace(self.settings, by_line=bool(value))
            self.selection.focus = None  # a function key does not name a line, nor the other way round
        elif kind == "thread":
            self.selection.thread = value  # type: ignore[assignment]
        elif kind == "process":
            self.selection.process = value  # type: ignore[assignment]
            self.selection.thread = None
        elif kind == "focus":
            self.selection.focus = value  # type: ignore[assignment]
        elif kind == "export":
            self.exported = self.write_exports(str(value))
        elif kind != "refresh":
            return False
        return True

    def _drain(self) -> None:
        """Count the samples still waiting in the inbox."""
        while True:
            try:
                kind, value = self._inbox.get_nowait()
            except queue.Empty:
                return
            if kind == "sample":
                self._count(value)  # type: ignore[arg-type]

    def _count(self, taken: Taken) -> None:
        for pid, _ in taken.gone:
            self.processes.gone(pid)
        if taken.taken_at < self.started:
            return  # taken before a reset
        interval = 1.0 / self.settings.rate
        late = taken.lag > interval
        self.samples += 1
        self.window_samples += 1
        self.late += late
        self.window_late += late
        self.behind = taken.given_up + max(taken.lag, 0.0)
        dt = taken.taken_at - self._last_taken if self._last_taken else interval
        self._last_taken = taken.taken_at
        failed = [error for _, sample, error in taken.samples if sample is None]
        if failed:
            self.errors += 1
            self.last_error = failed[-1]
        if len(failed) < len(taken.samples):
            self._aggregate([(pid, s) for pid, s, _ in taken.samples if s is not None], dt)

    def _aggregate(self, samples: list[tuple[int, RawSample]], dt: float) -> None:
        """Only the selected threads' stacks are looked at here, per sample: the native side
        has already counted every thread (see tracking.c)."""
        stacks: list[tuple[tuple[int, ...], bytes]] = []
        gil = False
        active = torn = threads = 0
        gc = -1
        for pid, sample in samples:
            gc = max(gc, sample.gc_collecting)
            gil |= sample.gil_held
            active += sample.active_count
            torn += sample.torn_count
            threads += sample.thread_count
            stacks.extend(((pid, serial), stack) for serial, stack in sample.selected_stacks())
        if torn:
            self.errors += 1
            self.last_error = f"{torn} thread stack{'s' if torn > 1 else ''} changed while read"
        self.threads_seen = threads
        self.aggregator.add_sample(dt, stacks, gil, active, threads, gc)

    def _publish(self, exited: bool = False, reason: str | None = None) -> None:
        self.publish(self._close_window(exited, reason))

    def _close_window(self, exited: bool = False, reason: str | None = None) -> Snapshot:
        window, figures = self.aggregator.close_window()
        snapshot = self._snapshot(window, figures, exited, reason)
        self.window_samples = self.window_late = 0
        return snapshot

    def write_exports(self, directory: str) -> tuple[str, ...]:
        """Collapsed stacks and speedscope JSON of everything since the last reset."""
        stem = os.path.join(directory, f"pytop-{self.target.pid}-{time.strftime('%Y%m%d-%H%M%S')}")
        labels: dict[tuple[int, ...], str] = {row.key: row.label for row in self._thread_rows()}
        try:
            return export.write_files(stem, self.aggregator.total, self.aggregator.decoder.name, labels,
                                      f"pytop: pid {self.target.pid}, {self.target.command}")
        except OSError as exc:
            return (f"export failed: {exc}",)

    def _thread_rows(self) -> tuple[ThreadRow, ...]:
        stats = {pid: w.unwinder.thread_stats() for pid, w in self.processes.watched.items()}
        known, self._thread_names = self._thread_names, {}
        names = self.processes.names({pid: {s.thread_id for s in ss if s.alive and (pid, s.serial) not in known}
                                      for pid, ss in stats.items()})
        rows = []
        for pid, thread_stats in stats.items():
            for s in thread_stats:
                key = (pid, s.serial)
                name = names.get((pid, s.thread_id)) if s.alive else None
                name = name or known.get(key)
                if name:
                    self._thread_names[key] = name
                rows.append(ThreadRow(
                    key=key, pid=pid, thread_id=s.thread_id, native_id=s.native_id or None,
                    name=name, samples=s.samples,
                    active_pct=100.0 * s.active / s.samples if s.samples else 0.0,
                    gil_pct=100.0 * s.gil / s.samples if s.samples else 0.0,
                    top_frame=self.aggregator.decoder.name(pid, s.top_code)[0] if s.top_code else None,
                    alive=s.alive))
        return tuple(rows)

    def _snapshot(self, window: StackCounts, figures: FunctionTable, exited: bool,
                  reason: str | None) -> Snapshot:
        by_line, selection = self.settings.by_line, self.selection
        totals = self.aggregator.totals
        thread_rows = self._thread_rows()
        if selection.narrowed:  # only the selected thread's or process's stacks, in both tables
            figures = FunctionTable(self.aggregator.decoder)
            figures.add_counts(window, keep=selection.keeps)
            totals = FunctionTable(self.aggregator.decoder)
            totals.add_counts(self.aggregator.total, keep=selection.keeps)
        cpu, rss = self.processes.usage()
        late_share = self.window_late / self.window_samples if self.window_samples else 0.0
        graph = None
        if selection.focus is not None:
            graph = call_graph(self.aggregator.total, self.aggregator.decoder, selection.focus, by_line,
                               selection.keeps if selection.narrowed else None)
        return Snapshot(
            target=self.target,
            rows=rows_of(totals, figures, window.duration, by_line),
            by_line=by_line,
            samples=self.samples,
            elapsed=max(time.monotonic() - self.started, 1e-9),
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
            thread_rows=thread_rows,
            thread_filter=next((row for row in thread_rows if row.key == selection.thread), None),
            gc_pct=100.0 * window.gc_samples / window.gc_known if window.gc_known else None,
            call_graph=graph,
            exported=self.exported,
            processes=self.processes.alive,
            process_filter=selection.process,
        )
