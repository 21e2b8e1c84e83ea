"""Windows: the figures a feed filled, closed into a snapshot at each refresh, in the view the UI
asked for. A window is the time since the last refresh; the totals run since the last reset.

A snapshot is immutable and built here, on the sampler's thread: the tables (all threads' summed
drain by drain, or one thread's or process's summed from its stacks), the call graph and the
tree when the view shows them, and the circumstances (rates, budget, banners). The last window
is kept so that a view asked for right after a refresh (a key) shows it again in the new view."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace

from ..core.aggregate import FOLDED, OWN, Counts, FunctionSums, mode_column
from ..core.callgraph import call_graph
from ..core.calltree import call_tree
from ..core.model import CallGraph, Circumstances, PushStatus, Snapshot, TargetInfo, TreeNode
from ..core.records import PSEUDO_FUNCTIONS, STACK_OVERFLOW, NodeRow
from ..core.snapshot import Figures, Tables, View, build
from ..core.sticky import StickyShare, skipped_share
from .feed import Feed

SKIPPING_SHOWN_FROM = 0.1  # share of a window's samples skipped that is worth a banner
SKIPPING_JUDGED_FROM = 0.2  # seconds of schedule a window needs before it can say so
SKIPPING_HOLD_SECONDS = 3.0  # the banner stays this long after the last window that skipped


class Windows:
    def __init__(self, feed: Feed, target: TargetInfo, view: View, rate: float, cpu_budget: float):
        """rate and cpu_budget: as asked for (the snapshots say how sampling kept to them)."""
        self.feed = feed
        self.target = target
        self.view = view
        self.rate = rate
        self.cpu_budget = cpu_budget
        # What the next snapshots say of the run besides the figures:
        self.exported: tuple[str, ...] = ()  # the files of the last export (or why it failed)
        self.failure: str | None = None  # a bug in pytop ended sampling
        self.exit_status: int | None = None  # the started program's, once it ended
        self._last: tuple[Counts, FunctionSums, Circumstances] | None = None
        self._number = 1
        # The share of samples skipped, held after the last window that skipped many.
        self._skipping = StickyShare(SKIPPING_SHOWN_FROM, SKIPPING_HOLD_SECONDS)
        self.started = self.opened = time.monotonic()
        # When the sampler stopped: the run's time ends there. (Giving a stopped engine's
        # memory back once stalled 1.9 s in the kernel: a 6 s run said it lasted 8.)
        self.ended = math.inf
        self._cpu_mark = time.process_time()  # pytop's own CPU at the window's start
        self._sampled_from = feed.sampled_until  # where the open window's samples' time begins
        self.push_status: Callable[[], PushStatus | None] = lambda: None  # --push: how it goes

    def restart(self) -> None:
        """The run's time starts now (at the start of sampling, and at a reset)."""
        self.started = self.opened = time.monotonic()
        self._cpu_mark = time.process_time()
        self._sampled_from = self.feed.sampled_until  # (a reset drains first)

    def _sampled_seconds(self, window: Counts, wall: float) -> float:
        """The time the window's figures cover: from the last sample before it to its last one.
        A window's figures are counted at its samples (each stands for the time since the one
        before, its CPU is the kernel's count read then), so its shares are of that time, not of
        the wall clock between two refreshes: at a rate the budget holds to ten a second, a
        sleeper's wall time showed 115% of a 0.3 s window, or half of it after a stall."""
        if not window.ticks:
            return wall  # no figures: nothing to divide
        start = self._sampled_from
        if start is None:  # the run's first samples: the first stands for one slot
            start = window.first_at - window.slot_seconds / max(window.ticks + window.skipped, 1)
        span = window.last_at - start
        return span if span > 0 else wall

    @property
    def has_closed(self) -> bool:
        return self._last is not None

    def open_for(self) -> float:
        return time.monotonic() - self.opened

    def close(self, exited: bool = False, reason: str | None = None) -> Snapshot:
        """The open window's snapshot (and the totals'); a new window opens."""
        self.feed.drain_if_sampling()
        f = self.feed.figures
        moved = f.threads.fold_finished()
        if moved:
            f.total.fold(moved)
            if self.feed.push_window is not None:
                self.feed.push_window.fold(moved)
        now = min(time.monotonic(), self.ended)
        seconds = max(now - self.opened, 1e-9)
        sampled = self._sampled_seconds(f.window, seconds)
        self._sampled_from = self.feed.sampled_until
        news, processes = self.feed.news, self.feed.processes
        circumstances = Circumstances(
            window_seconds=sampled, elapsed=max(now - self.started, 1e-9), rate_asked=self.rate,
            skipped_share=self._skipping.update(
                skipped_share(f.window.ticks, f.window.skipped, f.window.slot_seconds, SKIPPING_JUDGED_FROM), now),
            rss=processes.rss(), exited=exited, exit_reason=reason,
            stopped=() if exited else processes.stopped(),
            rate_held=news.rate_now if news.budget_limited and not exited else None,
            cpu_budget=self.cpu_budget, pytop_cpu_pct=self._pytop_cpu(seconds),
            exported=self.exported, processes=processes.alive, sampler_cpu=news.sampler_cpu,
            start_up_cpu=news.start_up_cpu,
            stacks_dropped=news.stacks_dropped, stacks_coarsened=news.stacks_coarsened,
            last_error=self.feed.last_error, failure=self.failure,
            exit_status=self.exit_status, window_number=self._number,
            work_elsewhere=None if exited else processes.hint, push=self.push_status())
        self._number += 1
        snapshot = self._build(circumstances)
        assert f.window_table is not None
        self._last = (f.window, f.window_table, circumstances)
        f.window = Counts()
        f.window_table = FunctionSums(f.book)
        self.opened = now
        return snapshot

    def again(self) -> Snapshot:
        """The last window's figures (and the totals as they are) in the current view: nothing
        merged or counted twice."""
        assert self._last is not None, "no window has closed yet"
        window, window_table, circumstances = self._last
        f = self.feed.figures
        current = f.window, f.window_table
        f.window, f.window_table = window, window_table
        try:
            return self._build(replace(circumstances, exported=self.exported))
        finally:
            f.window, f.window_table = current

    def failed(self) -> Snapshot:
        """The snapshot that says sampling failed (self.failure), with what can still be shown."""
        try:
            return self.close(exited=True, reason=self.failure)
        except Exception:  # the figures themselves are broken: say so with what is certain
            empty = FunctionSums(self.feed.figures.book)
            return build(self.target, Figures(), Tables(empty, empty), self.view, Circumstances(
                window_seconds=1.0, elapsed=max(time.monotonic() - self.started, 1e-9),
                rate_asked=self.rate, exited=True, exit_reason=self.failure, failure=self.failure))

    def catch_all_share(self) -> float:
        """The share of the cpu time since the reset in rows that memory bounds made: functions
        folded for the least time, stacks that found no room in the tree."""
        totals = self.feed.figures.totals
        if totals is None:
            return 0.0
        cpu = OWN + mode_column("cpu")
        whole = sum(row[cpu] for row in totals.by_function.values())
        caught = sum(row[cpu] for key, row in totals.by_function.items()
                     if key == FOLDED or key[0] == PSEUDO_FUNCTIONS[STACK_OVERFLOW])
        return caught / whole if whole else 0.0

    def _pytop_cpu(self, seconds: float) -> float:
        """pytop's own CPU use over the window, 100 = one core."""
        cpu = time.process_time()
        used, self._cpu_mark = cpu - self._cpu_mark, cpu
        return 100.0 * used / seconds

    def _keeper(self) -> Callable[[int], bool] | None:
        """Which threads' stacks the view counts (None: all)."""
        view = self.view
        if view.thread is not None:
            return lambda key: key == view.thread
        if view.process is not None:
            pids = {k: t.pid for k, t in self.feed.figures.threads.threads.items()}
            return lambda key: pids.get(key) == view.process
        return None

    def _summed(self, counts: Counts, keep: Callable[[int], bool] | None) -> FunctionSums:
        table = FunctionSums(self.feed.figures.book)
        sums = self.feed.engine.aggregate(counts.leaf_tallies(keep))
        table.add_rows(sums.functions, sums.lines)
        return table

    def _tables(self) -> Tables:
        """All threads' tables, summed drain by drain; or, narrowed, one thread's or process's,
        summed from its stacks (whose detail may have aged out: see Counts)."""
        f = self.feed.figures
        assert f.totals is not None and f.window_table is not None
        keep = self._keeper()
        if keep is None:
            return Tables(f.totals, f.window_table)
        return Tables(self._summed(f.total, keep), self._summed(f.window, keep))

    def _node_rows(self) -> tuple[NodeRow, ...]:
        tallies = self.feed.figures.total.leaf_tallies(self._keeper())
        return self.feed.engine.aggregate(tallies, tables=False, nodes=True).nodes

    def _graph_and_tree(self) -> tuple[CallGraph | None, TreeNode | None]:
        view = self.view
        if view.focus is None and not view.tree:
            return None, None
        rows = self._node_rows()
        book = self.feed.figures.book
        graph = call_graph(rows, book, view.focus, view.by_line, view.mode) if view.focus is not None else None
        tree = call_tree(rows, book, view.by_line, view.mode) if view.tree else None
        return graph, tree

    def _build(self, circumstances: Circumstances) -> Snapshot:
        graph, tree = self._graph_and_tree()
        return build(self.target, self.feed.figures, self._tables(), self.view, circumstances, graph, tree)
