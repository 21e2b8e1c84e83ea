"""`pytop --dump`: every thread's stack once, as text or as one JSON object."""

from __future__ import annotations

import json
import signal
from dataclasses import asdict
from typing import Any

from ..core.records import AsyncTask, Frame, LocalVariable, ProcessStacks, ThreadStack

MAX_TREE_DEPTH = 64


def frame_record(frame: Frame) -> dict[str, Any]:
    """A frame as JSON: a native one (--native) says so and names its library."""
    record = asdict(frame)
    if not frame.native:
        del record["native"], record["library"]
    return record


def thread_record(thread: ThreadStack) -> dict[str, Any]:
    record = asdict(thread)
    record["frames"] = [frame_record(frame) for frame in thread.frames]
    del record["locals"]
    if thread.locals is not None:  # one tuple per Python frame (native ones have none)
        python = [r for r, frame in zip(record["frames"], thread.frames) if not frame.native]
        for frame_json, variables in zip(python, thread.locals):
            frame_json["locals"] = [asdict(variable) for variable in variables]
    return record


def task_record(task: AsyncTask) -> dict[str, Any]:
    record = asdict(task)
    record["coroutines"] = [frame_record(frame) for frame in task.coroutines]
    record["awaited_by"] = list(task.awaited_by)
    return record


def as_json(stacks: ProcessStacks) -> str:
    return json.dumps(document(stacks), indent=2, ensure_ascii=False)


def as_json_of_processes(processes: list[ProcessStacks]) -> str:
    """--dump -s: a document per process, the target's first."""
    return json.dumps({"processes": [document(p) for p in processes]}, indent=2, ensure_ascii=False)


def document(stacks: ProcessStacks) -> dict[str, Any]:
    document = {
        "pid": stacks.pid,
        "command": stacks.command,
        "python_version": stacks.python_version,
        "gc_collecting": stacks.gc_collecting,
        "threads": [thread_record(t) for t in stacks.threads],
    }
    if stacks.tasks is not None:
        document["tasks"] = [task_record(t) for t in stacks.tasks]
    if stacks.core_file:
        document["core_file"] = stacks.core_file
        document["core_signal"] = _signal_name(stacks.core_signal) if stacks.core_signal else None
        document["core_signal_thread"] = stacks.core_signal_tid or None
        document["core_truncated"] = {"size": stacks.core_cut[0], "needed": stacks.core_cut[1]} \
            if stacks.core_cut else None
    return document


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _state(thread: ThreadStack, signalled: int) -> str:
    known = thread.os_state not in ("", "?")  # a core file, or a thread the kernel no longer knew
    parts = ["active" if thread.active else "idle"] if known else []
    if thread.gil:
        parts.append("holds the GIL")
    if known:
        parts.append(f"OS state {thread.os_state}")
    if signalled and thread.native_id == signalled:
        parts.append("took the signal")
    return ", ".join(parts) or "state not recorded"


def _heading(stacks: ProcessStacks) -> list[str]:
    if not stacks.core_file:
        return [f"Process {stacks.pid}: {stacks.command}"]
    how = f", dumped on {_signal_name(stacks.core_signal)}" if stacks.core_signal else ""
    lines = [f"Process {stacks.pid}: {stacks.command}", f"From core file {stacks.core_file}{how}"]
    if stacks.core_cut:
        size, needed = stacks.core_cut
        lines.append(f"The core file is truncated: {size:,} bytes of the {needed:,} its headers need. Memory past "
                     "the cut is read from the files the process had mapped where they hold it; what needs the "
                     "rest is shown as unreadable.")
    return lines


def _several_interpreters(stacks: ProcessStacks) -> bool:
    return len({t.interpreter_id for t in stacks.threads} | {t.interpreter_id for t in stacks.tasks or ()}) > 1


def as_text(stacks: ProcessStacks) -> str:
    lines = [*_heading(stacks), f"Python v{stacks.python_version}", ""]
    several = _several_interpreters(stacks)  # a thread in two has a state, and a stack, in each
    for thread in stacks.threads:
        label = (f"Thread {thread.thread_id:#x} (TID {thread.native_id or '?'})" if thread.thread_id
                 else f"Thread (TID {thread.native_id}), no Python")
        if thread.name:
            label += f' "{thread.name}"'
        if several:
            label += f" in interpreter {thread.interpreter_id}"
        lines.append(f"{label}: {_state(thread, stacks.core_signal_tid)}")
        if thread.error:
            lines.append(f"    (stack incomplete: {thread.error})")
        python = 0  # locals come per Python frame
        for frame in thread.frames:
            where = f"{frame.filename}:{frame.line}" if frame.line > 0 else frame.filename
            if frame.native:  # its library, and its source where debug info says
                lines.append(f"    {frame.function} [{frame.library}{': ' + where if frame.filename else ''}]")
                continue
            lines.append(f"    {frame.function} ({where})")
            if thread.locals is not None and python < len(thread.locals):
                lines += _variables(thread.locals[python])
            python += 1
        if thread.truncated:
            lines.append("    ... (stack cut at the depth limit)")
        lines.append("")
    if stacks.tasks is not None:
        lines += task_tree(stacks.tasks, by_interpreter=several)
    return "\n".join(lines).rstrip() + "\n"


