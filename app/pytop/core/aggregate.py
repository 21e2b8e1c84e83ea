"""Turning what the engine drains into per-function figures. Pure: no threads, no I/O, no target.

The engine hands over time per (thread, stack), in three kinds at once: `cpu` (the kernel's
count of the thread's CPU time), `wall` (time between samples), `gil` (wall time while holding
the GIL). Keeping all three lets the view switch mode without losing history. Stacks arrive once
as packed (code id, line) frames, innermost first, and are decoded once.

Own: the function is the innermost frame. Total: the function is anywhere in the stack; a
recursive function is counted once per stack. A stack without Python frames (a thread in C, a
thread without Python, threads that ended between samples) counts as one pseudo-function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from .model import RowKey
from .records import FRAME, PSEUDO_FUNCTIONS, STACK_INCOMPLETE, TASK_FILENAME, Code, Drain, Stack, Weight

MODES = ("cpu", "wall", "gil")
# A tally: [samples, running samples, cpu ns, wall ns, gil ns]
SAMPLES, RUNNING, CPU, WALL, GIL = range(5)
MODE_INDEX = {"cpu": CPU, "wall": WALL, "gil": GIL}


def new_tally() -> list[int]:
    return [0, 0, 0, 0, 0]


def add_into(into: list[int], more: Iterable[int]) -> None:
    for i, value in enumerate(more):
        into[i] += value


class StackInfo(NamedTuple):
    """What one stack contributes: its innermost function/line and every distinct one in it."""

    pid: int
    own_function: RowKey
    functions: tuple[RowKey, ...]
    own_line: RowKey
    lines: tuple[RowKey, ...]
    frames: tuple[tuple[str, str, int], ...]  # (function, filename, line), innermost first
    incomplete: bool  # outer frames missing: no caller/callee edges from it


class StackBook:
    """What the engine's code ids and stack ids stand for, learned once from the drains. Stacks
    of asyncio programs (3.14+) hold a pseudo-frame per running task, outside its coroutine;
    they are read with it while `tasks` is on, without it otherwise."""

    def __init__(self, tasks: bool = False) -> None:
        self.names: dict[tuple[int, int], tuple[str, str]] = {}  # (process, code id) -> (function, file)
        self.stacks: dict[int, Stack] = {}
        self.pids: dict[int, int] = {}  # engine process index -> pid
        self.tasks = tasks
        self._info: dict[int, StackInfo] = {}

    def show_tasks(self, tasks: bool) -> bool:
        """Read stacks with or without their task pseudo-frames; True if that changed (every
        table made from the stacks must then be made anew)."""
        if tasks == self.tasks:
            return False
        self.tasks = tasks
        self._info.clear()
        return True

    def learn(self, codes: Iterable[Code], stacks: Iterable[Stack]) -> None:
        for code in codes:
            name = code.qualname
            if code.filename == TASK_FILENAME and not name.startswith("("):
                name = f"task {name}"
            self.names[(code.process, code.code_id)] = (name, code.filename)
        for stack in stacks:
            self.stacks[stack.stack] = stack

    def has_frames(self, stack_id: int) -> bool:
        stack = self.stacks.get(stack_id)
        return stack is not None and bool(stack.frames)

    def name(self, process: int, code_id: int) -> tuple[str, str]:
        return self.names.get((process, code_id), ("<unknown>", "<unknown>"))

    def info(self, stack_id: int) -> StackInfo | None:
        info = self._info.get(stack_id)
        if info is None:
            stack = self.stacks.get(stack_id)
            if stack is None:
                return None
            info = self._info[stack_id] = self._decode(stack)
        return info

    def _decode(self, stack: Stack) -> StackInfo:
        pid = self.pids.get(stack.process, stack.process)
        frames = tuple((*self.name(stack.process, code_id), line) for code_id, line in FRAME.iter_unpack(stack.frames))
        if not self.tasks:
            frames = tuple(frame for frame in frames if frame[1] != TASK_FILENAME)
        if not frames:
            frames = ((PSEUDO_FUNCTIONS.get(stack.kind & ~STACK_INCOMPLETE, "(no Python frame)"), "", 0),)
        functions = tuple(dict.fromkeys((function, filename, 0, pid) for function, filename, _ in frames))
        lines = tuple(dict.fromkeys((function, filename, line, pid) for function, filename, line in frames))
        own = frames[0]
        return StackInfo(pid, (own[0], own[1], 0, pid), functions, (own[0], own[1], own[2], pid), lines, frames,
                         bool(stack.kind & STACK_INCOMPLETE))


ThreadStacks = dict[tuple[int, int], list[int]]  # (thread key, stack id) -> tally


@dataclass
class Counts:
    """Time per (thread, stack) over a stretch of sampling, with the engine's figures for it."""

    stacks: ThreadStacks = field(default_factory=dict)
    ticks: int = 0
    late: int = 0
    skipped: int = 0  # slots of the schedule without a sample
    slot_seconds: float = 0.0  # the schedule's time its ticks and skipped slots cover
    failed: int = 0  # samples that failed as a whole
    torn: int = 0  # thread stacks that could not be read
    gil_samples: int = 0  # samples (of all processes) in which some thread held the GIL
    process_samples: int = 0
    gc_samples: int = 0
    gc_known: int = 0
    cpu_ns: int = 0  # the kernel's CPU time of the watched processes
    unseen_ns: int = 0  # ... of threads that ended between samples
    first_at: float = 0.0  # CLOCK_MONOTONIC of the first and last tick
    last_at: float = 0.0
    longest_gap: float = 0.0  # seconds: the longest time between two ticks

    def add_weights(self, weights: Iterable[Weight]) -> None:
        stacks = self.stacks
        for w in weights:
            tally = stacks.get((w.thread, w.stack))
            if tally is None:
                stacks[(w.thread, w.stack)] = [w.samples, w.running, w.cpu_ns, w.wall_ns, w.gil_ns]
            else:
                tally[0] += w.samples
                tally[1] += w.running
                tally[2] += w.cpu_ns
                tally[3] += w.wall_ns
                tally[4] += w.gil_ns

    def add_drain(self, drain: Drain) -> None:
        self.add_weights(drain.weights)
        self.ticks += drain.ticks
        self.late += drain.late
        self.skipped += drain.skipped
        self.slot_seconds += drain.slot_seconds
        self.longest_gap = max(self.longest_gap, drain.longest_gap)
        if drain.ticks:
            self.first_at = self.first_at or drain.first_at
            self.last_at = drain.last_at
        for p in drain.processes:
            self.failed += p.failed
            self.torn += p.torn
            self.gil_samples += p.gil_samples
            self.process_samples += p.samples
            self.gc_samples += p.gc_samples
            self.gc_known += p.gc_known
            self.cpu_ns += p.cpu_ns
            self.unseen_ns += p.unseen_cpu_ns

    def fold(self, threads: dict[int, int]) -> None:
        """Merge the stacks of threads[key] into threads' fold keys (finished threads)."""
        for (thread, stack) in [k for k in self.stacks if k[0] in threads]:
            tally = self.stacks.pop((thread, stack))
            into = self.stacks.setdefault((threads[thread], stack), new_tally())
            add_into(into, tally)


