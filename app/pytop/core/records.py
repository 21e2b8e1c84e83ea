"""Plain records shared by every part: what a stack is made of. No native code, no I/O.

A sample's stack is packed (code id: uint32, line: int32) pairs, innermost first. The engine
keeps the stacks it samples as a tree (a node per frame of each distinct path) and hands out each
node and each function once; a stack is then known by its innermost node.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

FRAME = struct.Struct("<Ii")


@dataclass(frozen=True)
class Frame:
    function: str  # qualified name where the version has one (a native frame: its symbol)
    filename: str  # a native frame: its source file where debug info says, else ""
    line: int  # -1 when the line table has none for the instruction
    native: bool = False  # a C frame (--native), in `library`
    library: str = ""


@dataclass(frozen=True)
class LocalVariable:
    """One of a frame's arguments or local variables (`pytop --dump --locals`)."""

    name: str
    value: str  # a short repr, made by pytop from the target's memory
    argument: bool


@dataclass(frozen=True)
class ThreadStack:
    """One thread as a single sample saw it, names resolved (what `pytop --dump` prints)."""

    thread_id: int  # Python's thread id (threading.get_ident())
    native_id: int  # kernel TID, 0 when unknown
    name: str | None  # as threading.enumerate() has it
    gil: bool  # holds the GIL
    active: bool  # the kernel reports it running
    os_state: str  # the kernel's state letter, "?" when unknown
    interpreter_id: int
    error: str | None  # why the stack is incomplete, if it is
    truncated: bool  # cut at the depth limit
    frames: tuple[Frame, ...]  # innermost first
    locals: tuple[tuple[LocalVariable, ...], ...] | None = None  # per frame, when asked for


@dataclass(frozen=True)
class AsyncTask:
    """One asyncio task of a 3.14+ target (what `pytop --dump --async` prints)."""

    address: int
    name: str
    thread: int  # kernel TID of the thread whose list holds it; 0: a thread that has ended
    interpreter_id: int  # the interpreter it belongs to (0: the main one)
    running: bool
    coroutines: tuple[Frame, ...]  # innermost first: the await chain from the task's coroutine
    awaited_by: tuple[int, ...]  # addresses of the tasks waiting for it
    coroutines_cut: bool = False  # the chain went deeper than pytop follows (the innermost are missing)
    coroutines_torn: bool = False  # the chain moved under every read of it (the innermost are missing)


@dataclass(frozen=True)
class ProcessStacks:
    pid: int
    command: str
    python_version: str
    gc_collecting: bool | None
    threads: tuple[ThreadStack, ...]
    core_file: str | None = None  # read from this core file, not from the live process
    core_signal: int = 0  # the signal the core was dumped on (0: none, as with gcore)
    core_signal_tid: int = 0  # ... taken by this thread
    core_cut: tuple[int, int] | None = None  # a core cut short: (its size, what its headers need)
    tasks: tuple[AsyncTask, ...] | None = None  # with --async: every asyncio task


# ---- What the native engine hands over at each drain (see native/pytop.h) ------------------

# Kinds of stack without frames of their own, each shown as one pseudo-function; INCOMPLETE is
# a flag: outer frames are missing (cut at the depth limit, or torn), so no caller edges.
STACK_FRAMES, STACK_EMPTY, STACK_NATIVE, STACK_UNSEEN, STACK_OVERFLOW, STACK_TORN = 0, 1, 2, 3, 4, 5
# Not a root: a node under a thread's frames for CPU it used there where no sample saw it.
STACK_UNPLACED = 6
STACK_INCOMPLETE = 8
# A flag too: a stack the tree had no room for whole, kept as the set of its (function, line)
# frames and its innermost frame (own and total times whole; no call order, no caller edges).
STACK_COARSE = 16
# The outermost frame a coarse stack is shown under (tree, exports): its frames are a set.
COARSE_FRAME = "(stacks kept as their frames only, past pytop's memory bound)"
# The file the native core gives an asyncio task's pseudo-frame (PYTOP_OPT_TASKS).
TASK_FILENAME = "<asyncio task>"
PSEUDO_FUNCTIONS = {
    STACK_EMPTY: "(no Python frame)",
    STACK_NATIVE: "(thread without Python)",
    STACK_UNSEEN: "(threads that ended between samples)",
    STACK_OVERFLOW: "(stacks past pytop's memory bound)",  # only when memory runs out
    STACK_TORN: "(stack not read: it changed under every read)",  # a thread's first reads, torn
    STACK_UNPLACED: "(ran between samples, not seen)",
}

# Status codes of the native core, and what they mean to a reader.
STATUS_NAMES = {
    0: "ok", 1: "process gone", 2: "permission denied", 3: "read failed", 4: "inconsistent memory",
    5: "limit reached", 6: "out of memory", 7: "invalid argument", 8: "not now",
}


class Node(NamedTuple):
    """A node of the engine's stack tree, made since the previous drain: a frame reached by one
    path from its root. A stack is known by its innermost node (its leaf)."""

    node: int
    parent: int  # 0 for a root
    code_id: int  # a root: its kind (STACK_*)
    line: int
    process: int
    function: int  # the engine's function id (a root of a kind without frames: its row)
    depth: int  # 0 for a root
    flags: int  # NODE_FIRST_*
    kind: int  # its root's kind


NODE_FIRST_FUNCTION, NODE_FIRST_LINE = 2, 4


