"""A range's function tables by difference: the session's tables after the range's last window
minus those after the window before its first, each read from the last key frame with the
session's totals before it and the windows after that key (their function tables alone, the
rest of each frame passed over). Two 10-minute ranges of an hour's recording then cost four
key frames and at most four key intervals of light reads, where replaying them took in every
window of both ranges whole.

A function's figures only ever grow, and a table's rows are keyed by the function's name, file,
line and pid (no thread: nothing folds them between keys), so the difference is exactly what
summing the range's windows gives, to the nanosecond; the session's seconds likewise (the
clock each window's live view kept). Where that cannot be vouched for, None, and the caller
replays the range: a damaged window, a table that folded rows past its bound, a rotated file
(what went with its front is in some keys' totals and not in others'), a figure that would go
down. Pure but for reading the file."""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Sequence
from typing import BinaryIO, NamedTuple

from .. import files
from ..core.function_sums import FOLDED, FunctionSums
from ..core.records import Function, ProcessUpdate
from ..core.stack_book import StackBook
from . import container
from .book import SessionClock
from .codec import Damaged
from .gcpause import no_collection
from .keys import read_key_tables
from .payloads import read_window_tables
from .recording import Recording, StoredKey


class RangeTables(NamedTuple):
    """Windows first..last's function tables, as one window's (a --batch run's over that time)."""

    sums: FunctionSums
    seconds: float  # the session's seconds over the range, as the live view counted them
    span: float  # seconds the range's windows' figures cover


class _After(NamedTuple):
    sums: FunctionSums
    clock: float
    span: float


def range_tables(recording: Recording, first: int, last: int) -> RangeTables | None:
    if recording.rotation is not None or not 0 <= first <= last < len(recording.windows):
        return None
    try:
        with files.open_regular(recording.path) as f, no_collection():
            before, after = _tables_after(recording, f, first - 1), _tables_after(recording, f, last)
    except (Damaged, ValueError, OSError, zlib.error):
        return None
    if before is None or after is None:
        return None
    sums = FunctionSums(after.sums.book)
    for mine, later, earlier in ((sums.by_function, after.sums.by_function, before.sums.by_function),
                                 (sums.by_line, after.sums.by_line, before.sums.by_line)):
        if earlier.keys() - later.keys():
            return None
        for key, row in later.items():
            was = earlier.get(key)
            if was == row:
                continue  # (most rows of a long session did not move in the range: compared in C)
            difference = row if was is None else array("q", (a - b for a, b in zip(row, was)))
            if min(difference) < 0:
                return None
            if any(difference):
                mine[key] = difference
    sums.tasks = after.sums.tasks | before.sums.tasks
    sums.natives = after.sums.natives | before.sums.natives
    return RangeTables(sums, after.clock - before.clock, after.span - before.span)


def _tables_after(recording: Recording, f: BinaryIO, index: int) -> _After | None:
    """The session's tables after window `index` (-1: before the first), its clock and span:
    from the key frame before it and the windows since, or from the key after it and the
    windows between, whichever reads fewer (a key every five minutes: half of them, on the mean)."""
    since = index + 1 - max((key.index for key in recording.keys if key.index <= index + 1), default=0)
    later = next((key for key in recording.keys if key.index > index + 1), None)
    if later is not None and later.index - index < since:
        after = _tables_before_key(recording, f, later, index)
        if after is not None:
            return after
    return _tables_since_key(recording, f, index)


def _tables_before_key(recording: Recording, f: BinaryIO, key: StoredKey, index: int) -> _After | None:
    """The session's tables after window `index`: the key's totals less the windows between
    (read latest first). The windows' rows are named by the key's names: a function id retired
    or given to a function between (a new function may take a retired one's id) named another
    function, or none, before that, and a row of it earlier cannot be named. The clock is the
    key's offset and the window's elapsed, which holds while the view was not reset between.
    None where either cannot be vouched for: the caller reads forward."""
    state = read_key_tables(container.payload(f, key.frame))
    if state.book is None or state.totals is None or state.totals.folded:
        return None
    book = StackBook()
    _learn_names(book, state.book.processes, state.book.retired, state.book.functions)
    sums, span = state.totals.sums(book), state.totals.span
    after_elapsed, after_reset = state.clock.elapsed_live, False  # (of the window after the one read)
    renamed: set[int] = set()  # ids whose name before the drains read is not the key's
    for i in range(key.index - 1, index - 1, -1):
        window = read_window_tables(container.payload(f, recording.windows[i].frame))
        elapsed = window.circumstances.elapsed
        if after_reset or elapsed > after_elapsed or (i == key.index - 1 and elapsed != after_elapsed):
            return None  # (the view's figures were reset after this window: not the key's clock)
        if i == index:
            break
        for d in reversed(window.drains):  # (a drain's rows are named as it left the names)
            if any(row.function in renamed for rows in (d.function_rows, d.line_rows) for row in rows):
                return None
            if not sums.remove_rows(d.function_rows, d.line_rows):
                return None
            renamed.update(d.retired, (fn.function for fn in d.functions))
        span -= window.circumstances.window_seconds
        after_elapsed, after_reset = elapsed, window.reset
    for table in (sums.by_function, sums.by_line):  # (rows first seen after `index`, as forward has none)
        for gone in [row for row, figures in table.items() if not any(figures)]:
            del table[gone]
    return _After(sums, state.clock.offset + elapsed, span)


def _tables_since_key(recording: Recording, f: BinaryIO, index: int) -> _After | None:
    """The session's tables after window `index`, read forward from the last key before it
    with the session's totals (or the recording's start)."""
    book = StackBook()
    sums, clock, span, start = FunctionSums(book), SessionClock(), 0.0, 0
    for key in reversed(recording.keys):
        if key.index > index + 1:
            continue
        state = read_key_tables(container.payload(f, key.frame))
        if key.index == 0 and state.book is not None:  # (the recording's start: its names, if it has them)
            _learn_names(book, state.book.processes, state.book.retired, state.book.functions)
            break
        if state.book is None or state.totals is None:
            continue
        if state.totals.folded:
            return None
        _learn_names(book, state.book.processes, state.book.retired, state.book.functions)
        sums, clock, span, start = state.totals.sums(book), state.clock, state.totals.span, key.index
        break
    for i in range(start, index + 1):
        window = read_window_tables(container.payload(f, recording.windows[i].frame))
        clock = clock.after(window.circumstances.elapsed, window.reset)
        span += window.circumstances.window_seconds
        for d in window.drains:
            _learn_names(book, d.processes, d.retired, d.functions)
            sums.add_rows(d.function_rows, d.line_rows, bounded=True)
        if FOLDED in sums.by_function or FOLDED in sums.by_line:
            return None
    return _After(sums, clock.clock, span)


def _learn_names(book: StackBook, processes: Sequence[ProcessUpdate], retired: Sequence[int],
                 functions: Sequence[Function]) -> None:
    """As a replay's intake learns them (core/intake.py, record/replay.py): pids, then the
    retired functions, then the new ones (a new function may have a retired one's id)."""
    for p in processes:
        book.pids.setdefault(p.process, p.pid)
    book.retire(retired)
    book.learn_functions(functions)
