"""Past the stack tree's bound on memory, no time leaves its function.

A deep random recursion (targets/deep_random.py: 24 rules, each its own code object, 300 to
3,000 frames deep) makes every stack new below its first frames: with the tree bounded at 5,000
nodes (its default is 32,768, and room for the deepest stack), it passes its bound within a few
descents, however slow the machine. Such stacks are kept coarse (the set of their frames and
their innermost frame): each function's own and total time stay whole, checked against the
target's own clock (its descents and the work at their bottom time themselves), and no row of
the table is a catch-all for what did not fit (before, most of these stacks went to a row named
"(stacks past pytop's memory bound)").
"""

from __future__ import annotations

from typing import Any

import helpers
import kernel
import self_timing
from pytop.core.function_sums import FOLDED
from pytop.core.records import PSEUDO_FUNCTIONS, STACK_OVERFLOW
from pytop.process.attach import attach
from pytop.run import info_of
from pytop.sampling.sampler import Sampler, Settings

WINDOW = 4.0


def test_a_deep_random_recursion_loses_no_time_to_the_memory_bound(some_interp: dict[str, Any]) -> None:
    with helpers.running(some_interp, "deep_random.py") as t:
        target = attach(t.pid)
        with kernel.frozen(t.pid):
            sampler = Sampler(target.unwinder, info_of(target),
                              Settings(rate=100, delay=3600, quick_start=False, cpu_budget=0, max_stack_nodes=5000))
            with helpers.sampling(sampler, lambda snapshot: None):
                helpers.wait_samples(sampler, 10)  # pytop's first samples, of the frozen target
                window = self_timing.run_window(t.pid, WINDOW)
                helpers.wait_samples(sampler, sampler.samples_taken + 10)  # the kernel's counts are final
        final = sampler.final_snapshot()
        log = self_timing.read_log(t)
    true_own, true_total = self_timing.inside(log, window)
    own, total = self_timing.pytop_figures(final.rows)
    catch_all = {PSEUDO_FUNCTIONS[STACK_OVERFLOW], FOLDED[0]}
    assert not [row for row in final.rows if row.function in catch_all], final.rows[:5]
    assert final.run.stacks_dropped == 0
    for name, seen, expected in (("bottom own", own.get("bottom", 0.0), true_own["bottom"]),
                                 ("descend total", total.get("descend", 0.0), true_total["descend"])):
        assert abs(seen - expected) <= max(0.15 * expected, 0.15), (name, seen, expected)
    # Every rule's total is within the threads' time.
    rules = {name: seconds for name, seconds in total.items() if name.startswith("rule_")}
    assert len(rules) == 24 and max(rules.values()) <= final.attributed + 1e-6, rules
    assert final.run.stacks_coarsened > 0, "the tree never passed its bound: the shape was not tested"
