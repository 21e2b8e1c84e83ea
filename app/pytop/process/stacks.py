"""One look at a process's (or a core file's) threads: each one's stack with names resolved,
and on request its frames' arguments and locals and the process's asyncio tasks. What
`pytop --dump` prints, and what the live view shows when asked for a thread's stack now."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace

from .. import errors
from ..core.mixed_stacks import mixed
from ..core.records import Frame, LocalVariable, ProcessStacks, ThreadStack
from ..core.visible import visible
from ..native import OS_STATE_EXACT, Sample, SampleError, ThreadSample, libdw
from . import asyncio_tasks
from .attach import Target, attach
from .frame_locals import FrameLocals
from .memory import LiveProcess

TASK_READS = 3  # reads of the tasks while one of them awaits a task no read found


def _never() -> bool:
    return False


def stacks_of(target: Target, sample: Sample, with_locals: bool = False,
              native: dict[int, tuple[Frame, ...]] | None = None, stopped: Callable[[], bool] = _never
              ) -> ProcessStacks:
    """A sample with every name resolved, for the dump report (with each frame's arguments and
    locals if asked). A thread state its new thread has not taken up yet is not a thread of its
    own: it is left out."""
    unwinder = target.unwinder
    reader = FrameLocals(target.core or LiveProcess(target.pid), target.layout) if with_locals else None

    def frames(index: int, thread: ThreadSample) -> tuple[Frame, ...]:
        codes = (unwinder.code(code_id) for code_id, _ in thread.frames())
        python = tuple(Frame(code.qualname, code.filename, line) for code, (_, line) in zip(codes, thread.frames()))
        if native is None:
            return python
        entries = [entry for _, entry in unwinder.frame_places(index)]
        return mixed(python, entries, native.get(thread.native_id, ()))

    def variables(index: int) -> tuple[tuple[LocalVariable, ...], ...] | None:
        if reader is None:
            return None
        if stopped():
            raise errors.ReadStopped
        return tuple(reader.locals_of(address) for address in unwinder.frame_addresses(index))

    threads = tuple(ThreadStack(t.thread_id, t.native_id, unwinder.thread_name(t.thread_id), t.gil, t.active,
                                t.os_state, t.interp_id, t.error, t.truncated, frames(i, t), variables(i))
                    for i, t in enumerate(sample.threads) if not t.unclaimed)
    if native is not None:  # the process's threads that run no Python, by their native stacks
        python_tids = {t.native_id for t in threads}
        threads += tuple(ThreadStack(0, tid, _comm(target.pid, tid), False, False, "?", -1, None, False, stack)
                         for tid, stack in sorted(native.items()) if tid not in python_tids)
    core = target.core
    if core is None:
        return ProcessStacks(target.pid, target.cmdline, str(target.version), sample.gc_collecting, threads)
    return ProcessStacks(target.pid, target.cmdline, str(target.version), sample.gc_collecting, threads,
                         core.path, core.signal, core.first_tid if core.signal else 0, core.cut)


def read_stacks(target: Target, where: str, blocking: bool = False, tasks: bool = False,
         with_locals: bool = False, native: bool = False, stopped: Callable[[], bool] = _never) -> ProcessStacks:
    """Every thread's stack once (what `pytop --dump` prints), with every asyncio task if
    `tasks`, each frame's arguments and locals if `with_locals`, the C frames between the
    Python ones if `native` (the threads are stopped while both are read); `target` is closed
    after. stopped: asked between two threads' reads; True ends the read (errors.ReadStopped), the
    threads let go."""
    core = target.core is not None
    if native and libdw.why_unavailable():
        target.close()
        raise errors.UsageError(f"--native: {libdw.why_unavailable()}")
    blocking = (blocking or native) and not core
    reader = _native_reader(target) if native else None  # the program's files, before the stop
    try:
        if tasks and not asyncio_tasks.supported(target.layout):
            raise errors.UsageError(f"--async needs CPython 3.14 or newer ({where} runs {target.version}: its "
                                    "threads do not list their asyncio tasks)")
        if not core:
            target.unwinder.set_os_state_mode(OS_STATE_EXACT)  # one sample: every thread's letter, read now
            target.unwinder.set_blocking(blocking)
            target.unwinder.hold_stopped(native)  # stopped until the native stacks are read too
        for _ in range(1 if core else 5):  # a torn read is retried; a target that keeps tearing is reported
            try:
                sample = target.unwinder.sample()
                break
            except SampleError as exc:
                last = exc
        else:
            raise errors.AttachFailed(f"cannot read the stacks of {where}: {last}")
        native_stacks = None
        if reader is not None:  # only the unwinding while stopped: names and lines after they go on
            tids = _stopped_tids(target.pid) if target.core is None else sorted(target.core.task_ids())
            addresses = {}
            for tid in tids:
                if stopped():
                    raise errors.ReadStopped
                addresses[tid] = reader.addresses(tid)
            if not core:
                target.unwinder.hold_stopped(False)
            native_stacks = {}
            for tid, pcs in addresses.items():
                if stopped():
                    raise errors.ReadStopped
                native_stacks[tid] = tuple(Frame(f.function, f.filename, f.line, True, f.library)
                                           for f in reader.symbols(pcs))
        stacks = stacks_of(target, sample, with_locals, native_stacks, stopped)
        if tasks:
            source = target.core or LiveProcess(target.pid)
            found = asyncio_tasks.read_tasks(source, target.runtime.runtime_address, target.layout, target.unwinder)
            for _ in range(TASK_READS - 1):  # a task that awaits one not read: read them all again
                if not asyncio_tasks.orphans(found):
                    break
                found = asyncio_tasks.read_tasks(source, target.runtime.runtime_address, target.layout,
                                                 target.unwinder)
            stacks = replace(stacks, tasks=tuple(found))
        return stacks
    finally:
        if not core:
            target.unwinder.hold_stopped(False)
            target.unwinder.set_blocking(False)
        if reader is not None:
            reader.close()
        target.close()


def stacks_now(pid: int, stopped: Callable[[], bool] = _never, held_by: str | None = None
               ) -> tuple[ProcessStacks, str | None]:
    """Every thread's stack in process `pid` now (the `d` key), with each frame's arguments and
    locals and its C frames: a look of its own beside sampling (it blocks while it reads, and
    holds the target's threads stopped for the native part). Without the C frames when they
    cannot be read, and why (said second). held_by: the option by which pytop's sampling
    already holds the target's threads (--blocking, --native): ptrace belongs to the sampling
    thread, and a second tracer is refused."""
    if held_by is not None:
        why = (f"pytop's sampling holds the target's threads ({held_by}), and only one tracer can"
               + (": the table and the tree (T) have them" if held_by == "--native" else ""))
        return read_stacks(attach(pid), f"process {pid}", with_locals=True, stopped=stopped), \
            f"C frames not shown: {why}"
    try:
        return read_stacks(attach(pid), f"process {pid}", with_locals=True, native=True, stopped=stopped), None
    except (errors.UsageError, errors.AttachFailed, errors.PermissionDenied) as exc:
        why = str(exc)
    return read_stacks(attach(pid), f"process {pid}", with_locals=True, stopped=stopped), f"C frames not shown: {why}"


def _native_reader(target: Target) -> libdw.NativeStacks:
    """libdw on the target's files (a process's modules, or a core file's), ready to unwind."""
    core = target.core
    try:
        if core is None:
            return libdw.NativeStacks(target.pid)
        return libdw.NativeStacks(0, core.path, core.open_file(core.mappings()[0]) if core.mappings() else None)
    except OSError as exc:
        target.close()
        where = core.describe() if core is not None else f"process {target.pid}"
        raise errors.AttachFailed(f"cannot read the native stacks of {where}: {exc}") from None


def _stopped_tids(pid: int) -> list[int]:
    """The threads of `pid` in a tracing stop ('t'): those the unwinder holds stopped (a thread
    started since, running, has no registers to read)."""
    try:
        names = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found = []
    for name in names:
        try:
            with open(f"/proc/{pid}/task/{name}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "t":
                    found.append(int(name))
        except (OSError, IndexError, ValueError):
            continue
    return sorted(found)


def _comm(pid: int, tid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/task/{tid}/comm") as f:
            return visible(f.read().strip()) or None
    except OSError:
        return None
