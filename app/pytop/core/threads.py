"""The threads seen since the last reset, with their figures. Pure.

A thread-per-request server starts thousands of threads a minute: the rows of finished threads
are folded, oldest first, into one row per process once there are more than MAX_FINISHED of
them, and so are their stacks (Counts.fold), so memory stays bounded however long pytop runs.
A thread state seen only without a Python frame and a name (a thread in its first moments,
before it runs Python, or after its frames have unwound) that ends so is folded at once: it
is not a thread a reader can do anything with, and its CPU time stays counted in the fold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .records import STATUS_NAMES, Standing, ThreadUpdate

MAX_FINISHED = 200  # finished threads kept as rows of their own


def fold_key(process: int) -> int:
    """The key of a process's row of folded finished threads (engine keys are positive)."""
    return -(process + 1)


@dataclass
class ThreadState:
    key: int
    process: int
    pid: int
    thread_id: int = 0
    native_id: int = 0
    name: str | None = None
    native: bool = False  # a thread of the process without Python
    alive: bool = True
    gil: bool = False  # held the GIL in its latest sample
    cpu_ns: int = 0  # the kernel's count since the reset
    wall_ns: int = 0
    wait_ns: int = 0
    unplaced_ns: int = 0  # of cpu_ns, what no sample could place on a stack of its own
    samples: int = 0
    gil_samples: int = 0
    errors: int = 0
    last_error: int = 0
    stack: int = 0  # its stack in its latest sample
    os_state: str = "?"
    threads: int = 1  # threads this row stands for (folded rows: more)
    ended: int = 0  # order in which it was seen to end
    had_frames: bool = False  # some sample saw it running Python

    def add_figures(self, more: ThreadUpdate | ThreadState) -> None:
        """Add a drain's figures for this thread, or a folded thread's."""
        self.cpu_ns += more.cpu_ns
        self.wall_ns += more.wall_ns
        self.wait_ns += more.wait_ns
        self.unplaced_ns += more.unplaced_ns
        self.samples += more.samples
        self.gil_samples += more.gil_samples
        self.errors += more.errors
        self.last_error = more.last_error if more.errors else self.last_error

    @property
    def last_error_text(self) -> str | None:
        return STATUS_NAMES.get(self.last_error, "error") if self.errors else None


class ThreadBook:
    def __init__(self, threads: dict[int, ThreadState] | None = None, ended: int = 0) -> None:
        """threads, ended: a book as it was (a recording's totals), its count of ended threads."""
        self.threads: dict[int, ThreadState] = threads or {}
        self._ended = ended

    @property
    def ended_count(self) -> int:
        """Threads seen to end so far: the order the next one ends in follows it."""
        return self._ended

    def update(self, updates: tuple[ThreadUpdate, ...], pid_of: Callable[[int], int],
               has_frames: Callable[[int], bool] = lambda stack: True) -> None:
        """has_frames: whether a stack id holds Python frames."""
        for u in updates:
            t = self.threads.get(u.thread)
            if t is None:
                t = self.threads[u.thread] = ThreadState(u.thread, u.process, pid_of(u.process), native=u.native)
            t.thread_id = u.thread_id or t.thread_id
            t.native_id = u.native_id or t.native_id
            t.name = u.name or t.name
            t.add_figures(u)
            t.stack = u.stack or t.stack
            t.had_frames = t.had_frames or (bool(u.stack) and has_frames(u.stack))
            t.os_state = u.os_state
            t.gil = bool(u.flags & 8)
            if t.alive and not u.alive:
                self._ended += 1
                t.ended = self._ended
            t.alive = u.alive

    def stand(self, standing: Standing) -> None:
        """Threads whose only news is time asleep on the stack they had: its samples and wall
        time. (Each was handed over before, so it is here: only a bug could make one missing.)"""
        threads = self.threads
        for key, samples, wall in zip(standing.threads, standing.samples, standing.wall_ns):
            t = threads.get(key)
            if t is not None:
                t.samples += samples
                t.wall_ns += wall

    def ended_process(self, process: int) -> None:
        """Its process is gone: so are its threads."""
        for t in self.threads.values():
            if t.process == process and t.alive:
                self._ended += 1
                t.ended = self._ended
                t.alive = False

    def fold_finished(self) -> dict[int, int]:
        """Fold the oldest finished threads past MAX_FINISHED into their process's fold row;
        returns {thread key: fold key} for the stacks to follow."""
        finished = sorted((t for t in self.threads.values() if not t.alive and t.key > 0), key=lambda t: t.ended)
        transient = [t for t in finished if not t.had_frames and not t.name and not t.native]
        kept = [t for t in finished if t.had_frames or t.name or t.native]
        moved: dict[int, int] = {}
        for t in transient + kept[:max(0, len(kept) - MAX_FINISHED)]:
            key = fold_key(t.process)
            row = self.threads.get(key)
            if row is None:
                row = self.threads[key] = ThreadState(key, t.process, t.pid, name=None, alive=False, threads=0)
            row.threads += 1
            row.add_figures(t)
            del self.threads[t.key]
            moved[t.key] = key
        return moved

    def reset(self) -> None:
        """Figures start again; live threads stay, finished ones go with their figures."""
        self.threads = {k: ThreadState(k, t.process, t.pid, t.thread_id, t.native_id, t.name, t.native, True,
                                       t.gil, stack=t.stack, os_state=t.os_state)
                        for k, t in self.threads.items() if t.alive}
