"""The sampling thread: takes samples on schedule and hands them over, nothing else.

Each sample is waited for and taken in C without the GIL (Unwinder.sample_raw(due)), so the
moment a sample is taken does not depend on what pytop's other threads do with the GIL. The
Python work per sample is kept to wrapping the result; aggregation happens in the sampler's
other thread. Intervals are jittered so periodic work in the target cannot alias with the
sampling. With --subprocesses one tick samples every watched process, one after the other.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .. import errors
from ..native import RawSample, SampleError, Unwinder
from . import priority

JITTER = (0.5, 1.5)  # each interval is the nominal one times a factor drawn from this range
MAX_BACKLOG = 1.0  # seconds: further behind than this, the missed samples are given up
REALTIME_BUDGET = 0.5  # share of a core the sampling thread may use and keep a real-time priority


@dataclass(frozen=True)
class Taken:
    """One tick: a sample of each watched process (None where it failed)."""

    samples: tuple[tuple[int, RawSample | None, str | None], ...]  # (pid, sample, error)
    taken_at: float  # time.monotonic() when the first began
    lag: float  # how long after its due time
    given_up: float  # seconds of the schedule given up so far (the sampler fell too far behind)
    gone: tuple[tuple[int, str], ...] = ()  # processes that exited during this tick, and why


class SampleTaker:
    def __init__(self, unwinders: dict[int, Unwinder], rate: float, realtime: bool,
                 deliver: Callable[[Taken], None], finished: Callable[[str], None], blocking: bool = False):
        self._unwinders = tuple(unwinders.items())  # replaced whole, never changed in place
        self._lock = threading.Lock()
        self.blocking = blocking
        self._stopping: dict[int, Unwinder] = {}  # blocking mode: unwinders this thread set up
        self.interval = 1.0 / rate
        self.want_realtime = realtime
        self.deliver = deliver
        self.finished = finished
        self.realtime = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pytop-sampling", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def add(self, pid: int, unwinder: Unwinder) -> None:
        """Sample one more process from the next tick on (any thread may call this)."""
        with self._lock:
            self._unwinders = (*self._unwinders, (pid, unwinder))

    def _drop(self, pids: set[int]) -> None:
        with self._lock:
            self._unwinders = tuple(item for item in self._unwinders if item[0] not in pids)

    def _run(self) -> None:
        try:
            self._loop()
        finally:
            for unwinder in self._stopping.values():  # release the target from this same thread
                unwinder.set_blocking(False)

    def _loop(self) -> None:
        self.realtime = self.want_realtime and priority.make_realtime()
        due = time.monotonic()
        given_up = 0.0
        budget_mark = (time.thread_time(), time.monotonic())
        last_reason = "the process has exited"
        while not self._stop.is_set():
            unwinders = self._unwinders
            if not unwinders:
                self.finished(last_reason)
                return
            taken = self._tick(unwinders, due, given_up)
            due += self.interval * random.uniform(*JITTER)
            if taken.lag > MAX_BACKLOG:  # catching up would only mean sampling back to back
                given_up += taken.lag
                due = time.monotonic()
            if taken.gone:
                self._drop({pid for pid, _ in taken.gone})
                last_reason = taken.gone[-1][1]
            self.deliver(taken)
            budget_mark = self._check_budget(budget_mark)

    def _tick(self, unwinders: tuple[tuple[int, Unwinder], ...], due: float, given_up: float) -> Taken:
        results: list[tuple[int, RawSample | None, str | None]] = []
        gone: list[tuple[int, str]] = []
        started = 0.0
        for i, (pid, unwinder) in enumerate(unwinders):
            if self.blocking and pid not in self._stopping:
                unwinder.set_blocking(True)
                self._stopping[pid] = unwinder
            try:
                sample = unwinder.sample_raw(due if i == 0 else 0.0)
                results.append((pid, sample, None))
                at = sample.taken_at
            except SampleError as exc:
                results.append((pid, None, str(exc)))
                at = exc.taken_at
            except errors.PytopError as exc:  # exited, or no longer readable
                gone.append((pid, str(exc)))
                at = time.monotonic()
            if i == 0:
                started = at
        return Taken(tuple(results), started, started - due, given_up, tuple(gone))

    def _check_budget(self, mark: tuple[float, float]) -> tuple[float, float]:
        """Give the real-time priority back if sampling costs more than its budget: it must
        never starve the target."""
        now = (time.thread_time(), time.monotonic())
        if now[1] - mark[1] < 1.0:
            return mark
        if self.realtime and (now[0] - mark[0]) / (now[1] - mark[1]) > REALTIME_BUDGET:
            priority.drop_realtime()
            self.realtime = False
        return now
