"""Each function's time against its own clock: a thread's CPU goes to that thread's own stacks.

pytop's totals agree with the kernel's (test_truth.py); here the split among functions does too,
with more threads wanting a CPU than there are cores. The target's functions time themselves
with their thread's CPU clock (targets/self_timed.py: a thread compressing in zlib and one
hashing with pbkdf2, both letting the GIL go; a pure Python loop; two request workers whose
steps are wrapped by a decorator that does nothing; a napper), and each function's own and
total time in pytop's table must agree with what it measured over the same window: within 15%
or 0.15 s. The decorator's wrapper, which does nothing, stays under 2% of the time. Every
interpreter from 2.7 to 3.15 runs it; one setup per frame model idle and saturated, at the
default rate and at 100/s, with --blocking, in --batch and in the live view.

A thread in C code without the GIL is running wherever its stack is, whatever share of a core
the machine gives it; CPU that no sample saw a thread use is never handed to another thread's
function (it once was: the compressor's CPU went to the Python loop of another thread).

The demo's shape (targets/self_timed_service.py) is held to its clocks too: request handlers
that nap in one request in ten, beside a reporting loop, more threads wanting the GIL than
there are cores. A handler found napping at two samples ran whole requests between them; their
CPU once went to the nap (0.12 s shown of a function whose clock said 0.01 s, 8% of the
process's CPU, at 100 samples a second).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from typing import Any

import pytest

import helpers
import kernel
import self_timing
from pytop.process.attach import attach
from pytop.run import info_of
from pytop.sampling.sampler import Sampler, Settings

WINDOW = 2.0
TIMED = ("compress_block", "sign_payload", "spin_python", "query_orders", "encode_orders", "handle_request",
         "wrapper")
OWN_WHOLE = ("compress_block", "spin_python", "query_orders", "encode_orders")  # only C below them


def threads_said(snapshot: Any) -> list[str]:
    """Each thread's figures, for a failure's message: where a function's missing time went."""
    return [f"{t.name or t.native_id}: cpu {t.cpu_time:.3f} own {t.own_time:.3f} unplaced {t.unplaced_time:.3f} "
            f"wait {t.wait_time:.3f} samples {t.samples} errors {t.errors}" for t in snapshot.thread_rows]


def check(own: dict[str, float], total: dict[str, float], info: dict[str, Any], attributed: float,
          truth: tuple[dict[str, float], dict[str, float]], threads: list[str] | None = None) -> None:
    true_own, true_total = truth
    assert true_total.get("compress_block", 0) > 0.05 and true_total.get("handle_request", 0) > 0.05, truth

    def near(seen: float, expected: float) -> bool:
        return abs(seen - expected) <= max(0.15 * expected, 0.15)

    wrong = []
    for name in TIMED:
        if not near(total.get(name, 0.0), true_total.get(name, 0.0)):
            wrong.append(f"{name} total {total.get(name, 0.0):.3f} s, its clock {true_total.get(name, 0.0):.3f} s")
    whole = OWN_WHOLE + tuple(name for name, is_whole in info["own_is_whole"].items() if is_whole)
    for name in whole:
        if not near(own.get(name, 0.0), true_own.get(name, 0.0)):
            wrong.append(f"{name} own {own.get(name, 0.0):.3f} s, its clock {true_own.get(name, 0.0):.3f} s")
    assert not wrong, said(wrong, own, total, threads)
    assert own.get("wrapper", 0.0) <= 0.02 * attributed, said(["wrapper"], own, total, threads)


def said(wrong: list[str], own: dict[str, float], total: dict[str, float], threads: list[str] | None = None) -> str:
    """A failure's message whole: pytest cuts the repr of anything but a string to a line, and
    CI's run shows only that (where a function's missing time went was cut off)."""
    rows = [f"{name}: own {seconds:.3f} total {total.get(name, 0.0):.3f}"
            for name, seconds in sorted(own.items(), key=lambda kv: -kv[1])[:16]]
    return "\n".join(["; ".join(wrong), "pytop's rows:", *rows, "threads:", *(threads or [])])


