"""The `Engine`: unwinders run on a native thread of its own, which hands over at each `drain()`
what is new: code names, stacks, per-thread figures and the time attributed to each (stack,
thread). Structs come across in bulk and are unpacked with `struct`, never one field at a time
through cffi."""

from __future__ import annotations

import os
import struct
import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .._native import ffi, lib
from ..core.records import (
    NO_STANDING,
    STATUS_NAMES,
    Aggregate,
    Drain,
    Function,
    FunctionFigures,
    Node,
    NodeRow,
    ProcessUpdate,
    Standing,
    ThreadUpdate,
    Weight,
)
from ..core.visible import visible
from .mirror import Mirror
from .status import Closed
from .unwinder import Unwinder

# The drain's structs as laid out in C (pytop.h), read by their fields' names.
_PROCESS = Mirror("pytop_drain_process")
_DRAIN_THREAD = Mirror("pytop_drain_thread")
_FUNCTION = Mirror("pytop_drain_function")
_NODE = Mirror("pytop_drain_node")
_WEIGHT = Mirror("pytop_drain_weight")
_FUNCTION_ROW = Mirror("pytop_function_row")
_NODE_ROW = Mirror("pytop_node_row")
_LEAF_TALLY = Mirror("pytop_leaf_tally")
_UINT32 = struct.Struct("<I")
NO_TEXT = 0xFFFFFFFF




def default_realtime_budget() -> float:
    """Share of a core the sampling thread may use at a real-time priority (--realtime). Half a
    core on a machine of one core (the target keeps the other half); with more, 0.8: the target
    keeps every other core and a fifth of this one. 10 kHz on a hundred threads needs ~0.56 of a
    core here: at 0.5 it lost the priority and 35-48% of its samples came late (1-2% at 0.8)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return 0.8 if cpus >= 2 else 0.5


@dataclass(frozen=True)
class EngineConfig:
    rate: float = 1000.0  # samples per second asked for
    jitter: float = 0.5  # a sample falls in the middle of its slot +- jitter/2 of a slot
    max_gap: float = 1.0  # seconds: the most wall time one sample may stand for
    # Do no harm: normal priority unless asked. A real-time sampling thread takes a CPU from the
    # target whenever it wakes: on a saturated host it halved a web app's throughput.
    realtime: bool = False
    # share of a core above which it gives that priority back
    realtime_budget: float = field(default_factory=default_realtime_budget)
    # Share of a core the whole process may use (sampling, drains, a screen): over it, the rate
    # is lowered until it fits, and raised again as it can. 0: no budget (pytop's policy is in
    # sampling/priority.py).
    cpu_budget: float = 0.0
    min_rate: float = 1.0  # samples per second the budget never goes below
    blocking: bool = False  # stop the target's threads with ptrace while they are read
    native: bool = False  # with blocking: each thread's native (C) frames in its stacks (libdw)
    max_stack_nodes: int = 0  # bound on the nodes of the stack tree (0: the default; one given is also its room)
    period: float = 0.0  # seconds between full checks of every thread (0: the default)


def _array(pointer: Any, count: int, layout: Mirror | struct.Struct) -> bytes:
    return ffi.buffer(pointer, count * layout.size)[:] if count else b""


class _Text:
    """A drain's strings: NUL-terminated UTF-8 at offsets."""

    def __init__(self, data: bytes):
        self.data = data

    def at(self, offset: int) -> str | None:
        """Names from the target (functions, files, threads): shown, never acted on."""
        if offset == NO_TEXT or offset >= len(self.data):
            return None
        return visible(self.data[offset:self.data.index(b"\0", offset)].decode("utf-8", "replace"))


def _processes(out: Any, text: _Text) -> tuple[ProcessUpdate, ...]:
    rows = _PROCESS.rows(_array(out.processes, out.process_count, _PROCESS), "process", "pid", "status", "threads",
                         "samples", "failed", "gil_samples", "gc_samples", "gc_known", "torn", "cpu_ns",
                         "unseen_cpu_ns", "error_at")
    return tuple(ProcessUpdate(process, pid, status, threads, samples, failed, gil, gc, gc_known, torn, cpu, unseen,
                               text.at(error_at))
                 for process, pid, status, threads, samples, failed, gil, gc, gc_known, torn, cpu, unseen, error_at
                 in rows)


