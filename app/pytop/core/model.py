"""What the sampler hands the UI: immutable snapshots. Nothing here changes after it is built."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

RowKey = tuple[str, str, int, int]  # (function, filename, line or 0, pid): one row of the function table
ThreadKey = int  # the engine's key for a thread: never reused, so a reused thread id is a new key

Mode = Literal["cpu", "wall", "gil"]  # what the times measure
MODES: tuple[Mode, ...] = ("cpu", "wall", "gil")
MODE_HELP: dict[Mode, str] = {
    "cpu": "time on a CPU, as the kernel counts it",
    "wall": "wall-clock time of every thread, running or not",
    "gil": "wall-clock time of the thread holding the GIL",
}


@dataclass(frozen=True)
class TargetInfo:
    pid: int
    command: str
    python_version: str
    cwd: str | None = None  # the target's working directory, to shorten file names


@dataclass(frozen=True)
class FunctionRow:
    """One function (or one line of it) with its figures in the snapshot's mode."""

    key: RowKey  # stable across snapshots
    function: str
    filename: str
    line: int | None  # set in by-line mode
    pid: int
    own_pct: float  # of the current refresh window's time, like top's %CPU (one busy thread = 100%)
    total_pct: float
    own_time: float  # seconds since the last reset
    total_time: float
    own_count: int  # samples since the last reset
    total_count: int
    native: bool = False  # a native (C) function (--native): `filename` is its library


@dataclass(frozen=True)
class Neighbour:
    """A caller or callee of the selected function."""

    key: RowKey
    seconds: float
    share: float  # of the selected function's total time


@dataclass(frozen=True)
class CallGraph:
    focus: RowKey
    total_seconds: float
    callers: tuple[Neighbour, ...]
    callees: tuple[Neighbour, ...]


@dataclass(frozen=True, eq=False)  # compared by identity: a generated __eq__ would recurse down a deep tree
class TreeNode:
    """A node of the call tree: a function reached by one path of calls from a thread's start."""

    key: RowKey
    total: float  # seconds in it and below it, by this path
    own: float  # seconds in it itself
    children: tuple[TreeNode, ...]  # hottest first
    repeat: int = 1  # a run of direct recursion folded into one node: how many calls deep it is


@dataclass(frozen=True)
class ThreadRow:
    """One thread since the last reset (or several finished ones, folded)."""

    key: ThreadKey
    pid: int
    thread_id: int
    native_id: int | None
    name: str | None
    samples: int
    active_pct: float  # share of its sampled time on a CPU, from the kernel's count
    gil_pct: float  # share of its samples in which it held the GIL
    top_frame: str | None  # the innermost function of its latest sample
    alive: bool  # present in the latest sample
    cpu_time: float = 0.0  # seconds of CPU the kernel counted for it
    own_time: float = 0.0  # seconds pytop attributed to its stacks in the snapshot's mode
    wait_time: float = 0.0  # seconds it was runnable but waiting for a CPU
    unplaced_time: float = 0.0  # of cpu_time, seconds it ran where no sample saw it (not placed)
    errors: int = 0  # samples in which its stack could not be read
    last_error: str | None = None
    native: bool = False  # a thread of the process that runs no Python
    threads: int = 1  # how many threads the row stands for: several when `folded`
    folded: bool = False  # finished threads folded into one row (even if only one so far)
    os_state: str = "?"

    @property
    def label(self) -> str:
        if self.folded:
            return f"{self.threads} finished thread{'s' if self.threads != 1 else ''}"
        tid = f"TID {self.native_id}" if self.native_id else f"thread {self.thread_id:#x}"
        return f"{self.name} ({tid})" if self.name else tid


