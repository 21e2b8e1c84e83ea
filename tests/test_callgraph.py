"""Callers and callees from stack counts: pure logic."""

from __future__ import annotations

import pytest

from figures_fakes import PID, Stacks, book_with, counts, weight
from pytop.core.callgraph import ROOT, SELF, call_graph
from pytop.core.records import STACK_FRAMES, STACK_INCOMPLETE

NAMES = {1: ("main", "app.py"), 2: ("handle", "app.py"), 3: ("render", "app.py"), 4: ("query", "db.py"),
         5: ("walk", "tree.py")}
T, U = 1, 2


def key(code: int) -> tuple[str, str, int, int]:
    return (*NAMES[code], 0, PID)


@pytest.fixture
def stacks() -> Stacks:
    return Stacks(book_with(NAMES))


def stack_of(stacks: Stacks, *codes: int, kind: int = STACK_FRAMES) -> int:
    """Innermost first; line = code id * 10."""
    return stacks(*((code, code * 10) for code in codes), kind=kind)


def test_callers_and_callees_with_their_shares(stacks: Stacks) -> None:
    c = counts(weight(stack_of(stacks, 3, 2, 1), T, cpu=3.0), weight(stack_of(stacks, 4, 2, 1), T, cpu=1.0),
               weight(stack_of(stacks, 2, 1), T, cpu=1.0), weight(stack_of(stacks, 4, 1), T, cpu=5.0))
    graph = call_graph(c, stacks.book, key(2), by_line=False)
    assert graph.total_seconds == pytest.approx(5.0)
    assert [(n.key, n.share) for n in graph.callers] == [(key(1), pytest.approx(1.0))]
    assert [(n.key, n.seconds) for n in graph.callees] == [(key(3), 3.0), (SELF, 1.0), (key(4), 1.0)]
    query = call_graph(c, stacks.book, key(4), by_line=False)
    assert [(n.key, n.seconds) for n in query.callers] == [(key(1), 5.0), (key(2), 1.0)]


def test_outermost_frames_are_called_by_the_thread_start(stacks: Stacks) -> None:
    graph = call_graph(counts(weight(stack_of(stacks, 2, 1), T, cpu=1.0)), stacks.book, key(1), by_line=False)
    assert [n.key for n in graph.callers] == [ROOT]


def test_an_incomplete_stack_makes_no_edges(stacks: Stacks) -> None:
    """A stack cut at the depth limit or torn: its outermost frame is not called from nowhere."""
    cut = stack_of(stacks, 3, 2, kind=STACK_INCOMPLETE)
    graph = call_graph(counts(weight(cut, T, cpu=2.0)), stacks.book, key(2), by_line=False)
    assert graph.total_seconds == pytest.approx(2.0)
    assert graph.callers == () and graph.callees == ()


def test_recursion_counts_each_stack_once(stacks: Stacks) -> None:
    graph = call_graph(counts(weight(stack_of(stacks, 5, 5, 5, 1), T, cpu=2.0)), stacks.book, key(5), by_line=False)
    assert graph.total_seconds == 2.0
    assert {(n.key, n.seconds) for n in graph.callers} == {(key(5), 2.0), (key(1), 2.0)}
    assert {(n.key, n.seconds) for n in graph.callees} == {(key(5), 2.0), (SELF, 2.0)}


def test_by_line_by_thread_and_mode(stacks: Stacks) -> None:
    c = counts(weight(stack_of(stacks, 3, 2, 1), T, cpu=3.0), weight(stack_of(stacks, 4, 2, 1), U, cpu=0.5, wall=7.0))
    line_key = ("handle", "app.py", 20, PID)
    graph = call_graph(c, stacks.book, line_key, by_line=True, mode="wall", keep=lambda thread: thread == U)
    assert graph.total_seconds == 7.0
    assert [n.key for n in graph.callees] == [("query", "db.py", 40, PID)]
