"""The machine's Python processes, for the picker that `pytop` without a PID opens."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import psutil

from ..core.visible import visible, visible_command

_PYTHON_NAME = re.compile(r"^python\d*(\.\d+)?[a-z]*$")


@dataclass(frozen=True)
class PythonProcess:
    pid: int
    user: str
    command: str
    cpu_pct: float


def looks_like_python(process: psutil.Process) -> bool:
    """A python executable, or a program with libpython mapped (embedded interpreters)."""
    try:
        cmdline = process.cmdline()
        names = [process.name(), os.path.basename(cmdline[0]) if cmdline else ""]
        if any(_PYTHON_NAME.match(name) for name in names):
            return True
        with open(f"/proc/{process.pid}/maps") as f:
            return "libpython" in f.read()
    except (psutil.Error, OSError, IndexError):
        return False


def python_processes(exclude: set[int] | None = None) -> list[PythonProcess]:
    """Python processes this user can see, busiest first. CPU shares are since the previous
    call (psutil keeps the processes between calls)."""
    skip = {os.getpid(), *(exclude or set())}
    found = []
    for process in psutil.process_iter(["pid", "username", "cmdline"]):
        if process.pid in skip or not looks_like_python(process):
            continue
        try:
            cpu = process.cpu_percent(None)
        except psutil.Error:
            continue
        command = " ".join(process.info["cmdline"] or []) or process.info.get("name") or "?"
        # another user's choosing: shown as text, never markup, never control characters
        user = visible(process.info["username"] or "?")
        found.append(PythonProcess(process.pid, user, visible_command(command), cpu))
    return sorted(found, key=lambda p: (-p.cpu_pct, p.pid))
