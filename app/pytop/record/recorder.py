"""--record FILE: the session written as it samples, window by window, without ever holding
sampling up.

The sampler's thread hands over each drain (`add`: a reference kept, nothing copied or encoded)
and, at each window's close, the window (`window`): it goes into a bounded queue. The writer's
own thread encodes, compresses and appends it as one frame. A disk slower than the windows come
leaves the queue full: the oldest window waiting then gives up its figures (its time is lost,
counted, and said in the file and on screen) but not what later windows refer to (the stacks
and functions first seen in it, the threads' names), which go on with the next window. A write
that fails (a full disk) loses that window the same way; the next ones are tried, and what was
written stays readable (a frame cut short is passed over by the reader)."""

from __future__ import annotations

import collections
import time
from dataclasses import replace
from typing import cast

from ..core.model import Circumstances
from ..core.records import Drain, ThreadUpdate
from ..core.snapshot import Figures
from . import container
from .book import RecordedBook
from .bounds import DEFAULT_MAX_SIZE, KEY_SECONDS
from .codec import Packer
from .gathering import gathered
from .keys import RunRecord, key_payload
from .payloads import WindowRecord, window_payload
from .queued import QueuedWriter
from .totals import put_totals

QUEUE_WINDOWS = 30  # windows waiting for the disk before the oldest gives up its figures
KEY_PATIENCE = 3  # windows a due key frame waits for the totals before it goes without


def book_only(d: Drain) -> Drain:
    """What later windows need of a drain whose figures are lost: its names, stacks and threads'
    identities, with no time."""
    threads = tuple(t._replace(cpu_ns=0, wall_ns=0, wait_ns=0, samples=0, gil_samples=0, errors=0, unplaced_ns=0)
                    for t in d.threads)
    return Drain(processes=(), threads=threads, functions=d.functions, retired=d.retired, evicted=d.evicted,
                 nodes=d.nodes, weights=(), function_rows=(), line_rows=(), ticks=0, late=0, skipped=0,
                 slot_seconds=0.0, first_at=0.0, last_at=0.0, lag=0.0, longest_delay=0.0, cpu_seconds=d.cpu_seconds,
                 start_up_cpu=d.start_up_cpu, rate_now=d.rate_now, budget_limited=d.budget_limited, running=d.running,
                 realtime=d.realtime, stacks_dropped=d.stacks_dropped, stacks_coarsened=d.stacks_coarsened,
                 stack_nodes=d.stack_nodes, end=None)


Identities = dict[int, tuple[int, int]]  # thread key -> (Python's thread id, its TID)


def without_known_ids(drains: tuple[Drain, ...], known: Identities) -> tuple[tuple[Drain, ...], Identities]:
    """The drains with each thread's ids left out (0) where the file already has them: a drain
    says them every time, and on a pool of 2,000 threads they were half of a recording (a
    thread's 0 id means "as before" to whoever takes the drain in). Returns the ids now known."""
    known = dict(known)
    out = []
    for d in drains:
        threads = []
        for t in d.threads:
            ids = (t.thread_id, t.native_id)
            if known.get(t.thread) == ids:
                t = ThreadUpdate(t[0], t[1], 0, 0, *t[4:])  # (thread_id, native_id: a third of _replace's cost)
            elif ids != (0, 0):
                was = known.get(t.thread, (0, 0))
                known[t.thread] = (t.thread_id or was[0], t.native_id or was[1])
            threads.append(t)
        out.append(replace(d, threads=tuple(threads)))
    return tuple(out), known


