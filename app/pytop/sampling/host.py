"""The host sampler: stacks of the host's busiest Python processes, at a low rate, within pytop's
CPU budget, for the host's table (its "hottest function" and GIL columns) and `--batch --all`.

One engine samples every process it is given (the busiest few the table names: `watch()`, from
any thread); its own thread attaches the new ones (a few a window: attaching reads a process's
ELF files), retires those no longer named, drains the engine and, every window, publishes each
sampled process's heat (core.model.Heat): its functions' own CPU time over the window, as the
function table sums it, against the kernel's count for the process, and its GIL's share of its
samples. A process that cannot be attached (another user's, an unsupported build) or whose
samples all fail for a window (it exec'd another program) is let go, and tried again only after
RETRY_SECONDS."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ..core.function_sums import FunctionSums
from ..core.model import Heat
from ..core.records import Drain
from ..core.stack_book import StackBook
from ..core.tally import OWN, mode_column
from ..native import Engine, EngineConfig, Unwinder
from .priority import DEFAULT_CPU_BUDGET

HOST_RATE = 100.0  # samples a second asked for, each of every process watched
WATCHED = 16  # processes sampled at once at most (the table names its busiest: core.pools.busiest)
ATTACHES_PER_WINDOW = 3  # new processes taken up a window (each costs an ELF read)
WINDOW_SECONDS = 2.0
KEEP_FUNCTIONS = 5  # per process: enough to merge a pool's hottest
STOP_SECONDS = 5.0
RETRY_SECONDS = 30.0  # a process that could not be attached or read is tried again after this long
# A process the engine took no sample of for this many ticks and this long is not being read
# (it exec'd another program): let go.
UNREAD_TICKS, UNREAD_SECONDS = 3, 1.0

Attach = Callable[[int], Unwinder]
Publish = Callable[[dict[int, Heat]], None]


def heats_of(table: FunctionSums, processes: dict[int, list[int]]) -> dict[int, Heat]:
    """Each process's heat from a window's function table and its (CPU ns, samples, GIL
    samples): functions by their own CPU time, hottest first; the pseudo-rows pytop makes (time
    between samples, threads without Python) are not functions, and stay out."""
    cpu = OWN + mode_column("cpu")
    by_pid: dict[int, list[tuple[str, str, float]]] = {}
    for (function, filename, _, pid), row in table.by_function.items():
        if row[cpu] > 0 and not (function.startswith("(") and not filename):
            by_pid.setdefault(pid, []).append((function, filename, row[cpu] / 1e9))
    heats = {}
    for pid, (cpu_ns, samples, gil) in processes.items():
        functions = sorted(by_pid.get(pid, ()), key=lambda f: (-f[2], f[0], f[1]))[:KEEP_FUNCTIONS]
        heats[pid] = Heat(tuple(functions), cpu_ns / 1e9, samples, gil)
    return heats


class HostSampler:
    def __init__(self, attach: Attach, publish: Publish, rate: float = HOST_RATE,
                 cpu_budget: float = DEFAULT_CPU_BUDGET, window: float = WINDOW_SECONDS,
                 also: tuple[float, Publish] | None = None):
        """publish: each window's heats, pid -> Heat (called on the sampler's thread), and the
        last window's, cut short, when it stops. also: windows of another length, published
        to another (--batch --all --record: the run's heats, and each look's)."""
        self._attach = attach
        self.publish = publish
        self.window = window
        self.also = also
        self._engine = Engine(EngineConfig(rate=rate, cpu_budget=cpu_budget))
        self._engine.wait_for_processes(True)  # a host without a busy process is no end
        self._book = StackBook()
        self._wanted: list[int] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sampled: dict[int, int] = {}  # pid -> the engine's process
        # pid -> ticks since its last sample (or since it was taken up), and since when
        self._unread: dict[int, tuple[int, float]] = {}
        self._refused: dict[int, float] = {}  # pid -> when it may be tried again (CLOCK_MONOTONIC)
        self.failure: str | None = None  # a bug in pytop ended the host sampler: what it was
        self._thread = threading.Thread(target=self._run, name="pytop-host-sampler", daemon=True)

    def watch(self, pids: list[int]) -> None:
        """Sample these (the busiest first; past WATCHED, the rest are not); any thread."""
        with self._lock:
            self._wanted = list(pids)

    def start(self) -> None:
        self._engine.start()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(STOP_SECONDS)
        if not self._thread.is_alive():
            self._engine.close()

    # ---- the host sampler's thread -----------------------------------------------------------

    def _run(self) -> None:
        try:
            self._sample()
        except Exception as exc:  # a bug in pytop: said on the table, never a traceback over it
            self.failure = f"{type(exc).__name__}: {exc}"
            self._engine.stop(STOP_SECONDS)

    def _sample(self) -> None:
        # One table per window it publishes: its own (`window`), and the looks' (`also`).
        windows = [(self.window, self.publish), *([self.also] if self.also else [])]
        tables = [FunctionSums(self._book) for _ in windows]
        processes: list[dict[int, list[int]]] = [{} for _ in windows]
        due = [time.monotonic() + seconds for seconds, _ in windows]
        while not self._stop.wait(min(0.5, max(0.0, min(due) - time.monotonic()))):
            self._take_up()
            self._take_in(self._engine.drain(), tables, processes)
            self._let_go_unread()
            for n, (seconds, publish) in enumerate(windows):
                if time.monotonic() >= due[n]:
                    publish(heats_of(tables[n], {pid: f for pid, f in processes[n].items() if f[1]}))
                    tables[n], processes[n] = FunctionSums(self._book), {}
                    due[n] = time.monotonic() + seconds
        if self._engine.stop(STOP_SECONDS):  # the last windows, cut short: what they hold
            self._take_in(self._engine.drain(), tables, processes)
            for n, (_, publish) in enumerate(windows):
                if processes[n]:
                    publish(heats_of(tables[n], {pid: f for pid, f in processes[n].items() if f[1]}))

    def _take_up(self) -> None:
        """Attach what the table names and is not sampled yet; retire what it no longer names."""
        now = time.monotonic()
        self._refused = {pid: until for pid, until in self._refused.items() if until > now}
        with self._lock:
            wanted = [pid for pid in self._wanted if pid not in self._refused][:WATCHED]
        for pid in [pid for pid in self._sampled if pid not in wanted]:
            if self._engine.retire(self._sampled[pid], "no longer among the busiest"):
                del self._sampled[pid]
                self._unread.pop(pid, None)
        for pid in [pid for pid in wanted if pid not in self._sampled][:ATTACHES_PER_WINDOW]:
            try:
                unwinder = self._attach(pid)
            except Exception:  # ended, another user's, not Python after all: the table says why
                self._refused[pid] = now + RETRY_SECONDS
                continue
            try:
                process = self._engine.add(unwinder)
            except RuntimeError:
                unwinder.close()
                self._refused[pid] = now + RETRY_SECONDS
                continue
            self._book.pids[process] = pid
            self._sampled[pid] = process
            self._unread[pid] = (0, time.monotonic())

    def _let_go_unread(self) -> None:
        """A process the engine has taken no sample of for UNREAD_TICKS ticks and UNREAD_SECONDS
        is not being read (it exec'd another program, whose memory is not the one attached to):
        it is let go, to be attached again (as what it is now) after RETRY_SECONDS if the table
        still names it."""
        now = time.monotonic()
        for pid, (ticks, since) in list(self._unread.items()):
            if ticks >= UNREAD_TICKS and now - since >= UNREAD_SECONDS and pid in self._sampled:
                if self._engine.retire(self._sampled[pid], "not read"):
                    del self._sampled[pid], self._unread[pid]
                    self._refused[pid] = now + RETRY_SECONDS

    def _take_in(self, drain: Drain, tables: list[FunctionSums], windows: list[dict[int, list[int]]]) -> None:
        self._book.learn(drain)
        for table in tables:
            table.add_rows(drain.function_rows, ())
        sampled = {p.pid for p in drain.processes if p.samples}
        for pid, (ticks, since) in list(self._unread.items()):
            self._unread[pid] = (0, time.monotonic()) if pid in sampled else (ticks + drain.ticks, since)
        for p in drain.processes:
            for processes in windows:
                figures = processes.setdefault(p.pid, [0, 0, 0])
                figures[0] += p.cpu_ns
                figures[1] += p.samples
                figures[2] += p.gil_samples
            if p.status and self._sampled.get(p.pid) == p.process:
                del self._sampled[p.pid]  # it ended (or was retired): the table drops it too
                self._unread.pop(p.pid, None)
