"""Turning what the engine drains into per-function figures. Pure: no threads, no I/O, no target.

The engine hands over time per (thread, stack), in three kinds at once: `cpu` (the kernel's
count of the thread's CPU time), `wall` (time between samples), `gil` (wall time while holding
the GIL). Keeping all three lets the view switch mode without losing history.

A stack is a path in the engine's stack tree, known by its innermost node (its leaf). The
engine sums each drain's time per function and per line itself (over the tree: a deep stack is
a walk over its nodes in C, not a decoding of its frames here), so the tables since the reset
are exact sums of those rows, drain after drain. The time per (thread, stack) is kept too, for
what needs whole stacks (the call tree, callers, exports, one thread's figures): that detail
ages out with the stacks the engine evicts, least recently seen first; each thread's own sum
stays whole.

Own: the function is the innermost frame. Total: the function is anywhere in the stack; a
recursive function is counted once per stack. A stack without Python frames (a thread in C, a
thread without Python, threads that ended between samples) counts as one pseudo-function.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from operator import add, sub
from typing import NamedTuple

from .model import Mode, RowKey
from .records import (
    COARSE_FRAME,
    PSEUDO_FUNCTIONS,
    STACK_COARSE,
    STACK_INCOMPLETE,
    TASK_FILENAME,
    Drain,
    Function,
    FunctionFigures,
    Node,
    Standing,
    Weight,
)

# A tally: [samples, running samples, cpu ns, wall ns, gil ns]
SAMPLES, RUNNING, CPU, WALL, GIL = range(5)
MODE_INDEX: dict[Mode, int] = {"cpu": CPU, "wall": WALL, "gil": GIL}


def new_tally() -> list[int]:
    return [0, 0, 0, 0, 0]


def add_into(into: list[int], more: Iterable[int]) -> None:
    for i, value in enumerate(more):
        into[i] += value


class FunctionName(NamedTuple):
    key: RowKey  # (function, filename, 0, pid)
    task: bool  # an asyncio task's pseudo-frame
    native: bool = False  # a native (C) function: filename is its library


UNKNOWN_FUNCTION = FunctionName(("<unknown>", "<unknown>", 0, 0), False)  # an id no drain named


class StackInfo(NamedTuple):
    """One stack, decoded: its frames and where it belongs."""

    pid: int
    frames: tuple[tuple[str, str, int], ...]  # (function, filename, line), innermost first
    incomplete: bool  # outer frames missing, or a coarse stack's set of frames: no caller/callee edges

    @property
    def own_function(self) -> RowKey:
        function, filename, _ = self.frames[0]
        return (function, filename, 0, self.pid)


class StackBook:
    """What the engine's function ids and stack-tree nodes stand for, learned from the drains.
    Stacks of asyncio programs (3.14+) hold a pseudo-frame per running task, outside its
    coroutine; they are read with it while `tasks` is on, without it otherwise."""

    def __init__(self, tasks: bool = False) -> None:
        self.functions: dict[int, FunctionName] = {}
        self.pids: dict[int, int] = {}  # engine process index -> pid
        self.tasks = tasks
        # The stack tree, one entry per node id (ids are reused after an eviction).
        self.parent = array("I")
        self.function = array("I")
        self.line = array("i")
        self.kind = array("B")
        self.flags = array("B")
        self.depth = array("I")
        self.process = array("I")
        self.nodes = 0  # live nodes

    def show_tasks(self, tasks: bool) -> bool:
        """Read stacks with or without their task pseudo-frames; True if that changed."""
        if tasks == self.tasks:
            return False
        self.tasks = tasks
        return True

    def learn(self, drain: Drain) -> None:
        self.retire(drain.retired)  # first: a new function may have a retired one's id
        self.learn_functions(drain.functions)
        self.forget(drain.evicted)
        self.learn_nodes(drain.nodes)

    def learn_functions(self, functions: Iterable[Function]) -> None:
        for f in functions:
            pid = self.pids.get(f.process, f.process)
            if f.kind:
                name, filename = PSEUDO_FUNCTIONS.get(f.kind, "(no Python frame)"), ""
            else:
                name, filename = f.qualname or "?", f.filename or "?"
                # A task's name, or the coroutine of one nobody named; not "(other tasks)".
                if filename == TASK_FILENAME and (not name.startswith("(") or name.startswith("(unnamed) ")):
                    name = f"task {name}"
            self.functions[f.function] = FunctionName((name, filename, 0, pid), f.task, f.native)

    def retire(self, functions: Iterable[int]) -> None:
        """Functions the engine no longer has (their ids may come back as new ones)."""
        for function in functions:
            self.functions.pop(function, None)

    def forget(self, evicted: Iterable[int]) -> None:
        for node in evicted:
            if self.known(node):
                self.nodes -= 1
            self._set(node, 0, 0, 0, 0, 0, 0, 0)

    def learn_nodes(self, nodes: Iterable[Node]) -> None:
        for n in nodes:
            self._set(n.node, n.parent, n.function, n.line, n.kind | 0x80, n.flags, n.depth, n.process)
            self.nodes += 1

    def _set(self, node: int, parent: int, function: int, line: int, kind: int, flags: int, depth: int,
             process: int) -> None:
        grow = node + 1 - len(self.parent)
        if grow > 0:
            grow = max(grow, len(self.parent) // 2, 1024)
            for column, zero in ((self.parent, 0), (self.function, 0), (self.line, 0), (self.kind, 0),
                                 (self.flags, 0), (self.depth, 0), (self.process, 0)):
                column.extend([zero] * grow)
        self.parent[node], self.function[node], self.line[node] = parent, function, line
        self.kind[node], self.flags[node], self.depth[node], self.process[node] = kind, flags, depth, process

    def known(self, node: int) -> bool:
        """A live node (the 0x80 bit of `kind` marks one)."""
        return 0 < node < len(self.kind) and bool(self.kind[node] & 0x80)

    def has_frames(self, leaf: int) -> bool:
        return self.known(leaf) and self.parent[leaf] != 0

    def incomplete(self, leaf: int) -> bool:
        """No call edges from this stack: outer frames missing, or its frames a set (coarse)."""
        return bool(self.kind[leaf] & (STACK_INCOMPLETE | STACK_COARSE)) if self.known(leaf) else False

    def coarse(self, leaf: int) -> bool:
        return bool(self.kind[leaf] & STACK_COARSE) if self.known(leaf) else False

    def pid(self, node: int) -> int:
        return self.pids.get(self.process[node], self.process[node]) if self.known(node) else 0

    def name(self, function: int) -> FunctionName:
        return self.functions.get(function, UNKNOWN_FUNCTION)

    def key(self, node: int, by_line: bool) -> RowKey:
        """The row of a node: its function, or its (function, line)."""
        function, filename, _, pid = self.name(self.function[node]).key
        return (function, filename, self.line[node] if by_line else 0, pid)

    def hidden(self, node: int) -> bool:
        """A task's pseudo-frame while tasks are not shown."""
        return not self.tasks and self.parent[node] != 0 and self.name(self.function[node]).task

    def path(self, leaf: int) -> list[int]:
        """The frames' nodes of a stack, innermost first (the root left out), hidden ones too."""
        out = []
        node = leaf
        while node and self.known(node) and self.parent[node]:
            out.append(node)
            node = self.parent[node]
        return out

    def info(self, leaf: int) -> StackInfo | None:
        """The stack ending at `leaf`, decoded (a walk over its frames: for reports, not tables)."""
        if not self.known(leaf):
            return None
        frames = tuple((*self.name(self.function[n]).key[:2], self.line[n]) for n in self.path(leaf)
                       if not self.hidden(n))
        if not frames:
            kind = self.kind[leaf] & 0x7F & ~(STACK_INCOMPLETE | STACK_COARSE)
            frames = ((PSEUDO_FUNCTIONS.get(kind, "(no Python frame)"), "", 0),)
        if self.coarse(leaf):  # said where stacks are shown whole (exports): under a frame that says so
            frames += ((COARSE_FRAME, "", 0),)
        return StackInfo(self.pid(leaf), frames, self.incomplete(leaf))

    def own_function(self, leaf: int) -> RowKey | None:
        """The innermost function shown of a stack (a thread's current function)."""
        node = leaf
        while node and self.known(node) and self.parent[node] and self.hidden(node):
            node = self.parent[node]
        if not self.known(node):
            return None
        if self.parent[node] or self.function[node]:
            return self.key(node, False)
        return ("(no Python frame)", "", 0, self.pid(node))


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
        for w in weights:
            for tally in (stacks.get((w.thread, w.stack)), threads.get(w.thread)):
                if tally is None:
                    continue
                tally[0] += w.samples
                tally[1] += w.running
                tally[2] += w.cpu_ns
                tally[3] += w.wall_ns
                tally[4] += w.gil_ns
            if (w.thread, w.stack) not in stacks:
                stacks[(w.thread, w.stack)] = [w.samples, w.running, w.cpu_ns, w.wall_ns, w.gil_ns]
            if w.thread not in threads:
                threads[w.thread] = [w.samples, w.running, w.cpu_ns, w.wall_ns, w.gil_ns]

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