@dataclass(frozen=True)
class ReplayPosition:
    """Where a replay of a recording stands: the window shown, and the range its totals cover."""

    path: str
    index: int  # of the window shown
    windows: int  # in the recording
    start: float  # wall-clock seconds of the window shown
    end: float
    range_start: float  # the totals run from here to `end`
    recording_start: float
    recording_end: float
    first: int = 0  # the index of the range's first window
    gap: bool = False  # the window's frame was damaged: nothing of it is shown
    live: bool = False  # the past of a live view (--record): > goes back to its present
    private: bool = False  # ... kept by the view itself (no --record): its file is not the user's
    # The target's CPU (100 = a core) over the recording, oldest first: a point a window, or the
    # mean of several in a long one (record/timeline.py); -1 where not read yet.
    timeline: tuple[float, ...] = ()


@dataclass(frozen=True)
class RecordStatus:
    """How --record goes: the file, what it holds, what it lost."""

    path: str
    size: int  # bytes written
    windows: int  # windows written
    waiting: int = 0  # windows waiting for the disk
    dropped: int = 0  # windows whose figures were lost (a disk that could not keep up, or failed)
    failing: str | None = None  # why the last write failed, if it did (a full disk)
    last_failure: str | None = None  # why a write last failed, kept when later writes succeed
    private: bool = False  # the live view's own memory of its session (a temporary file), not --record


@dataclass(frozen=True)
class PushStatus:
    """How --push goes: profiles sent to the server, waiting, given up."""

    server: str  # scheme://host:port
    sent: int = 0  # profiles the server took
    waiting: int = 0  # profiles queued (or being tried)
    dropped: int = 0  # profiles given up for room in the queue (the oldest first)
    unsent: int = 0  # profiles still waiting when the run ended (and its few seconds to send them)
    refused: int = 0  # profiles the server refused (4xx): not sent again
    failing: str | None = None  # why the last try failed, if it did (the server is failing)
    last_refusal: str | None = None  # the server's last refusal
    closed: bool = False  # the run has ended: nothing is tried again

    @property
    def lost(self) -> int:
        """Profiles the server does not have."""
        return self.dropped + self.unsent + self.refused


@dataclass(frozen=True)
class Circumstances:
    """What the figures do not say: time, the sampler's state, the process's memory and fate."""

    window_seconds: float  # the time the window's samples cover: the figures "now" are over it
    elapsed: float  # seconds since the last reset
    rate_asked: float
    skipped_share: float = 0.0  # share of the samples asked for lately that a busy machine made pytop skip
    rate_held: float | None = None  # the rate pytop's CPU budget holds sampling at (None: the rate asked)
    cpu_budget: float = 0.0  # the share of a core pytop may use (0: no budget)
    pytop_cpu_pct: float | None = None  # pytop's own CPU use in the window, 100 = one core
    rss: int | None = None  # the target's resident memory in bytes
    stopped: tuple[int, ...] = ()  # pids of the watched processes that are stopped (SIGSTOP, a debugger)
    exited: bool = False
    exit_reason: str | None = None
    exit_status: int | None = None  # a program pytop started: its status once it ended (-N: signal N)
    exported: tuple[str, ...] = ()  # files written by the latest export
    processes: tuple[int, ...] = ()  # pids sampled (more than one with --subprocesses)
    sampler_cpu: float = 0.0  # CPU seconds pytop's sampling thread used
    start_up_cpu: float = 0.0  # pytop's process CPU up to its first read's end: the start-up its budget leaves out
    stacks_dropped: int = 0  # stacks folded away by the bound on memory
    stacks_coarsened: int = 0  # stacks kept as their frames only by the bound on memory (times whole)
    last_error: str | None = None
    failure: str | None = None  # pytop itself failed: why (the run has ended)
    work_elsewhere: str | None = None  # the process idles while a child of its computes: where, and how to see it
    push: PushStatus | None = None  # --push: how sending profiles goes
    record: RecordStatus | None = None  # --record: how writing the recording goes
    replay: ReplayPosition | None = None  # a recording shown again (pytop FILE): where in it
    window_number: int = 0  # which window the window's figures are of: a view asked for at once shows
    # the last whole window again (same number) rather than a window of a few milliseconds
    window_end: float = 0.0  # wall-clock seconds at the window's close (0: not known, a recording made before)


