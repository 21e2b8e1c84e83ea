"""The host sampler (sampling/host.py): the busiest processes' stacks, for the host's table, on
real processes: one that execs another program is let go; one that ends goes from the table."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import pytest

import helpers
from pytop.core.model import Heat
from pytop.run import attach_child
from pytop.sampling.host import HostSampler

pytestmark = pytest.mark.process  # real processes sampled

SPIN_THEN_EXEC = """\
import os, sys, time
def crunch_until(end):
    while time.monotonic() < end:
        pass
print("ready", flush=True)
crunch_until(time.monotonic() + float(sys.argv[1]))
os.execv("/bin/sleep", ["sleep", "60"])
"""


def test_a_process_that_execs_another_program_is_let_go() -> None:
    """Sampled while it spins in crunch_until; then it execs `sleep`: its samples fail, and the
    sampler lets it go (it had been sampled, failing, for ever) and stays alive for the others."""
    windows: list[dict[int, Heat]] = []
    target = subprocess.Popen([sys.executable, "-c", SPIN_THEN_EXEC, "2.0"], stdout=subprocess.PIPE)
    other = subprocess.Popen([sys.executable, "-c", "print('ready', flush=True)\nwhile True: pass"],
                             stdout=subprocess.PIPE)
    sampler = HostSampler(attach_child, windows.append, window=0.5, cpu_budget=0)
    try:
        for process in (target, other):
            assert process.stdout is not None and process.stdout.readline()
        sampler.start()
        sampler.watch([target.pid, other.pid])
        helpers.wait_until(lambda: any(target.pid in w and w[target.pid].hottest for w in windows), timeout=30)
        hot = next(w[target.pid] for w in windows if target.pid in w and w[target.pid].hottest)
        helpers.wait_until(lambda: (open(f"/proc/{target.pid}/comm").read().strip() == "sleep"), timeout=30)
        time.sleep(2.0)
        count = len(windows)
        time.sleep(2.0)
        later = windows[count:]
    finally:
        sampler.stop()
        for process in (target, other):
            process.kill()
            process.wait()
    assert hot.hottest is not None and hot.hottest[0] == "crunch_until", hot
    assert later and all(target.pid not in w for w in later), later  # let go
    assert all(other.pid in w and w[other.pid].samples for w in later), later  # the others sampled on


def test_one_that_ends_goes_and_the_rest_stay(target_interp: dict[str, Any]) -> None:
    windows: list[dict[int, Heat]] = []
    sampler = HostSampler(attach_child, windows.append, window=0.5, cpu_budget=0)
    with helpers.running(target_interp, "hot_spinner.py", "resize_images") as staying:
        leaving = subprocess.Popen([sys.executable, "-c", "print('ready', flush=True)\nwhile True: pass"],
                                   stdout=subprocess.PIPE)
        try:
            assert leaving.stdout is not None and leaving.stdout.readline()
            sampler.start()
            sampler.watch([staying.pid, leaving.pid])
            helpers.wait_until(lambda: any(leaving.pid in w for w in windows), timeout=30)
            leaving.kill()
            leaving.wait()
            count = len(windows)
            helpers.wait_until(lambda: len(windows) > count + 3, timeout=30)
            later = windows[count + 1:]
        finally:
            sampler.stop()
            if leaving.poll() is None:
                leaving.kill()
                leaving.wait()
    assert all(leaving.pid not in w for w in later), later
    assert all(w[staying.pid].hottest and w[staying.pid].hottest[0] == "resize_images" for w in later), later


def test_a_windows_heat_is_own_cpu_by_function_against_the_kernels_count() -> None:
    """Pure: each process's functions by their own CPU time, hottest first, at most five; the
    rows pytop makes for time between samples or threads without Python are not functions; the
    share is of the kernel's count for the process."""
    from pytop.core.function_sums import FunctionSums
    from pytop.core.stack_book import StackBook
    from pytop.core.tally import OWN, mode_column, new_row
    from pytop.sampling.host import KEEP_FUNCTIONS, heats_of

    cpu = OWN + mode_column("cpu")
    table = FunctionSums(StackBook())

    def put(function: str, filename: str, pid: int, seconds: float) -> None:
        figures = [0] * 12
        figures[cpu] = int(seconds * 1e9)
        table.by_function[(function, filename, 0, pid)] = new_row(figures)

    put("parse", "app.py", 10, 0.6)
    put("(ran between samples, not seen)", "", 10, 0.9)
    put("(thread without Python)", "", 10, 0.5)
    put("render", "app.py", 10, 0.3)
    for n in range(8):
        put(f"f{n}", "lib.py", 20, 0.01 * (n + 1))
    heats = heats_of(table, {10: [2_000_000_000, 100, 40], 20: [100_000_000, 50, 0], 30: [0, 10, 0]})
    assert heats[10].functions == (("parse", "app.py", 0.6), ("render", "app.py", 0.3))
    assert heats[10].hottest == ("parse", "app.py", 0.3) and heats[10].gil_pct == 40.0
    assert [f for f, _, _ in heats[20].functions] == ["f7", "f6", "f5", "f4", "f3"][:KEEP_FUNCTIONS]
    assert heats[30].hottest is None and heats[30].samples == 10  # sampled, idle
