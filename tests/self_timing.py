"""What a self-timing target (targets/self_timed.py) says its functions used over a window of
its life: the truth pytop's split among functions is held against.

The target runs frozen (SIGSTOP) while pytop starts, runs for the window, and is frozen again,
so that both sides cover the very same work; then it prints its log. Each call in the log
carries its thread's CPU clock at its start and end, and the window is known on the same
clocks (each thread's kernel count when it was frozen, which is what the thread's CPU clock
reads), so a call that straddles the window counts exactly for its part inside it."""

from __future__ import annotations

import json
import os
import signal
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import helpers
import kernel


@dataclass
class Window:
    """Each thread's CPU time (TID -> seconds) when the window opened and when it closed."""

    start: dict[int, float] = field(default_factory=dict)
    end: dict[int, float] = field(default_factory=dict)
    process: float = 0.0  # the whole process's CPU time in it


def run_window(pid: int, seconds: float) -> Window:
    """Let a frozen target run for `seconds` and freeze it again (kernel.run_for, with each
    thread's counts kept)."""
    before = kernel.read(pid)
    os.kill(pid, signal.SIGCONT)
    time.sleep(seconds)
    os.kill(pid, signal.SIGSTOP)
    kernel.all_stopped(pid)
    after = kernel.read(pid)
    return Window(before[1], after[1], after[0] - before[0])


def read_log(target: helpers.RunningTarget, timeout: float = 120) -> list[list[Any]]:
    """Let the target go on, and ask for its log."""
    os.kill(target.pid, signal.SIGCONT)
    os.kill(target.pid, signal.SIGUSR2)
    line = helpers.read_line(target.process, timeout)
    assert line, "the target printed no log"
    return list(json.loads(line)["log"])


def inside(log: Iterable[list[Any]], window: Window) -> tuple[dict[str, float], dict[str, float]]:
    """{function: own seconds}, {function: total seconds} inside the window, by the target's
    own clocks. A call's own time is taken inside in proportion to its total's part."""
    own: dict[str, float] = defaultdict(float)
    total: dict[str, float] = defaultdict(float)
    for function, tid, start, end, own_seconds in log:
        if tid not in window.start or tid not in window.end:
            continue
        part = max(0.0, min(end, window.end[tid]) - max(start, window.start[tid]))
        if not part:
            continue
        total[function] += part
        own[function] += own_seconds * part / (end - start)
    return dict(own), dict(total)


def pytop_figures(rows: Iterable[Any]) -> tuple[dict[str, float], dict[str, float]]:
    """pytop's {function: own seconds}, {function: total seconds}, by the names the target logs
    (its code objects' names: 3.11+ rows show qualified names, `logged.<locals>.wrapper`).
    `rows`: FunctionRows, or --json's function objects."""
    own: dict[str, float] = defaultdict(float)
    total: dict[str, float] = defaultdict(float)
    for row in rows:
        if isinstance(row, dict):
            name, own_time, total_time = row["function"], row["own_time"], row["total_time"]
        else:
            name, own_time, total_time = row.function, row.own_time, row.total_time
        name = name.rsplit(".", 1)[-1]
        own[name] += own_time
        total[name] += total_time
    return dict(own), dict(total)
