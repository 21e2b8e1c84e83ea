"""The one module that talks to the native core (cffi): everything else sees Python objects.

Two things live on the other side. An `Unwinder` reads one process: `pytop --dump`, attach-time
checks and benchmarks call it directly. An `Engine` runs unwinders on a native thread of its own
and hands over, at each `drain()`, what is new: code names, stacks, per-thread figures and the
time attributed to each (stack, thread). Structs come across in bulk and are unpacked with
`struct`, never one field at a time through cffi.
"""

from __future__ import annotations

import errno
import struct
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from . import errors
from ._native import ffi, lib
from .core import records
from .core.records import (
    FRAME,
    STATUS_NAMES,
    Code,
    Drain,
    ProcessUpdate,
    Stack,
    ThreadUpdate,
    Weight,
)

_STATUS_ERRNO = {lib.PYTOP_ERR_GONE: errno.ESRCH, lib.PYTOP_ERR_PERMISSION: errno.EPERM}
OS_STATE_OFF, OS_STATE_FAST, OS_STATE_EXACT = 0, 1, 2
GIL, ACTIVE = lib.PYTOP_THREAD_GIL, lib.PYTOP_THREAD_ACTIVE  # thread flags

# The plain records mirror the header's constants: check they agree.
assert (records.STACK_FRAMES, records.STACK_EMPTY, records.STACK_NATIVE, records.STACK_UNSEEN,
        records.STACK_OVERFLOW, records.STACK_INCOMPLETE) == (
    lib.PYTOP_STACK_FRAMES, lib.PYTOP_STACK_EMPTY, lib.PYTOP_STACK_NATIVE, lib.PYTOP_STACK_UNSEEN,
    lib.PYTOP_STACK_OVERFLOW, lib.PYTOP_STACK_INCOMPLETE), "pytop.h and core/records.py disagree"
assert (records.DRAIN_ALIVE, records.DRAIN_NAMED, records.DRAIN_NATIVE, records.DRAIN_GIL) == (
    lib.PYTOP_DRAIN_ALIVE, lib.PYTOP_DRAIN_NAMED, lib.PYTOP_DRAIN_NATIVE, lib.PYTOP_DRAIN_GIL)
assert STATUS_NAMES[lib.PYTOP_ERR_STATE] == "not now" and STATUS_NAMES[lib.PYTOP_ERR_GONE] == "process gone"


class Closed(RuntimeError):
    """A handle was used after it was closed or handed to an engine."""


def read_memory(pid: int, address: int, length: int) -> bytes:
    """`length` bytes at `address` in process `pid`. Raises OSError: ProcessLookupError when
    the process is gone, PermissionError when not allowed, plain OSError otherwise."""
    buf = ffi.new("char[]", length)
    status = lib.pytop_read_memory(pid, address, buf, length)
    if status != lib.PYTOP_OK:
        raise OSError(_STATUS_ERRNO.get(status, errno.EFAULT),
                      f"cannot read {length} bytes at {address:#x} in process {pid}")
    return bytes(ffi.buffer(buf, length))


def decode_line(table_format: int, table: bytes, firstlineno: int, offset: int) -> int:
    """The line of bytecode byte `offset` per a line table, as the native decoder reads it
    (-1: no line). Exposed for tests that hold it against CPython's own reading."""
    return int(lib.pytop_decode_line(table_format, table, len(table), firstlineno, offset))


def decode_text(kind: int, data: bytes, count: int, capacity: int = 1 << 16) -> str | None:
    """`count` characters of `kind` bytes each, as the native str decoder turns them to UTF-8."""
    out = ffi.new("char[]", capacity)
    n = lib.pytop_decode_text(kind, data, len(data), count, out, capacity)
    return None if n < 0 else ffi.buffer(out, n)[:].decode("utf-8")


@dataclass(frozen=True)
class CodeInfo:
    name: str
    qualname: str
    filename: str
    firstlineno: int


