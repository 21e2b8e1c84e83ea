"""Building figures by hand for the pure tests: functions, stack-tree nodes and weights as the
engine would drain them, and the engine's sums over them, without a process.

`Tree` makes the nodes of hand-written stacks the way the engine's stack tree does (a node per
frame of each distinct path, flagged where its function or line first occurs on the path), and
sums time per node the way Engine.aggregate does: own at a stack's innermost node, total at every
node on its path. The engine's own tree and sums are tested in C (test_stack_tree.py) and on real
targets; this only feeds the Python that reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pytop.core.counts import Counts
from pytop.core.records import (
    NODE_FIRST_FUNCTION,
    NODE_FIRST_LINE,
    STACK_COARSE,
    STACK_FRAMES,
    STACK_INCOMPLETE,
    Function,
    FunctionFigures,
    Node,
    NodeRow,
    Weight,
)
from pytop.core.stack_book import StackBook

PROCESS, PID = 0, 42
KIND_FUNCTIONS = 1000  # + kind: the function id of a stack kind's row


class Tree:
    """Hands out leaves for frame sequences, teaching their nodes to a book."""

    def __init__(self, names: dict[int, tuple[str, str]], tasks: Iterable[int] = ()):
        self.book = StackBook()
        self.book.pids[PROCESS] = PID
        tasks = set(tasks)
        self.book.learn_functions([Function(f, PROCESS, 0, f in tasks, name, file) for f, (name, file) in names.items()]
                                  + [Function(KIND_FUNCTIONS + k, PROCESS, k, False, None, None) for k in range(1, 5)])
        self.ids: dict[tuple[int, int, int], int] = {}

    def _node(self, parent: int, code: int, line: int, kind: int, function: int, flags: int, depth: int) -> int:
        node = self.ids.get((parent, code, line))
        if node is None:
            node = self.ids[(parent, code, line)] = len(self.ids) + 1
            self.book.learn_nodes([Node(node, parent, code, line, PROCESS, function, depth, flags, kind)])
        return node

    def __call__(self, *pairs: tuple[int, int], kind: int = STACK_FRAMES) -> int:
        """The leaf of a stack of (function, line) frames, innermost first."""
        base = kind & ~(STACK_INCOMPLETE | STACK_COARSE)
        node = self._node(0, kind, 0, kind, KIND_FUNCTIONS + base if base else 0,
                          NODE_FIRST_FUNCTION | NODE_FIRST_LINE, 0)
        functions: set[int] = set()
        lines: set[tuple[int, int]] = set()
        for depth, (function, line) in enumerate(reversed(pairs), 1):
            flags = (NODE_FIRST_FUNCTION if function not in functions else 0) | (
                NODE_FIRST_LINE if (function, line) not in lines else 0)
            functions.add(function)
            lines.add((function, line))
            node = self._node(node, function, line, kind, function, flags, depth)
        return node

    def rows(self, counts: Counts, keep: Callable[[int], bool] | None = None) -> tuple[NodeRow, ...]:
        """Per-node sums of the counted stacks, as Engine.aggregate(nodes=True) gives them."""
        own: dict[int, list[int]] = {}
        total: dict[int, list[int]] = {}
        for leaf, samples, cpu, wall, gil in counts.leaf_tallies(keep):
            figures = (samples, cpu, wall, gil)
            into = own.setdefault(leaf, [0, 0, 0, 0])
            for i in range(4):
                into[i] += figures[i]
            node = leaf
            while node:
                into = total.setdefault(node, [0, 0, 0, 0])
                for i in range(4):
                    into[i] += figures[i]
                node = self.book.parent[node]
        return tuple(NodeRow(node, tuple(own.get(node, (0, 0, 0, 0))), tuple(t))  # type: ignore[arg-type]
                     for node, t in total.items())


def row(function: int, own: tuple[int, ...] = (0, 0, 0, 0), total: tuple[int, ...] = (0, 0, 0, 0),
        hidden: tuple[int, ...] | None = None, line: int = 0) -> FunctionFigures:
    """A row as the engine sums it: (samples, cpu, wall, gil) own, total, own with tasks hidden."""
    return FunctionFigures(function, line, (*own, *total, *(own if hidden is None else hidden)))


def weight(stack: int, thread: int, cpu: float = 0.0, wall: float = 0.0, gil: float = 0.0, samples: int = 1,
           running: int = 0) -> Weight:
    """Times in seconds."""
    return Weight(stack, thread, samples, running, int(cpu * 1e9), int(wall * 1e9), int(gil * 1e9))


def counts(*weights: Weight) -> Counts:
    c = Counts()
    c.add_weights(weights)
    return c
