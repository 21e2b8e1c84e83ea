"""The sampler: owns the sampling thread, which drains the native engine a few times a second
(feed.py), closes a window into a snapshot at each refresh (windows.py) and publishes it.

Data flows one way: engine (native thread) -> feed -> figures (core/) -> windows -> Snapshot ->
`publish` (the app's post_message). The UI sends commands (core/commands.py: view changes,
reset, refresh pace, export) with `send`, from any thread; they are applied here between drains
and a snapshot follows at once. When sampling stops, `profile()` hands out what was counted,
for reports. The UI never waits on this thread and this thread never touches the UI. Sampling
never waits on this thread either: the engine does not need the GIL.

What the sampler does not do itself is handed to it: how to start watching a new subprocess or
the program a process exec'd (processes.py), and how to write an export (run.py wires them).

Errors are sorted by kind: a process is gone (the engine drops it; a final snapshot follows when
none is left), one sample failed or one thread's stack tore (counted, shown), anything else is a
bug in pytop: the run ends with the error on screen and a non-zero exit, never a frozen view.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..core import commands
from ..core.model import MODES, Mode, Snapshot, TargetInfo
from ..core.profile import Profile, ThreadIdentity
from ..core.snapshot import View
from ..core.tally import CPU
from ..native import Engine, EngineConfig, Unwinder
from .feed import STOP_SECONDS, DrainSink, Feed
from .priority import DEFAULT_CPU_BUDGET
from .processes import Attach, Follow, ProcessSet, command_of
from .pushing import ProfileSink, PushWindow
from .windows import Windows

FIRST_REFRESHES = (0.1, 0.25, 0.5)  # seconds after start: show something quickly
DRAIN_SECONDS = 0.5  # how often the engine is drained between refreshes (each costs per (thread, stack) pair)
DISCOVERY_SECONDS = 1.0  # how often to look for new subprocesses
WAITING_DISCOVERY_SECONDS = 0.1  # ... while there is none to sample: a target that is not Python
EXEC_CHECK_SECONDS = 0.1  # how often to look for a process that exec'd (its samples fail meanwhile)
EXIT_STATUS_WAIT = 1.0  # a started program whose memory is gone is ending: time to reap it
RECORD_WINDOW_SECONDS = 2.0  # --record: the longest window a recording holds (a replay steps by them)

Exporter = Callable[[str, Profile, Mode], tuple[str, ...]]
"""Writes an export of a profile in a mode to a directory: the files written, or why none was."""


def no_exports(directory: str, profile: Profile, mode: Mode) -> tuple[str, ...]:
    return ("export failed: this run writes no exports",)


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
    max_stack_nodes: int = 0  # the engine's bound on its stack tree (0: its default; tests make it small)


class Sampler:
    def __init__(self, unwinder: Unwinder | None, target: TargetInfo, settings: Settings,
                 attach: Attach | None = None, exit_status: Callable[[float], int | None] | None = None,
                 follow: Follow | None = None, exporter: Exporter = no_exports, pusher: ProfileSink | None = None,
                 recorder: DrainSink | None = None):
        """unwinder: the target's, or None for a target that is not Python, watched for its
        Python descendants (attach is then needed). attach: with --subprocesses, how to start
        watching a new descendant. exit_status: for a program pytop started, its status once it
        has ended (given how long to wait for it). follow: how to read the program a watched
        process exec'd (None: its run ends there). exporter: how the Export command writes.
        pusher: with --push, where each process's profile goes every few seconds (the caller
        starts it, and closes it once sampling has stopped). recorder: with --record, where
        each drain and window goes (the caller closes it once sampling has stopped)."""
        if unwinder is None and attach is None:
            raise ValueError("a target that is not Python is watched only for its subprocesses")
        if settings.mode not in MODES:
            raise ValueError(f"unknown mode {settings.mode!r}")
        self.settings = settings
        self.publish: Callable[[Snapshot], None] = lambda snapshot: None
        self._stop = threading.Event()
        engine = Engine(EngineConfig(rate=settings.rate, realtime=settings.realtime,
                                     blocking=settings.blocking or settings.native, native=settings.native,
                                     cpu_budget=settings.cpu_budget, max_stack_nodes=settings.max_stack_nodes))
        # A program pytop started is the run's from its start: so are all its children.
        processes = ProcessSet(target.pid, attach, follow, since_start=exit_status is not None,
                               image=unwinder.image if unwinder is not None else None)
        self.feed = Feed(engine, processes, self._stop)
        self.feed.recorder = recorder
        self.feed.figures.book.show_tasks(settings.tasks)
        # A target that is not Python: the run lasts as long as it does, with or without a
        # Python descendant to sample at the moment.
        self._parent_only = unwinder is None
        if unwinder is not None:
            self.feed.add(unwinder, target.pid)
        else:
            engine.wait_for_processes(True)
        view = View(mode=settings.mode, by_line=settings.by_line, tasks=settings.tasks)
        self.windows = Windows(self.feed, target, view, settings.rate, settings.cpu_budget)
        self._exporter = exporter
        self._pusher = pusher
        if pusher is not None:
            self.feed.push_window = PushWindow(pusher.every, settings.mode, settings.rate, command_of)
            self.windows.push_status = pusher.status
        self._exit_status = exit_status
        self._inbox: queue.SimpleQueue[commands.Command] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="pytop-sampler", daemon=True)

    # ---- called from other threads -------------------------------------------------------

    def start(self, publish: Callable[[Snapshot], None]) -> None:
        """Start sampling; `publish` gets every snapshot, on the sampler's thread."""
        self.publish = publish
        # The run is timed from here: not from set-up, which a screen starting on a busy host
        # can stretch to seconds (the report's duration and rates counted it).
        self.windows.restart()
        if self.feed.push_window is not None:
            self.feed.push_window.restart()
        self.feed.engine.start()
        self._thread.start()

    def stop(self, timeout: float = STOP_SECONDS) -> None:
        self._stop.set()
        self._inbox.put(commands.Wake())
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        if not self._thread.is_alive():
            self.windows.ended = min(self.windows.ended, time.monotonic())
            self.feed.close()  # final_snapshot() still works: it needs no stack sums in the default view

    def end_recording(self) -> None:
        """Once stopped (a live view that quit): what was sampled since the view's last window
        closed goes to the recording as its last window, with the totals, so that the file ends
        with the state the run left (a key frame after it: record/queued.py)."""
        if not self._thread.is_alive() and self.feed.recorder is not None:
            self.windows.record_cut(last=True)

    def send(self, command: commands.Command) -> None:
        """Ask for a view, a reset, a pace or an export (core/commands.py); a snapshot follows."""
        if isinstance(command, commands.ChangeMode) and command.mode not in MODES:
            raise ValueError(f"unknown mode {command.mode!r}")
        self._inbox.put(command)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    @property
    def target(self) -> TargetInfo:
        """The process the run watches (a new program once it exec'd one)."""
        return self.windows.target

    @property
    def view(self) -> View:
        return self.windows.view

    @property
    def failure(self) -> str | None:
        """A bug in pytop that ended sampling, if one did."""
        return self.windows.failure

    @property
    def status(self) -> int | None:
        """The started program's exit status, once sampling saw it end."""
        return self.windows.exit_status

    @property
    def end(self) -> str | None:
        """Why the run ended by itself (every process gone), if it did."""
        return self.feed.end

    @property
    def exported(self) -> tuple[str, ...]:
        return self.windows.exported

    @property
    def processes(self) -> ProcessSet:
        return self.feed.processes

    @property
    def samples_taken(self) -> int:
        """Samples taken since the last reset, drained or not, read from any thread."""
        return self.feed.samples_taken()

    @property
    def realtime(self) -> bool:
        return self.feed.news.realtime

    def statistics(self) -> dict[str, float]:
        """How sampling went since the last reset (read once the threads have stopped)."""
        total = self.feed.figures.total
        news = self.feed.news
        elapsed = max(time.monotonic() - self.windows.started, 1e-9)
        return {"samples": total.ticks, "late": total.late, "skipped": total.skipped, "errors": total.failed,
                "elapsed": elapsed, "rate": total.ticks / elapsed, "target_rate": self.settings.rate,
                "rate_now": news.rate_now, "sampler_cpu": news.sampler_cpu,
                "catch_all_share": self.windows.catch_all_share(), "stack_nodes": news.stack_nodes,
                "aged_share": total.aged_share(CPU)}

    def final_snapshot(self) -> Snapshot:
        """Once stopped: the figures of the last window and since the reset (in a view that
        needs no stack sums: not narrowed, no callers, no tree; the engine is closed)."""
        if self.running:
            raise RuntimeError("final_snapshot() needs the sampler stopped")
        view = self.windows.view
        if not self.feed.engine.is_open and (view.narrowed or view.focus is not None or view.tree):
            raise RuntimeError("final_snapshot() after stop() shows all threads' table only")
        return self.windows.close(exited=self.end is not None, reason=self.end, last=True)

    def profile(self) -> Profile:
        """Everything since the reset (the open window is in it already), for reports: ask
        once sampling has stopped (the sampler's own thread builds one for an export)."""
        figures = self.feed.figures
        threads = {key: ThreadIdentity(t.native_id or None, t.name, t.pid)
                   for key, t in figures.threads.threads.items()}
        target = self.windows.target
        return Profile(figures.total, figures.book, threads, target.pid, target.command,
                       subprocesses=self.feed.processes.attach is not None)

    # ---- the sampler's thread ------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop()
            self._push_rest()
            if self.feed.end is not None:
                self._serve_final()
        except Exception as exc:  # a bug in pytop: end the run with it on screen, never freeze
            self.windows.failure = f"{type(exc).__name__}: {exc}"
            self.publish(self.windows.failed())
        finally:
            self.feed.shut()

    def _push_due(self) -> float:
        window = self.feed.push_window
        return window.due if window is not None else math.inf

    def _push(self) -> None:
        """Hand the push window's profiles (one per process) to the sender, and start another."""
        window, pusher = self.feed.push_window, self._pusher
        if window is not None and pusher is not None:
            figures = self.feed.figures
            pusher.put(window.cut(figures.book, figures.threads.threads))

    def _push_rest(self) -> None:
        """Sampling is over: what the engine still holds goes into the last push."""
        if self._pusher is not None:
            self.feed.shut()
            self._push()

    def _serve_final(self) -> None:
        """Every process has gone and the figures are final; the view still changes on request
        (lines, mode, a thread, a process, callers, export) until the sampler is stopped."""
        while not self._stop.is_set():
            command = self._inbox.get()
            if not isinstance(command, commands.Reset) and self._handle(command):  # a reset would lose the results
                self.publish(self.windows.again())

    def _loop(self) -> None:
        feed, windows = self.feed, self.windows
        early = FIRST_REFRESHES if self.settings.quick_start else ()
        refreshes = [windows.started + s for s in early if s < self.settings.delay]
        next_refresh = refreshes.pop(0) if refreshes else windows.started + self.settings.delay
        next_drain = time.monotonic() + DRAIN_SECONDS
        next_discovery = time.monotonic() + (DISCOVERY_SECONDS if feed.watching else WAITING_DISCOVERY_SECONDS)
        next_exec_check = time.monotonic() + EXEC_CHECK_SECONDS
        # --record with refreshes further apart (--batch: one): the recording's own windows
        cutting = feed.recorder is not None and self.settings.delay > RECORD_WINDOW_SECONDS
        next_cut = time.monotonic() + RECORD_WINDOW_SECONDS if cutting else math.inf
        while not self._stop.is_set():
            wait = min(next_refresh, next_drain, next_discovery, next_exec_check, self._push_due(),
                       next_cut) - time.monotonic()
            command: commands.Command
            try:
                command = self._inbox.get(timeout=max(0.0, wait))
            except queue.Empty:
                command = commands.Wake()
            now = time.monotonic()
            if now >= next_drain:  # between refreshes: the threads with news only
                # (not when a refresh comes sooner, which drains: at 1 s refreshes these were a
                # third of the drains, for nothing shown; on a pool of 1,000 threads the thread
                # that drains went from 3.4-3.5% of a core to 2.35-3.15%)
                if next_refresh - now > DRAIN_SECONDS:
                    feed.drain(whole=False)
                next_drain = now + DRAIN_SECONDS
            if now >= next_exec_check:
                followed = feed.follow_execs()
                if followed is not None:
                    windows.target = followed
                next_exec_check = now + EXEC_CHECK_SECONDS
            if now >= next_cut:
                windows.record_cut()
                next_cut = now + RECORD_WINDOW_SECONDS
            if now >= self._push_due():
                feed.drain_if_sampling()
                self._push()
            if now >= next_discovery:
                self._parent_only = feed.discover(self._parent_only)
                next_discovery = now + (DISCOVERY_SECONDS if feed.watching else WAITING_DISCOVERY_SECONDS)
            if feed.end is not None:  # every process has gone
                feed.shut()  # all it still holds goes into the final figures
                if self._exit_status is not None:
                    windows.exit_status = self._exit_status(EXIT_STATUS_WAIT)
                self.publish(windows.close(exited=True, reason=feed.end, last=True))
                return
            if self._handle(command):
                self._publish_view(command)
                next_refresh = time.monotonic() + self.settings.delay
                if isinstance(command, commands.Delay):
                    refreshes = []  # the quick first refreshes give way to the pace asked for
            elif time.monotonic() >= next_refresh:
                self.publish(windows.close())
                next_refresh = refreshes.pop(0) if refreshes else time.monotonic() + self.settings.delay

    def _handle(self, command: commands.Command) -> bool:
        """Apply one command; True if a refresh should follow at once."""
        feed, windows = self.feed, self.windows
        if isinstance(command, commands.ViewChange):
            windows.view = command.applied(windows.view)
            feed.figures.book.show_tasks(windows.view.tasks)
        elif isinstance(command, commands.Reset):
            feed.drain_if_open()  # what came before the reset is not counted
            if feed.recorder is not None:  # ... in the view: the recording keeps it, as a window of its own
                windows.close()
            feed.reset()
            windows.restart(reset=True)
        elif isinstance(command, commands.Delay) and command.seconds > 0:
            self.settings = replace(self.settings, delay=float(command.seconds))
        elif isinstance(command, commands.Export):
            feed.drain_if_open()
            windows.exported = self._exporter(command.directory, self.profile(), windows.view.mode)
        else:
            return False
        return True

    def _publish_view(self, command: commands.Command) -> None:
        """The figures at once after a command: the open window closes if it is long enough to
        say something, else the last window shows again in the view now asked for."""
        windows = self.windows
        short = windows.open_for() < self.settings.shortest_window
        if short and windows.has_closed and not isinstance(command, commands.Reset):
            self.feed.drain_if_sampling()  # into the totals and the open window
            self.publish(windows.again())
        else:
            self.publish(windows.close())
