"""--push, the sampling side: what the feed drained since the last cut, per (thread, stack), cut
every few seconds into one profile per process (core.profile.Upload) and handed to a sink that
sends them on (push/sender.py, wired by run.py). The cut runs on the sampler's thread, which
alone changes the stack book it reads, and resolves each stack to its frames once per cut; the
sink encodes and sends from a thread of its own, and its put() never waits."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Protocol

from ..core.counts import Counts
from ..core.model import Mode, PushStatus
from ..core.profile import Sample, Upload, samples_of
from ..core.records import Drain
from ..core.stack_book import StackBook
from ..core.threads import ThreadState


class ProfileSink(Protocol):
    """Where the cut profiles go."""

    @property
    def every(self) -> float:
        """Seconds of samples in each profile."""

    def put(self, uploads: list[Upload]) -> None:
        """Take them to send; never waits."""

    def status(self) -> PushStatus:
        """How sending goes (any thread may ask)."""


class PushWindow:
    def __init__(self, every: float, mode: Mode, rate: float, command_of: Callable[[int], str]):
        """mode: the run's, as it started (a key that changes the view does not change what a
        server stores). command_of: a process's command line (read once per process)."""
        self.seconds = every
        self.mode = mode
        self.rate = rate
        self.counts = Counts()
        self.started = time.time()
        self.due = time.monotonic() + every
        self._command_of = command_of
        self._commands: dict[int, str] = {}

    def restart(self) -> None:
        """Sampling starts now: so does the first profile's time."""
        self.counts = Counts()
        self.started = time.time()
        self.due = time.monotonic() + self.seconds

    def add(self, drain: Drain) -> None:
        self.counts.forget(drain.evicted)  # first: an evicted id may come back as a new stack
        self.counts.add_drain(drain)

    def fold(self, moved: dict[int, int]) -> None:
        """Finished threads folded into their process's row (as the totals are)."""
        if moved:
            self.counts.fold(moved)

    def cut(self, book: StackBook, threads: Mapping[int, ThreadState]) -> list[Upload]:
        """The profiles of the time since the last cut, one per process that has samples in it;
        the next window starts now."""
        end = time.time()

        def thread_of(key: int) -> tuple[int | None, str | None]:
            t = threads.get(key)
            return (t.native_id or None, t.name) if t else (None, None)

        by_pid: dict[int, list[Sample]] = {}
        for sample in samples_of(self.counts, book, thread_of, self.mode):
            by_pid.setdefault(sample.pid, []).append(sample)
        uploads = [Upload(pid, self._command(pid), tuple(samples), self.started, end, self.rate, self.mode)
                   for pid, samples in sorted(by_pid.items())]
        self.counts = Counts()
        self.started = end
        self.due = time.monotonic() + self.seconds
        return uploads

    def _command(self, pid: int) -> str:
        command = self._commands.get(pid)
        if command is None:
            command = self._commands[pid] = self._command_of(pid)
        return command
