"""Aggregation of drained weights into per-function figures: pure logic, no process."""

from __future__ import annotations

import pytest

from figures_fakes import PID, Stacks, book_with, counts, weight
from pytop.core.aggregate import CPU, OWN, TOTAL, Counts, FunctionTable, mode_column
from pytop.core.records import DRAIN_ALIVE, STACK_EMPTY, STACK_INCOMPLETE, STACK_NATIVE, ThreadUpdate
from pytop.core.snapshot import Figures, rows_of, thread_rows
from pytop.core.threads import ThreadBook, fold_key

NAMES = {1: ("main", "app.py"), 2: ("work", "app.py"), 3: ("helper", "lib.py"), 4: ("fib", "app.py")}
A, B = 1, 2  # thread keys


def key(code_id: int, line: int = 0) -> tuple[str, str, int, int]:
    return (*NAMES[code_id], line, PID)


@pytest.fixture
def stacks() -> Stacks:
    return Stacks(book_with(NAMES))


def test_own_is_the_innermost_frame_and_total_every_frame(stacks: Stacks) -> None:
    table = FunctionTable(stacks.book)
    table.add_stack(stacks((3, 30), (2, 20), (1, 10)), [5, 0, int(0.5e9), int(2e9), 0])
    f = table.by_function
    assert (f[key(3)][OWN], f[key(3)][TOTAL]) == (5, 5)
    assert (f[key(2)][OWN], f[key(2)][TOTAL]) == (0, 5)
    assert f[key(1)][TOTAL + mode_column("cpu")] == int(0.5e9)  # cpu time of the whole stack
    assert f[key(1)][TOTAL + mode_column("wall")] == int(2e9)
    assert f[key(1)][OWN + mode_column("cpu")] == 0


def test_recursion_counts_once_per_stack_for_total(stacks: Stacks) -> None:
    table = FunctionTable(stacks.book)
    table.add_stack(stacks((4, 7), (4, 8), (4, 8), (1, 1)), [1, 0, 10, 10, 0])
    fib = table.by_function[key(4)]
    assert (fib[OWN], fib[TOTAL]) == (1, 1)
    assert table.by_line[key(4, 8)][TOTAL] == 1
    assert table.by_line[key(4, 7)][OWN] == 1


def test_by_line_keeps_lines_apart(stacks: Stacks) -> None:
    table = FunctionTable(stacks.book)
    table.add_stack(stacks((2, 20), (1, 10)), [1, 0, 1, 1, 0])
    table.add_stack(stacks((2, 21), (1, 10)), [3, 0, 3, 3, 0])
    assert table.by_function[key(2)][OWN] == 4
    assert table.by_line[key(2, 20)][OWN] == 1
    assert table.by_line[key(2, 21)][OWN] == 3
    assert table.by_line[key(1, 10)][TOTAL] == 4


def test_counts_keep_unique_stacks_not_samples(stacks: Stacks) -> None:
    c = Counts()
    s = stacks((2, 20), (1, 10))
    for _ in range(1000):
        c.add_weights([weight(s, A, cpu=0.001, wall=0.001)])
    assert len(c.stacks) == 1
    assert c.stacks[(A, s)][0] == 1000
    assert c.stacks[(A, s)][CPU] == pytest.approx(1e9, rel=1e-6)


def test_each_mode_shows_its_own_time(stacks: Stacks) -> None:
    """A sleeping thread has wall time and no CPU time: cpu mode leaves its functions out."""
    busy, asleep = stacks((2, 1), (1, 1)), stacks((3, 1), (1, 1))
    window = counts(weight(busy, A, cpu=0.9, wall=1.0, gil=0.8), weight(asleep, B, cpu=0.0, wall=1.0))
    table = FunctionTable(stacks.book)
    table.add_counts(window)
    cpu = {r.key: r for r in rows_of(table, table, 1.0, "cpu", by_line=False)}
    wall = {r.key: r for r in rows_of(table, table, 1.0, "wall", by_line=False)}
    gil = {r.key: r for r in rows_of(table, table, 1.0, "gil", by_line=False)}
    assert key(3) not in cpu and cpu[key(2)].own_time == pytest.approx(0.9) and cpu[key(2)].own_pct == pytest.approx(90)
    assert wall[key(3)].own_time == pytest.approx(1.0) and wall[key(1)].total_pct == pytest.approx(200)
    assert set(gil) == {key(2), key(1)} and gil[key(2)].own_time == pytest.approx(0.8)