def _variables(variables: tuple[LocalVariable, ...]) -> list[str]:
    lines = []
    for heading, arguments in (("Arguments", True), ("Locals", False)):
        chosen = [v for v in variables if v.argument == arguments]
        if chosen:
            lines.append(f"        {heading}:")
            lines += [f"          {v.name}: {v.value}" for v in chosen]
    return lines


def _task_line(task: AsyncTask) -> str:
    links = [f"{f.function} ({f.filename}:{f.line})" if f.line > 0 else f.function for f in reversed(task.coroutines)]
    runs: list[list[Any]] = []  # a recursive coroutine's links, one entry with a count
    for link in links:
        if runs and runs[-1][0] == link:
            runs[-1][1] += 1
        else:
            runs.append([link, 1])
    chain = " > ".join(link if count == 1 else f"{link} ×{count:,}" for link, count in runs)
    if task.coroutines_cut:
        chain += f" > ... (deeper than {len(task.coroutines):,} coroutines: not followed)"
    elif task.coroutines_torn:
        chain += " > ... (it moved under every read: the rest not read)"
    running = " [running]" if task.running else ""
    return f"{task.name}{running}: {chain}" if chain else f"{task.name}{running}"


def task_tree(tasks: tuple[AsyncTask, ...], by_interpreter: bool = False) -> list[str]:
    """The await graph as a tree: tasks nobody awaits at the top, under each task the tasks
    it awaits (a task awaited by two shows under both; a cycle is cut where it closes). With
    `by_interpreter`, a tree per interpreter (a task awaits only tasks of its own)."""
    running = sum(t.running for t in tasks)
    lines = [f"Asyncio tasks: {len(tasks)}, {running} running"]
    if not by_interpreter:
        return lines + _forest(tasks)
    for number in sorted({t.interpreter_id for t in tasks}):
        own = tuple(t for t in tasks if t.interpreter_id == number)
        lines += [f"Interpreter {number}: {len(own)} tasks, {sum(t.running for t in own)} running", *_forest(own)]
    return lines


def _below(address: int, awaits: dict[int, list[AsyncTask]]) -> int:
    """How many distinct tasks a task awaits, directly or not."""
    seen: set[int] = set()
    todo = [address]
    while todo:
        for child in awaits.get(todo.pop(), []):
            if child.address not in seen and child.address != address:
                seen.add(child.address)
                todo.append(child.address)
    return len(seen)


def _forest(tasks: tuple[AsyncTask, ...]) -> list[str]:
    by_address = {t.address: t for t in tasks}
    awaits: dict[int, list[AsyncTask]] = {}
    for task in tasks:
        for waiter in task.awaited_by:
            if waiter in by_address:
                awaits.setdefault(waiter, []).append(task)
    roots = [t for t in tasks if not any(w in by_address for w in t.awaited_by)]
    lines: list[str] = []

    def walk(task: AsyncTask, prefix: str, last: bool, path: frozenset[int]) -> None:
        # A root that awaits tasks no read found: it is not one, and the tree says so.
        orphan = " (awaited by a task not read: it ended, or moved, while the tasks were read)" \
            if not path and task.awaited_by else ""
        lines.append(f"{prefix}{'└── ' if last else '├── '}{_task_line(task)}{orphan}")
        inner = prefix + ("    " if last else "│   ")
        if task.address in path:
            lines.append(f"{inner}└── (a cycle: it awaits a task that awaits it)")
            return
        if len(path) >= MAX_TREE_DEPTH and awaits.get(task.address):
            lines.append(f"{inner}└── ... ({_below(task.address, awaits):,} more tasks awaited below: the tree stops "
                         f"at {MAX_TREE_DEPTH} levels; --json lists them all)")
            return
        children = awaits.get(task.address, [])
        for i, child in enumerate(children):
            walk(child, inner, i == len(children) - 1, path | {task.address})

    for i, root in enumerate(roots):
        walk(root, "", i == len(roots) - 1, frozenset())
    if tasks and not roots:
        lines.append("(every task awaits another: the graph is one cycle)")
    return lines
