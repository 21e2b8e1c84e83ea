"""The sampling thread: takes samples on schedule and hands them over, nothing else.

Each sample is waited for and taken in C without the GIL (Unwinder.sample(due)), so the moment a
sample is taken does not depend on what pytop's other threads do with the GIL. The Python work
per sample is kept to wrapping the result; aggregation happens in the sampler's other thread.
Intervals are jittered so periodic work in the target cannot alias with the sampling.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from . import errors, priority
from .unwinder import RawSample, SampleError, Unwinder

JITTER = (0.5, 1.5)  # each interval is the nominal one times a factor drawn from this range
MAX_BACKLOG = 1.0  # seconds: further behind than this, the missed samples are given up
REALTIME_BUDGET = 0.5  # share of a core the sampling thread may use and keep a real-time priority


@dataclass(frozen=True)
class Taken:
    """One attempt at a sample."""

    sample: RawSample | None  # None when it failed
    error: str | None
    taken_at: float  # time.monotonic() when it began
    lag: float  # how long after its due time
    given_up: float  # seconds of the schedule given up so far (the sampler fell too far behind)


class SampleTaker:
    def __init__(self, unwinder: Unwinder, rate: float, realtime: bool,
                 deliver: Callable[[Taken], None], finished: Callable[[str], None]):
        self.unwinder = unwinder
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

    def _run(self) -> None:
        self.realtime = self.want_realtime and priority.make_realtime()
        due = time.monotonic()
        given_up = 0.0
        budget_mark = (time.thread_time(), time.monotonic())
        try:
            while not self._stop.is_set():
                taken = self._take(due, given_up)
                due += self.interval * random.uniform(*JITTER)
                if taken.lag > MAX_BACKLOG:  # catching up would only mean sampling back to back
                    given_up += taken.lag
                    due = time.monotonic()
                self.deliver(taken)
                budget_mark = self._check_budget(budget_mark)
        except errors.TargetExited as exc:
            self.finished(str(exc))
        except errors.PytopError as exc:
            self.finished(str(exc))

    def _take(self, due: float, given_up: float) -> Taken:
        try:
            sample = self.unwinder.sample_raw(due)
        except SampleError as exc:
            return Taken(None, str(exc), exc.taken_at, exc.taken_at - due, given_up)
        return Taken(sample, None, sample.taken_at, sample.taken_at - due, given_up)

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
