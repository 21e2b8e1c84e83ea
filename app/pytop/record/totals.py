"""The session's totals in a key frame, to bytes and back: what a replay has summed after every
window before the key (time per (thread, stack), the function and line tables, the threads),
so that a range from the recording's start (what `pytop FILE` opens on, and where its time
cursor moves) takes in the windows after the last key instead of every window of the session.

They are the live view's own totals at the window before the key, encoded on the sampler's
thread when the writer asks for a key (sampling/windows.py): the figures a replay would have
summed, to the nanosecond, as long as the live view's figures were never reset and no window
was lost (a recorder then writes keys without totals: record/recorder.py). Dictionaries go in
their order, so that a table's ties fall as they fell live.

Decoding checks what later steps index by or trust: counts and lengths (codec), ids within the
stack book's bounds, figures that are not negative. Anything else is Damaged. Pure: no I/O."""

from __future__ import annotations

import dataclasses
import math
from array import array
from typing import NamedTuple

from ..core.counts import Counts
from ..core.function_sums import FOLDED, FunctionSums
from ..core.model import RowKey
from ..core.stack_book import StackBook
from ..core.threads import ThreadBook, ThreadState
from .codec import Damaged, Packer, Unpacker, same_length

TOTALS_VERSION = 1
MAX_NODE_ID = 1 << 22  # (as payloads.MAX_NODE_ID)
_COUNT_INTS = ("ticks", "late", "skipped", "failed", "torn", "gil_samples", "process_samples", "gc_samples",
               "gc_known", "cpu_ns", "unseen_ns")
_COUNT_FLOATS = ("slot_seconds", "first_at", "last_at", "longest_delay")
_THREAD_INTS = ("key", "process", "pid", "thread_id", "native_id", "native", "alive", "gil", "cpu_ns", "wall_ns",
                "wait_ns", "unplaced_ns", "samples", "gil_samples", "errors", "last_error", "stack", "threads",
                "ended", "had_frames")
_THREAD_FLAGS = {"native", "alive", "gil", "had_frames"}


class Totals(NamedTuple):
    """What a replay has summed from the recording's start to a key frame."""

    total: Counts
    by_function: dict[RowKey, array[int]]
    by_line: dict[RowKey, array[int]]
    tasks: frozenset[RowKey]
    natives: frozenset[RowKey]
    threads: dict[int, ThreadState]
    ended: int  # the thread book's count of threads seen to end
    span: float  # seconds the windows' figures cover, summed in their order

    def sums(self, book: StackBook) -> FunctionSums:
        """The tables, as FunctionSums over `book` (rows copied: the replay adds to them)."""
        return _sums(book, self.by_function, self.by_line, self.tasks, self.natives)

    def counts(self) -> Counts:
        """The time per (thread, stack) and the engine's figures, copied (for a range that is one
        window from the session's start: its window so far is the totals)."""
        total = self.total
        return dataclasses.replace(total, stacks={k: list(v) for k, v in total.stacks.items()},
                                   threads={k: list(v) for k, v in total.threads.items()},
                                   aged={k: list(v) for k, v in total.aged.items()})

    @property
    def folded(self) -> bool:
        """Whether the tables folded rows past their bound (a window's tables never do)."""
        return FOLDED in self.by_function or FOLDED in self.by_line

    def thread_book(self) -> ThreadBook:
        """The threads (copied: the replay adds to them)."""
        return ThreadBook({key: dataclasses.replace(t) for key, t in self.threads.items()}, self.ended)


def _sums(book: StackBook, by_function: dict[RowKey, array[int]], by_line: dict[RowKey, array[int]],
          tasks: frozenset[RowKey], natives: frozenset[RowKey]) -> FunctionSums:
    sums = FunctionSums(book)
    sums.by_function = {key: array("q", row) for key, row in by_function.items()}
    sums.by_line = {key: array("q", row) for key, row in by_line.items()}
    sums.tasks, sums.natives = set(tasks), set(natives)
    return sums


def put_totals(p: Packer, total: Counts, sums: FunctionSums, threads: ThreadBook, span: float) -> None:
    p.put_ints((TOTALS_VERSION,))
    p.put_ints(getattr(total, name) for name in _COUNT_INTS)
    p.put_floats([*(getattr(total, name) for name in _COUNT_FLOATS), span])
    p.put_ints(t for t, _ in total.stacks)
    p.put_ints(s for _, s in total.stacks)
    _put_columns(p, list(total.stacks.values()), 5)
    for per_thread in (total.threads, total.aged):
        p.put_ints(per_thread)
        _put_columns(p, list(per_thread.values()), 5)
    for table in (sums.by_function, sums.by_line):
        keys = list(table)
        p.put_texts([k[0] for k in keys])
        p.put_texts([k[1] for k in keys])
        p.put_ints(k[2] for k in keys)
        p.put_ints(k[3] for k in keys)
        p.put_ints((int(k in sums.tasks) | int(k in sums.natives) << 1) for k in keys)
        _put_columns(p, list(table.values()), 12)
    rows = list(threads.threads.values())
    for name in _THREAD_INTS:
        p.put_ints(int(getattr(t, name)) for t in rows)
    p.put_texts([t.name for t in rows])
    p.put_texts([t.os_state for t in rows])
    p.put_ints((threads.ended_count,))