def timed_stacks(counts: Counts, book: StackBook, mode: str,
                 keep: Callable[[int], bool] | None = None) -> Iterator[tuple[StackInfo, float]]:
    """Every counted stack with time in `mode`, decoded, and its seconds; keep: which threads'
    stacks count (None: all)."""
    index = MODE_INDEX[mode]
    for (thread, stack), tally in counts.stacks.items():
        seconds = tally[index] / 1e9
        if not seconds or (keep is not None and not keep(thread)):
            continue
        info = book.info(stack)
        if info is not None:
            yield info, seconds


# A function's figures: [own samples, own cpu, own wall, own gil, total samples, total cpu,
# total wall, total gil]
OWN, TOTAL = 0, 4


class FunctionTable:
    """Per-function figures in both views (by function, by line), all three modes at once."""

    def __init__(self, book: StackBook):
        self.book = book
        self.by_function: dict[RowKey, list[int]] = {}
        self.by_line: dict[RowKey, list[int]] = {}

    def add_stack(self, stack_id: int, tally: list[int]) -> None:
        info = self.book.info(stack_id)
        if info is None:
            return
        figures = (tally[SAMPLES], tally[CPU], tally[WALL], tally[GIL])
        self._add(self.by_function, info.own_function, info.functions, figures)
        self._add(self.by_line, info.own_line, info.lines, figures)

    @staticmethod
    def _add(table: dict[RowKey, list[int]], own_key: RowKey, keys: tuple[RowKey, ...],
             figures: tuple[int, int, int, int]) -> None:
        own = table.get(own_key)
        if own is None:
            own = table[own_key] = [0] * 8
        for i in range(4):
            own[OWN + i] += figures[i]
        for key in keys:  # distinct already: recursion counts once
            row = table.get(key)
            if row is None:
                row = table[key] = [0] * 8
            for i in range(4):
                row[TOTAL + i] += figures[i]

    def add_counts(self, counts: Counts, keep: Callable[[int], bool] | None = None) -> None:
        """Every counted stack, or those of the threads `keep` says yes to. Threads of a pool
        share their stacks: summed per stack first, each stack's frames are gone through once
        (a hundred threads, ~15 stacks: ~300 (thread, stack) pairs a refresh)."""
        by_stack: dict[int, list[int]] = {}
        for (thread, stack), tally in counts.stacks.items():
            if keep is not None and not keep(thread):
                continue
            into = by_stack.get(stack)
            if into is None:
                by_stack[stack] = list(tally)
            else:  # a tally's five fields, spelled out: this loop runs per pair
                into[0] += tally[0]
                into[1] += tally[1]
                into[2] += tally[2]
                into[3] += tally[3]
                into[4] += tally[4]
        for stack, tally in by_stack.items():
            self.add_stack(stack, tally)

    def merge(self, other: FunctionTable) -> None:
        for mine, theirs in ((self.by_function, other.by_function), (self.by_line, other.by_line)):
            for key, row in theirs.items():
                into = mine.get(key)
                if into is None:
                    mine[key] = list(row)
                else:
                    for i in range(8):
                        into[i] += row[i]

    def rows(self, by_line: bool) -> dict[RowKey, list[int]]:
        return self.by_line if by_line else self.by_function


def mode_column(mode: str) -> int:
    """Which of a function's time figures a mode shows (offset from OWN or TOTAL)."""
    return {"cpu": 1, "wall": 2, "gil": 3}[mode]
