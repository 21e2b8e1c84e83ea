"""Who calls a function and what it calls, from the stacks counted since the last reset. Pure.

Made from the engine's per-node sums over its stack tree (Engine.aggregate with nodes). A stack
through the function is counted once, at the function's outermost call on it (the node where it
first occurs on its path): its caller is the frame just outside that call (the thread's start for
an outermost frame), its callee the frame just inside (or the function itself, when the stack
ends there). So callers add up to the function's total, and so do callees, recursion or not; a
recursive function is its own callee. A stack known to be incomplete (cut at the depth limit,
or read while it changed) gives no edges: its outermost frame is not really called from nowhere;
nor does a coarse one (kept as its set of frames past pytop's memory bound: no call order).
"""

from __future__ import annotations

from collections.abc import Iterable

from .model import CallGraph, Mode, Neighbour, RowKey
from .records import NODE_FIRST_FUNCTION, NODE_FIRST_LINE, STACK_COARSE, STACK_INCOMPLETE, NodeRow
from .stack_book import StackBook
from .tally import mode_column

ROOT: RowKey = ("(thread start)", "", 0, 0)  # the caller of an outermost frame
SELF: RowKey = ("(itself)", "", 0, 0)  # the "callee" of samples taken in the function itself


def call_graph(rows: Iterable[NodeRow], book: StackBook, focus: RowKey, by_line: bool,
               mode: Mode = "cpu") -> CallGraph:
    col = mode_column(mode)
    first = NODE_FIRST_LINE if by_line else NODE_FIRST_FUNCTION
    rows = list(rows)
    own = {row.node: row.own[col] / 1e9 for row in rows}
    total_of = {row.node: row.total[col] / 1e9 for row in rows}
    at = [row.node for row in rows
          if book.known(row.node) and book.parent[row.node] and book.flags[row.node] & first
          and book.key(row.node, by_line) == focus]
    children: dict[int, list[int]] = {}
    wanted = set(at)
    for row in rows:
        parent = book.parent[row.node] if book.known(row.node) else 0
        while parent and parent not in wanted and book.hidden(parent):  # inside a hidden task frame
            parent = book.parent[parent]
        if parent in wanted:
            children.setdefault(parent, []).append(row.node)
    total = 0.0
    callers: dict[RowKey, float] = {}
    callees: dict[RowKey, float] = {}
    for node in at:
        seconds = total_of.get(node, 0.0)
        if not seconds:
            continue
        total += seconds
        if book.kind[node] & (STACK_INCOMPLETE | STACK_COARSE):
            continue
        caller = book.parent[node]
        while caller and book.parent[caller] and book.hidden(caller):
            caller = book.parent[caller]
        key = book.key(caller, by_line) if book.parent[caller] else ROOT
        callers[key] = callers.get(key, 0.0) + seconds
        itself = own.get(node, 0.0)
        for child in children.get(node, ()):
            if book.hidden(child):  # its own time is the function's; its children are callees
                itself += own.get(child, 0.0)
                continue
            callees[book.key(child, by_line)] = callees.get(book.key(child, by_line), 0.0) + total_of.get(child, 0.0)
        if itself:
            callees[SELF] = callees.get(SELF, 0.0) + itself
    return CallGraph(focus, total, _ranked(callers, total), _ranked(callees, total))


def _ranked(seconds: dict[RowKey, float], total: float) -> tuple[Neighbour, ...]:
    ordered = sorted(((key, s) for key, s in seconds.items() if s), key=lambda item: (-item[1], item[0]))
    return tuple(Neighbour(key, s, s / total if total else 0.0) for key, s in ordered)
