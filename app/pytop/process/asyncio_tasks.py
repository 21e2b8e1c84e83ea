"""Every asyncio task of a CPython 3.14+ target: its name, whether it runs, its coroutines and
the tasks that await it (`pytop --dump --async`, from a running process or a core file).

3.14 keeps each thread's tasks on a list in its thread state (the tasks of a thread that has
ended move to the interpreter's), each thread's running task, and on every task the tasks that
await it (`awaited_by`: one, or a set). A task's coroutine embeds its frame; while it awaits
another coroutine, that one is on top of its value stack (see layouts.AWAITED_DEPTH), and so
on down to the innermost await. Code objects and lines come from the unwinder, as in a sample.
Each interpreter of the process has its own thread states, loops and tasks: all are read.

Read once, in Python: this is a one-shot report, not the sampling path. Every list, chain and
set is bounded; memory that does not make sense ends that part of the walk, not the report.
"""

from __future__ import annotations

from ..core.records import AsyncTask, Frame
from ..core.visible import visible
from ..native import Unwinder
from .attach import interpreter_states, thread_states
from .memory import MemorySource
from .objects import RemoteObjects

MAX_TASKS = 100_000
MAX_CHAIN = 4096  # coroutines followed from a task's own (CPython's tests await 1,538 deep)
MAX_SET_SLOTS = 1 << 16
READS_OF_A_MOVING_CHAIN = 5
MAX_NAME_CHARS = 255  # as CPython's own reader keeps them
# The awaitables that step an async generator (genobject.c): each holds its generator first.
ASYNC_GENERATOR_STEPS = ("async_generator_asend", "async_generator_athrow")


def supported(layout: dict[str, int]) -> bool:
    return all(layout.get(k, -1) >= 0 for k in ("ts_asyncio_tasks_head", "task_node", "gen_iframe", "awaited_depth"))