def sampled(interp: dict[str, Any], settings: Settings, load: bool) -> None:
    """The sampler over a frozen window of the target (as test_truth.measure), checked."""
    final, window, log, info = sampled_window(interp, "self_timed.py", settings, load)
    assert final.attributed == pytest.approx(window.process, rel=0.10), (final.attributed, window.process)
    check(*self_timing.pytop_figures(final.rows), info, final.attributed, self_timing.inside(log, window),
          threads_said(final))


def sampled_window(interp: dict[str, Any], script: str, settings: Settings, load: bool, *args: str,
                   seconds: float = WINDOW) -> tuple[Any, self_timing.Window, list[list[Any]], dict[str, Any]]:
    """pytop's final snapshot of a frozen window of the target's life, the window, the target's
    log and its readiness line."""
    with helpers.running(interp, script, *args) as t:
        target = attach(t.pid)
        with kernel.frozen(t.pid):
            sampler = Sampler(target.unwinder, info_of(target), settings)
            with helpers.sampling(sampler, lambda snapshot: None):
                helpers.wait_samples(sampler, 30)  # pytop's first samples, of the frozen target
                with kernel.saturated() if load else contextlib.nullcontext():
                    window = self_timing.run_window(t.pid, seconds)
                helpers.wait_samples(sampler, sampler.samples_taken + 30)  # the kernel's counts are final
        final = sampler.final_snapshot()
        log = self_timing.read_log(t)
    return final, window, log, t.info


# (machine saturated, rate): idle at the default rate, saturated at 100/s, and the other two.
CORNERS = [(False, 1000.0), (True, 100.0), (True, 1000.0), (False, 100.0)]
CORNER_IDS = ["idle-default-rate", "saturated-100", "saturated-default-rate", "idle-100"]


@pytest.mark.load_by_turn
def test_each_function_against_its_own_clock(interp: dict[str, Any]) -> None:
    """Every interpreter, in one of the two main corners in turn (the setups of one frame model
    each, in SOME, run all four below): what differs between versions is how frames, the GIL
    and thread states are read, which every corner exercises alike."""
    if interp["name"] in helpers.SOME:
        pytest.skip("in every corner below")
    load, rate = CORNERS[helpers.saturated_by_turn(interp["name"])]
    sampled(interp, Settings(rate=rate, delay=3600, quick_start=False, cpu_budget=0), load)


@pytest.mark.parametrize("load, rate", CORNERS, ids=CORNER_IDS)
def test_every_corner(some_interp: dict[str, Any], load: bool, rate: float) -> None:
    sampled(some_interp, Settings(rate=rate, delay=3600, quick_start=False, cpu_budget=0), load)


# Checked: the whole request, the reporting loop, and the nap. The request's steps are timed but
# not held to 15%: their calls last 0.05-0.5 ms, and samples find the threads at the clock reads
# that time them (system calls, where the kernel preempts a thread when the sampler needs its
# core; py-spy finds `leave` in 16% of its samples too, 3% when it runs on another core), which
# moves a part of each step's time to the next step's call to `leave`.
SERVICE_TIMED = ("handle_request", "monthly_report")
NAP = "query_database"  # its clock: the wake-ups and the GIL taken back, microseconds a call
SERVICE_WINDOW = 4.0  # 400 samples: calls of a fraction of a millisecond, found at random
# Of the process's CPU, over the nap's own clock (about 1%). The defect put 2-9% there (2.25% or
# more on 11 of the 13 setups measured); fixed, -1% to +0.3% on 3.6-3.15, and up to 1.9% on
# 2.7 with the machine loaded (its GIL is a plain lock that a thread woken from its nap races
# the others for; its clock is read through ctypes: Python frames, shown with 40% of the CPU).
# With four more processes spinning beside the test's own two, the nap's runs (found there
# waiting for a CPU, or holding the GIL preempted) still drew 0.9-2.9% on 3.8 until they were
# remembered by the CPU they were given, not their time: now -1.0% to +1.0% on 3.8 and 3.14.
NAP_MAX_SHARE = 0.025