class Function(NamedTuple):
    """A function (a row of the table), first seen in this drain."""

    function: int
    process: int
    kind: int  # STACK_* of a stack kind's row; 0 for code
    task: bool  # an asyncio task's pseudo-frame
    qualname: str | None
    filename: str | None  # a native function's: its library
    native: bool = False  # a native (C) function (--native)


# A function's (or line's) figures, as summed by the engine (the table's row is model.FunctionRow):
# own, total and own_hidden (own when tasks are hidden), each (samples, cpu ns, wall ns, gil ns).
class FunctionFigures(NamedTuple):
    function: int
    line: int  # per-line rows; 0 per function
    figures: tuple[int, ...]  # own[4] + total[4] + own_hidden[4]


class NodeRow(NamedTuple):
    """A node's time: own in stacks that end at it, total in every stack through it."""

    node: int
    own: tuple[int, int, int, int]
    total: tuple[int, int, int, int]


@dataclass(frozen=True)
class Aggregate:
    """Stacks' time summed over the stack tree (the engine's, or a recording's: core.sums)."""

    functions: tuple[FunctionFigures, ...]
    lines: tuple[FunctionFigures, ...]
    nodes: tuple[NodeRow, ...]
    skipped: int  # tallies of stacks no longer in the tree


class Weight(NamedTuple):
    """Time added to one (stack, thread) since the previous drain, in nanoseconds."""

    stack: int
    thread: int
    samples: int
    running: int  # samples in which the kernel said the thread was running
    cpu_ns: int
    wall_ns: int
    gil_ns: int


class Standing(NamedTuple):
    """Threads a whole drain left out of its updates because their only news is time on the stack
    they were last handed over with: for each, that stack and the samples and wall time, which
    are its update and its one weight (no CPU, GIL or running samples). Columns, not rows: a pool
    of 2,000 napping threads hands over most of them each window."""

    threads: Sequence[int] = ()
    stacks: Sequence[int] = ()
    samples: Sequence[int] = ()
    wall_ns: Sequence[int] = ()


NO_STANDING = Standing()

DRAIN_ALIVE, DRAIN_NAMED, DRAIN_NATIVE, DRAIN_GIL = 1, 2, 4, 8


class ThreadUpdate(NamedTuple):
    """A thread that was sampled (or ended) since the previous drain: figures are deltas."""

    thread: int  # the engine's key, never reused
    process: int
    thread_id: int  # Python's id (0 for a thread without Python)
    native_id: int  # kernel TID, 0 when unknown
    flags: int  # DRAIN_*
    name: str | None  # sent once, when first known
    cpu_ns: int  # the kernel's count of its CPU time
    wall_ns: int
    wait_ns: int  # runnable, waiting for a CPU
    samples: int
    gil_samples: int
    errors: int  # samples in which its stack could not be read
    last_error: int  # status of the latest
    stack: int  # its stack in its latest sample
    os_state: str
    unplaced_ns: int = 0  # of cpu_ns, what it used where no sample saw it (the unplaced row)

    @property
    def alive(self) -> bool:
        return bool(self.flags & DRAIN_ALIVE)

    @property
    def native(self) -> bool:
        return bool(self.flags & DRAIN_NATIVE)


class ProcessUpdate(NamedTuple):
    process: int
    pid: int
    status: int  # 0 while sampled
    threads: int
    samples: int
    failed: int
    gil_samples: int
    gc_samples: int
    gc_known: int
    torn: int
    cpu_ns: int  # the kernel's CPU time of the whole process since the previous drain
    unseen_cpu_ns: int  # ... of threads that ended between samples
    error: str | None


@dataclass(frozen=True)
class Drain:
    """Everything new since the previous drain."""

    processes: tuple[ProcessUpdate, ...]
    threads: tuple[ThreadUpdate, ...]
    functions: tuple[Function, ...]
    retired: tuple[int, ...]  # functions gone (learned before `functions`, which may reuse their ids)
    evicted: tuple[int, ...]  # nodes evicted from the stack tree (learned before `nodes`)
    nodes: tuple[Node, ...]
    weights: tuple[Weight, ...]
    function_rows: tuple[FunctionFigures, ...]  # the weights summed per function ...
    line_rows: tuple[FunctionFigures, ...]  # ... and per (function, line)
    ticks: int  # sampling ticks
    late: int  # ticks that began more than one interval late
    skipped: int  # slots of the schedule that passed without a sample (the machine was busy)
    slot_seconds: float  # the schedule's time the ticks and skipped slots cover
    first_at: float  # CLOCK_MONOTONIC seconds of the first and last tick in it
    last_at: float
    lag: float  # how late the latest tick began
    longest_delay: float  # the latest a tick began after it was due (a stall of the sampling thread)
    cpu_seconds: float  # CPU time of the sampling thread
    start_up_cpu: float  # pytop's process CPU at the end of its first read (0: not yet)
    rate_now: float  # samples per second the schedule runs at now
    budget_limited: bool  # pytop's CPU budget holds the rate below the one asked for
    running: bool
    realtime: bool
    stacks_dropped: int  # stacks that found no room in the stack tree, since the start
    stacks_coarsened: int  # stacks kept as their frames only for want of room, since the start
    stack_nodes: int  # nodes in the stack tree now
    end: str | None  # why sampling ended
    standing: Standing = NO_STANDING  # threads whose update is time asleep on the same stack