def test_window_shares_and_totals_since_reset(stacks: Stacks) -> None:
    book = stacks.book
    totals = FunctionTable(book)
    first = FunctionTable(book)
    first.add_counts(counts(weight(stacks((2, 1), (1, 1)), A, cpu=1.0), weight(stacks((3, 1), (1, 1)), B, cpu=1.0)))
    totals.merge(first)
    rows = {r.key: r for r in rows_of(totals, first, 1.0, "cpu", by_line=False)}
    # Two busy threads: like top, each function is 100% of one thread's time.
    assert rows[key(2)].own_pct == pytest.approx(100)
    assert rows[key(1)].total_pct == pytest.approx(200)
    second = FunctionTable(book)
    second.add_counts(counts(weight(stacks((2, 1), (1, 1)), A, cpu=0.5)))
    totals.merge(second)
    rows = {r.key: r for r in rows_of(totals, second, 1.0, "cpu", by_line=False)}
    assert rows[key(3)].own_pct == 0 and rows[key(3)].own_time == pytest.approx(1.0)
    assert rows[key(2)].own_pct == pytest.approx(50) and rows[key(2)].own_time == pytest.approx(1.5)


def test_stacks_without_python_frames_are_pseudo_functions(stacks: Stacks) -> None:
    table = FunctionTable(stacks.book)
    table.add_counts(counts(weight(stacks(kind=STACK_NATIVE), A, cpu=0.3),
                            weight(stacks(kind=STACK_EMPTY | STACK_INCOMPLETE), B, cpu=0.1)))
    names = {r.function: r.own_time for r in rows_of(table, table, 1.0, "cpu", by_line=False)}
    assert names == {"(thread without Python)": pytest.approx(0.3), "(no Python frame)": pytest.approx(0.1)}


def test_a_thread_can_be_singled_out(stacks: Stacks) -> None:
    c = counts(weight(stacks((2, 1)), A, cpu=0.01), weight(stacks((3, 1)), B, cpu=0.01))
    table = FunctionTable(stacks.book)
    table.add_counts(c, keep=lambda thread: thread == B)
    assert set(table.by_function) == {key(3)}


def test_finished_threads_fold_into_one_key(stacks: Stacks) -> None:
    s = stacks((2, 1))
    c = counts(weight(s, 5, cpu=1.0), weight(s, 6, cpu=2.0), weight(s, 7, cpu=4.0))
    c.fold({5: -1, 6: -1})
    assert c.stacks[(-1, s)][CPU] == int(3e9) and c.stacks[(7, s)][CPU] == int(4e9) and len(c.stacks) == 2


def test_stacks_are_decoded_once(stacks: Stacks) -> None:
    s = stacks((2, 1), (1, 2))
    first = stacks.book.info(s)
    assert stacks.book.info(s) is first
    assert first is not None and first.functions == (key(2), key(1))


def test_a_thread_that_ended_unnamed_and_without_python_is_folded_at_once() -> None:
    """A request thread seen only before it ran Python and got its name: nothing to show on its
    own. Its row is a folded one even when it is the only thread in it."""
    book = ThreadBook()
    started = ThreadUpdate(7, 0, 0x7F07, 4301, DRAIN_ALIVE, None, 2_000, 50_000, 0, 2, 0, 0, 0, 0, "R")
    book.update((started,), lambda process: PID, has_frames=lambda stack: False)
    book.update((started._replace(flags=0, cpu_ns=0, wall_ns=0, samples=0),), lambda process: PID)
    assert book.fold_finished() == {7: fold_key(0)}
    figures = Figures(threads=book)
    row = next(iter(thread_rows(figures, "cpu", 1.0)))
    assert row.folded and row.threads == 1 and row.label == "1 finished thread" and row.samples == 2


def test_task_pseudo_frames_are_read_only_while_tasks_are_shown() -> None:
    from pytop.core.aggregate import StackBook
    from pytop.core.records import FRAME, TASK_FILENAME, Code, Stack

    book = StackBook()
    unnamed_task = Code(0, 3, "(unnamed task)", "(unnamed task)", TASK_FILENAME, 0)
    book.learn([Code(0, 1, "spin", "spin", "app.py", 1), Code(0, 2, "crunch", "crunch", TASK_FILENAME, 0),
                unnamed_task, Code(0, 4, "run", "run", "loop.py", 9)],
               [Stack(1, 0, 0, FRAME.pack(1, 5) + FRAME.pack(2, 0) + FRAME.pack(4, 10)),
                Stack(2, 0, 0, FRAME.pack(1, 6) + FRAME.pack(3, 0) + FRAME.pack(4, 10))])
    hidden = book.info(1)
    assert hidden is not None and [f[0] for f in hidden.frames] == ["spin", "run"]
    assert book.show_tasks(True) and not book.show_tasks(True)  # says when the reading changes
    shown, unnamed = book.info(1), book.info(2)
    assert shown is not None and [f[0] for f in shown.frames] == ["spin", "task crunch", "run"]
    assert unnamed is not None and unnamed.frames[1][0] == "(unnamed task)"
    assert book.show_tasks(False) and [f[0] for f in book.info(1).frames] == ["spin", "run"]  # type: ignore[union-attr]
