"""Who calls a function and what it calls, from the stacks counted since the last reset. Pure.

Each stack the function appears in counts once for it, once for each distinct caller (the frame
just outside one of its occurrences) and once for each distinct callee (the frame just inside).
Shares are of the function's total time, so callers add up to 100% unless recursion makes a
stack count for two of them. A stack known to be incomplete (cut at the depth limit, or read
while it changed) gives no edges: its outermost frame is not really called from nowhere.
"""

from __future__ import annotations

from collections.abc import Callable

from .aggregate import Counts, StackBook, timed_stacks
from .model import CallGraph, Neighbour, RowKey

ROOT: RowKey = ("(thread start)", "", 0, 0)  # the caller of an outermost frame
SELF: RowKey = ("(itself)", "", 0, 0)  # the "callee" of samples taken in the function itself


def call_graph(counts: Counts, book: StackBook, focus: RowKey, by_line: bool, mode: str = "cpu",
               keep: Callable[[int], bool] | None = None) -> CallGraph:
    """keep: which threads' stacks count (None: all)."""
    total = 0.0
    callers: dict[RowKey, float] = {}
    callees: dict[RowKey, float] = {}
    for info, seconds in timed_stacks(counts, book, mode, keep):
        keys = [(function, filename, line if by_line else 0, info.pid) for function, filename, line in info.frames]
        at = [i for i, key in enumerate(keys) if key == focus]
        if not at:
            continue
        total += seconds
        if info.incomplete:
            continue
        for caller in {keys[i + 1] if i + 1 < len(keys) else ROOT for i in at}:
            callers[caller] = callers.get(caller, 0.0) + seconds
        for callee in {keys[i - 1] if i else SELF for i in at}:
            callees[callee] = callees.get(callee, 0.0) + seconds
    return CallGraph(focus, total, _ranked(callers, total), _ranked(callees, total))


def _ranked(seconds: dict[RowKey, float], total: float) -> tuple[Neighbour, ...]:
    ordered = sorted(seconds.items(), key=lambda item: (-item[1], item[0]))
    return tuple(Neighbour(key, s, s / total if total else 0.0) for key, s in ordered)
