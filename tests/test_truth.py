"""Times that agree with the kernel, on real shapes of programs, on every interpreter.

The kernel counts each thread's CPU time exactly; pytop's cpu-mode figures must add up to it.
Each target runs frozen (SIGSTOP) while pytop starts, then runs for WINDOW seconds, then is
frozen again while pytop finishes: the test reads the kernel's counts itself, before and after,
so both sides cover the very same work. Shapes: a napper (a thread waking every 4 ms) beside a
bursty computing thread, a thread-per-request HTTP server with its client, and the demo; each
on an idle machine and on one whose cores another process keeps busy (both for one setup per
frame model, helpers.SOME; one or the other, in turn, for every other version: conftest.py).

Tolerances are the issue's: the table's total within 10% of the process's CPU time; each
thread's within max(10%, 0.5% of the window) of the kernel's count for it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

import helpers
import kernel
import pytop.demo
from pytop.core.model import Snapshot
from pytop.core.records import PSEUDO_FUNCTIONS, STACK_UNPLACED
from pytop.process.attach import attach
from pytop.run import info_of
from pytop.sampling.sampler import Sampler, Settings

WINDOW = 2.0
RATE = 1000.0
COMPUTING = {"is_prime", "monthly_report", "<genexpr>", "monthly_report.<locals>.<genexpr>", "price_order",
             "price_order.<locals>.<genexpr>", "parse_request", "render_response", "handle_request",
             "JSONEncoder.encode", "JSONEncoder.iterencode", "encode", "iterencode", "JSONDecoder.decode",
             "JSONDecoder.raw_decode", "decode", "raw_decode", "dumps", "loads", "cache_janitor", "request_handler"}


def measure(interp: dict[str, Any], script: str, *args: str, load: bool, rate: float = RATE,
            window: float = WINDOW) -> tuple[Snapshot, kernel.Usage, Any]:
    """pytop's final figures and the kernel's, over the same WINDOW of the target's life."""
    with helpers.running(interp, script, *args) as t:
        target = attach(t.pid)
        with kernel.frozen(t.pid):
            sampler = Sampler(target.unwinder, info_of(target),
                              Settings(rate=rate, delay=3600, quick_start=False, cpu_budget=0))
            with helpers.sampling(sampler, lambda snapshot: None):
                helpers.wait_samples(sampler, int(0.3 * rate))  # pytop's first samples, of the frozen target
                with kernel.saturated() if load else contextlib.nullcontext():
                    usage = kernel.run_for(t.pid, window)
                # The kernel's counts are final (frozen): pytop's catch up.
                helpers.wait_samples(sampler, sampler.samples_taken + int(0.3 * rate))
        final = sampler.final_snapshot()
    return final, usage, t.info


def thread_tolerance(seconds: float) -> float:
    return max(0.10 * seconds, 0.005 * WINDOW)


def check_threads_and_total(final: Snapshot, usage: kernel.Usage) -> None:
    """Every live thread's time, and the whole table's, against the kernel's counts."""
    assert final.mode == "cpu"
    assert final.attributed == pytest.approx(usage.process, rel=0.10), (final.attributed, usage.process)
    checked = 0
    for row in final.thread_rows:
        if row.alive and not row.native and row.native_id in usage.threads:
            used = usage.threads[row.native_id]
            assert row.own_time == pytest.approx(used, abs=thread_tolerance(used)), (row, used)
            checked += 1
    assert checked >= 2, (final.thread_rows[:6], usage.threads)
    # what no sample could place is each thread's own: the threads' parts make up its row
    unplaced = sum(row.own_time for row in final.rows if row.function == UNPLACED)
    assert sum(row.unplaced_time for row in final.thread_rows) == pytest.approx(unplaced, abs=0.001)
    check_rows_hold_their_cpu(final)


def check_rows_hold_their_cpu(final: Snapshot) -> None:
    """Each thread's row (folded finished ones too) says the CPU its stacks were given, and the
    rows add up to the table: a thread's CPU is on that thread's row and stacks alone. (The CPU
    of threads that ended in a period, given them at its close, once reached their stacks but
    no row: on a thread-per-request server the rows summed to 88% of the table.)"""
    wrong = [(row.label, row.cpu_time, row.own_time) for row in final.thread_rows
             if abs(row.cpu_time - row.own_time) > 0.001]
    assert not wrong, wrong[:8]
    assert sum(row.own_time for row in final.thread_rows) == pytest.approx(final.attributed, abs=0.002)


def test_napper_beside_a_bursty_thread(interp: dict[str, Any], saturated: bool) -> None:
    final, usage, info = measure(interp, "napper.py", load=saturated)
    check_threads_and_total(final, usage)
    rows = {row.native_id: row for row in final.thread_rows}
    napper, bursty = (rows[info["threads"][name]["native_id"]] for name in ("napper", "bursty"))
    assert napper.name == "napper" and bursty.name == "bursty"
    # The napper wakes 500 times in the window and uses little CPU: sampling instants that fall on
    # its wake-ups made it look busy (5-10x the kernel's count). Its own figure, explicitly:
    used = usage.threads[napper.native_id]
    assert napper.own_time == pytest.approx(used, abs=thread_tolerance(used))
    assert usage.threads[bursty.native_id] > 0.05  # the bursty thread did run


