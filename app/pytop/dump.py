"""`pytop --dump`: every thread's stack once, as text or as one JSON object."""

from __future__ import annotations

import json
from typing import Any

from .attach import Target
from .unwinder import Sample, ThreadSample


def thread_record(target: Target, thread: ThreadSample, name: str | None) -> dict[str, Any]:
    frames = []
    for code_id, line in thread.frames():
        code = target.unwinder.code(code_id)
        frames.append({"function": code.qualname, "filename": code.filename, "line": line})
    return {
        "thread_id": thread.thread_id,
        "native_id": thread.native_id,
        "name": name,
        "gil": thread.gil,
        "active": thread.active,
        "os_state": thread.os_state,
        "interpreter_id": thread.interp_id,
        "error": thread.error,
        "truncated": thread.truncated,
        "frames": frames,
    }


def as_json(target: Target, sample: Sample, names: dict[int, str]) -> str:
    document = {
        "pid": target.pid,
        "command": target.cmdline,
        "python_version": str(target.version),
        "gc_collecting": sample.gc_collecting,
        "threads": [thread_record(target, t, names.get(t.thread_id)) for t in sample.threads],
    }
    return json.dumps(document, indent=2, ensure_ascii=False)


def _state(thread: ThreadSample) -> str:
    parts = ["active" if thread.active else "idle"]
    if thread.gil:
        parts.append("holds the GIL")
    if thread.os_state:
        parts.append(f"OS state {thread.os_state}")
    return ", ".join(parts)


def as_text(target: Target, sample: Sample, names: dict[int, str]) -> str:
    lines = [f"Process {target.pid}: {target.cmdline}", f"Python v{target.version}", ""]
    for thread in sample.threads:
        name = names.get(thread.thread_id)
        label = f"Thread {thread.thread_id:#x} (TID {thread.native_id or '?'})"
        if name:
            label += f' "{name}"'
        lines.append(f"{label}: {_state(thread)}")
        if thread.error:
            lines.append(f"    (stack incomplete: {thread.error})")
        for code_id, line in thread.frames():
            code = target.unwinder.code(code_id)
            where = f"{code.filename}:{line}" if line > 0 else code.filename
            lines.append(f"    {code.qualname} ({where})")
        if thread.truncated:
            lines.append("    ... (stack cut at the depth limit)")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
