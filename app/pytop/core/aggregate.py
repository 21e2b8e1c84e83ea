"""Turning samples into per-function figures. Pure: no threads, no I/O, no target.

A sample is a list of (thread key, stack) pairs (thread keys start with the pid, since code ids
are per process) plus the real time it stands for (the elapsed
interval since the previous sample, so figures stay right when sampling falls behind). Stacks
are the unwinder's packed (code id, line) frames, innermost first, and double as keys: a window
and the time since the last reset are kept as counts per unique stack, so memory grows with the
number of distinct stacks, not with the number of samples.

Own: the function is the innermost frame. Total: the function is anywhere in the stack; a
recursive function is counted once per stack.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .model import FunctionRow, RowKey
from .records import FRAME

Describe = Callable[[int, int], tuple[str, str]]  # (pid, code id) -> (function, filename)



@dataclass
class Figures:
    own_count: int = 0
    total_count: int = 0
    own_time: float = 0.0
    total_time: float = 0.0


@dataclass
class StackCounts:
    """Samples per (thread, stack), with the time they stand for."""

    counts: dict[tuple[tuple[int, ...], bytes], list[Any]] = field(default_factory=dict)  # [count, seconds]
    samples: int = 0  # sampling events
    thread_samples: int = 0
    duration: float = 0.0  # sum of the sampling events' intervals
    gil_samples: int = 0  # events in which some thread held the GIL
    active_thread_samples: int = 0
    gc_samples: int = 0  # events taken while the garbage collector ran
    gc_known: int = 0  # events in which the target said whether it did

    def add(self, dt: float, stacks: Iterable[tuple[tuple[int, ...], bytes]]) -> None:
        self.samples += 1
        self.duration += dt
        counts = self.counts
        for key in stacks:
            entry = counts.get(key)
            if entry is None:
                counts[key] = [1, dt]
            else:
                entry[0] += 1
                entry[1] += dt


class Decoded(NamedTuple):
    """What one stack contributes: its innermost function/line and every distinct one in it."""

    own_function: RowKey
    functions: tuple[RowKey, ...]
    own_line: RowKey
    lines: tuple[RowKey, ...]


class StackDecoder:
    """Stack bytes -> Decoded, remembered: the same stacks come back window after window, so
    each is decoded (and its names looked up) once."""

    MAX_REMEMBERED = 500_000

    def __init__(self, describe: Describe):
        self.describe = describe
        self.names: dict[tuple[int, int], tuple[str, str]] = {}
        self._decoded: dict[tuple[int, bytes], Decoded | None] = {}

    def name(self, pid: int, code_id: int) -> tuple[str, str]:
        """(function, filename) of a code id of process `pid`, asked once."""
        name = self.names.get((pid, code_id))
        if name is None:
            name = self.names[(pid, code_id)] = self.describe(pid, code_id)
        return name

    def decode(self, pid: int, stack: bytes) -> Decoded | None:
        decoded = self._decoded.get((pid, stack), False)
        if decoded is not False:
            return decoded  # type: ignore[return-value]
        functions: list[RowKey] = []
        lines: list[RowKey] = []
        for code_id, line in FRAME.iter_unpack(stack):
            function, filename = self.name(pid, code_id)
            functions.append((function, filename, 0, pid))
            lines.append((function, filename, line, pid))
        result = None
        if functions:
            result = Decoded(functions[0], tuple(dict.fromkeys(functions)), lines[0], tuple(dict.fromkeys(lines)))
        if len(self._decoded) >= self.MAX_REMEMBERED:
            self._decoded.clear()
        self._decoded[(pid, stack)] = result
        return result


class FunctionTable:
    """Per-function figures in both views (by function, by line), built from stack counts."""

    def __init__(self, decoder: StackDecoder):
        self.decoder = decoder
        self.by_function: dict[RowKey, Figures] = {}
        self.by_line: dict[RowKey, Figures] = {}

    def add_stack(self, pid: int, stack: bytes, count: int, seconds: float) -> None:
        decoded = self.decoder.decode(pid, stack)
        if decoded is None:
            return
        self._add(self.by_function, decoded.own_function, decoded.functions, count, seconds)
        self._add(self.by_line, decoded.own_line, decoded.lines, count, seconds)

    @staticmethod
    def _add(table: dict[RowKey, Figures], own_key: RowKey, keys: tuple[RowKey, ...], count: int,
             seconds: float) -> None:
        own = table.get(own_key)
        if own is None:
            own = table[own_key] = Figures()
        own.own_count += count
        own.own_time += seconds
        for key in keys:  # distinct already: recursion counts once
            figures = table.get(key)
            if figures is None:
                figures = table[key] = Figures()
            figures.total_count += count
            figures.total_time += seconds

    def add_counts(self, counts: StackCounts, keep: Callable[[tuple[int, ...]], bool] | None = None) -> None:
        """Every counted stack (thread keys start with the pid), or those whose thread `keep`s."""
        for (thread_key, stack), (count, seconds) in counts.counts.items():
            if keep is None or keep(thread_key):
                self.add_stack(thread_key[0], stack, count, seconds)

    def rows(self, by_line: bool) -> dict[RowKey, Figures]:
        return self.by_line if by_line else self.by_function


class Aggregator:
    """The current refresh window and everything since the last reset."""

    def __init__(self, describe: Describe):
        self.decoder = StackDecoder(describe)
        self.window = StackCounts()
        self.total = StackCounts()
        self.totals = FunctionTable(self.decoder)

    def add_sample(self, dt: float, stacks: Sequence[tuple[tuple[int, ...], bytes]], gil: bool,
                   active_threads: int, threads: int, gc: int = -1) -> None:
        """gc: 1 if the garbage collector was running, 0 if not, -1 if unknown."""
        for counts in (self.window, self.total):
            counts.add(dt, stacks)
            counts.thread_samples += threads
            counts.gil_samples += gil
            counts.active_thread_samples += active_threads
            counts.gc_known += gc >= 0
            counts.gc_samples += gc == 1

    def close_window(self) -> tuple[StackCounts, FunctionTable]:
        """End the current window: its figures join the totals; returns them for display."""
        window, self.window = self.window, StackCounts()
        figures = FunctionTable(self.decoder)
        figures.add_counts(window)
        for table_name in ("by_function", "by_line"):
            total_table = getattr(self.totals, table_name)
            for key, fig in getattr(figures, table_name).items():
                into = total_table.get(key)
                if into is None:
                    into = total_table[key] = Figures()
                into.own_count += fig.own_count
                into.total_count += fig.total_count
                into.own_time += fig.own_time
                into.total_time += fig.total_time
        return window, figures

    def reset(self) -> None:
        self.window = StackCounts()
        self.total = StackCounts()
        self.totals = FunctionTable(self.decoder)


def rows_of(totals: FunctionTable, window: FunctionTable, window_seconds: float,
            by_line: bool) -> tuple[FunctionRow, ...]:
    """Every function seen since the last reset, with the current window's percentages."""
    now = window.rows(by_line)
    scale = 100.0 / window_seconds if window_seconds > 0 else 0.0
    rows = []
    for key, total in totals.rows(by_line).items():
        recent = now.get(key)
        function, filename, line, pid = key
        rows.append(FunctionRow(
            key=key, function=function, filename=filename, line=line if by_line else None, pid=pid,
            own_pct=recent.own_time * scale if recent else 0.0,
            total_pct=recent.total_time * scale if recent else 0.0,
            own_time=total.own_time, total_time=total.total_time,
            own_count=int(total.own_count), total_count=int(total.total_count),
        ))
    return tuple(rows)
