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

from ..core import views
from ..core.counts import Counts
from ..core.function_sums import FOLDED, FunctionSums
from ..core.intake import fold_finished
from ..core.model import Circumstances, PushStatus, Snapshot, TargetInfo
from ..core.records import PSEUDO_FUNCTIONS, STACK_OVERFLOW
from ..core.snapshot import MIN_CPU_WINDOW, Figures, Tables, View, build
from ..core.sticky import StickyShare, skipped_share
from ..core.tally import OWN, mode_column
from .feed import Feed

SKIPPING_SHOWN_FROM = 0.1  # share of a window's samples skipped that is worth a banner
SKIPPING_JUDGED_FROM = 0.2  # seconds of schedule a window needs before it can say so
SKIPPING_HOLD_SECONDS = 3.0  # the banner stays this long after the last window that skipped


def sampled_span(ticks: int, last_at: float, start: float | None, wall: float) -> float:
    """Seconds from `start` (the last sample before) to the last sample, or `wall` without any."""
    if not ticks or start is None:
        return wall  # no figures: nothing to divide
    span = last_at - start
    return span if span > 0 else wall


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
        self._reset = False  # the figures were reset since the last window (said in a recording)
        # --record: where the recording's open window began (its last sample before; the clock)
        self._cut_from: float | None = feed.sampled_until
        self._cut_at = self.opened

    def restart(self, reset: bool = False) -> None:
        """The run's time starts now (at the start of sampling, and at a reset)."""
        self._reset = reset
        self.started = self.opened = time.monotonic()
        self._cpu_mark = time.process_time()
        self._sampled_from = self.feed.sampled_until  # (a reset drains first)

    def _sampled_seconds(self, window: Counts, wall: float) -> float:
        """The time the window's figures cover: from the last sample before it to its last one.
        A window's figures are counted at its samples (each stands for the time since the one
        before, its CPU is the kernel's count read then), so its shares are of that time, not of
        the wall clock between two refreshes: at a rate the budget holds to ten a second, a
        sleeper's wall time showed 115% of a 0.3 s window, or half of it after a stall."""
        return sampled_span(window.ticks, window.last_at, self._start(self._sampled_from), wall)

    def _start(self, sampled_from: float | None) -> float | None:
        """Where a window's samples' time begins: the last sample before it, or for the run's
        first samples, a slot before the first (Feed.sampled_from)."""
        return sampled_from if sampled_from is not None else self.feed.sampled_from

    @property
    def has_closed(self) -> bool:
        return self._last is not None

    def open_for(self) -> float:
        return time.monotonic() - self.opened

    def close(self, exited: bool = False, reason: str | None = None, last: bool = False) -> Snapshot:
        """The open window's snapshot (and the totals'); a new window opens. last: the run's last
        window (a recording ends with the state after it, for a reader that opens it there)."""
        self.feed.drain_if_sampling()
        f = self.feed.figures
        moved = fold_finished(f)
        if moved and self.feed.push_window is not None:
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
            exit_status=self.exit_status, window_number=self._number, window_end=time.time(),
            work_elsewhere=None if exited else processes.hint, push=self.push_status(),
            record=self.feed.recorder.status() if self.feed.recorder is not None else None)
        self._number += 1
        recorder = self.feed.recorder
        if recorder is not None:  # its window began at the last cut (--batch: a second or two ago)
            ticks, _, _, _, last_at = recorder.schedule()
            span = sampled_span(ticks, last_at, self._start(self._cut_from), max(now - self._cut_at, 1e-9))
            recorder.window(replace(circumstances, window_seconds=span), reset=self._reset, figures=f, last=last)
            self._reset = False
            self._cut_from, self._cut_at = self._sampled_from, now
        snapshot = self._build(circumstances)
        assert f.window_table is not None
        self._last = (f.window, f.window_table, circumstances)
        f.window = Counts()
        f.window_table = FunctionSums(f.book)
        self.opened = now
        return snapshot

    def record_cut(self, last: bool = False) -> None:
        """--record in a run whose view closes seldom (--batch: one window for the run): the
        recording still gets a window every few seconds, with the circumstances the view would
        have shown for it. The view's own window goes on. last: the run has ended (what was
        sampled since the view's last window is the recording's last, with the totals)."""
        recorder = self.feed.recorder
        if recorder is None or (last and not recorder.schedule()[0]):
            return
        # Whole: each cut's window holds the time its sleepers slept through it (a drain of
        # the threads with news only left all of it to the run's last window); a pool's nappers
        # cost little now that they stand (engine drains).
        self.feed.drain_if_sampling()
        moved = fold_finished(self.feed.figures)  # as a close does: a replay folds at each window
        if moved and self.feed.push_window is not None:
            self.feed.push_window.fold(moved)
        now = min(time.monotonic(), self.ended)
        ticks, skipped, slots, _, last_at = recorder.schedule()
        span = sampled_span(ticks, last_at, self._start(self._cut_from), max(now - self._cut_at, 1e-9))
        self._cut_from = self.feed.sampled_until
        news, processes = self.feed.news, self.feed.processes
        recorder.window(Circumstances(
            window_seconds=span, elapsed=max(now - self.started, 1e-9),
            rate_asked=self.rate, skipped_share=skipped_share(ticks, skipped, slots, SKIPPING_JUDGED_FROM),
            rss=processes.rss(), stopped=processes.stopped(),
            rate_held=news.rate_now if news.budget_limited else None, cpu_budget=self.cpu_budget,
            processes=processes.alive, sampler_cpu=news.sampler_cpu, start_up_cpu=news.start_up_cpu,
            stacks_dropped=news.stacks_dropped, stacks_coarsened=news.stacks_coarsened,
            last_error=self.feed.last_error, window_number=self._number, window_end=time.time()), reset=self._reset,
            figures=self.feed.figures, last=last)
        self._reset = False
        self._cut_at = now

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

    def _pytop_cpu(self, seconds: float) -> float | None:
        """pytop's own CPU use over the window, 100 = one core; None over a window too short to
        say it (the one R or B closes at once: 1,231.9% was shown for a few milliseconds)."""
        cpu = time.process_time()
        used, self._cpu_mark = cpu - self._cpu_mark, cpu
        return 100.0 * used / seconds if seconds >= MIN_CPU_WINDOW else None

    def _build(self, circumstances: Circumstances) -> Snapshot:
        return views.snapshot(self.target, self.feed.figures, self.view, self.feed.engine, circumstances)