UNKNOWN = CodeInfo("<unknown>", "<unknown>", "<unknown>", 0)

# pytop_thread as laid out in C: thread_id, tstate, interp_id, cpu_ns, cpu_delta_ns,
# wait_delta_ns, outer_frame, top_frame, native_id, flags, status, first_frame, frame_count, serial,
# os_state.
_THREAD = struct.Struct("<QQqQQQQQiIiIIIc3xI")
assert _THREAD.size == ffi.sizeof("pytop_thread"), "pytop.h and native.py disagree"


class ThreadSample(NamedTuple):
    """One thread in one sample (what --dump shows)."""

    thread_id: int  # Python's thread id (threading.get_ident())
    native_id: int  # kernel TID, 0 when unknown
    interp_id: int
    flags: int  # PYTOP_THREAD_* bits
    status: int  # PYTOP_OK, or why the stack is incomplete
    stack: bytes  # packed FRAME records, innermost first
    os_state: str  # the kernel's state letter, "?" when unknown
    cpu_ns: int  # the kernel's count of its CPU time, its whole life

    @property
    def gil(self) -> bool:
        return bool(self.flags & lib.PYTOP_THREAD_GIL)

    @property
    def active(self) -> bool:
        return bool(self.flags & lib.PYTOP_THREAD_ACTIVE)

    @property
    def truncated(self) -> bool:
        return bool(self.flags & lib.PYTOP_THREAD_TRUNCATED)

    @property
    def unclaimed(self) -> bool:
        """A thread state its new thread has not taken up yet: not a thread of its own."""
        return bool(self.flags & lib.PYTOP_THREAD_UNCLAIMED)

    @property
    def unchanged(self) -> bool:
        """The thread had not run since the previous sample, so its stack was not read again."""
        return bool(self.flags & lib.PYTOP_THREAD_UNCHANGED)

    @property
    def error(self) -> str | None:
        return STATUS_NAMES.get(self.status, "error") if self.status else None

    @property
    def depth(self) -> int:
        return len(self.stack) // FRAME.size

    def frames(self) -> Iterator[tuple[int, int]]:
        """(code id, line) pairs, innermost first."""
        return FRAME.iter_unpack(self.stack)


@dataclass(frozen=True)
class Sample:
    threads: tuple[ThreadSample, ...]
    gc_collecting: bool | None
    syscalls: int
    failed_reads: int
    taken_at: float  # time.monotonic() when the sample began
    torn_count: int


