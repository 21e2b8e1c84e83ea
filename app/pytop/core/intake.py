"""Taking a drain into the figures, and closing a window over them: the one way figures are made,
live (sampling/feed.py, sampling/windows.py) and from a recording (record/replay.py), so that a
replay gives the live view's figures exactly. Pure: no threads, no I/O."""

from __future__ import annotations

from .records import Drain
from .snapshot import Figures


def take_in(f: Figures, d: Drain) -> None:
    """Add one drain to the figures: names and stacks, time per (thread, stack), the tables."""
    f.book.learn(d)
    for counts in (f.window, f.total):
        counts.forget(d.evicted)  # first: an evicted id may come back as a new stack
        counts.add_drain(d)
    assert f.window_table is not None and f.totals is not None
    f.window_table.add_rows(d.function_rows, d.line_rows)
    f.totals.add_rows(d.function_rows, d.line_rows, bounded=True)
    _threads(f, d, standing=True)


def learn(f: Figures, d: Drain) -> None:
    """What a drain says beyond its time: names, stacks and threads (a replay before its range's
    first window, whose time the range leaves out; summing it was a third of a replay's work)."""
    f.book.learn(d)
    _threads(f, d)


def _threads(f: Figures, d: Drain, standing: bool = False) -> None:
    f.threads.update(d.threads, lambda process: f.book.pids.get(process, 0), f.book.has_frames)
    if standing:
        f.threads.stand(d.standing)
    for p in d.processes:
        if p.status:
            f.threads.ended_process(p.process)


def fold_finished(f: Figures) -> dict[int, int]:
    """At a window's close: the oldest finished threads fold into their process's row, and their
    stacks follow; returns {thread key: fold key}."""
    moved = f.threads.fold_finished()
    if moved:
        f.total.fold(moved)
    return moved