# A function's figures: [own samples, own cpu, own wall, own gil, total samples, total cpu,
# total wall, total gil, own samples / cpu / wall / gil when tasks are hidden]
OWN, TOTAL, HIDDEN = 0, 4, 8
# Rows kept per table: a program that keeps making functions of new names (generated code) would
# grow the tables for ever. Past the bound, the rows with the least time fold into one.
MAX_ROWS = {False: 20_000, True: 50_000}  # by function, by line
FOLDED: RowKey = ("(functions with the least time, folded)", "", 0, 0)


def new_row(figures: Iterable[int] = (0,) * 12) -> array[int]:
    """A row's 12 figures as machine integers: ~160 bytes, where a list of Python ints took ~450
    (a program that keeps making functions of new names grew a session's tables by that much
    per name, for an hour)."""
    return array("q", figures)


class FunctionSums:
    """Per-function figures in both views (by function, by line), all three modes at once, with
    tasks shown and hidden, as sums of the engine's rows."""

    def __init__(self, book: StackBook):
        self.book = book
        self.by_function: dict[RowKey, array[int]] = {}
        self.by_line: dict[RowKey, array[int]] = {}
        self.tasks: set[RowKey] = set()  # rows of asyncio tasks' pseudo-frames
        self.natives: set[RowKey] = set()  # rows of native (C) functions

    def add_rows(self, functions: Iterable[FunctionFigures], lines: Iterable[FunctionFigures],
                 bounded: bool = False) -> None:
        """bounded: a table since the reset, whose rows fold (least time first) past MAX_ROWS."""
        names = self.book.functions
        for table, rows, by_line in ((self.by_function, functions, False), (self.by_line, lines, True)):
            for row in rows:
                name = names.get(row.function, UNKNOWN_FUNCTION)
                function, filename, _, pid = name.key
                key = (function, filename, row.line if by_line else 0, pid)
                into = table.get(key)
                if into is None:
                    table[key] = new_row(row.figures)
                    if name.task:
                        self.tasks.add(key)
                    if name.native:
                        self.natives.add(key)
                else:  # (element by element in C: a Python loop over the 12 was a third slower)
                    into[:] = array("q", map(add, into, row.figures))
            if bounded and len(table) > MAX_ROWS[by_line]:
                self.fold(table, MAX_ROWS[by_line] * 3 // 4)

    def remove_rows(self, functions: Iterable[FunctionFigures], lines: Iterable[FunctionFigures]) -> bool:
        """Take rows that were added back out (a session's tables before some windows, from
        those after them: record/prefix.py). False, part done, when a row is not there or a
        figure would go below zero: the tables were not the sum of those rows."""
        names = self.book.functions
        for table, rows, by_line in ((self.by_function, functions, False), (self.by_line, lines, True)):
            for row in rows:
                function, filename, _, pid = names.get(row.function, UNKNOWN_FUNCTION).key
                into = table.get((function, filename, row.line if by_line else 0, pid))
                if into is None:
                    return False
                into[:] = array("q", map(sub, into, row.figures))
                if min(into) < 0:
                    return False
        return True

    def fold(self, table: dict[RowKey, array[int]], keep: int) -> None:
        """Fold all but `keep` rows, those with the least time (in every mode), into FOLDED."""
        least = sorted((key for key in table if key != FOLDED),
                       key=lambda key: max(table[key][TOTAL + 1], table[key][TOTAL + 2], table[key][TOTAL + 3]))
        into = table.setdefault(FOLDED, new_row())
        for key in least[:max(0, len(least) - keep)]:
            row = table.pop(key)
            for i in range(12):
                into[i] += row[i]
            self.tasks.discard(key)

    def merge(self, other: FunctionSums) -> None:
        self.tasks |= other.tasks
        for mine, theirs in ((self.by_function, other.by_function), (self.by_line, other.by_line)):
            for key, row in theirs.items():
                into = mine.get(key)
                if into is None:
                    mine[key] = new_row(row)
                else:
                    for i in range(12):
                        into[i] += row[i]

    def rows(self, by_line: bool) -> dict[RowKey, array[int]]:
        return self.by_line if by_line else self.by_function

    # Pickled (a replay's checkpoints, record/replay.py) as each table's keys and one array of
    # all their figures: a row's own array pickled alone made an hour's table (17,000 rows)
    # take 114 ms to pickle and 152 ms to load.
    def __getstate__(self) -> _PickledSums:
        by_function, by_line = ((tuple(table), array("q", b"".join(row.tobytes() for row in table.values())))
                                for table in (self.by_function, self.by_line))
        return self.book, (by_function, by_line), self.tasks, self.natives

    def __setstate__(self, state: _PickledSums) -> None:
        self.book, tables, self.tasks, self.natives = state
        self.by_function, self.by_line = ({key: figures[i * 12:i * 12 + 12] for i, key in enumerate(keys)}
                                          for keys, figures in tables)


_PickledTable = tuple[tuple[RowKey, ...], "array[int]"]
_PickledSums = tuple[StackBook, tuple[_PickledTable, _PickledTable], set[RowKey], set[RowKey]]


def mode_column(mode: Mode) -> int:
    """Which of a function's time figures a mode shows (offset from OWN, TOTAL or HIDDEN): a
    row's figures are a tally's without its running samples."""
    return MODE_INDEX[mode] - RUNNING
