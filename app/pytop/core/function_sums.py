"""The function tables: figures per function and per line, as sums of the rows the engine
drains (it sums each drain's time per function and per line itself, over its stack tree: a
deep stack is a walk over its nodes in C, not a decoding of its frames here), so a table since
the reset is the exact sum of those rows, drain after drain.

Own: the function is the innermost frame. Total: the function is anywhere in the stack; a
recursive function is counted once per stack. Pure: no threads, no I/O, no target."""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from operator import add, sub

from .model import RowKey
from .records import FunctionFigures
from .stack_book import UNKNOWN_FUNCTION, StackBook
from .tally import TOTAL, new_row

# Rows kept per table: a program that keeps making functions of new names (generated code) would
# grow the tables for ever. Past the bound, the rows with the least time fold into one.
MAX_ROWS = {False: 20_000, True: 50_000}  # by function, by line
FOLDED: RowKey = ("(functions with the least time, folded)", "", 0, 0)


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
