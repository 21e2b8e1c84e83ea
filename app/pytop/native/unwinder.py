"""An `Unwinder` reads one process (or a core's memory image) when called: `pytop --dump`,
attach-time checks and benchmarks call it directly; an engine takes its handle over."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from .. import errors
from .._native import ffi, lib
from ..core.records import FRAME, STATUS_NAMES
from ..core.visible import visible
from .mirror import mirror
from .status import Closed, status_error

OS_STATE_OFF, OS_STATE_FAST, OS_STATE_EXACT = 0, 1, 2  # set_os_state_mode()

@dataclass(frozen=True)
class CodeInfo:
    name: str
    qualname: str
    filename: str
    firstlineno: int


UNKNOWN = CodeInfo("<unknown>", "<unknown>", "<unknown>", 0)


def process_image(pid: int) -> bytes | None:
    """Which program `pid` runs: its auxiliary vector, which the kernel writes anew at every
    exec (the entry point, the stack's random bytes). None if it cannot be read."""
    try:
        with open(f"/proc/{pid}/auxv", "rb") as f:
            return f.read()
    except OSError:
        return None

_THREAD = mirror("pytop_thread")  # as laid out in C (pytop.h), field by field


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
    def waits_for_gil(self) -> bool:
        """Blocked in the kernel taking the GIL when its counts last moved (kthreads.c)."""
        return bool(self.flags & lib.PYTOP_THREAD_GIL_WAIT)

    @property
    def sleeps_holding_gil(self) -> bool:
        """Holds the GIL, asleep in the kernel (C code that blocks without letting it go)."""
        return bool(self.flags & lib.PYTOP_THREAD_GIL_ASLEEP)

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


_LAYOUT_FIELDS = tuple(name for name, _ in ffi.typeof("pytop_layout").fields)


def _c_layout(layout: dict[str, int]) -> Any:
    """Every field of pytop_layout from `layout` (-1: absent in this version): a key the layouts
    forgot must be an error here, not an offset 0 that reads the wrong memory."""
    missing = [name for name in _LAYOUT_FIELDS if name not in layout]
    if missing:
        raise ValueError(f"the layout has no {', '.join(missing)}")
    c_layout = ffi.new("pytop_layout *")
    for name in _LAYOUT_FIELDS:
        setattr(c_layout, name, layout[name])
    return c_layout


class Unwinder:
    """Samples every thread of one process, when called. Used from one thread at a time."""

    def __init__(self, pid: int, layout: dict[str, int], runtime_address: int):
        status = ffi.new("int *")
        self._pinned: list[Any] = []
        # The program it reads, taken before the native side takes its own digest (image_id.c):
        # an exec in between is then seen by both, never by the engine alone (which stops
        # reading a replaced program and waits for it to be followed).
        self.image = process_image(pid)
        self._adopt(pid, lib.pytop_open(pid, _c_layout(layout), runtime_address, status), status[0])

    @classmethod
    def on_image(cls, pid: int, regions: Sequence[ImageRegion], layout: dict[str, int],
                 runtime_address: int) -> Unwinder:
        """An unwinder reading a memory image (a core file's) instead of process `pid`: each
        region's bytes are `size` bytes at `offset` in its `buffer` (an mmap or a bytearray),
        pinned, not copied, until close()."""
        self = cls.__new__(cls)
        self.image = None  # no process: no exec
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
        self._spans: list[tuple[int, int]] = []  # each thread's frames in the last sample: (first, count)
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

    def set_max_depth(self, frames: int) -> None:
        """Keep at most `frames` Python frames per thread, the innermost (default 65,536); a
        thread with more is marked truncated."""
        self._option(lib.PYTOP_OPT_MAX_DEPTH, frames)

    def set_tasks(self, enabled: bool) -> bool:
        """Put the asyncio task each thread runs into its stack as a pseudo-frame (filename
        records.TASK_FILENAME). False when the target cannot say which task runs (before 3.14)."""
        return bool(lib.pytop_set_option(self.handle, lib.PYTOP_OPT_TASKS, int(enabled)) == lib.PYTOP_OK)

    def set_blocking(self, blocking: bool) -> None:
        """Stop the target's threads (ptrace) while each sample is read, or release them. The
        thread that calls this must be the one that samples: ptrace belongs to a thread."""
        self._option(lib.PYTOP_OPT_BLOCKING, int(blocking))

    def set_native(self, native: bool) -> None:
        """With blocking on: put each thread's native (C) frames in its stacks (libdw; their
        code info is marked native, the library as filename). Raises OSError saying why not."""
        if lib.pytop_set_option(self.handle, lib.PYTOP_OPT_NATIVE, int(native)) != lib.PYTOP_OK:
            raise OSError(ffi.string(lib.pytop_last_error(self.handle)).decode("utf-8", "replace"))

    def sample(self) -> Sample:
        """Every thread's stack now. Raises TargetExited, PermissionDenied or SampleError."""
        out = self._out
        status = lib.pytop_collect(self.handle, out)
        if status != lib.PYTOP_OK:
            message = ffi.string(lib.pytop_last_error(self.handle)).decode("utf-8", "replace")
            raise status_error(self.pid, status, message)
        raw = ffi.buffer(out.threads, out.thread_count * _THREAD.size)[:]
        frames = ffi.buffer(out.frames, out.frame_count * FRAME.size)[:]
        size = FRAME.size
        records = list(_THREAD.iter_unpack(raw))
        self._spans = [(first, count) for *_, first, count, _, _, _ in records]
        threads = tuple(
            ThreadSample(tid, native, interp, flags, status, frames[first * size:(first + count) * size],
                         state.decode("latin-1"), cpu)
            for tid, _, interp, cpu, _, _, _, _, native, flags, status, first, count, _, state, _ in records)
        gc = None if out.gc_collecting < 0 else bool(out.gc_collecting)
        return Sample(threads, gc, out.syscalls, out.failed_reads, out.taken_at, out.torn_count)

    def frame_addresses(self, thread_index: int) -> tuple[int, ...]:
        """Where each frame of the last sample's thread `thread_index` is in the target, innermost
        first as its frames() (0 for a pseudo-frame): its arguments and locals are there."""
        return tuple(address for address, _ in self.frame_places(thread_index))

    def frame_places(self, thread_index: int) -> tuple[tuple[int, bool], ...]:
        """(address, entry) of each frame of the last sample's thread `thread_index`: entry is
        true for the outermost frame of those one call of the eval loop runs (native code called
        it: native frames go between it and the next one out)."""
        first, count = self._spans[thread_index]
        out, entry = ffi.new("uint64_t[]", max(count, 1)), ffi.new("uint8_t[]", max(count, 1))
        if lib.pytop_frame_addresses(self.handle, first, count, out, entry) != lib.PYTOP_OK:
            return ()
        return tuple((out[i], bool(entry[i])) for i in range(count))

    def hold_stopped(self, hold: bool) -> None:
        """With blocking on: keep the threads stopped after a sample (1), or let them go on (0).
        From the thread that samples."""
        self._option(lib.PYTOP_OPT_HOLD_STOPPED, int(hold))

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
            info = CodeInfo(  # names the target chose: shown, never acted on (core/visible.py)
                visible(ffi.string(c_info.name).decode("utf-8", "replace")),
                visible(ffi.string(c_info.qualname).decode("utf-8", "replace")),
                visible(ffi.string(c_info.filename).decode("utf-8", "replace")),
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
        return visible(ffi.string(out).decode("utf-8", "replace"))

    def process_cpu(self) -> int:
        """The whole process's CPU time so far (ended threads included), in nanoseconds."""
        out = ffi.new("uint64_t *")
        status = lib.pytop_process_cpu(self.handle, out)
        if status != lib.PYTOP_OK:
            raise status_error(self.pid, status, "cannot read the process's CPU time")
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
