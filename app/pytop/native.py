"""The one module that talks to the native unwinder (cffi): everything else sees Python objects.

A sample hands over compact data only: per thread a few integers and its frames as packed
(code id: uint32, line: int32) pairs, innermost first, in one `bytes` object that doubles as a
hashable stack key. Names are resolved once per code id with `code()`.
"""

from __future__ import annotations

import errno
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from . import errors
from ._native import ffi, lib
from .core.records import FRAME

UNKNOWN_CODE = 0

_STATUS_ERRNO = {lib.PYTOP_ERR_GONE: errno.ESRCH, lib.PYTOP_ERR_PERMISSION: errno.EPERM}
STATUS_NAMES = {
    lib.PYTOP_OK: "ok",
    lib.PYTOP_ERR_GONE: "process gone",
    lib.PYTOP_ERR_PERMISSION: "permission denied",
    lib.PYTOP_ERR_READ: "read failed",
    lib.PYTOP_ERR_CORRUPT: "inconsistent memory",
    lib.PYTOP_ERR_LIMIT: "limit reached",
    lib.PYTOP_ERR_NOMEM: "out of memory",
    lib.PYTOP_ERR_ARGS: "invalid argument",
}
OS_STATE_OFF, OS_STATE_FAST, OS_STATE_EXACT = 0, 1, 2
GIL, ACTIVE = lib.PYTOP_THREAD_GIL, lib.PYTOP_THREAD_ACTIVE  # thread flags


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


class ThreadSample(NamedTuple):
    """One thread in one sample. Built for speed (a sampler makes thousands a second)."""

    thread_id: int  # Python's thread id (threading.get_ident())
    native_id: int  # kernel TID, 0 when unknown
    interp_id: int
    flags: int  # PYTOP_THREAD_* bits
    status: int  # PYTOP_OK, or why the stack is incomplete
    stack: bytes  # packed FRAME records, innermost first: also a hashable key of the stack
    os_state: str  # the kernel's state letter, "?" when unknown

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


# pytop_thread as laid out in C: thread_id, tstate, interp_id, native_id, flags, status,
# first_frame, frame_count, serial, os_state.
_THREAD = struct.Struct("<QQqiIiIIIc7x")
_INDEX = struct.Struct("<I")
SELECT_ALL, SELECT_BUSY, SELECT_GIL = lib.PYTOP_SELECT_ALL, lib.PYTOP_SELECT_BUSY, lib.PYTOP_SELECT_GIL
assert _THREAD.size == ffi.sizeof("pytop_thread"), "pytop.h and unwinder.py disagree"


@dataclass(frozen=True)
class Sample:
    threads: tuple[ThreadSample, ...]
    gc_collecting: bool | None
    syscalls: int
    taken_at: float = 0.0  # time.monotonic() when the sample began


class RawSample(NamedTuple):
    """A sample as the native side laid it out, copied in a few bulk reads: what a sampling
    thread hands on without spending time (and the GIL) on unpacking it."""

    records: bytes  # pytop_thread structs
    frames: bytes  # FRAME records of all threads
    selected: bytes  # uint32 indices of the threads whose stacks count (Unwinder.set_select)
    thread_count: int
    active_count: int
    torn_count: int
    gil_held: bool
    gc_collecting: int  # 1, 0, or -1 when unknown
    syscalls: int
    taken_at: float

    def threads(self) -> Iterator[tuple[int, int, int, int, int, int, int, int, bytes]]:
        """Per thread: (thread id, tstate, interpreter id, native id, flags, status, serial,
        OS state letter as a byte value, stack bytes)."""
        frames, size = self.frames, FRAME.size
        for tid, tstate, interp, native, flags, status, first, count, serial, state in _THREAD.iter_unpack(
                self.records):
            yield (tid, tstate, interp, native, flags, status, serial, state[0],
                   frames[first * size:(first + count) * size])

    def selected_stacks(self) -> Iterator[tuple[int, bytes]]:
        """(serial, stack) of the selected threads only: the per-sample work of a sampler."""
        records, frames, size, at = self.records, self.frames, FRAME.size, _THREAD.size
        for (index,) in _INDEX.iter_unpack(self.selected):
            record = _THREAD.unpack_from(records, index * at)
            first, count = record[6], record[7]
            yield record[8], frames[first * size:(first + count) * size]

    def decode(self) -> Sample:
        threads = tuple([
            ThreadSample(tid, native, interp, flags, status, stack, chr(state))
            for tid, _, interp, native, flags, status, _, state, stack in self.threads()
        ])
        gc = None if self.gc_collecting < 0 else bool(self.gc_collecting)
        return Sample(threads, gc, self.syscalls, self.taken_at)


class ThreadStat(NamedTuple):
    """One thread's figures since the last reset_thread_stats(), kept by the native side."""

    thread_id: int
    serial: int
    native_id: int
    samples: int
    active: int
    gil: int
    top_code: int  # code id of the innermost frame of its latest sample, 0 if none
    alive: bool  # in the latest sample


_THREAD_STAT = struct.Struct("<QIiIIIII4x")
assert _THREAD_STAT.size == ffi.sizeof("pytop_thread_stat"), "pytop.h and unwinder.py disagree"


class SampleError(Exception):
    """One sample failed without the target being gone (a transient read, a torn structure)."""

    def __init__(self, status: int, message: str, taken_at: float = 0.0):
        super().__init__(message)
        self.status = status
        self.taken_at = taken_at