# Beside other tests' targets (a load in bursts) 3.8 once showed a second "acceptor" row (1 run
# in 3): a new thread's state still carrying its creator's ids (3.8-3.10), seen in a sample
# without the creator beside it, was taken for a thread (tracking.c now knows the creator from
# the samples before).
def test_thread_per_request_server(interp: dict[str, Any], saturated: bool) -> None:
    final, usage, _ = measure(interp, "server.py", load=saturated)
    check_threads_and_total(final, usage)
    # However many samples a busy machine or the CPU budget allowed, never more than asked.
    span = final.sampled_until - final.sampled_from
    assert (final.samples - 1) / span <= 1.001 * RATE, (final.samples, span)
    threads = [row for row in final.thread_rows if not row.native and not row.folded]
    # A thread seen only between its thread state's start and its first Python frame, or after
    # its last one, or whose Thread was freed while its name was read, cannot be named: a busy
    # machine stretches those moments (1-17% of the request threads in saturated runs, a 1-2 ms
    # life each). A name read is never a guess: every one is checked below.
    assert sum(1 for row in threads if row.name) >= 0.80 * len(threads), [row.name for row in threads]
    assert all(row.thread_id and row.native_id for row in threads), [
        row for row in threads if not (row.thread_id and row.native_id)]
    assert [row.name for row in threads].count("MainThread") == 1
    # Request threads: "Thread-N", with " (process_request_thread)" from 3.10 on; every named
    # thread but the three long-lived ones is one. How many a sample catches alive depends on
    # how fast a loaded machine serves them (19 in a saturated CI run, hundreds when quiet):
    # enough to show they came and went, not a throughput.
    named = [row.name for row in threads if row.name]
    handlers = [name for name in named if name.startswith("Thread-")]
    assert len(handlers) == len(named) - 3, [name for name in named if not name.startswith("Thread-")]
    assert len(handlers) >= 5, named
    # Each request thread's name on its row alone: glibc gives the next thread an ended one's
    # pthread_t, which is the Python thread id, and a thread seen in its last moments (its
    # Thread gone from the registry) was named after its successor under that id (1 run in 3
    # of 10 s on 3.7 and 3.8).
    twice = [name for name in set(handlers) if handlers.count(name) > 1]
    assert not twice, [(row.name, row.thread_id, row.native_id, row.top_frame) for row in threads if row.name in twice]


def test_the_demo_shows_work_first(interp: dict[str, Any], saturated: bool) -> None:
    demo = helpers.stage_file(interp, Path(pytop.demo.__file__))
    final, usage, _ = measure(interp, "demo_target.py", demo, load=saturated)
    check_threads_and_total(final, usage)
    top = sorted(final.rows, key=lambda row: -row.own_time)[:3]
    assert {row.function for row in top} <= COMPUTING, [(row.function, row.own_time) for row in top]


UNPLACED = PSEUDO_FUNCTIONS[STACK_UNPLACED]


def check_unseen(final: Snapshot, burst_share: float) -> None:
    """A pool's CPU: on burst() where samples saw each thread compute, else unplaced, shown as
    each thread's own; never on the call the threads nap in (it took 45% there once), nor on
    another thread's function: a thread no sample saw computing has nothing to place it by."""
    own = {row.function: row.own_time for row in final.rows}
    top = sorted(own.items(), key=lambda kv: -kv[1])[:5]
    assert own.get("worker", 0.0) <= 0.15 * final.attributed, top
    # (quiet: 98-100%; on a machine loaded many times over, a woken thread holding the GIL at the
    # call it napped in waits there for a CPU, and 8-10% went to `worker`, within the bound above)
    assert own.get("burst", 0.0) + own.get(UNPLACED, 0.0) + own.get("Random.uniform", 0.0) \
        + own.get("uniform", 0.0) >= 0.80 * final.attributed, top
    assert own.get("burst", 0.0) >= burst_share * final.attributed, top
    by_threads = sum(row.unplaced_time for row in final.thread_rows)
    assert by_threads == pytest.approx(own.get(UNPLACED, 0.0), abs=0.001), (by_threads, top)


def test_a_pool_of_short_bursts_at_a_low_rate(some_interp: dict[str, Any], saturated: bool) -> None:
    """64 threads nap, then compute for 1 ms: at 50 samples/s (a CPU budget's rate) few bursts
    are seen. Each thread's CPU goes where samples saw that thread compute, held up to 2 s until
    one does: each thread is seen computing about once in two seconds, so 30-65% of the CPU
    stays unseen."""
    final, usage, _ = measure(some_interp, "bursty_pool.py", load=saturated, rate=50.0, window=4.0)
    assert final.attributed == pytest.approx(usage.process, rel=0.10), (final.attributed, usage.process)
    check_unseen(final, 0.25)


def test_a_large_pool_whose_stacks_are_read_a_few_at_a_time(some_interp: dict[str, Any], saturated: bool) -> None:
    """300 threads waking ~9 times a second each, at 20 samples/s: far more threads move between
    two samples than a sample reads again (16), so most hand their counts back and are read by
    a later sample. Nothing is lost or counted twice: every thread's time, and the whole,
    against the kernel's. (Over 2 s, 40 samples, burst() had 4.6-8.7% of the CPU saturated and
    once fell under the bound in CI; over 4 s, 10-13%.)"""
    final, usage, _ = measure(some_interp, "bursty_pool.py", "300", load=saturated, rate=20.0, window=4.0)
    check_threads_and_total(final, usage)
    check_unseen(final, 0.05)  # 80 samples for 300 threads: most are never seen computing
