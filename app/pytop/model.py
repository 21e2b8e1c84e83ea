"""What the sampler hands the UI: immutable snapshots. Nothing here changes after it is built."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TargetInfo:
    pid: int
    command: str
    python_version: str
    cwd: str | None = None  # the target's working directory, to shorten file names


@dataclass(frozen=True)
class FunctionRow:
    """One function (or one line of it) with its figures."""

    key: tuple[str, str, int]  # (function, filename, line or 0): stable across snapshots
    function: str
    filename: str
    line: int | None  # set in by-line mode
    own_pct: float  # of the current refresh window's time, like top's %CPU (one busy thread = 100%)
    total_pct: float
    own_time: float  # seconds since the last reset
    total_time: float
    own_count: int  # samples since the last reset
    total_count: int


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

    @property
    def error_rate(self) -> float:
        attempts = self.samples + self.errors
        return self.errors / attempts if attempts else 0.0
