"""Callers and callees from stack counts: pure logic."""

from __future__ import annotations

import pytest

from pytop.core.aggregate import StackCounts, StackDecoder
from pytop.core.callgraph import ROOT, SELF, call_graph
from pytop.core.records import FRAME

NAMES = {1: ("main", "app.py"), 2: ("handle", "app.py"), 3: ("render", "app.py"), 4: ("query", "db.py"),
         5: ("walk", "tree.py")}


def stack(*codes: int) -> bytes:
    """Innermost first; line = code id * 10."""
    return b"".join(FRAME.pack(code, code * 10) for code in codes)


PID = 7
T, U = (PID, 1, 101, 0), (PID, 2, 102, 0)


def key(code: int) -> tuple[str, str, int, int]:
    return (*NAMES[code], 0, PID)


def decoder() -> StackDecoder:
    return StackDecoder(lambda pid, code: NAMES[code])


def counts(*stacks: tuple[bytes, float]) -> StackCounts:
    c = StackCounts()
    for s, seconds in stacks:
        c.counts[(T, s)] = [1, seconds]
    return c


def test_callers_and_callees_with_their_shares() -> None:
    c = counts((stack(3, 2, 1), 3.0), (stack(4, 2, 1), 1.0), (stack(2, 1), 1.0), (stack(4, 1), 5.0))
    graph = call_graph(c, decoder(), key(2), by_line=False)
    assert graph.total_seconds == pytest.approx(5.0)
    assert [(n.key, n.share) for n in graph.callers] == [(key(1), pytest.approx(1.0))]
    assert [(n.key, n.seconds) for n in graph.callees] == [(key(3), 3.0), (SELF, 1.0), (key(4), 1.0)]
    query = call_graph(c, decoder(), key(4), by_line=False)
    assert [(n.key, n.seconds) for n in query.callers] == [(key(1), 5.0), (key(2), 1.0)]


def test_outermost_frames_are_called_by_the_thread_start() -> None:
    graph = call_graph(counts((stack(2, 1), 1.0)), decoder(), key(1), by_line=False)
    assert [n.key for n in graph.callers] == [ROOT]


def test_recursion_counts_each_stack_once() -> None:
    graph = call_graph(counts((stack(5, 5, 5, 1), 2.0)), decoder(), key(5), by_line=False)
    assert graph.total_seconds == 2.0
    assert {(n.key, n.seconds) for n in graph.callers} == {(key(5), 2.0), (key(1), 2.0)}
    assert {(n.key, n.seconds) for n in graph.callees} == {(key(5), 2.0), (SELF, 2.0)}


def test_by_line_and_by_thread() -> None:
    c = counts((stack(3, 2, 1), 3.0))
    c.counts[(U, stack(4, 2, 1))] = [1, 7.0]
    line_key = ("handle", "app.py", 20, PID)
    graph = call_graph(c, decoder(), line_key, by_line=True, keep=lambda thread: thread == U)
    assert graph.total_seconds == 7.0
    assert [n.key for n in graph.callees] == [("query", "db.py", 40, PID)]
