"""Who calls a function and what it calls, from the stacks counted since the last reset. Pure.

Each stack the function appears in counts once for it, once for each distinct caller (the frame
just outside one of its occurrences) and once for each distinct callee (the frame just inside).
Shares are of the function's total time, so callers add up to 100% unless recursion makes a
stack count for two of them.
"""

from __future__ import annotations

from collections.abc import Callable

from .aggregate import StackCounts, StackDecoder
from .model import CallGraph, Neighbour, RowKey
from .records import FRAME

ROOT: RowKey = ("(thread start)", "", 0, 0)  # the caller of an outermost frame
SELF: RowKey = ("(itself)", "", 0, 0)  # the "callee" of samples taken in the function itself


def call_graph(counts: StackCounts, decoder: StackDecoder, focus: RowKey, by_line: bool,
               keep: Callable[[tuple[int, ...]], bool] | None = None) -> CallGraph:
    """keep: which threads' stacks count (None: all)."""
    total = 0.0
    callers: dict[RowKey, float] = {}
    callees: dict[RowKey, float] = {}
    for (thread_key, stack), (_, seconds) in counts.counts.items():
        if keep is not None and not keep(thread_key):
            continue
        pid = thread_key[0]
        keys = [(*decoder.name(pid, code_id), line if by_line else 0, pid)
                for code_id, line in FRAME.iter_unpack(stack)]
        at = [i for i, key in enumerate(keys) if key == focus]
        if not at:
            continue
        total += seconds
        for caller in {keys[i + 1] if i + 1 < len(keys) else ROOT for i in at}:
            callers[caller] = callers.get(caller, 0.0) + seconds
        for callee in {keys[i - 1] if i else SELF for i in at}:
            callees[callee] = callees.get(callee, 0.0) + seconds
    return CallGraph(focus, total, _ranked(callers, total), _ranked(callees, total))


def _ranked(seconds: dict[RowKey, float], total: float) -> tuple[Neighbour, ...]:
    ordered = sorted(seconds.items(), key=lambda item: (-item[1], item[0]))
    return tuple(Neighbour(key, s, s / total if total else 0.0) for key, s in ordered)
