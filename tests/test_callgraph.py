"""Callers and callees from stack counts: pure logic."""

from __future__ import annotations

import pytest

from figures_fakes import PID, Stacks, book_with, counts, weight
from pytop.core.callgraph import ROOT, SELF, call_graph
from pytop.core.calltree import CUT, SMALLER, call_tree, hottest_path
from pytop.core.calltree import ROOT as TREE_ROOT
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


def test_the_call_tree_merges_paths_from_the_start(stacks: Stacks) -> None:
    c = counts(weight(stack_of(stacks, 3, 2, 1), T, cpu=3.0), weight(stack_of(stacks, 4, 2, 1), U, cpu=1.0),
               weight(stack_of(stacks, 2, 1), T, cpu=1.0), weight(stack_of(stacks, 4, 1), T, cpu=5.5),
               weight(stack_of(stacks, 4, 3, kind=STACK_FRAMES | STACK_INCOMPLETE), T, cpu=0.5))
    tree = call_tree(c, stacks.book, by_line=False)
    assert tree.key == TREE_ROOT and tree.total == pytest.approx(11.0)
    (main, cut) = tree.children
    assert main.key == key(1) and main.total == pytest.approx(10.5) and main.own == 0.0
    assert [(n.key, n.total, n.own) for n in main.children] == [(key(4), 5.5, 5.5), (key(2), 5.0, 1.0)]
    handle = main.children[1]
    assert [(n.key, n.total) for n in handle.children] == [(key(3), 3.0), (key(4), 1.0)]
    # A stack cut short hangs under its own node, not as if it were a thread's start.
    assert cut.key == CUT and [n.key for n in cut.children] == [key(3)] and cut.children[0].children[0].own == 0.5
    assert hottest_path(tree) == (key(1), key(4))
    assert hottest_path(tree, through=key(3)) == (key(1), key(2), key(3))
    only_u = call_tree(c, stacks.book, by_line=False, keep=lambda thread: thread == U)
    assert only_u.total == pytest.approx(1.0)


def test_the_call_tree_folds_tiny_branches(stacks: Stacks) -> None:
    c = counts(weight(stack_of(stacks, 2, 1), T, cpu=10.0), weight(stack_of(stacks, 3, 1), T, cpu=0.001),
               weight(stack_of(stacks, 4, 1), T, cpu=0.002))
    (main,) = call_tree(c, stacks.book, by_line=False).children
    assert [n.key for n in main.children] == [key(2), SMALLER] and main.children[1].total == pytest.approx(0.003)
