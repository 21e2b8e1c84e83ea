"""A run's profile: every stack counted since the last reset, the names to read them by and who
each thread was. Handed out by the sampler when sampling has stopped (or built on its thread
for an export), it is what reports read: the JSON and text tables' stacks, pprof, collapsed
stacks and speedscope. Nothing changes it after it is handed out."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from .counts import Counts
from .model import Mode
from .stack_book import StackBook, StackInfo
from .tally import MODE_INDEX, SAMPLES


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


class Sample(NamedTuple):
    """One stack of one thread, resolved to frames: what a pprof Sample is made of."""

    frames: tuple[tuple[str, str, int], ...]  # (function, filename, line), innermost first
    pid: int
    tid: int | None  # the kernel's TID
    thread_name: str | None
    samples: int
    nanoseconds: int  # time in the mode


def samples_of(counts: Counts, book: StackBook, thread_of: Callable[[int], tuple[int | None, str | None]],
               mode: Mode) -> Iterator[Sample]:
    """Each (thread, stack) of `counts` with samples or time, resolved (a walk over its frames:
    for reports, not for every sample). A stack is walked once however many threads ran it (a
    thread-per-request server's thousand threads share a few stacks), and its samples share one
    frames tuple: an encoder may key on it."""
    index = MODE_INDEX[mode]
    infos: dict[int, StackInfo | None] = {}
    for (thread, stack), tally in sorted(counts.stacks.items()):
        if not (tally[SAMPLES] or tally[index]):
            continue
        info = infos[stack] if stack in infos else infos.setdefault(stack, book.info(stack))
        if info is None:
            continue
        tid, name = thread_of(thread)
        yield Sample(info.frames, info.pid, tid, name, tally[SAMPLES], tally[index])


@dataclass(frozen=True)
class Upload:
    """One process's profile of the wall-clock seconds [start, end], cut for --push."""

    pid: int
    command: str  # its command line (the server's service is named after its program)
    samples: tuple[Sample, ...]
    start: float
    end: float
    rate: float  # samples a second asked for
    mode: Mode