def _threads(out: Any, text: _Text) -> tuple[ThreadUpdate, ...]:
    rows = _DRAIN_THREAD.rows(_array(out.threads, out.thread_count, _DRAIN_THREAD), "thread", "process",
                              "thread_id", "native_id", "flags", "name_at", "cpu_ns", "wall_ns", "wait_ns", "samples",
                              "gil_samples", "errors", "last_error", "stack", "os_state", "unplaced_ns")
    return tuple(ThreadUpdate(key, process, thread_id, native_id, flags, text.at(name_at), cpu, wall, wait, samples,
                              gil, errors_, last_error, stack, state.decode("latin-1"), unplaced)
                 for key, process, thread_id, native_id, flags, name_at, cpu, wall, wait, samples, gil, errors_,
                 last_error, stack, state, unplaced in rows)


def _functions(out: Any, text: _Text) -> tuple[Function, ...]:
    rows = _FUNCTION.rows(_array(out.functions, out.function_count, _FUNCTION), "function", "process", "kind", "task",
                          "qualname_at", "filename_at", "native")
    return tuple(Function(function, process, kind, bool(task), text.at(qualname), text.at(filename), bool(native))
                 for function, process, kind, task, qualname, filename, native in rows)


_NODE_FIELDS = ("node", "parent", "code_id", "line", "process", "function", "depth", "flags", "kind")
assert _NODE_FIELDS == Node._fields, "records.Node's fields are pytop_drain_node's, by name"


def _nodes(out: Any) -> tuple[Node, ...]:
    return tuple(map(Node._make, _NODE.rows(_array(out.nodes, out.node_count, _NODE), *_NODE_FIELDS)))


def _ids(pointer: Any, count: int) -> tuple[int, ...]:
    return tuple(v for (v,) in _UINT32.iter_unpack(_array(pointer, count, _UINT32)))


def function_rows(pointer: Any, count: int) -> tuple[FunctionFigures, ...]:
    rows = _FUNCTION_ROW.rows(_array(pointer, count, _FUNCTION_ROW), "function", "line", "own", "total", "own_hidden")
    return tuple(FunctionFigures(function, line, own + total + hidden) for function, line, own, total, hidden in rows)


def node_rows(pointer: Any, count: int) -> tuple[NodeRow, ...]:
    """A tree of 50,000 nodes comes in one go: columns sliced out of the buffer in C, not row by row."""
    if not count:
        return ()
    words = memoryview(_array(pointer, count, _NODE_ROW)).cast("Q")  # 64-bit words, columns by field offsets
    step = _NODE_ROW.size // 8
    own, total = (_NODE_ROW_WORD[name] for name in ("own", "total"))
    node_word, node_shift = divmod(ffi.offsetof("pytop_node_row", "node"), 8)
    nodes = [word >> (8 * node_shift) & 0xFFFFFFFF for word in words[node_word::step]]
    owns = zip(*(words[own + i::step] for i in range(4)))
    totals = zip(*(words[total + i::step] for i in range(4)))
    return tuple(map(NodeRow, nodes, owns, totals))


