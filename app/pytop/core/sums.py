"""Stacks' time summed over a stack book, as the engine sums it over its own tree (native/
aggregate.c, whose rules these are): per function and per line, own at each stack's innermost
frame and total once at each distinct function (line) of its path, and per node, own at the
leaves and total over each subtree. A replay has no engine: its narrowed views, callers and call
tree are summed here. A test holds the two against each other on a real target's stacks.

A walk over each stack's frames in Python: made for a recording's views, which are asked for
one key at a time, not for sampling."""

from __future__ import annotations

from collections.abc import Iterable

from .records import (
    NODE_FIRST_FUNCTION,
    NODE_FIRST_LINE,
    PSEUDO_FUNCTIONS,
    STACK_EMPTY,
    Aggregate,
    FunctionFigures,
    NodeRow,
)
from .stack_book import StackBook

Tally = tuple[int, int, int, int, int]  # leaf, samples, cpu ns, wall ns, gil ns
MAX_WALK = 1 << 17  # frames walked up from one node at most: a recording's tree may be crafted into a loop


class BookSums:
    """Aggregates over a stack book (its `aggregate` is the engine's, without the engine)."""

    def __init__(self, book: StackBook):
        self.book = book

    def _walk(self, leaf: int) -> list[int]:
        """The nodes from the leaf to its root, the root included."""
        book, node = self.book, leaf
        out: list[int] = []
        while node and book.known(node) and len(out) < MAX_WALK:
            out.append(node)
            node = book.parent[node]
        return out

    def _empty_row(self, node: int) -> int:
        """The function id of the row of a stack without frames in the node's process."""
        pid = self.book.pid(node)
        for function, name in self.book.functions.items():
            if name.key == (PSEUDO_FUNCTIONS[STACK_EMPTY], "", 0, pid):
                return function
        return 0

    def _outside_tasks(self, leaf: int) -> int:
        """Where a stack ending in a task's pseudo-frame has its own time with tasks hidden."""
        book, node = self.book, leaf
        for _ in range(MAX_WALK):
            name = book.functions.get(book.function[node])
            parent = book.parent[node]
            if not parent or name is None or not name.task or not book.known(parent):
                return node
            node = parent
        return node

    def aggregate(self, tallies: Iterable[Tally], tables: bool = True, nodes: bool = False) -> Aggregate:
        book = self.book
        tallies = [t for t in tallies]
        known = [t for t in tallies if book.known(t[0])]
        functions: dict[int, list[int]] = {}
        lines: dict[tuple[int, int], list[int]] = {}

        def add(table: dict, key: object, at: int, figures: tuple[int, ...]) -> None:  # type: ignore[type-arg]
            row = table.get(key)
            if row is None:
                row = table[key] = [0] * 12
            for i, v in enumerate(figures):
                row[at + i] += v

        if tables:
            for leaf, *figures in known:
                values = tuple(figures)
                for node in self._walk(leaf):
                    function, flags = book.function[node], book.flags[node]
                    if function and flags & NODE_FIRST_FUNCTION:
                        add(functions, function, 4, values)
                    if function and flags & NODE_FIRST_LINE:
                        add(lines, (function, book.line[node]), 4, values)
                own = book.function[leaf] or self._empty_row(leaf)
                add(functions, own, 0, values)
                add(lines, (own, book.line[leaf]), 0, values)
                outside = self._outside_tasks(leaf)
                hidden = book.function[outside] or self._empty_row(outside)
                add(functions, hidden, 8, values)
                add(lines, (hidden, book.line[outside] if book.parent[outside] else 0), 8, values)
        node_rows = self._node_rows(known) if nodes else ()
        return Aggregate(tuple(FunctionFigures(f, 0, tuple(row)) for f, row in functions.items()),
                         tuple(FunctionFigures(f, line, tuple(row)) for (f, line), row in lines.items()),
                         node_rows, len(tallies) - len(known))

    def _node_rows(self, tallies: list[Tally]) -> tuple[NodeRow, ...]:
        book = self.book
        own: dict[int, list[int]] = {}
        for leaf, *figures in tallies:
            into = own.setdefault(leaf, [0, 0, 0, 0])
            for i, v in enumerate(figures):
                into[i] += v
        total: dict[int, list[int]] = {}
        for leaf in own:
            for node in self._walk(leaf):
                if node in total:
                    break
                total[node] = [0, 0, 0, 0]
        for node in sorted(total, key=lambda n: -book.depth[n]):
            mine = total[node]
            for i, v in enumerate(own.get(node, (0, 0, 0, 0))):
                mine[i] += v
            parent = book.parent[node]
            if parent in total:
                for i in range(4):
                    total[parent][i] += mine[i]
        zero = (0, 0, 0, 0)
        return tuple(NodeRow(node, tuple(own.get(node, zero)), tuple(t))  # type: ignore[arg-type]
                     for node, t in total.items())
