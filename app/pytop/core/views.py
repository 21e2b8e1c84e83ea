"""A snapshot of figures in a view: the tables (all threads' summed drain by drain, or one
thread's or process's summed from its stacks), the call graph and the call tree when the view
shows them. Shared by the live windows (sampling/windows.py, summing with the engine) and a
replay (record/replay.py, summing with core.sums): one way to build what a screen shows."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from .callgraph import call_graph
from .calltree import call_tree
from .counts import Counts
from .function_sums import FunctionSums
from .model import CallGraph, Circumstances, Snapshot, TargetInfo, TreeNode
from .records import Aggregate
from .snapshot import Figures, Tables, View, build


class Summer(Protocol):
    """What sums stacks' time over the stack tree (the engine, or core.sums.BookSums)."""

    def aggregate(self, tallies: Iterable[tuple[int, int, int, int, int]], tables: bool = True,
                  nodes: bool = False) -> Aggregate: ...


def keeper(figures: Figures, view: View) -> Callable[[int], bool] | None:
    """Which threads' stacks the view counts (None: all)."""
    if view.thread is not None:
        chosen = view.thread
        return lambda key: key == chosen
    if view.process is not None:
        process = view.process
        pids = {k: t.pid for k, t in figures.threads.threads.items()}
        return lambda key: pids.get(key) == process
    return None


def _summed(figures: Figures, summer: Summer, counts: Counts, keep: Callable[[int], bool] | None) -> FunctionSums:
    table = FunctionSums(figures.book)
    sums = summer.aggregate(counts.leaf_tallies(keep))
    table.add_rows(sums.functions, sums.lines)
    return table


def tables(figures: Figures, view: View, summer: Summer) -> Tables:
    """All threads' tables, summed drain by drain; or, narrowed, one thread's or process's,
    summed from its stacks (whose detail may have aged out: see Counts)."""
    assert figures.totals is not None and figures.window_table is not None
    keep = keeper(figures, view)
    if keep is None:
        return Tables(figures.totals, figures.window_table)
    return Tables(_summed(figures, summer, figures.total, keep), _summed(figures, summer, figures.window, keep))


def graph_and_tree(figures: Figures, view: View, summer: Summer) -> tuple[CallGraph | None, TreeNode | None]:
    if view.focus is None and not view.tree:
        return None, None
    rows = summer.aggregate(figures.total.leaf_tallies(keeper(figures, view)), tables=False, nodes=True).nodes
    graph = call_graph(rows, figures.book, view.focus, view.by_line, view.mode) if view.focus is not None else None
    tree = call_tree(rows, figures.book, view.by_line, view.mode) if view.tree else None
    return graph, tree


def snapshot(target: TargetInfo, figures: Figures, view: View, summer: Summer, c: Circumstances) -> Snapshot:
    graph, tree = graph_and_tree(figures, view, summer)
    return build(target, figures, tables(figures, view, summer), view, c, graph, tree)