# Alone: its turn's load is the one it sets.
@pytest.mark.alone
@pytest.mark.load_by_turn
def test_a_service_whose_handlers_nap(interp: dict[str, Any]) -> None:
    """The demo's shape, with its orders of 300 items (calls of a fraction of a millisecond: many
    requests between two samples), at 100/s; idle or saturated in turn by interpreter."""
    load = helpers.saturated_by_turn(interp["name"])
    settings = Settings(rate=100.0, delay=3600, quick_start=False, cpu_budget=0)
    final, window, log, _ = sampled_window(interp, "self_timed_service.py", settings, load, "300",
                                           seconds=SERVICE_WINDOW)
    assert final.attributed == pytest.approx(window.process, rel=0.10), (final.attributed, window.process)
    own, total = self_timing.pytop_figures(final.rows)
    true_own, true_total = self_timing.inside(log, window)
    assert all(true_total.get(name, 0) > 0.01 for name in SERVICE_TIMED), true_total
    wrong = [f"{name} total {total.get(name, 0.0):.3f} s, its clock {true_total[name]:.3f} s"
             for name in SERVICE_TIMED
             if abs(total.get(name, 0.0) - true_total[name]) > max(0.15 * true_total[name], 0.15)]
    assert not wrong, said(wrong, own, total, threads_said(final))
    nap_over = total.get(NAP, 0.0) - true_total.get(NAP, 0.0)
    assert nap_over <= NAP_MAX_SHARE * final.attributed, said(
        [f"{NAP} total {total.get(NAP, 0.0):.3f} s, its clock {true_total.get(NAP, 0.0):.3f} s, "
         f"of {final.attributed:.3f} s"], own, total, threads_said(final))


HASH_SHARE = 0.25  # of the hasher's own clock


# Alone: beside other tests' targets the hasher waits for a core as well as for the GIL, and is
# seen hashing in two samples in a row more often (the defect failed 0 of 9 runs there; alone,
# 4 of 15).
@pytest.mark.alone
def test_a_hasher_starved_of_the_gil(some_interp: dict[str, Any]) -> None:
    """A thread that hashes in C without the GIL for a few milliseconds, then waits far longer to
    take the GIL back from three Python loops (idle machine, 100/s): samples find it waiting at
    the hash's line, now and then hashing there, and once in a while holding the GIL in the
    calls it makes between two hashes. Its hashing, which no two samples in a row see, once went
    like those rare glimpses of the calls between (`leave`, microseconds a call): 5 runs in 6
    showed sign_payload 30-50% under its clock (in a script, run after run), then 0-22%, now 0-1%
    (10 runs on 3.15; up to 14% under with a busy loop beside it): those glimpses weigh among the
    thread's runs no more than the CPU their intervals used, not half their time."""
    settings = Settings(rate=100.0, delay=3600, quick_start=False, cpu_budget=0)
    final, window, log, info = sampled_window(some_interp, "self_timed.py", settings, False, "signer", "pyloop",
                                              "worker")
    own, total = self_timing.pytop_figures(final.rows)
    true_own, _ = self_timing.inside(log, window)
    expected = true_own["sign_payload"]
    assert expected > 0.05, true_own
    if not info["own_is_whole"]["sign_payload"]:
        pytest.skip("pbkdf2_hmac is Python here: the hasher holds the GIL")
    seen = own.get("sign_payload", 0.0)
    assert abs(seen - expected) <= HASH_SHARE * expected, said(
        [f"sign_payload own {seen:.3f} s, its clock {expected:.3f} s"], own, total, threads_said(final))


ASLEEP_SHARE = 0.25  # of the sleeper's CPU, at most, on a sleep whose clock says ~2%