class SampleError(Exception):
    """One sample failed without the target being gone (a transient read, a torn structure)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _status_error(pid: int, status: int, message: str) -> Exception:
    if status == lib.PYTOP_ERR_GONE:
        return errors.TargetExited(f"process {pid} has exited")
    if status == lib.PYTOP_ERR_PERMISSION:
        return errors.permission_denied(pid, "reading the memory of")
    return SampleError(status, message or STATUS_NAMES.get(status, "sample failed"))


class ImageRegion(Protocol):
    """`size` bytes the process had at `address`, at `offset` in `buffer` (an mmap or a bytearray)."""

    @property
    def address(self) -> int: ...

    @property
    def size(self) -> int: ...

    @property
    def buffer(self) -> Any: ...

    @property
    def offset(self) -> int: ...


def _c_layout(layout: dict[str, int]) -> Any:
    c_layout = ffi.new("pytop_layout *")
    for name, value in layout.items():
        if hasattr(c_layout, name):
            setattr(c_layout, name, value)
    return c_layout


class Unwinder:
    """Samples every thread of one process, when called. Used from one thread at a time."""

    def __init__(self, pid: int, layout: dict[str, int], runtime_address: int):
        status = ffi.new("int *")
        self._pinned: list[Any] = []
        self._adopt(pid, lib.pytop_open(pid, _c_layout(layout), runtime_address, status), status[0])

    @classmethod
    def on_image(cls, pid: int, regions: Sequence[ImageRegion], layout: dict[str, int],
                 runtime_address: int) -> Unwinder:
        """An unwinder reading a memory image (a core file's) instead of process `pid`: each
        region's bytes are `size` bytes at `offset` in its `buffer` (an mmap or a bytearray),
        pinned, not copied, until close()."""
        self = cls.__new__(cls)
        pinned: dict[int, Any] = {}
        c_regions = ffi.new("pytop_region[]", len(regions))
        for c_region, region in zip(c_regions, regions):
            base = pinned.get(id(region.buffer))
            if base is None:
                base = pinned[id(region.buffer)] = ffi.from_buffer("uint8_t[]", region.buffer)
            if region.offset < 0 or region.offset + region.size > len(base):
                raise ValueError(f"region at {region.address:#x} runs past its buffer")
            c_region.address, c_region.size, c_region.data = region.address, region.size, base + region.offset
        self._pinned = list(pinned.values())
        status = ffi.new("int *")
        handle = lib.pytop_open_image(c_regions, len(regions), _c_layout(layout), runtime_address, status)
        self._adopt(pid, handle, status[0])
        return self

    def _adopt(self, pid: int, handle: Any, status: int) -> None:
        self.pid = pid
        if handle == ffi.NULL:
            self._release_pinned()
            raise errors.AttachFailed(f"cannot start the unwinder: {STATUS_NAMES.get(status)}")
        self._handle: Any = ffi.gc(handle, lib.pytop_close)
        self._out = ffi.new("pytop_sample *")
        self._codes: dict[int, CodeInfo] = {0: UNKNOWN}

    def image_reads(self, capacity: int = 1 << 16) -> list[tuple[int, int]]:
        """An image unwinder's reads since it opened, as (address, length): what the fuzzer aims at."""
        pairs = ffi.new("uint64_t[]", 2 * capacity)
        count = min(lib.pytop_image_reads(self.handle, pairs, capacity), capacity)
        return [(pairs[2 * i], pairs[2 * i + 1]) for i in range(count)]

    @property
    def handle(self) -> Any:
        if self._handle is None:
            raise Closed(f"the unwinder of process {self.pid} is closed or belongs to an engine")
        return self._handle

    def _option(self, option: int, value: int) -> None:
        if lib.pytop_set_option(self.handle, option, value) != lib.PYTOP_OK:
            raise ValueError(f"invalid unwinder option {option}={value}")

    def set_os_state_mode(self, mode: int) -> None:
        self._option(lib.PYTOP_OPT_OS_STATE, mode)

    def set_reuse_stacks(self, reuse: bool) -> None:
        """Whether a thread that has not run since the last sample keeps its stack (default)
        or has it read again (for benchmarks of the full walk)."""
        self._option(lib.PYTOP_OPT_REUSE_STACKS, int(reuse))

    def set_idle_check(self, samples: int) -> None:
        """Read the kernel's counts of a thread without the GIL once every `samples` samples
        (in rounds, skipped while the process's CPU time is all accounted for), as the engine
        does at its rate; 1 (default): every thread's, every sample."""
        self._option(lib.PYTOP_OPT_IDLE_CHECK, samples)

    def set_tasks(self, enabled: bool) -> bool:
        """Put the asyncio task each thread runs into its stack as a pseudo-frame (filename
        records.TASK_FILENAME). False when the target cannot say which task runs (before 3.14)."""
        return bool(lib.pytop_set_option(self.handle, lib.PYTOP_OPT_TASKS, int(enabled)) == lib.PYTOP_OK)

    def set_blocking(self, blocking: bool) -> None:
        """Stop the target's threads (ptrace) while each sample is read, or release them. The
        thread that calls this must be the one that samples: ptrace belongs to a thread."""
        self._option(lib.PYTOP_OPT_BLOCKING, int(blocking))

    def sample(self) -> Sample:
        """Every thread's stack now. Raises TargetExited, PermissionDenied or SampleError."""
        out = self._out
        status = lib.pytop_collect(self.handle, out)
        if status != lib.PYTOP_OK:
            message = ffi.string(lib.pytop_last_error(self.handle)).decode("utf-8", "replace")
            raise _status_error(self.pid, status, message)
        raw = ffi.buffer(out.threads, out.thread_count * _THREAD.size)[:]
        frames = ffi.buffer(out.frames, out.frame_count * FRAME.size)[:]
        size = FRAME.size
        threads = tuple(
            ThreadSample(tid, native, interp, flags, status, frames[first * size:(first + count) * size],
                         state.decode("latin-1"), cpu)
            for tid, _, interp, cpu, _, _, _, _, native, flags, status, first, count, _, state, _
            in _THREAD.iter_unpack(raw))
        gc = None if out.gc_collecting < 0 else bool(out.gc_collecting)
        return Sample(threads, gc, out.syscalls, out.failed_reads, out.taken_at, out.torn_count)

    def bench(self, count: int) -> tuple[int, int, int]:
        """`count` samples back to back in C, building no Python objects, for benchmarks of the
        unwinder alone: (good samples, threads they held, syscalls made)."""
        good, threads, syscalls = (ffi.new("uint64_t *") for _ in range(3))
        lib.pytop_bench_collect(self.handle, count, good, threads, syscalls)
        return good[0], threads[0], syscalls[0]

    def code(self, code_id: int) -> CodeInfo:
        """Names of a code id from a sample (resolved once, then cached)."""
        info = self._codes.get(code_id)
        if info is None:
            c_info = ffi.new("pytop_code_info *")
            if lib.pytop_describe_code(self.handle, code_id, c_info) != lib.PYTOP_OK:
                return UNKNOWN
            info = CodeInfo(
                ffi.string(c_info.name).decode("utf-8", "replace"),
                ffi.string(c_info.qualname).decode("utf-8", "replace"),
                ffi.string(c_info.filename).decode("utf-8", "replace"),
                c_info.firstlineno,
            )
            self._codes[code_id] = info
        return info

    def code_at(self, address: int, offset: int) -> tuple[CodeInfo, int] | None:
        """The code object at `address` and the line of its bytecode byte `offset`, for a frame
        that is not on a thread's stack (a suspended coroutine's); None if it cannot be read."""
        code_id, line = ffi.new("uint32_t *"), ffi.new("int32_t *")
        if lib.pytop_code_at(self.handle, address, max(-2, min(offset, 2**31 - 1)), code_id, line) != lib.PYTOP_OK:
            return None
        return self.code(code_id[0]), int(line[0])

    def thread_name(self, thread_id: int) -> str | None:
        """The name `threading` gives the thread, read from the target; None if it has none."""
        out = ffi.new("char[]", 1024)
        if lib.pytop_thread_name(self.handle, thread_id, out, 1024) != lib.PYTOP_OK:
            return None
        return str(ffi.string(out).decode("utf-8", "replace"))

    def process_cpu(self) -> int:
        """The whole process's CPU time so far (ended threads included), in nanoseconds."""
        out = ffi.new("uint64_t *")
        status = lib.pytop_process_cpu(self.handle, out)
        if status != lib.PYTOP_OK:
            raise _status_error(self.pid, status, "cannot read the process's CPU time")
        return int(out[0])

    def detach(self) -> Any:
        """Give up the native handle (to an engine, which frees it): this object is closed."""
        handle = self.handle
        self._handle = None
        return ffi.gc(handle, None)

    def close(self) -> None:
        if self._handle is not None:
            ffi.release(self._handle)  # runs pytop_close now
            self._handle = None
        self._release_pinned()

    def _release_pinned(self) -> None:
        """Let go of an image's buffers (an mmap cannot close while they are pinned)."""
        for cdata in self._pinned:
            ffi.release(cdata)
        self._pinned = []


# The drain's structs as laid out in C (see pytop.h).
_PROCESS = struct.Struct("<IiiIIIIIIIQQII")
_DRAIN_THREAD = struct.Struct("<QQQQIIiIIIIiIIc7x")
_CODE = struct.Struct("<IIiIII")
_STACK = struct.Struct("<IIIIII")
_WEIGHT = struct.Struct("<QQQIIII")
for _struct, _name in ((_PROCESS, "pytop_drain_process"), (_DRAIN_THREAD, "pytop_drain_thread"),
                       (_CODE, "pytop_drain_code"), (_STACK, "pytop_drain_stack"),
                       (_WEIGHT, "pytop_drain_weight")):
    assert _struct.size == ffi.sizeof(_name), f"pytop.h and native.py disagree on {_name}"
NO_TEXT = 0xFFFFFFFF


@dataclass(frozen=True)
class EngineConfig:
    rate: float = 1000.0  # samples per second
    jitter: float = 0.5  # intervals are the nominal one times 1 +- jitter
    max_backlog: float = 1.0  # seconds behind schedule after which samples are given up
    realtime: bool = True  # the lowest real-time priority for the sampling thread, when allowed
    realtime_budget: float = 0.5  # share of a core above which it gives that priority back
    blocking: bool = False  # stop the target's threads with ptrace while they are read
    max_stack_frames: int = 0  # bound on frames of all unique stacks kept (0: the default)
    period: float = 0.0  # seconds between full checks of every thread (0: the default)


def _array(pointer: Any, count: int, layout: struct.Struct) -> bytes:
    return ffi.buffer(pointer, count * layout.size)[:] if count else b""


class _Text:
    """A drain's strings: NUL-terminated UTF-8 at offsets."""

    def __init__(self, data: bytes):
        self.data = data

    def at(self, offset: int) -> str | None:
        if offset == NO_TEXT or offset >= len(self.data):
            return None
        return self.data[offset:self.data.index(b"\0", offset)].decode("utf-8", "replace")


def _processes(out: Any, text: _Text) -> tuple[ProcessUpdate, ...]:
    rows = _PROCESS.iter_unpack(_array(out.processes, out.process_count, _PROCESS))
    return tuple(ProcessUpdate(process, pid, status, threads, samples, failed, gil, gc, gc_known, torn, cpu, unseen,
                               text.at(error_at))
                 for process, pid, status, threads, samples, failed, gil, gc, gc_known, torn, cpu, unseen, error_at, _
                 in rows)


def _threads(out: Any, text: _Text) -> tuple[ThreadUpdate, ...]:
    rows = _DRAIN_THREAD.iter_unpack(_array(out.threads, out.thread_count, _DRAIN_THREAD))
    return tuple(
        ThreadUpdate(key, process, thread_id, native_id, flags, text.at(name_at), cpu, wall, wait, samples, gil,
                     errors_, last_error, stack, state.decode("latin-1"))
        for thread_id, cpu, wall, wait, key, process, native_id, flags, samples, gil, errors_, last_error, stack,
        name_at, state in rows)


def _codes(out: Any, text: _Text) -> tuple[Code, ...]:
    rows = _CODE.iter_unpack(_array(out.codes, out.code_count, _CODE))
    return tuple(Code(process, code_id, text.at(name) or "?", text.at(qualname) or "?", text.at(filename) or "?",
                      firstlineno)
                 for process, code_id, firstlineno, name, qualname, filename in rows)


def _stacks(out: Any) -> tuple[Stack, ...]:
    frames, size = _array(out.frames, out.frame_count, FRAME), FRAME.size
    rows = _STACK.iter_unpack(_array(out.stacks, out.stack_count, _STACK))
    return tuple(Stack(stack, process, kind, frames[first * size:(first + count) * size])
                 for stack, process, first, count, kind, _ in rows)


def _weights(out: Any) -> tuple[Weight, ...]:
    rows = _WEIGHT.iter_unpack(_array(out.weights, out.weight_count, _WEIGHT))
    return tuple(Weight(stack, thread, samples, running, cpu, wall, gil)
                 for cpu, wall, gil, stack, thread, samples, running in rows)


class Engine:
    """The native sampling thread. Feed it unwinders, start it, drain it, stop it.

    Ownership: `add()` hands the unwinder's native handle over; from then on the engine's thread
    alone uses and frees it. `stop()` waits with a deadline; an engine whose thread did not end
    in time is never freed (that thread may still be using it)."""

    def __init__(self, config: EngineConfig):
        c = ffi.new("pytop_engine_config *")
        c.rate, c.jitter, c.max_backlog = config.rate, config.jitter, config.max_backlog
        c.realtime, c.realtime_budget, c.blocking = int(config.realtime), config.realtime_budget, int(config.blocking)
        c.max_stack_frames, c.period = config.max_stack_frames, config.period
        status = ffi.new("int *")
        handle = lib.pytop_engine_new(c, status)
        if handle == ffi.NULL:
            raise ValueError(f"cannot start the sampling engine: {STATUS_NAMES.get(status[0])}")
        self.config = config
        self._handle: Any = handle
        self._stuck = False
        # A drain's arrays live until the next drain: one drain (and its unpacking) at a time.
        self._draining = threading.Lock()
        self._out = ffi.new("pytop_drain *")
        self._pids: dict[int, int] = {}  # engine process index -> pid

    @property
    def handle(self) -> Any:
        if self._handle is None:
            raise Closed("the sampling engine is closed")
        return self._handle

    @property
    def is_open(self) -> bool:
        return self._handle is not None

    def add(self, unwinder: Unwinder) -> int:
        """Sample `unwinder`'s process from the next tick on; returns the engine's index for it."""
        process = ffi.new("uint32_t *")
        status = lib.pytop_engine_add(self.handle, unwinder.handle, process)
        if status != lib.PYTOP_OK:
            raise RuntimeError(f"the sampling engine takes no more processes ({STATUS_NAMES.get(status)})")
        unwinder.detach()
        self._pids[process[0]] = unwinder.pid
        return int(process[0])

    def pid_of(self, process: int) -> int:
        return self._pids[process]

    def start(self) -> None:
        status = lib.pytop_engine_start(self.handle)
        if status != lib.PYTOP_OK:
            raise RuntimeError(f"cannot start the sampling thread ({STATUS_NAMES.get(status)})")

    def drain(self) -> Drain:
        """Everything new since the previous drain (any thread may call it)."""
        with self._draining:
            return self._drain()

    def _drain(self) -> Drain:
        out = self._out
        if lib.pytop_engine_drain(self.handle, out) != lib.PYTOP_OK:
            raise MemoryError("the sampling engine ran out of memory")
        text = _Text(ffi.buffer(out.text, out.text_size)[:] if out.text_size else b"")
        return Drain(
            processes=_processes(out, text), threads=_threads(out, text), codes=_codes(out, text),
            stacks=_stacks(out), weights=_weights(out),
            ticks=out.ticks, late=out.late, given_up=out.given_up, first_at=out.first_at, last_at=out.last_at,
            lag=out.lag, longest_gap=out.longest_gap, cpu_seconds=out.cpu_seconds, running=bool(out.running),
            realtime=bool(out.realtime),
            stacks_dropped=out.stacks_dropped, end=text.at(out.end_at),
        )

    def stop(self, timeout: float = 5.0) -> bool:
        """Ask the sampling thread to end and wait for it; False if it did not end in time."""
        if self._handle is None:
            return not self._stuck
        ended = bool(lib.pytop_engine_stop(self._handle, timeout) == lib.PYTOP_OK)
        self._stuck = not ended
        return ended

    def close(self) -> None:
        """Free the engine once its thread has ended; a stuck one is left alone (leaked)."""
        if self._handle is None or self._stuck:
            return
        if not self.stop():
            return
        lib.pytop_engine_free(self._handle)
        self._handle = None
