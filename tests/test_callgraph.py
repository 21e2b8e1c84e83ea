"""Callers, callees and the call tree from per-node sums: pure logic."""

from __future__ import annotations

import pytest

from figures_fakes import PID, Tree, counts, weight
from pytop.core.callgraph import ROOT, SELF, call_graph
from pytop.core.calltree import COARSE, CUT, SMALLER, call_tree, hottest_path, hottest_path_through
from pytop.core.calltree import ROOT as TREE_ROOT
from pytop.core.records import STACK_COARSE, STACK_FRAMES, STACK_INCOMPLETE, TASK_FILENAME

NAMES = {1: ("main", "app.py"), 2: ("handle", "app.py"), 3: ("render", "app.py"), 4: ("query", "db.py"),
         5: ("walk", "tree.py")}
T, U = 1, 2


def key(code: int) -> tuple[str, str, int, int]:
    return (*NAMES[code], 0, PID)


@pytest.fixture
def tree() -> Tree:
    return Tree(NAMES)


def stack_of(tree: Tree, *codes: int, kind: int = STACK_FRAMES) -> int:
    """Innermost first; line = code id * 10."""
    return tree(*((code, code * 10) for code in codes), kind=kind)


def test_callers_and_callees_with_their_shares(tree: Tree) -> None:
    c = counts(weight(stack_of(tree, 3, 2, 1), T, cpu=3.0), weight(stack_of(tree, 4, 2, 1), T, cpu=1.0),
               weight(stack_of(tree, 2, 1), T, cpu=1.0), weight(stack_of(tree, 4, 1), T, cpu=5.0))
    graph = call_graph(tree.rows(c), tree.book, key(2), by_line=False)
    assert graph.total_seconds == pytest.approx(5.0)
    assert [(n.key, n.share) for n in graph.callers] == [(key(1), pytest.approx(1.0))]
    assert [(n.key, n.seconds) for n in graph.callees] == [(key(3), 3.0), (SELF, 1.0), (key(4), 1.0)]
    query = call_graph(tree.rows(c), tree.book, key(4), by_line=False)
    assert [(n.key, n.seconds) for n in query.callers] == [(key(1), 5.0), (key(2), 1.0)]


def test_outermost_frames_are_called_by_the_thread_start(tree: Tree) -> None:
    c = counts(weight(stack_of(tree, 2, 1), T, cpu=1.0))
    graph = call_graph(tree.rows(c), tree.book, key(1), by_line=False)
    assert [n.key for n in graph.callers] == [ROOT]


def test_an_incomplete_stack_makes_no_edges(tree: Tree) -> None:
    """A stack cut at the depth limit or torn: its outermost frame is not called from nowhere."""
    cut = stack_of(tree, 3, 2, kind=STACK_INCOMPLETE)
    graph = call_graph(tree.rows(counts(weight(cut, T, cpu=2.0))), tree.book, key(2), by_line=False)
    assert graph.total_seconds == pytest.approx(2.0)
    assert graph.callers == () and graph.callees == ()


def test_a_coarse_stack_counts_whole_and_makes_no_edges(tree: Tree) -> None:
    """A stack kept as its set of frames past pytop's memory bound: its time is its functions'
    (own and total), but its frames are in no call order, so no callers, no callees; in the
    tree it hangs under a node that says so."""
    whole = stack_of(tree, 3, 2, 1)
    coarse = stack_of(tree, 3, 1, 2, kind=STACK_COARSE)  # set order: not who called whom
    c = counts(weight(whole, T, cpu=1.0), weight(coarse, T, cpu=2.0))
    graph = call_graph(tree.rows(c), tree.book, key(2), by_line=False)
    assert graph.total_seconds == pytest.approx(3.0)
    assert [(n.key, n.seconds) for n in graph.callers] == [(key(1), 1.0)]
    made = call_tree(tree.rows(c), tree.book, by_line=False)
    assert made.total == pytest.approx(3.0)
    (held, main) = made.children  # hottest first
    assert main.key == key(1) and main.total == pytest.approx(1.0)
    assert held.key == COARSE and held.total == pytest.approx(2.0)
    assert tree.book.info(coarse).frames[-1][0] == COARSE[0] and tree.book.info(coarse).incomplete


def test_recursion_counts_each_stack_once_at_its_outermost_call(tree: Tree) -> None:
    """Callers and callees each add up to the total: the stack counts at the outermost call,
    and a recursive function is its own callee."""
    c = counts(weight(stack_of(tree, 5, 5, 5, 1), T, cpu=2.0), weight(stack_of(tree, 5, 1), T, cpu=1.0))
    graph = call_graph(tree.rows(c), tree.book, key(5), by_line=False)
    assert graph.total_seconds == 3.0
    assert [(n.key, n.seconds) for n in graph.callers] == [(key(1), 3.0)]
    assert [(n.key, n.seconds) for n in graph.callees] == [(key(5), 2.0), (SELF, 1.0)]