class TaskReader(RemoteObjects):
    def __init__(self, source: MemorySource, layout: dict[str, int], unwinder: Unwinder):
        super().__init__(source, layout)
        self.unwinder = unwinder

    # ---- tasks ---------------------------------------------------------------------------

    def name(self, task: int) -> str:
        obj = self.u64(task + self.L["task_name"])
        flags = self.type_flags(obj)
        if flags & self.L["tpflags_unicode_subclass"]:
            return visible(self.text(obj, MAX_NAME_CHARS) or "?")  # the program's to choose: shown, never acted on
        if flags & self.L["tpflags_long_subclass"]:
            number = self.integer(obj, max_digits=4)
            return f"Task-{number}" if number is not None else "Task-?"
        return "?"

    def _frame(self, frame: int) -> Frame | None:
        L = self.L
        code = self.u64(frame + L["fr_code"]) & self.tag_mask
        instr = self.u64(frame + L["fr_instr_ptr"])
        found = self.unwinder.code_at(code, instr - (code + L["co_code_adaptive"]))
        if found is None:
            return None
        info, line = found
        return Frame(info.qualname, info.filename, line)

    def chain(self, coro: int) -> tuple[tuple[Frame, ...], bool]:
        """The coroutine's frame, then what it awaits, and so on (innermost last here), and
        whether the walk broke off on memory that moved under it (a coroutine resumed while
        read leaves a stale pointer on its stack): then the frames read so far."""
        L = self.L
        frames: list[Frame] = []
        seen: set[int] = set()
        coro_type = self.u64(coro + L["ob_type"])
        while coro and coro not in seen and len(frames) < MAX_CHAIN:
            seen.add(coro)
            state = self.i8(coro + L["gen_frame_state"])
            if state == L["gen_state_cleared"]:
                break
            frame = coro + L["gen_iframe"]
            found = self._frame(frame)
            if found is None:
                break
            frames.append(found)
            if state != L["gen_state_suspended_yield_from"]:
                break
            try:
                coro = self._awaited_coroutine(frame, coro_type)
            except OSError:
                return tuple(frames), True
        return tuple(frames), False

    def _awaited_coroutine(self, frame: int, coro_type: int) -> int:
        """What a frame suspended in an await waits on, if a coroutine or an async generator's
        step; 0 for a future, a gathering future (tasks link by awaited_by) or nothing."""
        top = self.u64(frame + self.L["fr_stackpointer"])
        awaited = self.u64(top - 8 * self.L["awaited_depth"]) & self.tag_mask
        if not awaited:
            return 0
        if self.u64(awaited + self.L["ob_type"]) == coro_type:
            return awaited
        return self._async_generator_of(awaited)  # `async for`: awaits the generator's next step

    def _async_generator_of(self, awaitable: int) -> int:
        """The async generator an `__anext__()`, `asend()` or `athrow()` awaitable steps, whose
        frame goes on the chain as a coroutine's does (same header); 0 for anything else."""
        if self.type_name(awaitable) not in ASYNC_GENERATOR_STEPS:
            return 0
        generator = self.u64(awaitable + self.L["ob_type"] + 8)  # the first field after the object header
        return generator if generator and self.type_name(generator) == "async_generator" else 0

    def awaited_by(self, task: int) -> tuple[int, ...]:
        L = self.L
        waiter = self.u64(task + L["task_awaited_by"])
        if not waiter:
            return ()
        if not self.bytes_at(task + L["task_awaited_by_is_set"], 1)[0]:
            return (waiter,)
        mask, table = self.i64(waiter + L["set_mask"]), self.u64(waiter + L["set_table"])
        if not 0 <= mask < MAX_SET_SLOTS or not table:
            return ()
        size = L["set_entry_size"]
        raw = self.bytes_at(table, (mask + 1) * size)
        found = []
        for at in range(0, len(raw), size):
            key = int.from_bytes(raw[at:at + 8], "little")
            hashed = int.from_bytes(raw[at + L["set_entry_hash"]:at + L["set_entry_hash"] + 8], "little", signed=True)
            if key and hashed != -1:  # -1: a deleted entry's dummy
                found.append(key)
        return tuple(found)

    def _list(self, head: int) -> list[int]:
        tasks: list[int] = []
        node = self.u64(head)
        while node and node != head and len(tasks) < MAX_TASKS:
            tasks.append(node - self.L["task_node"])
            node = self.u64(node)
        return tasks

    def _listed_in(self, interp: int) -> list[tuple[int, int, bool]]:
        """(task, TID, running) of one interpreter: thread by thread, then the tasks of threads
        that have ended (the interpreter keeps those)."""
        L = self.L
        listed: list[tuple[int, int, bool]] = []
        for tstate in thread_states(self.source, interp, L):
            tid = self.u64(tstate + L["ts_native_thread_id"])
            running = self.u64(tstate + L["ts_asyncio_running_task"]) \
                if self.u64(tstate + L["ts_asyncio_running_loop"]) else 0
            listed += [(task, tid, task == running) for task in self._list(tstate + L["ts_asyncio_tasks_head"])]
        return listed + [(task, 0, False) for task in self._list(interp + L["is_asyncio_tasks_head"])]

    def read(self, runtime: int) -> list[AsyncTask]:
        """Every task of every interpreter (each has its own loops and tasks), main one first."""
        L = self.L
        listed: list[tuple[int, int, int, bool]] = []
        for interp in interpreter_states(self.source, runtime, L):
            number = self.i64(interp + L["is_id"])
            listed += [(task, tid, number, running) for task, tid, running in self._listed_in(interp)]
        out = []
        for task, tid, number, running in listed[:MAX_TASKS]:
            try:
                out.append(self._task(task, tid, number, running))
            except OSError:
                continue  # a task that went away while being read
        return out

    def _task(self, task: int, tid: int, interpreter: int, running: bool) -> AsyncTask:
        """One task; its chain read again while it moves under the reader (a task that runs
        is resumed and suspended thousands of times a second), else kept as far as read."""
        for _ in range(READS_OF_A_MOVING_CHAIN):
            chain, torn = self.chain(self.u64(task + self.L["task_coro"]))
            if not torn:
                break
        return AsyncTask(task, self.name(task), tid, interpreter, running, tuple(reversed(chain)),
                         self.awaited_by(task), len(chain) >= MAX_CHAIN, torn)


def orphans(tasks: list[AsyncTask]) -> int:
    """Tasks awaited by tasks not among those read (one that ended, or moved, mid-read): the tree
    would show them as roots."""
    read = {t.address for t in tasks}
    return sum(1 for t in tasks if t.awaited_by and not any(w in read for w in t.awaited_by))


def read_tasks(source: MemorySource, runtime: int, layout: dict[str, int], unwinder: Unwinder) -> list[AsyncTask]:
    return TaskReader(source, layout, unwinder).read(runtime)
