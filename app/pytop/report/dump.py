"""`pytop --dump`: every thread's stack once, as text or as one JSON object."""

from __future__ import annotations

import json
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
    return json.dumps(document, indent=2, ensure_ascii=False)


def _state(thread: ThreadStack) -> str:
    parts = ["active" if thread.active else "idle"]
    if thread.gil:
        parts.append("holds the GIL")
    if thread.os_state:
        parts.append(f"OS state {thread.os_state}")
    return ", ".join(parts)


def as_text(stacks: ProcessStacks) -> str:
    lines = [f"Process {stacks.pid}: {stacks.command}", f"Python v{stacks.python_version}", ""]
    for thread in stacks.threads:
        label = f"Thread {thread.thread_id:#x} (TID {thread.native_id or '?'})"
        if thread.name:
            label += f' "{thread.name}"'
        lines.append(f"{label}: {_state(thread)}")
        if thread.error:
            lines.append(f"    (stack incomplete: {thread.error})")
        for frame in thread.frames:
            where = f"{frame.filename}:{frame.line}" if frame.line > 0 else frame.filename
            lines.append(f"    {frame.function} ({where})")
        if thread.truncated:
            lines.append("    ... (stack cut at the depth limit)")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