def test_by_line_by_thread_and_mode(tree: Tree) -> None:
    c = counts(weight(stack_of(tree, 3, 2, 1), T, cpu=3.0), weight(stack_of(tree, 4, 2, 1), U, cpu=0.5, wall=7.0))
    line_key = ("handle", "app.py", 20, PID)
    graph = call_graph(tree.rows(c, keep=lambda thread: thread == U), tree.book, line_key, by_line=True, mode="wall")
    assert graph.total_seconds == 7.0
    assert [n.key for n in graph.callees] == [("query", "db.py", 40, PID)]


def test_a_hidden_task_frame_is_seen_through() -> None:
    tree = Tree({1: ("run", "loop.py"), 2: ("crunch", TASK_FILENAME), 3: ("spin", "app.py")}, tasks=[2])
    c = counts(weight(tree((3, 5), (2, 0), (1, 9)), T, cpu=2.0), weight(tree((2, 0), (1, 9)), T, cpu=1.0))
    run, spin = ("run", "loop.py", 0, PID), ("spin", "app.py", 0, PID)
    graph = call_graph(tree.rows(c), tree.book, run, by_line=False)
    assert [(n.key, n.seconds) for n in graph.callees] == [(spin, 2.0), (SELF, 1.0)]
    assert [(n.key, n.seconds) for n in call_graph(tree.rows(c), tree.book, spin, by_line=False).callers] == [
        (run, 2.0)]
    (top,) = call_tree(tree.rows(c), tree.book, by_line=False).children
    assert top.key == run and top.own == 1.0 and [n.key for n in top.children] == [spin]


def test_the_call_tree_merges_paths_from_the_start(tree: Tree) -> None:
    c = counts(weight(stack_of(tree, 3, 2, 1), T, cpu=3.0), weight(stack_of(tree, 4, 2, 1), U, cpu=1.0),
               weight(stack_of(tree, 2, 1), T, cpu=1.0), weight(stack_of(tree, 4, 1), T, cpu=5.5),
               weight(stack_of(tree, 4, 3, kind=STACK_FRAMES | STACK_INCOMPLETE), T, cpu=0.5))
    made = call_tree(tree.rows(c), tree.book, by_line=False)
    assert made.key == TREE_ROOT and made.total == pytest.approx(11.0)
    (main, cut) = made.children
    assert main.key == key(1) and main.total == pytest.approx(10.5) and main.own == 0.0
    assert [(n.key, n.total, n.own) for n in main.children] == [(key(4), 5.5, 5.5), (key(2), 5.0, 1.0)]
    handle = main.children[1]
    assert [(n.key, n.total) for n in handle.children] == [(key(3), 3.0), (key(4), 1.0)]
    # A stack cut short hangs under its own node, not as if it were a thread's start.
    assert cut.key == CUT and [n.key for n in cut.children] == [key(3)] and cut.children[0].children[0].own == 0.5
    assert hottest_path(made) == (key(1), key(4))
    assert hottest_path(made, through=key(3)) == (key(1), key(2), key(3))
    # T on a function: its path, and on down where its time goes (at the root: the whole way)
    assert hottest_path_through(made, key(1)) == (key(1), key(4))
    assert hottest_path_through(made, key(2)) == (key(1), key(2), key(3))
    assert hottest_path_through(made, CUT)[:2] == (CUT, key(3)) and len(hottest_path_through(made, CUT)) == 3
    only_u = call_tree(tree.rows(c, keep=lambda thread: thread == U), tree.book, by_line=False)
    assert only_u.total == pytest.approx(1.0)


def test_the_call_tree_folds_tiny_branches(tree: Tree) -> None:
    c = counts(weight(stack_of(tree, 2, 1), T, cpu=10.0), weight(stack_of(tree, 3, 1), T, cpu=0.001),
               weight(stack_of(tree, 4, 1), T, cpu=0.002))
    (main,) = call_tree(tree.rows(c), tree.book, by_line=False).children
    assert [n.key for n in main.children] == [key(2), SMALLER] and main.children[1].total == pytest.approx(0.003)


def test_direct_recursion_is_one_node_that_says_how_deep(tree: Tree) -> None:
    deep = (5,) * 50_000 + (1,)
    c = counts(weight(stack_of(tree, 3, *deep), T, cpu=2.0), weight(stack_of(tree, *deep), T, cpu=1.0))
    (main,) = call_tree(tree.rows(c), tree.book, by_line=False).children
    (walk,) = main.children
    assert walk.key == key(5) and walk.repeat == 50_000 and walk.total == 3.0 and walk.own == 1.0
    assert [(n.key, n.total) for n in walk.children] == [(key(3), 2.0)]
    assert hottest_path(call_tree(tree.rows(c), tree.book, by_line=False), through=key(3)) == (key(1), key(5), key(3))