class Unwinder:
    """Samples every thread of one process. One thread may sample while another resolves code
    ids (the native side serialises the two); two threads must not sample at once."""

    def __init__(self, pid: int, layout: dict[str, int], runtime_address: int):
        self.pid = pid
        c_layout = ffi.new("pytop_layout *")
        for name, value in layout.items():
            if hasattr(c_layout, name):
                setattr(c_layout, name, value)
        status = ffi.new("int *")
        handle = lib.pytop_open(pid, c_layout, runtime_address, status)
        if handle == ffi.NULL:
            raise errors.AttachFailed(f"cannot start the unwinder: {STATUS_NAMES.get(status[0])}")
        self._handle = ffi.gc(handle, lib.pytop_close)
        self._out = ffi.new("pytop_sample *")
        self._started = ffi.new("double *")
        self._codes: dict[int, CodeInfo] = {UNKNOWN_CODE: UNKNOWN}

    def set_max_depth(self, depth: int) -> None:
        self._option(lib.PYTOP_OPT_MAX_DEPTH, depth)

    def set_os_state_mode(self, mode: int) -> None:
        self._option(lib.PYTOP_OPT_OS_STATE, mode)

    def set_blocking(self, blocking: bool) -> None:
        """Stop the target's threads (ptrace) while each sample is read, or release them. The
        thread that calls this must be the one that samples: ptrace belongs to a thread."""
        self._option(lib.PYTOP_OPT_BLOCKING, int(blocking))

    def set_select(self, mode: int) -> None:
        """Which threads' stacks a sample selects: SELECT_ALL, SELECT_BUSY (running or holding
        the GIL, the default) or SELECT_GIL."""
        self._option(lib.PYTOP_OPT_SELECT, mode)

    def thread_stats(self) -> list[ThreadStat]:
        """Every thread's figures since the last reset_thread_stats() (finished ones too, up to
        a bound); another thread may be sampling meanwhile."""
        if self._handle is None:
            return []  # closed: the target is gone and so are its figures
        count = ffi.new("uint32_t *")
        lib.pytop_thread_stats(self._handle, ffi.NULL, 0, count)
        capacity = count[0] + 64  # room for threads that start meanwhile
        out = ffi.new("pytop_thread_stat[]", capacity)
        lib.pytop_thread_stats(self._handle, out, capacity, count)
        raw = ffi.buffer(out, min(count[0], capacity) * _THREAD_STAT.size)
        return [ThreadStat(tid, serial, native, samples, active, gil, top, bool(alive))
                for tid, serial, native, samples, active, gil, top, alive in _THREAD_STAT.iter_unpack(raw)]

    def reset_thread_stats(self) -> None:
        if self._handle is not None:
            lib.pytop_reset_thread_stats(self._handle)

    def set_reuse_stacks(self, reuse: bool) -> None:
        """Whether a thread that has not run since the last sample keeps its stack (default)
        or has it read again (for benchmarks of the full walk)."""
        self._option(lib.PYTOP_OPT_REUSE_STACKS, int(reuse))

    def _option(self, option: int, value: int) -> None:
        if lib.pytop_set_option(self._handle, option, value) != lib.PYTOP_OK:
            raise ValueError(f"invalid unwinder option {option}={value}")

    def sample(self, due: float = 0.0) -> Sample:
        """Every thread's stack now, or at `due` (a time.monotonic() value): the wait happens
        in C, without the GIL. Raises TargetExited, PermissionDenied or SampleError."""
        return self.sample_raw(due).decode()

    def sample_raw(self, due: float = 0.0) -> RawSample:
        """sample(), left packed (see RawSample)."""
        out = self._out
        status = lib.pytop_collect_at(self._handle, due, out, self._started)
        taken_at = self._started[0]
        if status == lib.PYTOP_OK:
            return RawSample(ffi.buffer(out.threads, out.thread_count * _THREAD.size)[:],
                             ffi.buffer(out.frames, out.frame_count * FRAME.size)[:],
                             ffi.buffer(out.selected, out.selected_count * _INDEX.size)[:],
                             out.thread_count, out.active_count, out.torn_count, bool(out.gil_held),
                             out.gc_collecting, out.syscalls, taken_at)
        if status == lib.PYTOP_ERR_GONE:
            raise errors.TargetExited(f"process {self.pid} has exited")
        if status == lib.PYTOP_ERR_PERMISSION:
            raise errors.permission_denied(self.pid, "reading the memory of")
        message = ffi.string(lib.pytop_last_error(self._handle)).decode("utf-8", "replace")
        raise SampleError(status, message or STATUS_NAMES.get(status, "sample failed"), taken_at)

    def bench(self, count: int) -> tuple[int, int, int]:
        """`count` samples back to back in C, building no Python objects, for benchmarks of the
        unwinder alone: (good samples, threads they held, syscalls made)."""
        good, threads, syscalls = (ffi.new("uint64_t *") for _ in range(3))
        lib.pytop_bench_collect(self._handle, count, good, threads, syscalls)
        return good[0], threads[0], syscalls[0]

    def code(self, code_id: int) -> CodeInfo:
        """Names of a code id from a sample (resolved once, then cached)."""
        info = self._codes.get(code_id)
        if info is None:
            c_info = ffi.new("pytop_code_info *")
            if self._handle is None or lib.pytop_describe_code(self._handle, code_id, c_info) != lib.PYTOP_OK:
                return UNKNOWN
            info = CodeInfo(
                ffi.string(c_info.name).decode("utf-8", "replace"),
                ffi.string(c_info.qualname).decode("utf-8", "replace"),
                ffi.string(c_info.filename).decode("utf-8", "replace"),
                c_info.firstlineno,
            )
            self._codes[code_id] = info
        return info

    def close(self) -> None:
        if self._handle is not None:
            ffi.release(self._handle)  # runs pytop_close now
            self._handle = None
