"""What the sampler hands the UI: immutable snapshots. Nothing here changes after it is built."""

from __future__ import annotations

from dataclasses import dataclass, field

RowKey = tuple[str, str, int, int]  # (function, filename, line or 0, pid): one row of the function table


@dataclass(frozen=True)
class TargetInfo:
    pid: int
    command: str
    python_version: str
    cwd: str | None = None  # the target's working directory, to shorten file names


@dataclass(frozen=True)
class FunctionRow:
    """One function (or one line of it) with its figures."""

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


ThreadKey = tuple[int, int]  # (pid, serial): the native side tells reused thread ids apart


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


@dataclass(frozen=True)
class ThreadRow:
    """One thread since the last reset."""

    key: ThreadKey  # ids can be reused by a later thread: the serial tells them apart
    pid: int
    thread_id: int
    native_id: int | None
    name: str | None
    samples: int
    active_pct: float  # of its samples, how many found it running
    gil_pct: float  # of its samples, how many found it holding the GIL
    top_frame: str | None  # the innermost function of its latest sample
    alive: bool  # present in the latest sample

    @property
    def label(self) -> str:
        tid = f"TID {self.native_id}" if self.native_id else f"thread {self.thread_id:#x}"
        return f"{self.name} ({tid})" if self.name else tid


@dataclass(frozen=True)
class Snapshot:
    """Everything one screen shows."""

    target: TargetInfo
    rows: tuple[FunctionRow, ...]
    by_line: bool
    samples: int  # since the last reset
    elapsed: float  # seconds since the last reset
    rate: float  # samples per second achieved in the last window
    errors: int  # failed samples since the last reset
    last_error: str | None
    late: int  # samples taken more than one interval after they were due
    behind: float  # seconds the sampler is behind its schedule
    gil_pct: float  # share of the window's samples in which some thread held the GIL
    active_pct: float  # share of the window's thread samples that were running
    threads: int  # threads in the last sample
    cpu_pct: float | None  # the target's CPU use (psutil), None when unknown
    rss: int | None  # the target's resident memory in bytes
    exited: bool = False
    exit_reason: str | None = None
    paused: bool = False
    settings: dict[str, object] = field(default_factory=dict)
    thread_rows: tuple[ThreadRow, ...] = ()
    thread_filter: ThreadRow | None = None  # rows cover only this thread
    gc_pct: float | None = None  # share of the window's samples taken while the GC ran
    call_graph: CallGraph | None = None  # callers and callees of the selected function
    exported: tuple[str, ...] = ()  # files written by the latest export
    processes: tuple[int, ...] = ()  # pids sampled (more than one with --subprocesses)
    process_filter: int | None = None  # rows cover only this process

    @property
    def error_rate(self) -> float:
        attempts = self.samples + self.errors
        return self.errors / attempts if attempts else 0.0
