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
from ..core.records import Drain
from . import container
from .book import RecordedBook
from .bounds import DEFAULT_MAX_SIZE
from .gathering import gathered
from .payloads import RunRecord, WindowRecord, key_payload, window_payload
from .queued import QueuedWriter

QUEUE_WINDOWS = 30  # windows waiting for the disk before the oldest gives up its figures


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
                t = t._replace(thread_id=0, native_id=0)
            elif ids != (0, 0):
                was = known.get(t.thread, (0, 0))
                known[t.thread] = (t.thread_id or was[0], t.native_id or was[1])
            threads.append(t)
        out.append(replace(d, threads=tuple(threads)))
    return tuple(out), known


class Recorder(QueuedWriter[WindowRecord]):
    def __init__(self, path: str, run: RunRecord, queue_windows: int = QUEUE_WINDOWS,
                 writer: container.Writer | None = None, max_size: int | None = DEFAULT_MAX_SIZE,
                 private: bool = False):
        """Opens (and locks) the file (or takes `writer`, open on it) and writes the run's key
        frame. max_size: the file's bound (its oldest part goes past it; None: no bound);
        private: the live view's own memory of its session (record/private.py). Raises
        errors.UsageError when it cannot: a link, not writable, being recorded by another
        pytop."""
        super().__init__(writer or container.Writer(path), queue_windows, "pytop-recorder", max_size, private)
        self._run_record = run
        self._book = RecordedBook()  # what a reader starting at the next key frame needs
        self._drains: list[Drain] = []
        self._opened = time.time()
        self._last_end = self._opened
        self._carried: tuple[Drain, ...] = ()  # of a window that could not be written
        self._known: Identities = {}  # the threads' ids the file has
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

    def window(self, circumstances: Circumstances, reset: bool = False) -> None:
        """The window the drains since the last call make up closed, shown with `circumstances`."""
        end = time.time()
        record = WindowRecord(tuple(self._drains), circumstances, reset)
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
        self._book.learn(item.drains, item.circumstances.elapsed, item.reset)

    def key(self) -> bytes:
        book = self._book.key_drain()
        # The key says every thread's ids: the windows after it leave out only those it said.
        self._known = {t.thread: (t.thread_id, t.native_id) for t in book.threads
                       if (t.thread_id, t.native_id) != (0, 0)}
        return key_payload(self._run_record, book, self._book.clock)

    def lost(self, item: WindowRecord) -> None:
        if self._carried:
            item = item._replace(drains=self._carried + item.drains)
        self._carried = tuple(book_only(d) for d in item.drains)
