"""Aggregation of stacks into per-function figures: pure logic, no process."""

from __future__ import annotations

import pytest

from pytop.core.aggregate import Aggregator, FunctionTable, StackCounts, StackDecoder, rows_of
from pytop.core.records import FRAME

NAMES = {1: ("main", "app.py"), 2: ("work", "app.py"), 3: ("helper", "lib.py"), 4: ("fib", "app.py")}


def stack(*frames: tuple[int, int]) -> bytes:
    """Frames innermost first, as (code id, line)."""
    return b"".join(FRAME.pack(code, line) for code, line in frames)


PID = 42
A, B = (PID, 1, 11, 0), (PID, 2, 12, 0)  # thread keys: (pid, thread id, TID, incarnation)


def describe(pid: int, code_id: int) -> tuple[str, str]:
    assert pid == PID
    return NAMES[code_id]


def key(code_id: int, line: int = 0) -> tuple[str, str, int, int]:
    return (*NAMES[code_id], line, PID)


def test_own_is_the_innermost_frame_and_total_every_frame() -> None:
    table = FunctionTable(StackDecoder(describe))
    table.add_stack(PID, stack((3, 30), (2, 20), (1, 10)), 5, 0.5)
    f = table.by_function
    assert (f[key(3)].own_count, f[key(3)].total_count) == (5, 5)
    assert (f[key(2)].own_count, f[key(2)].total_count) == (0, 5)
    assert f[key(1)].total_time == pytest.approx(0.5)
    assert f[key(1)].own_time == 0


def test_recursion_counts_once_per_stack_for_total() -> None:
    table = FunctionTable(StackDecoder(describe))
    table.add_stack(PID, stack((4, 7), (4, 8), (4, 8), (1, 1)), 1, 0.01)
    fib = table.by_function[key(4)]
    assert (fib.own_count, fib.total_count) == (1, 1)
    assert table.by_line[key(4, 8)].total_count == 1
    assert table.by_line[key(4, 7)].own_count == 1


def test_by_line_keeps_lines_apart() -> None:
    table = FunctionTable(StackDecoder(describe))
    table.add_stack(PID, stack((2, 20), (1, 10)), 1, 0.01)
    table.add_stack(PID, stack((2, 21), (1, 10)), 3, 0.03)
    assert table.by_function[key(2)].own_count == 4
    assert table.by_line[key(2, 20)].own_count == 1
    assert table.by_line[key(2, 21)].own_count == 3
    assert table.by_line[key(1, 10)].total_count == 4


def test_stack_counts_keep_unique_stacks_not_samples() -> None:
    counts = StackCounts()
    s = stack((2, 20), (1, 10))
    for _ in range(1000):
        counts.add(0.001, [(A, s)])
    assert len(counts.counts) == 1
    assert counts.counts[(A, s)][0] == 1000
    assert counts.duration == pytest.approx(1.0)


def test_times_use_the_real_intervals() -> None:
    agg = Aggregator(describe)
    agg.add_sample(0.010, [(A, stack((2, 1)))], gil=True, active_threads=1, threads=1)
    agg.add_sample(0.050, [(A, stack((3, 1)))], gil=True, active_threads=1, threads=1)  # sampler was late
    window, figures = agg.close_window()
    assert window.duration == pytest.approx(0.06)
    assert figures.by_function[key(3)].own_time == pytest.approx(0.05)
    rows = {r.key: r for r in rows_of(agg.totals, figures, window.duration, by_line=False)}
    assert rows[key(3)].own_pct == pytest.approx(100 * 0.05 / 0.06)
    assert rows[key(2)].own_pct == pytest.approx(100 * 0.01 / 0.06)


def test_window_percentages_and_totals_since_reset() -> None:
    agg = Aggregator(describe)
    for _ in range(10):
        agg.add_sample(0.01, [(A, stack((2, 1), (1, 1))), (B, stack((3, 1), (1, 1)))],
                       gil=True, active_threads=2, threads=3)
    window, figures = agg.close_window()
    rows = {r.key: r for r in rows_of(agg.totals, figures, window.duration, by_line=False)}
    # Two busy threads: like top, each function is 100% of one thread's time.
    assert rows[key(2)].own_pct == pytest.approx(100)
    assert rows[key(1)].total_pct == pytest.approx(200)
    assert rows[key(1)].total_time == pytest.approx(0.2)
    assert window.gil_samples == 10 and window.active_thread_samples == 20 and window.thread_samples == 30
    # Next window: only `work` ran; `helper` stays in the table with its time but 0% now.
    agg.add_sample(0.01, [(A, stack((2, 1)))], gil=False, active_threads=1, threads=3)
    window, figures = agg.close_window()
    rows = {r.key: r for r in rows_of(agg.totals, figures, window.duration, by_line=False)}
    assert rows[key(3)].own_pct == 0 and rows[key(3)].own_time == pytest.approx(0.1)
    assert rows[key(2)].own_pct == pytest.approx(100) and rows[key(2)].own_time == pytest.approx(0.11)
    assert rows[key(2)].own_count == 11


def test_reset_forgets_everything() -> None:
    agg = Aggregator(describe)
    agg.add_sample(0.01, [(A, stack((2, 1)))], gil=True, active_threads=1, threads=1)
    agg.close_window()
    agg.reset()
    window, figures = agg.close_window()
    assert window.samples == 0
    assert rows_of(agg.totals, figures, window.duration, by_line=False) == ()


def test_a_thread_can_be_singled_out() -> None:
    counts = StackCounts()
    counts.add(0.01, [(A, stack((2, 1))), (B, stack((3, 1)))])
    table = FunctionTable(StackDecoder(describe))
    table.add_counts(counts, keep=lambda thread: thread == B)
    assert set(table.by_function) == {key(3)}


def test_names_are_asked_once_per_code_object() -> None:
    asked: list[int] = []

    def counting(pid: int, code_id: int) -> tuple[str, str]:
        asked.append(code_id)
        return NAMES[code_id]

    agg = Aggregator(counting)
    for _ in range(50):
        agg.add_sample(0.01, [(A, stack((2, 1), (1, 2)))], gil=False, active_threads=1, threads=1)
        agg.close_window()
    assert sorted(asked) == [1, 2]