class TotalTables(NamedTuple):
    """The function and line tables of a key frame's totals alone (take_total_tables)."""

    by_function: dict[RowKey, array[int]]
    by_line: dict[RowKey, array[int]]
    tasks: frozenset[RowKey]
    natives: frozenset[RowKey]
    span: float

    def sums(self, book: StackBook) -> FunctionSums:
        """As Totals.sums."""
        return _sums(book, self.by_function, self.by_line, self.tasks, self.natives)

    @property
    def folded(self) -> bool:
        return FOLDED in self.by_function or FOLDED in self.by_line


def take_totals(u: Unpacker) -> Totals:
    total, span = _take_head(u)
    threads_of, stacks_of = u.ints(), u.ints()
    tallies = _take_columns(u, same_length(threads_of, stacks_of), 5)
    if not all(0 <= s < MAX_NODE_ID for s in stacks_of):
        raise Damaged("a stack out of bounds")
    total.stacks = {(t, s): tally for t, s, tally in zip(threads_of, stacks_of, tallies)}
    total.threads, total.aged = _per_thread(u), _per_thread(u)
    by_function, by_line, tasks, natives = _take_tables(u)
    threads, ended = _take_threads(u)
    return Totals(total, by_function, by_line, tasks, natives, threads, ended, span)


def take_total_tables(u: Unpacker) -> TotalTables:
    """The tables alone, the time per (thread, stack) and the threads passed over undecoded (a
    range's ends by difference need no more: record/prefix.py)."""
    _, span = _take_head(u)
    for _ in range(2 + 5 + 2 * (1 + 5)):  # (thread, stack) and its 5 figures; threads' and aged's
        u.skip_ints()
    by_function, by_line, tasks, natives = _take_tables(u)
    for _ in _THREAD_INTS:
        u.skip_ints()
    u.skip_texts()
    u.skip_texts()
    (ended,) = u.ints() or (-1,)
    if ended < 0:
        raise Damaged("a thread book's count out of bounds")
    return TotalTables(by_function, by_line, tasks, natives, span)


def _take_head(u: Unpacker) -> tuple[Counts, float]:
    if list(u.ints()) != [TOTALS_VERSION]:
        raise Damaged("totals of another making")
    ints, floats = u.ints(), u.floats()
    if len(ints) != len(_COUNT_INTS) or len(floats) != len(_COUNT_FLOATS) + 1:
        raise Damaged("totals' figures are not those of this version")
    if not all(math.isfinite(v) for v in floats) or any(v < 0 for v in ints):
        raise Damaged("totals' figures out of bounds")
    total = Counts()
    for name, value in (*zip(_COUNT_INTS, ints), *zip(_COUNT_FLOATS, floats)):
        setattr(total, name, value)
    return total, floats[-1]


def _take_tables(u: Unpacker) -> tuple[dict[RowKey, array[int]], dict[RowKey, array[int]], frozenset[RowKey],
                                       frozenset[RowKey]]:
    tables: list[dict[RowKey, array[int]]] = []
    tasks: set[RowKey] = set()
    natives: set[RowKey] = set()
    for _ in range(2):
        names, files, lines, pids, flags = u.texts(), u.texts(), u.ints(), u.ints(), u.ints()
        count = same_length(names, files, lines, pids, flags)
        rows = _take_columns(u, count, 12, negative=True)
        if any(n is None for n in names) or any(f is None for f in files):
            raise Damaged("a table of the totals does not add up")
        table: dict[RowKey, array[int]] = {}
        for i in range(count):
            key = (str(names[i]), str(files[i]), lines[i], pids[i])
            table[key] = array("q", rows[i])
            if flags[i] & 1:
                tasks.add(key)
            if flags[i] & 2:
                natives.add(key)
        tables.append(table)
    return tables[0], tables[1], frozenset(tasks), frozenset(natives)


def _take_threads(u: Unpacker) -> tuple[dict[int, ThreadState], int]:
    columns = {name: u.ints() for name in _THREAD_INTS}
    names, states = u.texts(), u.texts()
    count = same_length(*columns.values(), names, states)
    if any(v < 0 for name in ("cpu_ns", "wall_ns", "wait_ns", "samples", "threads", "ended")
           for v in columns[name]) or not all(0 <= s < MAX_NODE_ID for s in columns["stack"]) \
            or any(s is None for s in states):
        raise Damaged("a thread of the totals out of bounds")
    threads: dict[int, ThreadState] = {}
    for i in range(count):
        t = ThreadState(columns["key"][i], columns["process"][i], columns["pid"][i], name=names[i],
                        os_state=str(states[i]))
        for name in _THREAD_INTS[3:]:
            setattr(t, name, bool(columns[name][i]) if name in _THREAD_FLAGS else columns[name][i])
        threads[t.key] = t
    (ended,) = u.ints() or (-1,)
    if ended < 0:
        raise Damaged("a thread book's count out of bounds")
    return threads, ended


def _put_columns(p: Packer, rows: list[list[int]] | list[array[int]], width: int) -> None:
    """A figure a column, each in the narrowest width that holds it (counts beside nanoseconds)."""
    for i in range(width):
        p.put_ints(row[i] for row in rows)


def _take_columns(u: Unpacker, count: int, width: int, negative: bool = False) -> list[list[int]]:
    columns = [u.ints() for _ in range(width)]
    if any(len(c) != count for c in columns) or (not negative and any(v < 0 for c in columns for v in c)):
        raise Damaged("figures of the totals do not add up")
    return [list(row) for row in zip(*columns)]


def _per_thread(u: Unpacker) -> dict[int, list[int]]:
    keys = u.ints()
    return dict(zip(keys, _take_columns(u, len(keys), 5)))
