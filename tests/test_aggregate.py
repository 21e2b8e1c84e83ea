"""Per-function figures from the engine's rows, and the time per (thread, stack) kept beside
them: pure logic, no process. (The engine's sums themselves: test_stack_tree.py.)"""

from __future__ import annotations

import pytest

from figures_fakes import PID, PROCESS, Tree, counts, row, weight
from pytop.core.counts import Counts
from pytop.core.function_sums import FunctionSums
from pytop.core.records import (
    DRAIN_ALIVE,
    STACK_EMPTY,
    STACK_INCOMPLETE,
    STACK_NATIVE,
    TASK_FILENAME,
    Function,
    ThreadUpdate,
)
from pytop.core.snapshot import Figures, rows_of, thread_rows
from pytop.core.stack_book import StackBook
from pytop.core.tally import CPU, OWN, TOTAL, mode_column
from pytop.core.threads import ThreadBook, fold_key

NAMES = {1: ("main", "app.py"), 2: ("work", "app.py"), 3: ("helper", "lib.py"), 4: ("fib", "app.py")}
A, B = 1, 2  # thread keys
S = int(1e9)


def key(function: int, line: int = 0) -> tuple[str, str, int, int]:
    return (*NAMES[function], line, PID)


@pytest.fixture
def tree() -> Tree:
    return Tree(NAMES)


def test_rows_become_keyed_figures(tree: Tree) -> None:
    table = FunctionSums(tree.book)
    table.add_rows([row(3, own=(5, S, 2 * S, 0), total=(5, S, 2 * S, 0)), row(1, total=(5, S, 2 * S, 0))],
                   [row(3, own=(5, S, 2 * S, 0), total=(5, S, 2 * S, 0), line=30)])
    f = table.by_function
    assert (f[key(3)][OWN], f[key(3)][TOTAL]) == (5, 5)
    assert f[key(1)][TOTAL + mode_column("cpu")] == S and f[key(1)][TOTAL + mode_column("wall")] == 2 * S
    assert f[key(1)][OWN + mode_column("cpu")] == 0
    assert table.by_line[key(3, 30)][OWN] == 5
    table.add_rows([row(3, own=(1, S, S, 0), total=(1, S, S, 0))], [])  # a later drain adds up
    assert table.by_function[key(3)][OWN + mode_column("cpu")] == 2 * S