class Recorder(QueuedWriter[WindowRecord]):
    def __init__(self, path: str, run: RunRecord, queue_windows: int = QUEUE_WINDOWS,
                 writer: container.Writer | None = None, max_size: int | None = DEFAULT_MAX_SIZE,
                 private: bool = False, key_seconds: float = KEY_SECONDS):
        """Opens (and locks) the file (or takes `writer`, open on it) and writes the run's key
        frame. max_size: the file's bound (its oldest part goes past it; None: no bound);
        private: the live view's own memory of its session (record/private.py). Raises
        errors.UsageError when it cannot: a link, not writable, being recorded by another
        pytop."""
        super().__init__(writer or container.Writer(path), queue_windows, "pytop-recorder", max_size, private,
                         key_seconds)
        self._run_record = run
        self._book = RecordedBook()  # what a reader starting at the next key frame needs
        self._drains: list[Drain] = []
        self._opened = time.time()
        self._last_end = self._opened
        self._carried: tuple[Drain, ...] = ()  # of a window that could not be written
        self._known: Identities = {}  # the threads' ids the file has
        # The session's totals go into key frames while the live view's figures are the
        # session's: never reset, no window lost. (The sampler's thread: the seconds summed.)
        self._totals_off = False
        self._span = 0.0
        self._key_totals = b""  # (the writer's thread) the totals after the last window written
        self._waited = 0  # windows written since a key was wanted
        self._start(key_payload(run), self._opened)

    # ---- the sampler's thread --------------------------------------------------------------

    def add(self, drain: Drain) -> None:
        self._drains.append(drain)

    def schedule(self) -> tuple[int, int, float, float, float]:
        """Of the drains since the last window: ticks, skipped slots, the schedule's seconds, the
        first and last tick's time (what a window's span is measured by)."""
        timed = [d for d in self._drains if d.ticks]
        return (sum(d.ticks for d in self._drains), sum(d.skipped for d in self._drains),
                sum(d.slot_seconds for d in self._drains), timed[0].first_at if timed else 0.0,
                timed[-1].last_at if timed else 0.0)

    def window(self, circumstances: Circumstances, reset: bool = False, figures: Figures | None = None,
               last: bool = False) -> None:
        """The window the drains since the last call make up closed, shown with `circumstances`;
        figures: the live view's, after it (their totals go to a key frame when one is due, and
        to the one that ends the file after the `last` window)."""
        end = time.time()
        self._span += circumstances.window_seconds  # (in the order a replay sums them)
        self._totals_off = self._totals_off or reset or self.dropped > 0
        totals = b""
        wanted = self.key_wanted or (last and not self.private)
        if wanted and not self._totals_off and figures is not None and figures.totals is not None:
            p = Packer()
            put_totals(p, figures.total, figures.totals, figures.threads, self._span)
            totals = p.data()
        record = WindowRecord(tuple(self._drains), circumstances, reset, totals=totals)
        self._drains = []
        self.put(record, self._last_end, end)
        self._last_end = end

    def overflow(self, queue: collections.deque[tuple[WindowRecord, float, float]]) -> int:
        """The oldest waiting window's figures go; what the next one needs of it joins it."""
        lost, start, _ = queue.popleft()
        if queue:
            following, _, end = queue.popleft()
            merged = tuple(book_only(d) for d in lost.drains) + following.drains
            queue.appendleft((following._replace(drains=merged, dropped=following.dropped + 1 + lost.dropped),
                              start, end))
        return 1 + lost.dropped

    # ---- the writer's thread ---------------------------------------------------------------

    def encode(self, item: WindowRecord) -> tuple[bytes, object]:
        if self._carried:
            item = item._replace(drains=self._carried + item.drains, dropped=item.dropped + 1)
        drains, known = without_known_ids(gathered(item.drains), self._known)
        return window_payload(item._replace(drains=drains)), (known, item)

    def written_as(self, state: object) -> None:
        known, item = cast("tuple[Identities, WindowRecord]", state)
        self._known = known
        self._carried = ()
        self._key_totals = item.totals
        self._waited = self._waited + 1 if self.key_wanted else 0
        self._book.learn(item.drains, item.circumstances.elapsed, item.reset)

    def key(self) -> bytes:
        book = self._book.key_drain()
        # The key says every thread's ids: the windows after it leave out only those it said.
        self._known = {t.thread: (t.thread_id, t.native_id) for t in book.threads
                       if (t.thread_id, t.native_id) != (0, 0)}
        totals, self._key_totals = self._key_totals, b""
        return key_payload(self._run_record, book, self._book.clock, totals if not self.dropped else b"")

    def key_at_close(self) -> bool:
        """The last window written brought the totals (it was the run's last), and no key came
        after it."""
        return bool(self._key_totals) and not self.private

    def key_now(self) -> bool:
        """With the totals of the window just written; without, when they cannot come (a reset,
        a lost window) or have not come in a few windows (a view that closes none)."""
        return bool(self._key_totals) or self._totals_off or self.dropped > 0 or self._waited >= KEY_PATIENCE

    def lost(self, item: WindowRecord) -> None:
        if self._carried:
            item = item._replace(drains=self._carried + item.drains)
        self._carried = tuple(book_only(d) for d in item.drains)
