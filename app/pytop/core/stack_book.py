"""What the engine's ids stand for, learned from its drains: functions (names, files, kinds)
and its stack tree's nodes. A stack is a path in that tree, known by its innermost node (its
leaf); a stack without Python frames (a thread in C, a thread without Python, threads that
ended between samples) reads as one pseudo-function. Pure: no threads, no I/O, no target."""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import NamedTuple

from .model import RowKey
from .records import (
    COARSE_FRAME,
    PSEUDO_FUNCTIONS,
    STACK_COARSE,
    STACK_INCOMPLETE,
    TASK_FILENAME,
    Drain,
    Function,
    Node,
)


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