@dataclass(frozen=True)
class Snapshot:
    """Everything one screen shows."""

    target: TargetInfo
    rows: tuple[FunctionRow, ...]
    by_line: bool
    samples: int  # good samples since the last reset
    rate: float  # samples per second in the last window: never more than the rate asked
    errors: int  # failed samples since the last reset
    late: int  # samples taken more than one interval after they were due
    gil_pct: float  # share of the window's samples in which some thread held the GIL
    active_pct: float  # share of the window's thread time spent on a CPU (the kernel's count)
    threads: int  # Python threads in the last sample
    cpu_pct: float | None  # the target's CPU use in the window (the kernel's count), 100 = one core
    run: Circumstances  # what the figures do not say (elapsed, exited, rss, the sampler's state...)
    mode: Mode = "cpu"  # what OwnTime and TotalTime measure (MODE_HELP)
    skipped: int = 0  # samples skipped since the reset because the machine was too busy
    longest_delay: float = 0.0  # seconds: the latest a sample began after it was due, since the reset
    torn: int = 0  # thread stacks that could not be read since the reset
    cpu_time: float = 0.0  # seconds of CPU the kernel counted for the target since the reset
    unseen_time: float = 0.0  # ... of which by threads that ended between samples
    attributed: float = 0.0  # seconds the table adds up to in this mode
    sampled_from: float = 0.0  # CLOCK_MONOTONIC of the first and last sample since the reset
    sampled_until: float = 0.0
    thread_rows: tuple[ThreadRow, ...] = ()
    thread_filter: ThreadRow | None = None  # rows cover only this thread
    gc_pct: float | None = None  # share of the window's samples taken while the GC ran
    call_graph: CallGraph | None = None  # callers and callees of the selected function
    call_tree: TreeNode | None = None  # the whole call tree, when the view shows it
    process_filter: int | None = None  # rows cover only this process

    @property
    def error_rate(self) -> float:
        attempts = self.samples + self.errors
        return self.errors / attempts if attempts else 0.0

    @property
    def late_pct(self) -> float:
        asked = self.samples + self.skipped
        return 100.0 * (self.late + self.skipped) / asked if asked else 0.0


@dataclass(frozen=True)
class Heat:
    """What one process (or a pool) ran lately, from its samples over the host sampler's last
    window: its hottest functions by their own CPU time, and how often its GIL was held."""

    functions: tuple[tuple[str, str, float], ...]  # (function, filename, CPU seconds), hottest first
    cpu_seconds: float  # the kernel's count for the process(es) over the window
    samples: int
    gil_samples: int  # samples in which a thread held the GIL

    @property
    def gil_pct(self) -> float | None:
        return 100.0 * self.gil_samples / self.samples if self.samples else None

    @property
    def hottest(self) -> tuple[str, str, float] | None:
        """The hottest function and its share of the CPU (of 1.0), if it ran at all."""
        if not self.functions or self.cpu_seconds <= 0:
            return None
        function, filename, seconds = self.functions[0]
        return function, filename, self.share(seconds)

    def share(self, seconds: float) -> float:
        """A function's CPU seconds as a share of the process's (of 1.0; the two are read at
        slightly different moments, so a function alone on a core may come out a little over)."""
        return min(seconds / self.cpu_seconds, 1.0) if self.cpu_seconds > 0 else 0.0


@dataclass(frozen=True)
class PythonProcess:
    """One of the host's Python processes, as a look at /proc saw it (process/pythons.py)."""

    pid: int
    user: str
    command: str
    cpu_pct: float  # the kernel's count between the last two looks, 100 = one core
    version: str = ""  # "3.12": from its program's or libpython's name ("": not told by them)
    threads: int = 0
    rss: int = 0  # resident memory, bytes
    pid_inside: int | None = None  # its pid in its own PID namespace (a container), when not ours
    problem: str | None = None  # why pytop cannot read it
    parent: int = 0  # its parent's pid

    @property
    def described(self) -> str:
        """Its command line, with its pid inside its container and why pytop cannot read it."""
        where = f"(pid {self.pid_inside} in its namespace) " if self.pid_inside is not None else ""
        return f"{where}{self.command}" + (f"  [{self.problem}]" if self.problem else "")
