"""Every stack pytop reports is one the thread really had: whole, and current.

A thread that is mostly asleep and moves on between naps is shown where it is, not where it
was first read (CPython's frame-cache tests: a new line in the same frame, invalidation on call
and on return, recursion; austin's qualnames): pytop reuses a sleeping thread's stack only
while the thread has not run since. Each position holds half of its thread's wall-clock time;
the shares are judged against that half with room for a busy machine (a late sample or a late
wake-up costs either position alike), while a stack kept after the thread moved on gives one
position all of it.

Stacks that change every microsecond tear the reads that race them (CPython's and py-spy's
recursion and generator tests): a stack that does not reach its thread's first frame, or holds
frames of no stack the thread had, is read again or counted as torn, never reported."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import helpers
from pytop.native import SampleError
from pytop.process.attach import attach

TARGET = Path(__file__).parent / "targets" / "moving_sleepers.py"


def line_of(marker: str) -> int:
    return next(n for n, text in enumerate(TARGET.read_text().splitlines(), 1) if f"# {marker}" in text)


def test_sleepers_that_move_on_are_read_again(interp: dict[str, Any]) -> None:
    with helpers.running(interp, "moving_sleepers.py") as t:
        result = helpers.run_pytop("--batch", "--duration", "3", "--mode", "wall", "--by-line", "--json", str(t.pid))
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["functions"]

    def time_at(function: str, line: int | None = None) -> float:
        return sum(r["own_time"] if line is None else r["total_time"] for r in rows
                   if r["function"] == function and (line is None or r["line"] == line))

    pairs = {
        "a new line in the same frame": (time_at("same_frame", line_of("same_frame:first")),
                                         time_at("same_frame", line_of("same_frame:second"))),
        "a return and another call": (time_at("nap_a"), time_at("nap_b")),
        "recursion deeper and back": (time_at("recursion", line_of("recursion:shallow")),
                                      time_at("recursion", line_of("recursion:deep"))),
    }
    for case, (first, second) in pairs.items():
        whole = first + second
        assert whole > 1.0, (case, pairs)
        assert 0.3 < first / whole < 0.7, (case, pairs)


def test_torn_reads_are_never_reported_as_stacks(interp: dict[str, Any]) -> None:
    with helpers.running(interp, "tearing.py") as t, tempfile.NamedTemporaryFile(suffix=".txt") as out:
        result = helpers.run_pytop("--batch", "--duration", "3", "--format", "collapsed", "--output", out.name,
                                   str(t.pid))
        assert result.returncode == 0, result.stderr
        stacks = [line.rpartition(" ") for line in Path(out.name).read_text().splitlines()]
    weight = {"all": 0, "cut": 0, "spliced": 0}
    for stack, _, count in stacks:
        frames = stack.split(";")
        weight["all"] += int(count)
        # The threads' first frames: threading's Thread._bootstrap, or the main module (or one
        # of pytop's labels, which no frame is: "(stack not read: it changed under every read)").
        if not any(first in frames[0] for first in ("_bootstrap (", "<module> (")) and not frames[0].startswith("("):
            weight["cut"] += int(count)
        if sum(frame.startswith("recurse (") for frame in frames) > 40:
            weight["spliced"] += int(count)
    assert weight["all"] > 0, stacks
    # Before: 10-37% of the weight under generator or recursion frames with no callers.
    assert weight["cut"] <= 0.003 * weight["all"], (weight, [s for s, _, _ in stacks if "_bootstrap" not in s][:5])
    assert weight["spliced"] <= 0.003 * weight["all"], weight


def test_a_thread_never_has_another_threads_callers(interp: dict[str, Any]) -> None:
    """Three threads, each 2,000 frames deep through a function of its own, take turns through
    one function: before 3.11 its frame object passes from thread to thread, and a read of a
    thread's innermost frame made after the thread left it (and another thread called it)
    followed that other thread's callers: 20% of the stacks read (3.7-3.10) were another
    thread's, and with them its time on functions it never ran."""
    wanted = 1500
    with helpers.running(interp, "deep_turns.py", "2000", "3") as t:
        own = {info["native_id"]: name for name, info in t.info["threads"].items()}
        target = attach(t.pid)
        unwinder = target.unwinder
        stacks, mixed = 0, []
        deadline = time.monotonic() + 120  # a bound, not a pace: the count below is what is judged
        while stacks < wanted and time.monotonic() < deadline:
            time.sleep(0.001)
            try:
                sample = unwinder.sample()
            except SampleError:
                continue
            for thread in sample.threads:
                name = own.get(thread.native_id)
                if name is None or thread.error:
                    continue
                names = {unwinder.code(code_id).name for code_id, _ in thread.frames()}
                stacks += 1
                if name not in names or any(n.startswith("climb_") and n != name for n in names):
                    mixed.append((name, sorted(n for n in names if n.startswith("climb_"))))
        target.close()
    assert stacks >= wanted, stacks
    assert not mixed, (len(mixed), stacks, mixed[:3])


def test_blocking_reads_never_pair_a_generator_with_a_caller_past_the_call(some_interp: dict[str, Any]) -> None:
    """CPython's sampling profiler's blocking-mode test: a consumer summing what a generator
    yields, read with the threads stopped, has the generator only as the leaf, under the
    consumer's loop, never under a line of its arithmetic (read without stopping, a generator
    that yields every microsecond is often read after its caller moved on)."""
    with helpers.running(some_interp, "generator_consumer.py") as t, \
            tempfile.NamedTemporaryFile(suffix=".txt") as out:
        result = helpers.run_pytop("--blocking", "--batch", "--duration", "2", "--format", "collapsed", "--output",
                                   out.name, str(t.pid))
        assert result.returncode == 0, result.stderr
        stacks = [line.rpartition(" ") for line in Path(out.name).read_text().splitlines()]
    arithmetic = set(t.info["arithmetic_lines"])
    weight = {"all": 0, "generator": 0, "arithmetic": 0, "torn": 0}
    for stack, _, count in stacks:
        frames = stack.split(";")
        names = [frame.rsplit(" (", 1)[0] for frame in frames]
        weight["all"] += int(count)
        if "fibonacci_generator" in names:
            weight["generator"] += int(count)
            caller = frames[names.index("fibonacci_generator") - 1]
            if names[-1] != "fibonacci_generator" or int(caller.rsplit(":", 1)[1].rstrip(")")) in arithmetic:
                weight["torn"] += int(count)
        elif names[-1] == "consume_generator" and int(frames[-1].rsplit(":", 1)[1].rstrip(")")) in arithmetic:
            weight["arithmetic"] += int(count)
    assert weight["generator"] > 0 and weight["arithmetic"] > 0, weight
    assert weight["torn"] == 0, weight