@pytest.mark.parametrize("rate", [1000.0, 100.0])
def test_a_sleep_that_keeps_the_gil_is_not_where_the_cpu_went(some_interp: dict[str, Any], rate: float) -> None:
    """A loop that computes in Python, then sleeps in C without letting the GIL go (ctypes.PyDLL's
    usleep; a C extension blocked on a socket with the GIL held looks the same): samples find it
    holding the GIL at the sleep's line most of the time. As runs, those samples took 55-79% of
    the thread's CPU to the sleep, whose own clock says 2%: the holder's letter is now read with
    it, a holder asleep is not running, nor one found awake where it was lately found asleep
    holding the GIL (waking there, or about to sleep: as glimpses, those took the CPU of whole
    turns of the loop, 20% of it at 1 kHz). Now 1-3% at 1 kHz, 1-20% at 100/s (the thread's
    first sightings at the sleep, before it was found asleep there, stay among its runs)."""
    settings = Settings(rate=rate, delay=3600, quick_start=False, cpu_budget=0)
    final, window, log, _ = sampled_window(some_interp, "gil_sleeper.py", settings, False)
    own, total = self_timing.pytop_figures(final.rows)
    true_own, _ = self_timing.inside(log, window)
    used = true_own["spin"] + true_own["hold_and_sleep"]
    assert used > 0.2 and true_own["hold_and_sleep"] < 0.05 * used, true_own
    assert own.get("hold_and_sleep", 0.0) <= ASLEEP_SHARE * used, said(
        [f"hold_and_sleep own {own.get('hold_and_sleep', 0.0):.3f} s of the sleeper's {used:.3f} s, its clock "
         f"{true_own['hold_and_sleep']:.3f} s"], own, total, threads_said(final))


def test_blocking(some_interp: dict[str, Any]) -> None:
    """--blocking, the machine saturated: the threads stopped while each sample reads them."""
    sampled(some_interp, Settings(rate=100.0, delay=3600, quick_start=False, cpu_budget=0, blocking=True), True)


def test_batch(some_interp: dict[str, Any]) -> None:
    """`pytop --batch --json` as a user runs it, at its defaults (the CPU budget on), ended by
    Ctrl-C once the window has passed; the machine saturated."""
    with helpers.running(some_interp, "self_timed.py") as t:
        with kernel.frozen(t.pid):
            pytop = subprocess.Popen([*helpers.PYTOP, "--batch", "--duration", "inf", "--json", str(t.pid)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                helpers.sampling_started(pytop.pid)
                time.sleep(0.5)  # its first samples, of the frozen target
                with kernel.saturated():
                    window = self_timing.run_window(t.pid, WINDOW)
                time.sleep(0.5)  # the kernel's counts are final: pytop's catch up
                pytop.send_signal(signal.SIGINT)
                out, err = pytop.communicate(timeout=120)
            finally:
                if pytop.poll() is None:
                    pytop.kill()
        log = self_timing.read_log(t)
    assert pytop.returncode == 0, err
    report = json.loads(out)
    assert report["attributed_time"] == pytest.approx(window.process, rel=0.10), (report["attributed_time"], window)
    check(*self_timing.pytop_figures(report["functions"]), t.info, report["attributed_time"],
          self_timing.inside(log, window))


async def test_live(some_interp: dict[str, Any]) -> None:
    """The live view, at its defaults (the CPU budget on, a refresh a second), the machine
    saturated: the same sampler, drained by the app."""
    from pytop.ui.app import PytopApp

    with helpers.running(some_interp, "self_timed.py") as t:
        target = attach(t.pid)
        with kernel.frozen(t.pid):
            sampler = Sampler(target.unwinder, info_of(target), Settings())
            app = PytopApp(sampler)
            async with app.run_test(size=(120, 30)) as pilot:
                while sampler.samples_taken < 30:
                    await pilot.pause(0.05)
                with kernel.saturated():
                    window = await _run_window_async(pilot, t.pid)
                await pilot.pause(0.5)  # the kernel's counts are final: pytop's catch up
            final = sampler.final_snapshot()
        log = self_timing.read_log(t)
    assert final.attributed == pytest.approx(window.process, rel=0.10), (final.attributed, window.process)
    check(*self_timing.pytop_figures(final.rows), t.info, final.attributed, self_timing.inside(log, window))


async def _run_window_async(pilot: Any, pid: int) -> self_timing.Window:
    """run_window, with the app's loop running meanwhile."""
    before = kernel.read(pid)
    os.kill(pid, signal.SIGCONT)
    await pilot.pause(WINDOW)
    os.kill(pid, signal.SIGSTOP)
    kernel.all_stopped(pid)
    after = kernel.read(pid)
    return self_timing.Window(before[1], after[1], after[0] - before[0])
