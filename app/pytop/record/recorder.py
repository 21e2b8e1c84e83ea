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
import threading
import time
from dataclasses import replace

from .. import errors
from ..core.model import Circumstances, RecordStatus
from ..core.records import Drain
from . import container
from .payloads import RunRecord, WindowRecord, key_payload, window_payload

QUEUE_WINDOWS = 30  # windows waiting for the disk before the oldest gives up its figures
CLOSE_SECONDS = 5.0  # how long the end of a run waits for the windows still queued


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


class Recorder:
    def __init__(self, path: str, run: RunRecord, queue_windows: int = QUEUE_WINDOWS):
        """Opens (and locks) the file and writes the run's key frame. Raises errors.UsageError
        when it cannot: a link, not writable, being recorded by another pytop."""
        self._writer = container.Writer(path)
        self.path = path
        self._queue_windows = queue_windows
        self._drains: list[Drain] = []
        self._queue: collections.deque[tuple[WindowRecord, float, float]] = collections.deque()
        self._lock = threading.Condition()
        self._closing = False
        self._opened = time.time()
        self._last_end = self._opened
        self.written = 0  # windows written
        self.dropped = 0  # windows whose figures were lost (the disk could not keep up, or failed)
        self.failing: str | None = None  # why the last write failed, if it did
        try:
            self._writer.write(container.KEY, key_payload(run), self._opened, self._opened)
        except OSError as exc:
            self._writer.close()
            raise errors.UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
        self._thread = threading.Thread(target=self._run, name="pytop-recorder", daemon=True)
        self._thread.start()

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
        with self._lock:
            if len(self._queue) >= self._queue_windows:
                self._give_up_oldest()
            self._queue.append((record, self._last_end, end))
            self._lock.notify()
        self._last_end = end

    def _give_up_oldest(self) -> None:
        """The oldest waiting window's figures go; what the next one needs of it joins it."""
        lost, start, _ = self._queue.popleft()
        self.dropped += 1 + lost.dropped
        if self._queue:
            following, _, end = self._queue.popleft()
            merged = tuple(book_only(d) for d in lost.drains) + following.drains
            self._queue.appendleft((following._replace(drains=merged, dropped=following.dropped + 1 + lost.dropped),
                                    start, end))

    def status(self) -> RecordStatus:
        with self._lock:
            waiting = len(self._queue)
        return RecordStatus(self.path, self._writer.size, self.written, waiting, self.dropped, self.failing)

    def close(self, timeout: float = CLOSE_SECONDS) -> RecordStatus:
        """After the last window: what is queued is written (for `timeout` at most), then the file
        is closed. Returns how the recording went."""
        with self._lock:
            self._closing = True
            self._lock.notify()
        self._thread.join(timeout)
        with self._lock:
            unsent = len(self._queue)
            self._queue.clear()
        self.dropped += unsent
        if not self._thread.is_alive():
            self._writer.close()
        return self.status()

    # ---- the writer's thread ---------------------------------------------------------------

    def _run(self) -> None:
        carried: tuple[Drain, ...] = ()  # of a window that could not be written
        known: Identities = {}  # the threads' ids the file has
        while True:
            with self._lock:
                while not self._queue and not self._closing:
                    self._lock.wait()
                if not self._queue:
                    return
                record, start, end = self._queue.popleft()
            if carried:
                record = record._replace(drains=carried + record.drains, dropped=record.dropped + 1)
            try:
                drains, now_known = without_known_ids(record.drains, known)
                self._writer.write(container.WINDOW, window_payload(record._replace(drains=drains)), start, end)
                known = now_known
            except Exception as exc:  # a full disk (OSError), or a bug: the recording goes on
                carried = tuple(book_only(d) for d in record.drains)
                self.failing = (exc.strerror or str(exc)) if isinstance(exc, OSError) else \
                    f"a bug in pytop ({type(exc).__name__}: {exc})"
                self.dropped += 1
            else:
                carried = ()
                self.written += 1
                self.failing = None
