"""What the kernel says a process used, read by the tests themselves: the ground truth pytop's
figures are held against. Per thread: /proc/PID/task/TID/schedstat (CPU ns); the whole process:
its CPU clock (ended threads included)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass


def process_cpu(pid: int) -> float:
    """Seconds of CPU of every thread of `pid`, ended ones included."""
    return time.clock_gettime((~pid << 3) | 2)


def thread_cpu(pid: int) -> dict[int, float]:
    """Seconds of CPU per live thread (TID)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                out[int(tid)] = int(f.read().split()[0]) / 1e9
        except (OSError, ValueError):
            continue
    return out


@dataclass(frozen=True)
class Usage:
    process: float  # seconds
    threads: dict[int, float]  # TID -> seconds (threads alive at both readings)


def read(pid: int) -> tuple[float, dict[int, float]]:
    return process_cpu(pid), thread_cpu(pid)


def between(before: tuple[float, dict[int, float]], after: tuple[float, dict[int, float]]) -> Usage:
    threads = {tid: after[1][tid] - before[1].get(tid, 0.0) for tid in after[1]}
    return Usage(after[0] - before[0], threads)


def task_states(pid: int) -> set[str]:
    """The state letters of the process's threads (a thread that ends meanwhile is left out)."""
    states = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                states.add(f.read().rsplit(")", 1)[1].split()[0])
        except OSError:
            continue
    return states


def all_stopped(pid: int, timeout: float = 5.0) -> None:
    """Until every thread of `pid` is in a stop (after SIGSTOP): its CPU counts no longer move."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if task_states(pid) <= {"T", "t"}:
            return
        time.sleep(0.002)
    raise RuntimeError(f"process {pid} did not stop")


@contextlib.contextmanager
def frozen(pid: int) -> Iterator[None]:
    """The target stopped (SIGSTOP) for the duration; it goes on afterwards."""
    os.kill(pid, signal.SIGSTOP)
    try:
        all_stopped(pid)
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def run_for(pid: int, seconds: float) -> Usage:
    """Let a frozen target run for `seconds`, freeze it again: what it used meanwhile."""
    before = read(pid)
    os.kill(pid, signal.SIGCONT)
    time.sleep(seconds)
    os.kill(pid, signal.SIGSTOP)
    all_stopped(pid)
    return between(before, read(pid))


@contextlib.contextmanager
def saturated(cores: int | None = None) -> Iterator[None]:
    """Every core kept busy by another process, as on a loaded machine."""
    count = cores or os.cpu_count() or 2
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(0.2)
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