def test_a_table_of_ever_new_functions_folds_its_smallest_rows(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    """Generated code with new names all the time: the rows with the least time fold into one,
    whose share stays that small; every second's time is still in the table."""
    from pytop.core import function_sums

    monkeypatch.setitem(function_sums.MAX_ROWS, False, 100)
    names = {n: (f"generated_{n}", "<template>") for n in range(1, 1001)}
    names[5000] = ("busy", "app.py")
    tree = Tree(names)
    table = FunctionSums(tree.book)
    for n in range(1, 1001):
        table.add_rows([row(n, own=(1, 1000, 0, 0), total=(1, 1000, 0, 0)),
                        row(5000, own=(1, S, 0, 0), total=(1, S, 0, 0))], [], bounded=True)
    assert len(table.by_function) <= 100
    busy = table.by_function[("busy", "app.py", 0, PID)]
    folded = table.by_function[function_sums.FOLDED]
    assert busy[OWN + 1] == 1000 * S  # what matters is never folded
    assert sum(r[OWN + 1] for r in table.by_function.values()) == 1000 * S + 1000 * 1000
    assert folded[OWN + 1] / (1000 * S) < 0.01


def test_counts_keep_unique_stacks_not_samples(tree: Tree) -> None:
    c = Counts()
    s = tree((2, 20), (1, 10))
    for _ in range(1000):
        c.add_weights([weight(s, A, cpu=0.001, wall=0.001)])
    assert len(c.stacks) == 1
    assert c.stacks[(A, s)][0] == 1000
    assert c.stacks[(A, s)][CPU] == pytest.approx(1e9, rel=1e-6)
    assert c.threads[A][CPU] == pytest.approx(1e9, rel=1e-6)


def test_each_mode_shows_its_own_time(tree: Tree) -> None:
    """A sleeping thread has wall time and no CPU time: cpu mode leaves its functions out."""
    table = FunctionSums(tree.book)
    table.add_rows([row(2, own=(1, int(0.9e9), S, int(0.8e9)), total=(1, int(0.9e9), S, int(0.8e9))),
                    row(3, own=(1, 0, S, 0), total=(1, 0, S, 0)),
                    row(1, total=(2, int(0.9e9), 2 * S, int(0.8e9)))], [])
    cpu = {r.key: r for r in rows_of(table, table, 1.0, "cpu", by_line=False)}
    wall = {r.key: r for r in rows_of(table, table, 1.0, "wall", by_line=False)}
    gil = {r.key: r for r in rows_of(table, table, 1.0, "gil", by_line=False)}
    assert key(3) not in cpu and cpu[key(2)].own_time == pytest.approx(0.9) and cpu[key(2)].own_pct == pytest.approx(90)
    assert wall[key(3)].own_time == pytest.approx(1.0) and wall[key(1)].total_pct == pytest.approx(200)
    assert set(gil) == {key(2), key(1)} and gil[key(2)].own_time == pytest.approx(0.8)


def test_window_shares_and_totals_since_reset(tree: Tree) -> None:
    totals = FunctionSums(tree.book)
    first = FunctionSums(tree.book)
    first.add_rows([row(2, own=(1, S, 0, 0), total=(1, S, 0, 0)), row(3, own=(1, S, 0, 0), total=(1, S, 0, 0)),
                    row(1, total=(2, 2 * S, 0, 0))], [])
    totals.merge(first)
    rows = {r.key: r for r in rows_of(totals, first, 1.0, "cpu", by_line=False)}
    # Two busy threads: like top, each function is 100% of one thread's time.
    assert rows[key(2)].own_pct == pytest.approx(100)
    assert rows[key(1)].total_pct == pytest.approx(200)
    second = FunctionSums(tree.book)
    second.add_rows([row(2, own=(1, S // 2, 0, 0), total=(1, S // 2, 0, 0)), row(1, total=(1, S // 2, 0, 0))], [])
    totals.merge(second)
    rows = {r.key: r for r in rows_of(totals, second, 1.0, "cpu", by_line=False)}
    assert rows[key(3)].own_pct == 0 and rows[key(3)].own_time == pytest.approx(1.0)
    assert rows[key(2)].own_pct == pytest.approx(50) and rows[key(2)].own_time == pytest.approx(1.5)


def test_stack_kinds_without_frames_are_pseudo_functions(tree: Tree) -> None:
    native, empty = tree(kind=STACK_NATIVE), tree(kind=STACK_EMPTY | STACK_INCOMPLETE)
    book = tree.book
    assert book.own_function(native) == ("(thread without Python)", "", 0, PID)
    assert book.own_function(empty) == ("(no Python frame)", "", 0, PID)
    assert not book.has_frames(native) and book.has_frames(tree((1, 1)))
    assert book.incomplete(empty) and not book.incomplete(native)
    info = book.info(native)
    assert info is not None and info.frames == (("(thread without Python)", "", 0),)


def test_tasks_hidden_drop_their_rows_and_give_their_own_time_out() -> None:
    tree = Tree({1: ("run", "loop.py"), 2: ("crunch", TASK_FILENAME), 3: ("spin", "app.py")}, tasks=[2])
    table = FunctionSums(tree.book)
    table.add_rows([row(2, own=(1, S, 0, 0), total=(2, 2 * S, 0, 0), hidden=(0, 0, 0, 0)),
                    row(1, total=(2, 2 * S, 0, 0), hidden=(1, S, 0, 0)),
                    row(3, own=(1, S, 0, 0), total=(1, S, 0, 0))], [])
    task = ("task crunch", TASK_FILENAME, 0, PID)
    shown = {r.key: r.own_time for r in rows_of(table, table, 1.0, "cpu", False, tasks=True)}
    hidden = {r.key: r.own_time for r in rows_of(table, table, 1.0, "cpu", False, tasks=False)}
    assert shown == {task: 1.0, ("run", "loop.py", 0, PID): 0.0, ("spin", "app.py", 0, PID): 1.0}
    assert hidden == {("run", "loop.py", 0, PID): 1.0, ("spin", "app.py", 0, PID): 1.0}


def test_evicted_stacks_leave_their_detail_and_keep_their_time(tree: Tree) -> None:
    old, new = tree((2, 1), (1, 1)), tree((3, 1), (1, 1))
    c = counts(weight(old, A, cpu=2.0), weight(new, A, cpu=1.0), weight(old, B, cpu=0.5))
    c.forget([old])
    assert set(c.stacks) == {(A, new)}
    assert c.aged[A][CPU] == int(2e9) and c.aged[B][CPU] == int(0.5e9)
    assert c.threads[A][CPU] == int(3e9)  # a thread's own sum stays whole
    assert c.aged_share(CPU) == pytest.approx(2.5 / 3.5)
    assert c.leaf_tallies() == [(new, 1, int(1e9), 0, 0)]


def test_tallies_per_leaf_sum_the_threads(tree: Tree) -> None:
    s = tree((2, 1))
    c = counts(weight(s, A, cpu=1.0, wall=2.0), weight(s, B, cpu=0.5, gil=0.25))
    assert c.leaf_tallies() == [(s, 2, int(1.5e9), int(2e9), int(0.25e9))]
    assert c.leaf_tallies(keep=lambda thread: thread == B) == [(s, 1, int(0.5e9), 0, int(0.25e9))]


def test_finished_threads_fold_into_one_key(tree: Tree) -> None:
    s = tree((2, 1))
    c = counts(weight(s, 5, cpu=1.0), weight(s, 6, cpu=2.0), weight(s, 7, cpu=4.0))
    c.fold({5: -1, 6: -1})
    assert c.stacks[(-1, s)][CPU] == int(3e9) and c.stacks[(7, s)][CPU] == int(4e9) and len(c.stacks) == 2
    assert c.threads[-1][CPU] == int(3e9) and set(c.threads) == {-1, 7}


def test_the_book_forgets_evicted_nodes_and_learns_reused_ids(tree: Tree) -> None:
    leaf = tree((2, 20), (1, 10))
    info = tree.book.info(leaf)
    assert info is not None and info.frames == (("work", "app.py", 20), ("main", "app.py", 10))
    nodes = tree.book.nodes
    tree.book.forget([leaf])
    assert tree.book.info(leaf) is None and tree.book.nodes == nodes - 1
    tree.ids = {k: v for k, v in tree.ids.items() if v != leaf}
    again = tree((3, 30), (1, 10))  # the engine reuses an evicted id for a new node
    assert again == leaf and tree.book.info(again).frames[0] == ("helper", "lib.py", 30)  # type: ignore[union-attr]
    assert tree.book.nodes == nodes


def test_a_thread_that_ended_unnamed_and_without_python_is_folded_at_once() -> None:
    """A request thread seen only before it ran Python and got its name: nothing to show on its
    own. Its row is a folded one even when it is the only thread in it."""
    book = ThreadBook()
    started = ThreadUpdate(7, 0, 0x7F07, 4301, DRAIN_ALIVE, None, 2_000, 50_000, 0, 2, 0, 0, 0, 0, "R")
    book.update((started,), lambda process: PID, has_frames=lambda stack: False)
    book.update((started._replace(flags=0, cpu_ns=0, wall_ns=0, samples=0),), lambda process: PID)
    assert book.fold_finished() == {7: fold_key(0)}
    figures = Figures(threads=book)
    thread = next(iter(thread_rows(figures, "cpu", 1.0)))
    assert thread.folded and thread.threads == 1 and thread.label == "1 finished thread" and thread.samples == 2


def test_task_pseudo_frames_are_read_only_while_tasks_are_shown() -> None:
    tree = Tree({1: ("spin", "app.py"), 2: ("crunch", TASK_FILENAME), 3: ("(unnamed task)", TASK_FILENAME),
                 4: ("run", "loop.py")}, tasks=[2, 3])
    book: StackBook = tree.book
    one, two = tree((1, 5), (2, 0), (4, 10)), tree((1, 6), (3, 0), (4, 10))
    hidden = book.info(one)
    assert hidden is not None and [f[0] for f in hidden.frames] == ["spin", "run"]
    assert book.show_tasks(True) and not book.show_tasks(True)  # says when the reading changes
    shown, unnamed = book.info(one), book.info(two)
    assert shown is not None and [f[0] for f in shown.frames] == ["spin", "task crunch", "run"]
    assert unnamed is not None and unnamed.frames[1][0] == "(unnamed task)"
    assert book.show_tasks(False) and [f[0] for f in book.info(one).frames] == ["spin", "run"]  # type: ignore[union-attr]
    on_task = tree((2, 0), (4, 10))
    assert book.own_function(on_task) == ("run", "loop.py", 0, PID)  # hidden: the frame outside it
    book.show_tasks(True)
    assert book.own_function(on_task) == ("task crunch", TASK_FILENAME, 0, PID)


def test_functions_of_two_processes_are_told_apart() -> None:
    book = StackBook()
    book.pids.update({PROCESS: PID, 1: PID + 1})
    book.learn_functions([Function(1, PROCESS, 0, False, "work", "app.py"), Function(2, 1, 0, False, "work", "app.py")])
    assert book.name(1).key == ("work", "app.py", 0, PID) and book.name(2).key == ("work", "app.py", 0, PID + 1)
