"""Time per (thread, stack) over a stretch of sampling, with the engine's figures for it: what
needs whole stacks (the call tree, callers, exports, one thread's figures) reads it. That
detail ages out with the stacks the engine evicts, least recently seen first; each thread's
own sum stays whole. Pure: no threads, no I/O, no target."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from .model import Mode
from .records import Drain, Standing, Weight
from .stack_book import StackBook, StackInfo
from .tally import MODE_INDEX, add_into, new_tally

Tally = list[int]
ThreadStacks = dict[tuple[int, int], Tally]  # (thread key, leaf) -> tally


@dataclass
class Counts:
    """Time per (thread, stack) over a stretch of sampling, with the engine's figures for it."""

    stacks: ThreadStacks = field(default_factory=dict)
    threads: dict[int, Tally] = field(default_factory=dict)  # per thread: every tally, aged or not
    aged: dict[int, Tally] = field(default_factory=dict)  # per thread: tallies whose stacks aged out
    ticks: int = 0
    late: int = 0
    skipped: int = 0  # slots of the schedule without a sample
    slot_seconds: float = 0.0  # the schedule's time its ticks and skipped slots cover
    failed: int = 0  # samples that failed as a whole
    torn: int = 0  # thread stacks that could not be read
    gil_samples: int = 0  # samples (of all processes) in which some thread held the GIL
    process_samples: int = 0
    gc_samples: int = 0
    gc_known: int = 0
    cpu_ns: int = 0  # the kernel's CPU time of the watched processes
    unseen_ns: int = 0  # ... of threads that ended between samples
    first_at: float = 0.0  # CLOCK_MONOTONIC of the first and last tick
    last_at: float = 0.0
    longest_delay: float = 0.0  # seconds: the latest a tick began after it was due

    def add_weights(self, weights: Iterable[Weight]) -> None:
        stacks, threads = self.stacks, self.threads
        # (unpacked once, one look-up a table: a window of a pool or a replay's window takes in
        # hundreds of weights twice, for the window and the session)
        for stack, thread, samples, running, cpu, wall, gil in weights:
            pair = (thread, stack)
            tally = stacks.get(pair)
            if tally is None:
                stacks[pair] = [samples, running, cpu, wall, gil]
            else:
                tally[0] += samples
                tally[1] += running
                tally[2] += cpu
                tally[3] += wall
                tally[4] += gil
            tally = threads.get(thread)
            if tally is None:
                threads[thread] = [samples, running, cpu, wall, gil]
            else:
                tally[0] += samples
                tally[1] += running
                tally[2] += cpu
                tally[3] += wall
                tally[4] += gil

    def add_standing(self, standing: Standing) -> None:
        """Threads whose update is time asleep on their stack: a weight each, with no CPU."""
        stacks, threads = self.stacks, self.threads
        for thread, stack, samples, wall in zip(standing.threads, standing.stacks, standing.samples,
                                                standing.wall_ns):
            tally = stacks.get((thread, stack))
            if tally is None:
                stacks[(thread, stack)] = [samples, 0, 0, wall, 0]
            else:
                tally[0] += samples
                tally[3] += wall
            tally = threads.get(thread)
            if tally is None:
                threads[thread] = [samples, 0, 0, wall, 0]
            else:
                tally[0] += samples
                tally[3] += wall

    def add_drain(self, drain: Drain) -> None:
        self.add_weights(drain.weights)
        self.add_standing(drain.standing)
        self.ticks += drain.ticks
        self.late += drain.late
        self.skipped += drain.skipped
        self.slot_seconds += drain.slot_seconds
        self.longest_delay = max(self.longest_delay, drain.longest_delay)
        if drain.ticks:
            self.first_at = self.first_at or drain.first_at
            self.last_at = drain.last_at
        for p in drain.processes:
            self.failed += p.failed
            self.torn += p.torn
            self.gil_samples += p.gil_samples
            self.process_samples += p.samples
            self.gc_samples += p.gc_samples
            self.gc_known += p.gc_known
            self.cpu_ns += p.cpu_ns
            self.unseen_ns += p.unseen_cpu_ns

    def forget(self, evicted: Iterable[int]) -> None:
        """The engine evicted these stacks: their detail goes, their time stays in `aged`."""
        gone = set(evicted)
        if not gone:
            return
        for pair in [pair for pair in self.stacks if pair[1] in gone]:
            add_into(self.aged.setdefault(pair[0], new_tally()), self.stacks.pop(pair))

    def fold(self, threads: dict[int, int]) -> None:
        """Merge the stacks of threads[key] into threads' fold keys (finished threads)."""
        for (thread, stack) in [k for k in self.stacks if k[0] in threads]:
            tally = self.stacks.pop((thread, stack))
            into = self.stacks.setdefault((threads[thread], stack), new_tally())
            add_into(into, tally)
        for per_thread in (self.threads, self.aged):
            for thread in [t for t in per_thread if t in threads]:
                add_into(per_thread.setdefault(threads[thread], new_tally()), per_thread.pop(thread))

    def leaf_tallies(self, keep: Callable[[int], bool] | None = None) -> list[tuple[int, int, int, int, int]]:
        """(leaf, samples, cpu, wall, gil) per stack, threads summed; keep: which threads count."""
        by_leaf: dict[int, list[int]] = {}
        for (thread, leaf), tally in self.stacks.items():
            if keep is not None and not keep(thread):
                continue
            into = by_leaf.get(leaf)
            if into is None:
                by_leaf[leaf] = [tally[0], tally[2], tally[3], tally[4]]
            else:
                into[0] += tally[0]
                into[1] += tally[2]
                into[2] += tally[3]
                into[3] += tally[4]
        return [(leaf, *t) for leaf, t in by_leaf.items()]  # type: ignore[misc]

    def aged_share(self, index: int, keep: Callable[[int], bool] | None = None) -> float:
        """The share of the time in `index` whose stack detail has aged out."""
        aged = sum(t[index] for thread, t in self.aged.items() if keep is None or keep(thread))
        whole = sum(t[index] for thread, t in self.threads.items() if keep is None or keep(thread))
        return aged / whole if whole else 0.0


def timed_stacks(counts: Counts, book: StackBook, mode: Mode,
                 keep: Callable[[int], bool] | None = None) -> Iterator[tuple[StackInfo, float]]:
    """Every counted stack with time in `mode`, decoded, and its seconds; keep: which threads'
    stacks count (None: all). A walk over each stack's frames: for reports."""
    index = MODE_INDEX[mode]
    for (thread, stack), tally in counts.stacks.items():
        seconds = tally[index] / 1e9
        if not seconds or (keep is not None and not keep(thread)):
            continue
        info = book.info(stack)
        if info is not None:
            yield info, seconds
