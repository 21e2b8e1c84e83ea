"""The sampler: the native engine samples on its own thread; this one drains it a few times a
second, keeps the figures and publishes snapshots.

Data flows one way: engine (native thread) -> drain -> figures (core/) -> Snapshot -> `publish`
(the app's post_message). The inbox brings commands from the UI (commands.py: view changes,
reset, export); after one, a snapshot follows at once. When sampling stops, `profile()` hands
out what was counted, for reports. The UI never waits on this thread and this thread never
touches the UI. Sampling never waits on this thread either: the engine does not need the GIL.

Errors are sorted by kind: a process is gone (the engine drops it; a final snapshot follows when
none is left), one sample failed or one thread's stack tore (counted, shown), anything else is a
bug in pytop: the run ends with the error on screen and a non-zero exit, never a frozen view.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from .. import errors
from ..core.aggregate import CPU, FOLDED, OWN, Counts, FunctionSums, mode_column
from ..core.callgraph import call_graph
from ..core.calltree import call_tree
from ..core.held import HeldShare, skipped_share
from ..core.model import MODES, CallGraph, Circumstances, Mode, RowKey, Snapshot, TargetInfo, ThreadKey, TreeNode
from ..core.profile import Profile, ThreadIdentity
from ..core.records import PSEUDO_FUNCTIONS, STACK_OVERFLOW, Drain, NodeRow, ProcessStacks
from ..core.snapshot import Figures, Tables, View, build
from ..native import Closed, Engine, EngineConfig, Unwinder
from ..report import export
from ..target.attach import attach
from ..target.look import look
from . import commands as do
from .priority import DEFAULT_CPU_BUDGET
from .processes import Attach, Follow, ProcessSet

FIRST_REFRESHES = (0.1, 0.25, 0.5)  # seconds after start: show something quickly
DRAIN_SECONDS = 0.5  # how often the engine is drained between refreshes (each costs per (thread, stack) pair)
DISCOVERY_SECONDS = 1.0  # how often to look for new subprocesses
WAITING_DISCOVERY_SECONDS = 0.1  # ... while there is none to sample: a target that is not Python
EXEC_CHECK_SECONDS = 0.1  # how often to look for a process that exec'd (its samples fail meanwhile)
STOP_SECONDS = 5.0  # how long stop() waits for the engine's thread
SKIPPING_SHOWN_FROM = 0.1  # share of a window's samples skipped that is worth a banner
SKIPPING_JUDGED_FROM = 0.2  # seconds of schedule a window needs before it can say so
SKIPPING_HOLD_SECONDS = 3.0  # the banner stays this long after the last window that skipped
EXIT_STATUS_WAIT = 1.0  # a started program whose memory is gone is ending: time to reap it


@dataclass(frozen=True)
class Settings:
    rate: float = 1000.0
    delay: float = 1.0
    mode: Mode = "cpu"  # cpu, wall or gil (see core.model.MODE_HELP)
    by_line: bool = False
    quick_start: bool = True  # refresh early while the first samples arrive
    realtime: bool = False  # take a real-time priority when allowed (--realtime; it costs the target)
    cpu_budget: float = DEFAULT_CPU_BUDGET  # share of a core pytop may use; the rate gives way (0: none)
    blocking: bool = False  # stop the target's threads while each sample is read
    native: bool = False  # native (C) frames in the stacks (implies blocking: libdw reads stopped threads)
    tasks: bool = False  # start with asyncio tasks shown (the A key toggles them)
    # A view asked for (a key) within this long of the last refresh shows the last window again
    # in the new view: a window of a few milliseconds made shares of 400% out of one lump of CPU.
    shortest_window: float = 0.25


class Sampler:
    def __init__(self, unwinder: Unwinder | None, target: TargetInfo, settings: Settings,
                 attach: Attach | None = None, exit_status: Callable[[float], int | None] | None = None,
                 follow: Follow | None = None):
        """unwinder: the target's, or None for a target that is not Python, watched for its
        Python descendants (attach is then needed). attach: with --subprocesses, how to start
        watching a new descendant. exit_status: for a program pytop started, its status once it
        has ended (given how long to wait for it). follow: how to read the program a watched
        process exec'd (None: its run ends there)."""
        if unwinder is None and attach is None:
            raise ValueError("a target that is not Python is watched only for its subprocesses")
        if settings.mode not in MODES:
            raise ValueError(f"unknown mode {settings.mode!r}")
        self.target = target
        self.settings = settings
        self.publish: Callable[[Snapshot], None] = lambda snapshot: None
        self.engine = Engine(EngineConfig(rate=settings.rate, realtime=settings.realtime,
                                          blocking=settings.blocking or settings.native, native=settings.native,
                                          cpu_budget=settings.cpu_budget))
        self.figures = Figures()
        self.figures.book.show_tasks(settings.tasks)
        self._process_of: dict[int, int] = {}  # pid -> the engine's process for it now
        # A target that is not Python: the run lasts as long as it does, with or without a
        # Python descendant to sample at the moment.
        self._parent_only = unwinder is None
        if unwinder is not None:
            self._add_process(unwinder, target.pid)
        else:
            self.engine.wait_for_processes(True)
        # A program pytop started is the run's from its start: so are all its children.
        self.processes = ProcessSet(target.pid, attach, follow, since_start=exit_status is not None)
        self.view = View(mode=settings.mode, by_line=settings.by_line, tasks=settings.tasks)
        self.exported: tuple[str, ...] = ()
        self.failure: str | None = None
        self.end: str | None = None
        self.last_error: str | None = None
        self._inbox: queue.SimpleQueue[do.Command] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pytop-sampler", daemon=True)
        self._realtime = False
        self._rate_now = settings.rate
        self._budget_limited = False
        self._cpu_mark = time.process_time()  # pytop's own CPU at the window's start
        self._sampler_cpu = 0.0
        self._dropped = 0
        self._last_window: tuple[Counts, FunctionSums, Circumstances] | None = None
        self._window_number = 1
        self._stack_nodes = 0
        self._exit_status = exit_status
        # The share of samples skipped, held after the last window that skipped many.
        self._skipping = HeldShare(SKIPPING_SHOWN_FROM, SKIPPING_HOLD_SECONDS)
        self.status: int | None = None  # the started program's exit status, once sampling saw it end
        self._reset_figures()

    # ---- called from other threads -------------------------------------------------------

    def start(self, publish: Callable[[Snapshot], None]) -> None:
        """Start sampling; `publish` gets every snapshot, on the sampler's thread."""
        self.publish = publish
        # The run is timed from here: not from set-up, which a screen starting on a busy host
        # can stretch to seconds (the report's duration and rates counted it).
        self.started = self._window_started = time.monotonic()
        self._cpu_mark = time.process_time()
        self.engine.start()
        self._thread.start()

    def stop(self, timeout: float = STOP_SECONDS) -> None:
        self._stop.set()
        self._inbox.put(do.Wake())
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        if not self._thread.is_alive():
            self._shut_engine()
            self.engine.close()  # final_snapshot() still works: it needs no stack sums in the default view

    def reset(self) -> None:
        self._inbox.put(do.Reset())

    def set_by_line(self, by_line: bool) -> None:
        self._inbox.put(do.ByLine(by_line))

    def set_mode(self, mode: Mode) -> None:
        """What the times measure: cpu, wall or gil."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}")
        self._inbox.put(do.ChangeMode(mode))

    def set_thread(self, key: ThreadKey | None) -> None:
        """Narrow the figures to one thread (a ThreadRow.key), or None for all."""
        self._inbox.put(do.NarrowToThread(key))

    def set_process(self, pid: int | None) -> None:
        """Narrow the figures to one process, or None for all."""
        self._inbox.put(do.NarrowToProcess(pid))

    def set_focus(self, key: RowKey | None) -> None:
        """Follow the callers and callees of one function (a FunctionRow.key), or stop."""
        self._inbox.put(do.Focus(key))

    def set_tree(self, shown: bool) -> None:
        """Build the call tree in the snapshots (while the screen shows it), or stop."""
        self._inbox.put(do.ShowTree(shown))

    def set_threads(self, shown: bool) -> None:
        """Build every thread's row in the snapshots (while the screen shows them), or only the
        row of the thread the view narrows to."""
        self._inbox.put(do.ShowThreads(shown))

    def set_tasks(self, shown: bool) -> None:
        """Show asyncio tasks as frames of their own (3.14+ targets), or hide them."""
        self._inbox.put(do.ShowTasks(shown))

    def set_delay(self, seconds: float) -> None:
        """Seconds between snapshots, from the next one on."""
        self._inbox.put(do.Delay(seconds))

    def look(self, pid: int) -> tuple[ProcessStacks, str | None]:
        """Every thread's stack in process `pid` now, with each frame's arguments and locals and
        its C frames: a look of its own beside sampling (any thread may call it; it blocks while
        it reads, and holds the target's threads stopped for the native part). Without the C
        frames when they cannot be read, and why (no libdw, no ptrace: said second)."""
        if self.settings.blocking or self.settings.native:
            # ptrace belongs to the sampling thread, which holds every thread of the target: a
            # second tracer is refused (and said to lack permission)
            held = "--native" if self.settings.native else "--blocking"
            why = (f"pytop's sampling holds the target's threads ({held}), and only one tracer can"
                   + (": the table and the tree (T) have them" if self.settings.native else ""))
            return look(attach(pid), f"process {pid}", with_locals=True), f"C frames not shown: {why}"
        try:
            return look(attach(pid), f"process {pid}", with_locals=True, native=True), None
        except (errors.UsageError, errors.AttachFailed, errors.PermissionDenied) as exc:
            why = str(exc)
        return look(attach(pid), f"process {pid}", with_locals=True), f"C frames not shown: {why}"

    def export(self, directory: str) -> None:
        """Write what was sampled since the last reset to files in `directory`; their names come
        in the next snapshot's `exported`."""
        self._inbox.put(do.Export(directory))

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    @property
    def samples_taken(self) -> int:
        """Samples taken since the last reset, drained or not, read from any thread. The drained
        count is read first: a drain in between can only make the sum short, never count twice."""
        drained = self.figures.total.ticks
        try:
            return drained + self.engine.pending_ticks()
        except Closed:  # the engine has stopped, and its last ticks were drained before it closed
            return self.figures.total.ticks

    @property
    def realtime(self) -> bool:
        return self._realtime

    def statistics(self) -> dict[str, float]:
        """How sampling went since the last reset (read once the threads have stopped)."""
        total = self.figures.total
        elapsed = max(time.monotonic() - self.started, 1e-9)
        return {"samples": total.ticks, "late": total.late, "skipped": total.skipped, "errors": total.failed,
                "elapsed": elapsed, "rate": total.ticks / elapsed, "target_rate": self.settings.rate,
                "rate_now": self._rate_now, "sampler_cpu": self._sampler_cpu,
                "catch_all_share": self._catch_all_share(), "stack_nodes": self._stack_nodes,
                "aged_share": total.aged_share(CPU)}

    def _catch_all_share(self) -> float:
        """The share of the cpu time since the reset in rows that memory bounds made: functions
        folded for the least time, stacks that found no room in the tree."""
        totals = self.figures.totals
        if totals is None:
            return 0.0
        cpu = OWN + mode_column("cpu")
        whole = sum(row[cpu] for row in totals.by_function.values())
        caught = sum(row[cpu] for key, row in totals.by_function.items()
                     if key == FOLDED or key[0] == PSEUDO_FUNCTIONS[STACK_OVERFLOW])
        return caught / whole if whole else 0.0

    def final_snapshot(self) -> Snapshot:
        """Once stopped: the figures of the last window and since the reset (in a view that
        needs no stack sums: not narrowed, no callers, no tree; the engine is closed)."""
        if self.running:
            raise RuntimeError("final_snapshot() needs the sampler stopped")
        if not self.engine.is_open and (self.view.narrowed or self.view.focus is not None or self.view.tree):
            raise RuntimeError("final_snapshot() after stop() shows all threads' table only")
        return self._close_window(exited=self.end is not None, reason=self.end)

    # ---- the sampler's thread ------------------------------------------------------------

    def _reset_figures(self) -> None:
        self.started = self._window_started = time.monotonic()
        book = self.figures.book
        self.figures = Figures(book=book, threads=self.figures.threads)
        self.figures.threads.reset()
        self.last_error = None

    def _run(self) -> None:
        try:
            self._loop()
            if self.end is not None:
                self._serve_final()
        except Exception as exc:  # a bug in pytop: end the run with it on screen, never freeze
            self.failure = f"{type(exc).__name__}: {exc}"
            self.publish(self._failed_snapshot())
        finally:
            self._shut_engine()

    def _serve_final(self) -> None:
        """Every process has gone and the figures are final; the view still changes on request
        (lines, mode, a thread, a process, callers, export) until the sampler is stopped."""
        while not self._stop.is_set():
            command = self._inbox.get()
            if not isinstance(command, do.Reset) and self._handle(command):  # a reset would throw the results away
                self.publish(self._last_window_again())

    def _last_window_again(self) -> Snapshot:
        """The last window's figures (and the totals as they are) in the current view: after
        the end, nothing merged or counted twice."""
        assert self._last_window is not None  # a window was closed (the exited snapshot was built)
        window, window_table, circumstances = self._last_window
        f = self.figures
        current = f.window, f.window_table
        f.window, f.window_table = window, window_table
        try:
            return self._build(replace(circumstances, exported=self.exported))
        finally:
            f.window, f.window_table = current

    def _shut_engine(self) -> None:
        """Stop the engine's thread and take in what it still holds. The engine stays open (a
        view of the final figures still sums stacks with it) until the sampler is stopped."""
        if self.engine.is_open and not self.engine.stopped and self.engine.stop(STOP_SECONDS):
            self._drain()

    def _loop(self) -> None:
        early = FIRST_REFRESHES if self.settings.quick_start else ()
        refreshes = [self.started + s for s in early if s < self.settings.delay]
        next_refresh = refreshes.pop(0) if refreshes else self.started + self.settings.delay
        next_drain = time.monotonic() + DRAIN_SECONDS
        next_discovery = time.monotonic() + (DISCOVERY_SECONDS if self._process_of else WAITING_DISCOVERY_SECONDS)
        next_exec_check = time.monotonic() + EXEC_CHECK_SECONDS
        while not self._stop.is_set():
            wait = min(next_refresh, next_drain, next_discovery, next_exec_check) - time.monotonic()
            command: do.Command
            try:
                command = self._inbox.get(timeout=max(0.0, wait))
            except queue.Empty:
                command = do.Wake()
            now = time.monotonic()
            if now >= next_drain:  # between refreshes: the threads with news only
                self._drain(whole=False)
                next_drain = now + DRAIN_SECONDS
            if now >= next_exec_check:
                self._follow_execs()
                next_exec_check = now + EXEC_CHECK_SECONDS
            if now >= next_discovery:
                self._discover()
                next_discovery = now + (DISCOVERY_SECONDS if self._process_of else WAITING_DISCOVERY_SECONDS)
            if self.end is not None:  # every process has gone
                self._shut_engine()  # all it still holds goes into the final figures
                if self._exit_status is not None:
                    self.status = self._exit_status(EXIT_STATUS_WAIT)
                self._publish(exited=True, reason=self.end)
                return
            if self._handle(command):
                self._publish_view(command)
                next_refresh = time.monotonic() + self.settings.delay
                if isinstance(command, do.Delay):
                    refreshes = []  # the quick first refreshes give way to the pace asked for
            elif time.monotonic() >= next_refresh:
                self._publish()
                next_refresh = refreshes.pop(0) if refreshes else time.monotonic() + self.settings.delay

    def _handle(self, command: do.Command) -> bool:
        """Apply one command; True if a refresh should follow at once."""
        if isinstance(command, do.ViewChange):
            self.view = command.applied(self.view)
            self.figures.book.show_tasks(self.view.tasks)
        elif isinstance(command, do.Reset):
            self._drain()  # what came before the reset is not counted
            self._reset_figures()
        elif isinstance(command, do.Delay) and command.seconds > 0:
            self.settings = replace(self.settings, delay=float(command.seconds))
        elif isinstance(command, do.Export):
            if self.engine.is_open:
                self._drain()
            self.exported = self.write_exports(command.directory)
        else:
            return False
        return True

    def _drain(self, whole: bool = True) -> Drain:
        d = self.engine.drain(whole)
        f = self.figures
        f.book.learn(d)
        for counts in (f.window, f.total):
            counts.forget(d.evicted)  # first: an evicted id may come back as a new stack
            counts.add_drain(d)
        assert f.window_table is not None and f.totals is not None
        f.window_table.add_rows(d.function_rows, d.line_rows)
        f.totals.add_rows(d.function_rows, d.line_rows, bounded=True)
        f.threads.update(d.threads, lambda process: f.book.pids.get(process, 0), f.book.has_frames)
        for p in d.processes:
            if p.error:
                self.last_error = p.error
            if p.status:
                if self._process_of.get(p.pid) == p.process:  # not a process that exec'd and was followed
                    self.processes.gone(p.pid)
                f.threads.ended_process(p.process)
        self._realtime = d.realtime
        self._rate_now = d.rate_now
        self._budget_limited = d.budget_limited
        self._sampler_cpu = d.cpu_seconds
        self._dropped = d.stacks_dropped
        self._stack_nodes = d.stack_nodes
        if not d.running and d.end is not None and not self._stop.is_set() and self.end is None:
            self.end = d.end  # every process has gone (not: pytop was asked to stop)
        return d

    def _add_process(self, unwinder: Unwinder, pid: int, whole_life: bool = False) -> None:
        """Hand a process to the engine (whole_life: its CPU before its first sample counts).
        Its asyncio tasks are always recorded where the target says which task runs (3.14+):
        the view shows or hides them (cheap: no read without a running loop, and a task's name
        is read once)."""
        unwinder.set_tasks(True)
        process = self.engine.add(unwinder, whole_life)
        self.figures.book.pids[process] = pid
        self._process_of[pid] = process

    def _follow_execs(self) -> None:
        """A watched process that exec'd another program: its old run ends, saying so, and the
        new program is sampled from now on if it is Python (the header names it)."""
        for pid, followed, why in self.processes.execs():
            process = self._process_of.get(pid)
            if followed is not None:
                unwinder, info = followed
                try:
                    self._add_process(unwinder, pid)
                except RuntimeError:
                    unwinder.close()  # the engine has ended
                else:
                    if pid == self.target.pid:
                        self.target = info
            if process is not None:
                self.engine.retire(process, why)

    def _discover(self) -> None:
        self.processes.work_elsewhere()  # (it looks only every few seconds)
        for pid, unwinder, whole_life in self.processes.discover():
            try:
                self._add_process(unwinder, pid, whole_life)
            except RuntimeError:
                unwinder.close()  # the engine has ended: nothing more to sample
        if self._parent_only and not self.processes.root_alive():
            self._parent_only = False
            self.engine.wait_for_processes(False)  # the run ends with the last live process, if any
            if not self._process_of:
                self.end = f"process {self.target.pid} has exited; it started no Python program pytop could read"

    def _publish(self, exited: bool = False, reason: str | None = None) -> None:
        self.publish(self._close_window(exited, reason))

    def _publish_view(self, command: do.Command) -> None:
        """The figures at once after a command: the open window closes if it is long enough to
        say something, else the last window shows again in the view now asked for."""
        short = time.monotonic() - self._window_started < self.settings.shortest_window
        if short and self._last_window is not None and not isinstance(command, do.Reset):
            if self.engine.is_open and not self.engine.stopped:
                self._drain()  # into the totals and the open window
            self.publish(self._last_window_again())
        else:
            self._publish()

    def _pytop_cpu(self, seconds: float) -> float:
        """pytop's own CPU use over the window, 100 = one core."""
        cpu = time.process_time()
        used, self._cpu_mark = cpu - self._cpu_mark, cpu
        return 100.0 * used / seconds

    def _keeper(self) -> Callable[[int], bool] | None:
        """Which threads' stacks the view counts (None: all)."""
        view = self.view
        if view.thread is not None:
            return lambda key: key == view.thread
        if view.process is not None:
            pids = {k: t.pid for k, t in self.figures.threads.threads.items()}
            return lambda key: pids.get(key) == view.process
        return None

    def _summed(self, counts: Counts, keep: Callable[[int], bool] | None) -> FunctionSums:
        table = FunctionSums(self.figures.book)
        sums = self.engine.aggregate(counts.leaf_tallies(keep))
        table.add_rows(sums.functions, sums.lines)
        return table

    def _tables(self) -> Tables:
        """All threads' tables, summed drain by drain; or, narrowed, one thread's or process's,
        summed from its stacks (whose detail may have aged out: see Counts)."""
        f = self.figures
        assert f.totals is not None and f.window_table is not None
        keep = self._keeper()
        if keep is None:
            return Tables(f.totals, f.window_table)
        return Tables(self._summed(f.total, keep), self._summed(f.window, keep))

    def _node_rows(self) -> tuple[NodeRow, ...]:
        return self.engine.aggregate(self.figures.total.leaf_tallies(self._keeper()), tables=False, nodes=True).nodes

    def _graph_and_tree(self) -> tuple[CallGraph | None, TreeNode | None]:
        view = self.view
        if view.focus is None and not view.tree:
            return None, None
        rows = self._node_rows()
        book = self.figures.book
        graph = call_graph(rows, book, view.focus, view.by_line, view.mode) if view.focus is not None else None
        tree = call_tree(rows, book, view.by_line, view.mode) if view.tree else None
        return graph, tree

    def _build(self, circumstances: Circumstances) -> Snapshot:
        graph, tree = self._graph_and_tree()
        return build(self.target, self.figures, self._tables(), self.view, circumstances, graph, tree)

    def _close_window(self, exited: bool = False, reason: str | None = None) -> Snapshot:
        if self.engine.is_open and not self.engine.stopped:
            self._drain()
        f = self.figures
        moved = f.threads.fold_finished()
        if moved:
            f.total.fold(moved)
        now = time.monotonic()
        seconds = max(now - self._window_started, 1e-9)
        circumstances = Circumstances(
            window_seconds=seconds, elapsed=max(now - self.started, 1e-9), rate_asked=self.settings.rate,
            skipped_share=self._skipping.update(
                skipped_share(f.window.ticks, f.window.skipped, f.window.slot_seconds, SKIPPING_JUDGED_FROM), now),
            rss=self.processes.rss(), exited=exited, exit_reason=reason,
            stopped=() if exited else self.processes.stopped(),
            rate_held=self._rate_now if self._budget_limited and not exited else None,
            cpu_budget=self.settings.cpu_budget, pytop_cpu_pct=self._pytop_cpu(seconds),
            exported=self.exported, processes=self.processes.alive, sampler_cpu=self._sampler_cpu,
            stacks_dropped=self._dropped, last_error=self.last_error, failure=self.failure, exit_status=self.status,
            window_number=self._window_number, work_elsewhere=None if exited else self.processes.hint)
        self._window_number += 1
        snapshot = self._build(circumstances)
        assert f.window_table is not None
        self._last_window = (f.window, f.window_table, circumstances)
        f.window = Counts()
        f.window_table = FunctionSums(f.book)
        self._window_started = now
        return snapshot

    def _failed_snapshot(self) -> Snapshot:
        try:
            return self._close_window(exited=True, reason=self.failure)
        except Exception:  # the figures themselves are broken: say so with what is certain
            empty = FunctionSums(self.figures.book)
            return build(self.target, Figures(), Tables(empty, empty), self.view, Circumstances(
                window_seconds=1.0, elapsed=max(time.monotonic() - self.started, 1e-9),
                rate_asked=self.settings.rate, exited=True, exit_reason=self.failure, failure=self.failure))

    def profile(self) -> Profile:
        """Everything since the reset (the open window is in it already), for reports: ask
        once sampling has stopped (the sampler's own thread builds one for an export)."""
        threads = {key: ThreadIdentity(t.native_id or None, t.name, t.pid)
                   for key, t in self.figures.threads.threads.items()}
        return Profile(self.figures.total, self.figures.book, threads, self.target.pid, self.target.command,
                       subprocesses=self.processes.attach is not None)

    def write_exports(self, directory: str) -> tuple[str, ...]:
        """Collapsed stacks and speedscope JSON of everything since the last reset."""
        now = time.time()
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now)) + f"-{int(now * 1000) % 1000:03d}"
        stem = os.path.join(directory, f"pytop-{self.target.pid}-{stamp}")
        try:
            return export.write_files(stem, self.profile(), self.view.mode)
        except errors.PytopError as exc:
            return (f"export failed: {exc}",)
