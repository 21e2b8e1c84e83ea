"""`pytop --dump`: every thread's stack once, as text or as one JSON object."""

from __future__ import annotations

import json
import signal
from dataclasses import asdict
from typing import Any

from ..core.records import ProcessStacks, ThreadStack


def thread_record(thread: ThreadStack) -> dict[str, Any]:
    record = asdict(thread)
    record["frames"] = [asdict(frame) for frame in thread.frames]
    return record


def as_json(stacks: ProcessStacks) -> str:
    document = {
        "pid": stacks.pid,
        "command": stacks.command,
        "python_version": stacks.python_version,
        "gc_collecting": stacks.gc_collecting,
        "threads": [thread_record(t) for t in stacks.threads],
    }
    if stacks.core_file:
        document["core_file"] = stacks.core_file
        document["core_signal"] = _signal_name(stacks.core_signal) if stacks.core_signal else None
        document["core_signal_thread"] = stacks.core_signal_tid or None
    return json.dumps(document, indent=2, ensure_ascii=False)


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
    return [f"Process {stacks.pid}: {stacks.command}", f"From core file {stacks.core_file}{how}"]


def as_text(stacks: ProcessStacks) -> str:
    lines = [*_heading(stacks), f"Python v{stacks.python_version}", ""]
    for thread in stacks.threads:
        label = f"Thread {thread.thread_id:#x} (TID {thread.native_id or '?'})"
        if thread.name:
            label += f' "{thread.name}"'
        lines.append(f"{label}: {_state(thread, stacks.core_signal_tid)}")
        if thread.error:
            lines.append(f"    (stack incomplete: {thread.error})")
        for frame in thread.frames:
            where = f"{frame.filename}:{frame.line}" if frame.line > 0 else frame.filename
            lines.append(f"    {frame.function} ({where})")
        if thread.truncated:
            lines.append("    ... (stack cut at the depth limit)")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