_NODE_ROW_WORD = {name: ffi.offsetof("pytop_node_row", name) // 8 for name in ("own", "total")}


_WEIGHT_FIELDS = ("stack", "thread", "samples", "running", "cpu_ns", "wall_ns", "gil_ns")
assert _WEIGHT_FIELDS == Weight._fields, "records.Weight's fields are pytop_drain_weight's, by name"


def _weights(out: Any) -> tuple[Weight, ...]:
    return tuple(map(Weight._make, _WEIGHT.rows(_array(out.weights, out.weight_count, _WEIGHT), *_WEIGHT_FIELDS)))


def _weight_column(data: memoryview, name: str) -> tuple[int, ...]:
    """One field of every pytop_drain_weight in `data`, sliced out in C."""
    width = ffi.sizeof(ffi.typeof("pytop_drain_weight").fields[_WEIGHT_FIELD_AT[name]][1].type)
    words = data.cast("I" if width == 4 else "Q")
    return tuple(words[ffi.offsetof("pytop_drain_weight", name) // width::_WEIGHT.size // width])


_WEIGHT_FIELD_AT = {name: i for i, (name, _) in enumerate(ffi.typeof("pytop_drain_weight").fields)}


def _standing(out: Any) -> Standing:
    """Most of a pool's threads each whole drain: columns, not a record each."""
    if not out.standing_count:
        return NO_STANDING
    data = memoryview(_array(out.standing, out.standing_count, _WEIGHT))
    return Standing(*(_weight_column(data, name) for name in ("thread", "stack", "samples", "wall_ns")))


class Engine:
    """The native sampling thread. Feed it unwinders, start it, drain it, stop it.

    Ownership: `add()` hands the unwinder's native handle over; from then on the engine's thread
    alone uses and frees it. `stop()` waits with a deadline; an engine whose thread did not end
    in time is never freed (that thread may still be using it)."""

    def __init__(self, config: EngineConfig):
        c = ffi.new("pytop_engine_config *")
        c.rate, c.jitter, c.max_gap = config.rate, config.jitter, config.max_gap
        c.realtime, c.realtime_budget, c.blocking = int(config.realtime), config.realtime_budget, int(config.blocking)
        c.cpu_budget, c.min_rate, c.native = config.cpu_budget, config.min_rate, int(config.native)
        c.max_stack_nodes, c.period = config.max_stack_nodes, config.period
        status = ffi.new("int *")
        handle = lib.pytop_engine_new(c, status)
        if handle == ffi.NULL:
            raise ValueError(f"cannot start the sampling engine: {STATUS_NAMES.get(status[0])}")
        self.config = config
        self._handle: Any = handle
        self._stuck = False
        # A drain's arrays live until the next drain: one drain (and its unpacking) at a time. The
        # same lock keeps the handle from being freed under a drain or a count from another thread.
        self._draining = threading.Lock()
        self._out = ffi.new("pytop_drain *")
        self._pids: dict[int, int] = {}  # engine process index -> pid
        self.stopped = False  # its thread has ended (it can still sum stacks: see aggregate)
        # Freed with this object at the latest (the native side refuses while its thread runs).
        self._finalizer = weakref.finalize(self, lib.pytop_engine_free, handle)

    @property
    def handle(self) -> Any:
        if self._handle is None:
            raise Closed("the sampling engine is closed")
        return self._handle

    @property
    def is_open(self) -> bool:
        return self._handle is not None

    def add(self, unwinder: Unwinder, whole_life: bool = False) -> int:
        """Sample `unwinder`'s process from the next tick on; returns the engine's index for it.
        whole_life: the CPU it used before then counts too (a child started since sampling
        began); else its CPU counts from its first sample."""
        process = ffi.new("uint32_t *")
        status = lib.pytop_engine_add(self.handle, unwinder.handle, int(whole_life), process)
        if status != lib.PYTOP_OK:
            raise RuntimeError(f"the sampling engine takes no more processes ({STATUS_NAMES.get(status)})")
        unwinder.detach()
        self._pids[process[0]] = unwinder.pid
        return int(process[0])

    def retire(self, process: int, why: str) -> bool:
        """Stop sampling `process` from its next tick, as if it had exited with error `why`;
        False if the engine has not taken it up yet (ask again later)."""
        return bool(lib.pytop_engine_retire(self.handle, process, why.encode()[:250]) == lib.PYTOP_OK)

    def wait_for_processes(self, waiting: bool) -> None:
        """While waiting, having no live process does not end the engine's run: it waits for
        one to be added. No longer waiting, the run ends if none is live."""
        lib.pytop_engine_wait_for_processes(self.handle, int(waiting))

    def pid_of(self, process: int) -> int:
        return self._pids[process]

    def start(self) -> None:
        status = lib.pytop_engine_start(self.handle)
        if status != lib.PYTOP_OK:
            raise RuntimeError(f"cannot start the sampling thread ({STATUS_NAMES.get(status)})")

    def drain(self, whole: bool = True) -> Drain:
        """Everything new since the previous drain (any thread may call it). Not `whole`: the
        threads that only slept on keep their time for the next whole drain."""
        with self._draining:
            return self._drain(whole)

    def _drain(self, whole: bool) -> Drain:
        out = self._out
        if lib.pytop_engine_drain(self.handle, out, int(whole)) != lib.PYTOP_OK:
            raise MemoryError("the sampling engine ran out of memory")
        text = _Text(ffi.buffer(out.text, out.text_size)[:] if out.text_size else b"")
        return Drain(
            processes=_processes(out, text), threads=_threads(out, text), functions=_functions(out, text),
            retired=_ids(out.retired, out.retired_count), evicted=_ids(out.evicted, out.evicted_count),
            nodes=_nodes(out), weights=_weights(out), standing=_standing(out),
            function_rows=function_rows(out.function_rows, out.function_row_count),
            line_rows=function_rows(out.line_rows, out.line_row_count),
            ticks=out.ticks, late=out.late, skipped=out.skipped, slot_seconds=out.slot_seconds,
            first_at=out.first_at, last_at=out.last_at, lag=out.lag, longest_delay=out.longest_delay,
            cpu_seconds=out.cpu_seconds, start_up_cpu=out.start_up_cpu, rate_now=out.rate_now,
            budget_limited=bool(out.budget_limited),
            running=bool(out.running), realtime=bool(out.realtime),
            stacks_dropped=out.stacks_dropped, stacks_coarsened=out.stacks_coarsened, stack_nodes=out.stack_nodes,
            end=text.at(out.end_at),
        )

    def aggregate(self, tallies: Iterable[tuple[int, int, int, int, int]], tables: bool = True,
                  nodes: bool = False) -> Aggregate:
        """Stacks' time summed over the stack tree: per function and per line (`tables`), per node
        of their paths (`nodes`). tallies: (leaf, samples, cpu ns, wall ns, gil ns). Stacks no
        longer in the tree are left out and counted (`skipped`)."""
        packed = b"".join(_LEAF_TALLY.pack(leaf=leaf, samples=samples, cpu_ns=cpu, wall_ns=wall, gil_ns=gil)
                          for leaf, samples, cpu, wall, gil in tallies)
        count = len(packed) // _LEAF_TALLY.size
        data = ffi.from_buffer("pytop_leaf_tally[]", packed) if count else ffi.NULL
        flags = (lib.PYTOP_AGGREGATE_TABLES if tables else 0) | (lib.PYTOP_AGGREGATE_NODES if nodes else 0)
        out = ffi.new("pytop_aggregate *")
        with self._draining:  # the tree changes (evictions) only in a drain: none meanwhile
            status = lib.pytop_engine_aggregate(self.handle, data, count, flags, out)
            if status != lib.PYTOP_OK:
                raise MemoryError("the sampling engine ran out of memory")
            return Aggregate(function_rows(out.functions, out.function_count), function_rows(out.lines, out.line_count),
                             node_rows(out.nodes, out.node_count), out.skipped)

    def pending_ticks(self) -> int:
        """Ticks taken since the previous drain, without draining them."""
        ticks = ffi.new("uint32_t *")
        with self._draining:
            lib.pytop_engine_pending_ticks(self.handle, ticks)
        return int(ticks[0])

    def stop(self, timeout: float = 5.0) -> bool:
        """Ask the sampling thread to end and wait for it; False if it did not end in time."""
        if self._handle is None:
            return not self._stuck
        ended = bool(lib.pytop_engine_stop(self._handle, timeout) == lib.PYTOP_OK)
        self._stuck = not ended
        self.stopped = self.stopped or ended
        return ended

    def close(self) -> None:
        """Free the engine once its thread has ended; a stuck one is left alone (leaked)."""
        if self._handle is None or self._stuck:
            return
        if not self.stop():
            return
        with self._draining:
            self._finalizer.detach()
            lib.pytop_engine_free(self._handle)
            self._handle = None
