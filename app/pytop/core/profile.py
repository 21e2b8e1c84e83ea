"""A run's profile: every stack counted since the last reset, the names to read them by and who
each thread was. Handed out by the sampler when sampling has stopped (or built on its thread
for an export), it is what reports read: the JSON and text tables' stacks, pprof, collapsed
stacks and speedscope. Nothing changes it after it is handed out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .aggregate import Counts, StackBook


@dataclass(frozen=True)
class ThreadIdentity:
    native_id: int | None  # the kernel's TID, None when unknown
    name: str | None
    pid: int = 0  # its process


@dataclass(frozen=True)
class Profile:
    counts: Counts
    book: StackBook
    threads: Mapping[int, ThreadIdentity]  # thread key -> who it was
    pid: int
    command: str
    subprocesses: bool = False  # the run followed the process's children (-s): reports name processes

    def thread_of(self, key: int) -> tuple[int | None, str | None]:
        """A thread key's TID (None if unknown) and name."""
        t = self.threads.get(key)
        return (t.native_id, t.name) if t else (None, None)

    def thread_labels(self) -> dict[int, str]:
        """Each thread as a report names it: "name (TID n)", "pid p: name (TID n)" with -s."""
        labels = {}
        for key, t in self.threads.items():
            tid = f"TID {t.native_id}" if t.native_id else f"thread {key}"
            label = f"{t.name} ({tid})" if t.name else tid
            labels[key] = f"pid {t.pid}: {label}" if self.subprocesses and t.pid else label
        return labels

    @property
    def title(self) -> str:
        return f"pytop: pid {self.pid}, {self.command}"
