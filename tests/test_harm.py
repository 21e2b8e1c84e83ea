"""Do no harm: pytop must never take from the target what it needs. By default its sampling
thread runs at normal priority (a real-time one only with --realtime), and its whole process
keeps within its CPU budget by lowering the rate, which it says."""

from __future__ import annotations

import json
import os
import resource
import subprocess
from typing import Any

import pytest

import helpers

SAMPLING_THREAD = helpers.SAMPLING_THREAD


def thread_policies(pid: int) -> dict[str, tuple[int, int]]:
    """{thread name: (scheduling policy, nice)} of pytop's threads, once its sampling thread runs."""
    return {name: (os.sched_getscheduler(tid), os.getpriority(os.PRIO_PROCESS, tid))
            for name, tid in helpers.sampling_started(pid).items()}


def policies_during_batch(pid: int, *options: str) -> dict[str, tuple[int, int]]:
    pytop = subprocess.Popen([*helpers.PYTOP, "--batch", "--duration", "30", *options, str(pid)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        return thread_policies(pytop.pid)
    finally:
        pytop.terminate()
        pytop.wait(60)


def test_normal_priority_unless_asked(target_interp: dict[str, Any]) -> None:
    with helpers.running(target_interp, "stacks.py") as t:
        default = policies_during_batch(t.pid)
        asked = policies_during_batch(t.pid, "--realtime")
    assert all(policy == os.SCHED_OTHER and nice == 0 for policy, nice in default.values()), default
    if os.geteuid() == 0:  # allowed to take it: it does, only when asked
        assert asked[SAMPLING_THREAD][0] == os.SCHED_FIFO, asked


def test_the_cpu_budget_lowers_the_rate_and_says_so(target_interp: dict[str, Any]) -> None:
    # A budget no sampler at 2 kHz can keep (0.5% of a core: ~25 us of CPU a second per 100
    # samples): the rate must come down, whatever the machine's load.
    with helpers.running(target_interp, "stacks.py") as t:
        done = helpers.run_pytop("--batch", "--duration", "6", "--rate", "2000", "--cpu-budget", "0.5", "--json",
                                 str(t.pid))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["rate_held"] is not None and report["rate_held"] < 1000, report["rate_held"]
    assert report["samples"] < 2000 * report["duration"] * 0.75, (report["samples"], report["duration"])
    assert report["cpu_budget_pct"] == 0.5


def test_a_rate_the_budget_allows_is_not_held(target_interp: dict[str, Any]) -> None:
    # 20 samples a second of a three-thread target cost far less than 5% of a core.
    with helpers.running(target_interp, "stacks.py") as t:
        done = helpers.run_pytop("--batch", "--duration", "4", "--rate", "20", "--json", str(t.pid))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rate_held"] is None


def batch_cpu(*args: str) -> tuple[float, dict[str, Any]]:
    """The CPU seconds the kernel counted for a `pytop --batch --json` run (all its threads),
    and its report."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)  # (no other child is reaped meanwhile)
    done = helpers.run_pytop("--batch", "--json", *args)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, json.loads(done.stdout)


@pytest.mark.parametrize("shape", [("deep.py", "10000", "spin"), ("bursty_pool.py", "1000", "2")],
                         ids=["deep-recursion", "pool-of-1000"])
def test_the_budget_is_kept_from_the_start(target_interp: dict[str, Any], shape: tuple[str, ...]) -> None:
    """The budget covers pytop's whole process from its first sample: a sample of a thread
    computing 10,000 frames deep costs milliseconds, and judged only after a grace at the rate
    asked, the first two seconds took most of a core; a sample naming a thousand new threads
    once made every later sample search all it had read for them (5 s a sample). The start-up
    (imports, attaching, the first read that names every thread) is a run of its own taken
    off. (CPU time, not wall: a loaded machine makes pytop use less CPU, never more.) The pool
    naps 0.2-2 s: at its default naps a thousand workers keep ~300 threads runnable on this
    machine's 2 cores, pytop's sampling thread gets a three-hundredth of a core, and how many
    samples it takes in 6 s is the scheduler's to say (9 in one CI run, 1 to 21 here).
    The start-up is the run's own (the process's CPU at its first read's end, as pytop read the
    kernel's clock): another run's, with the pool beside it, was 0.27-0.46 s of CPU for imports
    and attaching alone, and put a run keeping its budget to 0.3% over the bound in CI. What a
    run costs once sampling ends (the last read, the report) is a short run's."""
    budget = 0.20
    with helpers.running(target_interp, *shape) as t:
        short_used, short = batch_cpu("--duration", "0.001", str(t.pid))
        used, report = batch_cpu("--duration", "6", "--cpu-budget", str(budget * 100), str(t.pid))
    assert report["samples"] >= 10, report["samples"]
    # The deep thread's samples are costly (10,000 frames read again whenever it ran): the budget
    # held the rate below the 1,000/s asked, at the run's end or over it (idle: 397/s held at
    # the end, 415/s over the run; with two busy loops beside, 688 and 509). Asked of the rate
    # held at the end alone, it failed on a loaded CI machine: the thread, found active in a
    # quarter of the samples, was mostly found with its stack unchanged, not read again, and the
    # rate was back to the one asked by the end.
    assert shape[0] != "deep.py" or report["rate_held"] is not None \
        or report["samples"] <= 0.9 * 1000 * report["duration"], report
    start_up, ending = report["start_up_cpu_time"], short_used - short["start_up_cpu_time"]
    assert 0 < start_up < used and 0 <= ending, (start_up, used, ending)
    assert used - start_up - ending <= 1.1 * budget * report["duration"], \
        (used, start_up, ending, report["duration"], report["samples"])
