"""Attaching to a process: find its runtime, build the layout, start an Unwinder.

Nothing here stops or writes to the target. Errors come out as PytopErrors with a message for
the user (no such process, not Python, permission, unsupported version, exited meanwhile).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import psutil

from .. import errors
from ..core.visible import visible_command
from ..native import Unwinder
from . import layouts
from .core import CoreFile
from .locate import PythonVersion, Runtime, find_runtime, locate_runtime
from .memory import LiveProcess, MemorySource

# Threads whose struct pthread is tried as the main thread's, when the runtime does not say.
MAIN_CANDIDATES = 8
# How far into glibc's (or musl's) struct pthread to look for the thread's kernel TID.
PTHREAD_SCAN_BYTES = 2048
MAX_INTERPRETERS = 256  # as the sampler's own walk of them (native/internal.h)


@dataclass
class Target:
    pid: int
    cmdline: str
    version: PythonVersion
    runtime: Runtime
    layout: dict[str, int]
    unwinder: Unwinder
    core: CoreFile | None = field(default=None)  # what the unwinder reads, when not a live process

    def close(self) -> None:
        self.unwinder.close()
        if self.core is not None:
            self.core.close()


def command_line(pid: int) -> str:
    try:
        parts = psutil.Process(pid).cmdline()
    except (psutil.Error, OSError):
        parts = []
    return visible_command(" ".join(parts)) if parts else f"pid {pid}"


def _u64(source: MemorySource, address: int) -> int:
    return int.from_bytes(source.read(address, 8), "little")


def interpreter_states(source: MemorySource, runtime: int, layout: dict[str, int]) -> list[int]:
    """Every interpreter state of the process, main interpreter first (one-off reads, not the
    sampling path). The runtime's list starts at the interpreter created last and ends at the
    main one: reading only its head misses the main interpreter as soon as a subinterpreter
    exists."""
    found: list[int] = []
    interp = _u64(source, runtime + layout["rt_interpreters_head"])
    while interp and interp not in found and len(found) < MAX_INTERPRETERS:
        found.append(interp)
        interp = _u64(source, interp + layout["is_next"])
    return found[::-1]


def thread_states(source: MemorySource, interp: int, layout: dict[str, int]) -> list[int]:
    """The thread states of interpreter `interp` (one-off reads, not the sampling path). A
    thread state freed while the list is walked ends the walk: its memory no longer points back
    to the interpreter."""
    found: list[int] = []
    tstate = _u64(source, interp + layout["is_threads_head"]) if interp else 0
    while tstate and len(found) < 4096 and _u64(source, tstate + layout["ts_interp"]) == interp:
        found.append(tstate)
        tstate = _u64(source, tstate + layout["ts_next"])
    return found


def _thread_ids(source: MemorySource, runtime: int, layout: dict[str, int]) -> list[int]:
    """pthread_t of every Python thread of the process, once (a thread that entered two
    interpreters has a state in each)."""
    return list(dict.fromkeys(_u64(source, tstate + layout["ts_thread_id"])
                              for interp in interpreter_states(source, runtime, layout)
                              for tstate in thread_states(source, interp, layout)))


def _read_prefix(source: MemorySource, address: int) -> bytes:
    for size in (PTHREAD_SCAN_BYTES, 1024, 512):
        try:
            return source.read(address, size)
        except OSError:
            continue
    return b""


def calibrate_pthread_tid(source: MemorySource, runtime: int, layout: dict[str, int], attempts: int = 5) -> int:
    """The offset of the TID in struct pthread, -1 if not found; a look spoilt by threads that
    changed under it (a read of freed memory, too few agreeing) is tried again."""
    for _ in range(attempts):
        try:
            offset = _pthread_tid_offset(source, runtime, layout)
        except (ProcessLookupError, PermissionError):
            raise
        except OSError:
            continue
        if offset >= 0:
            return offset
    return -1


def _pthread_tid_offset(source: MemorySource, runtime: int, layout: dict[str, int]) -> int:
    """Before 3.11 a thread state knows its pthread_t but not its TID. The libc keeps the TID
    inside struct pthread at an offset of its own: find the offset where the main thread's
    struct holds the pid and the other Python threads' structs hold TIDs of the process.

    Threads come and go while this looks (a thread per request): a thread that ended between
    the listing of TIDs and the reading of its struct does not count against an offset; the
    offset most threads agree on wins, if most of them do. A thread can also start and end
    between the two listings of TIDs: the kernel then clears the TID in its struct, so a value
    that is not a listed TID counts against an offset only if it is still there afterwards."""
    before = source.task_ids()
    pid = source.own_pid()  # what the target's libc holds: its own namespace's numbers
    threads = [t for t in _thread_ids(source, runtime, layout) if t]
    if layout["rt_main_thread"] >= 0:
        mains = [_u64(source, runtime + layout["rt_main_thread"])]
    else:  # 3.6 and 3.7 do not say which is the main thread: it is one whose struct holds the pid
        # (the oldest state, last on the list, first; in a container, where the pid is 1, many hold it)
        mains = [t for t in reversed(threads) if pid in _ints(_read_prefix(source, t))][:MAIN_CANDIDATES]
    tids = before | source.task_ids()
    best = (-1, -1, 0)  # (score, -offset, values read)
    for main in mains:
        block = _read_prefix(source, main) if main else b""
        for off in range(0, len(block) - 3, 4):
            if struct.unpack_from("<i", block, off)[0] != pid:
                continue
            pairs = [(thread, _i32(source, thread + off)) for thread in threads if thread != main]
            values = [v for thread, v in pairs if v is not None and (v in tids or _i32(source, thread + off) == v)]
            # Each thread has a TID of its own, not the pid: an offset where two threads hold one
            # value is some other field (in a container's PID namespace the TIDs are 1, 2, 3...,
            # small numbers that flags and counters hold too).
            unique = pid not in values and len(set(values)) == len(values)
            score = sum(v in tids for v in values) if unique else 0
            best = max(best, (score, -off, len(values)))
    score, offset, read = best[0], -best[1], best[2]
    return offset if score >= 0 and (read == 0 or score * 4 >= read * 3) else -1


def _ints(block: bytes) -> set[int]:
    return {struct.unpack_from("<i", block, off)[0] for off in range(0, len(block) - 3, 4)}


def _i32(source: MemorySource, address: int) -> int | None:
    """The int at `address`, None if it cannot be read (the thread's struct is gone: it ended)."""
    try:
        return int(struct.unpack("<i", source.read(address, 4))[0])
    except OSError:
        return None


def build_layout(source: MemorySource, runtime: Runtime) -> dict[str, int]:
    """The target's offsets: per version, from its own debug block where it has one (3.13+),
    and the TID's place in struct pthread before 3.11. OSErrors come out as they are."""
    version = runtime.version
    size = layouts.debug_offsets_size(version.minor_key)
    debug_block = source.read(runtime.runtime_address, size) if size else None
    layout = layouts.layout_for(version.minor_key, str(version), version.hex, debug_block)
    for name, address in runtime.statics.items():  # 3.6, 2.7: its static variables, as offsets
        layout[name] = address - runtime.runtime_address
    if runtime.gil_waits:
        offsets = {symbol: address - runtime.runtime_address for symbol, address in runtime.gil_waits.items()}
        layout.update(layouts.gil_waits(version.minor_key, layout, offsets))
    if layout["ts_native_thread_id"] < 0:
        layout["pthread_tid"] = calibrate_pthread_tid(source, runtime.runtime_address, layout)
    return layout


def attach(pid: int) -> Target:
    """Find and prepare to sample process `pid`'s Python threads."""
    runtime = locate_runtime(pid)
    try:
        layout = build_layout(LiveProcess(pid), runtime)
    except ProcessLookupError:
        raise errors.TargetExited(f"process {pid} exited while pytop was attaching") from None
    except PermissionError:
        raise errors.permission_denied(pid, "reading the memory of") from None
    except OSError as exc:
        raise errors.AttachFailed(f"cannot read the Python runtime of process {pid} (in {runtime.binary}): {exc}"
                                  ) from None
    unwinder = Unwinder(pid, layout, runtime.runtime_address)
    return Target(pid, command_line(pid), runtime.version, runtime, layout, unwinder)


def attach_core(path: str, executable: str | None = None, sysroot: str | None = None) -> Target:
    """Prepare to read the Python threads of the process a core file was dumped from."""
    core = CoreFile(path, executable, sysroot)
    try:
        runtime = find_runtime(core)
        if runtime is None:
            raise errors.NotPython(f"core file {path} does not hold a Python process's memory (no Python "
                                   "runtime found in the files it had mapped; if the program has moved "
                                   "since, say where with --executable, or --sysroot for a container's)")
        layout = build_layout(core, runtime)
        unwinder = Unwinder.on_image(core.pid, core.regions, layout, runtime.runtime_address)
    except OSError as exc:
        core.close()
        raise errors.AttachFailed(f"cannot read the Python runtime in core file {path}: {exc}") from None
    except BaseException:
        core.close()
        raise
    return Target(core.pid, core.command or f"pid {core.pid}", runtime.version, runtime, layout, unwinder, core)
