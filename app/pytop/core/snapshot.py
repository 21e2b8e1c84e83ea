"""Building a Snapshot from the figures: a pure function, tested without processes or threads."""

from __future__ import annotations

from dataclasses import dataclass, field

from .counts import Counts
from .function_sums import FunctionSums
from .model import (
    CallGraph,
    Circumstances,
    FunctionRow,
    Mode,
    RowKey,
    Snapshot,
    TargetInfo,
    ThreadKey,
    ThreadRow,
    TreeNode,
)
from .stack_book import StackBook
from .tally import CPU, HIDDEN, MODE_INDEX, OWN, TOTAL, WALL, mode_column
from .threads import ThreadBook, ThreadState


@dataclass(frozen=True)
class View:
    """What the UI asked to look at."""

    mode: Mode = "cpu"
    by_line: bool = False
    thread: ThreadKey | None = None  # narrow to one thread
    process: int | None = None  # narrow to one process (pid)
    focus: RowKey | None = None  # callers and callees of this row
    tree: bool = False  # the call tree is shown: build it
    tasks: bool = False  # asyncio tasks (3.14+) as frames of their own, outside their coroutines
    # Every thread's row is built (the threads panel, reports). The live view asks for them only
    # while it shows them: 2,000 rows a refresh were a third of the screen's work on a pool.
    threads: bool = True

    @property
    def narrowed(self) -> bool:
        return self.thread is not None or self.process is not None


@dataclass
class Figures:
    """Everything counted: the current window and everything since the last reset, as time per
    (thread, stack) and as tables summed drain by drain (exact however much detail ages out)."""

    book: StackBook = field(default_factory=StackBook)
    window: Counts = field(default_factory=Counts)
    total: Counts = field(default_factory=Counts)
    window_table: FunctionSums | None = None  # of `window`
    totals: FunctionSums | None = None  # of `total`
    threads: ThreadBook = field(default_factory=ThreadBook)

    def __post_init__(self) -> None:
        if self.window_table is None:
            self.window_table = FunctionSums(self.book)
        if self.totals is None:
            self.totals = FunctionSums(self.book)


@dataclass(frozen=True)
class Tables:
    """The tables a snapshot shows: all threads', or one thread's or process's."""

    totals: FunctionSums
    window: FunctionSums


def rows_of(totals: FunctionSums, window: FunctionSums, window_seconds: float, mode: Mode,
            by_line: bool, tasks: bool = True) -> tuple[FunctionRow, ...]:
    """Every function with time in this mode since the last reset, with the window's shares.
    With tasks hidden, their pseudo-frames' rows go and their own time is their callers'."""
    col = mode_column(mode)
    own_at = (OWN if tasks else HIDDEN) + col
    now = window.rows(by_line)
    scale = 100.0 / (window_seconds * 1e9) if window_seconds > 0 else 0.0
    hidden = set() if tasks else totals.tasks
    rows = []
    for key, row in totals.rows(by_line).items():
        if not row[TOTAL + col] and not row[own_at]:
            continue  # nothing in this mode (a sleeping thread's functions in cpu mode)
        if key in hidden:
            continue
        recent = now.get(key)
        function, filename, line, pid = key
        own_pct = recent[own_at] * scale if recent else 0.0
        rows.append(FunctionRow(
            key=key, function=function, filename=filename, line=line if by_line else None, pid=pid,
            own_pct=own_pct, total_pct=max(recent[TOTAL + col] * scale, own_pct) if recent else 0.0,
            own_time=row[own_at] / 1e9, total_time=max(row[TOTAL + col], row[own_at]) / 1e9,
            own_count=row[own_at - col], total_count=max(row[TOTAL], row[own_at - col]),
            native=(function, filename, 0, pid) in totals.natives,
        ))
    return tuple(rows)


def thread_rows(figures: Figures, mode: Mode, elapsed: float, only: ThreadKey | None = None,
                every: bool = True) -> tuple[ThreadRow, ...]:
    """Each thread's row (every: False, only the row of thread `only`, if any)."""
    index = MODE_INDEX[mode]
    own = {thread: tally[index] for thread, tally in figures.total.threads.items()}

    def row(t: ThreadState) -> ThreadRow:
        top = figures.book.own_function(t.stack) if t.stack else None
        span = t.wall_ns if t.wall_ns else elapsed * 1e9  # threads without Python are not sampled
        return ThreadRow(
            key=t.key, pid=t.pid, thread_id=t.thread_id, native_id=t.native_id or None, name=t.name,
            samples=t.samples, active_pct=100.0 * t.cpu_ns / span if span else 0.0,
            gil_pct=100.0 * t.gil_samples / t.samples if t.samples else 0.0,
            top_frame=top[0] if top else None, alive=t.alive, cpu_time=t.cpu_ns / 1e9,
            own_time=own.get(t.key, 0) / 1e9, wait_time=t.wait_ns / 1e9, unplaced_time=t.unplaced_ns / 1e9,
            errors=t.errors,
            last_error=t.last_error_text, native=t.native, threads=t.threads, os_state=t.os_state,
            folded=t.key < 0)

    if every:
        return tuple(row(t) for t in figures.threads.threads.values())
    chosen = figures.threads.threads.get(only) if only is not None else None
    return (row(chosen),) if chosen is not None else ()


# A window shorter than this says nothing of the CPU use: the kernel's counts move at its ticks
# and lag by up to one per thread, and a run's last window (its final read, a few milliseconds
# after the one before) takes in that lag: 5,913% was shown for a replayed run's last window.
MIN_CPU_WINDOW = 0.05


def _share(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 0.0


def build(target: TargetInfo, figures: Figures, tables: Tables, view: View, c: Circumstances,
          graph: CallGraph | None = None, tree: TreeNode | None = None) -> Snapshot:
    """The snapshot of the figures as `view` shows them: `tables` are all threads' or the ones
    the view narrows to; callers (`graph`) and the call tree come made."""
    window, total = figures.window, figures.total
    rows = thread_rows(figures, view.mode, c.elapsed, view.thread, view.threads)
    window_cpu = sum(tally[CPU] for tally in window.threads.values())
    window_wall = sum(tally[WALL] for tally in window.threads.values())
    col = mode_column(view.mode)
    return Snapshot(
        target=target,
        rows=rows_of(tables.totals, tables.window, c.window_seconds, view.mode, view.by_line, view.tasks),
        by_line=view.by_line,
        samples=total.ticks,
        rate=window.ticks / window.slot_seconds if window.slot_seconds > 0 else 0.0,
        errors=total.failed,
        late=total.late,
        gil_pct=_share(window.gil_samples, window.process_samples),
        active_pct=_share(window_cpu, window_wall),
        threads=sum(1 for t in figures.threads.threads.values() if t.alive and not t.native),
        cpu_pct=100.0 * window.cpu_ns / (c.window_seconds * 1e9) if c.window_seconds >= MIN_CPU_WINDOW else None,
        run=c,
        mode=view.mode,
        skipped=total.skipped,
        longest_delay=total.longest_delay,
        torn=total.torn,
        cpu_time=total.cpu_ns / 1e9,
        unseen_time=total.unseen_ns / 1e9,
        attributed=sum(r[(OWN if view.tasks else HIDDEN) + col] for r in tables.totals.by_function.values()) / 1e9,
        sampled_from=total.first_at,
        sampled_until=total.last_at,
        thread_rows=rows,
        thread_filter=next((r for r in rows if r.key == view.thread), None),
        gc_pct=_share(window.gc_samples, window.gc_known) if window.gc_known else None,
        call_graph=graph,
        call_tree=tree,
        process_filter=view.process,
    )



