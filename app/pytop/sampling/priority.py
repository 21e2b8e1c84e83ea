"""What pytop takes from the machine it watches: its CPU budget, and its priority.

Do no harm. People open a profiler when a host is in trouble, and a profiler that competes with
the target for a CPU makes the trouble worse: with a real-time sampling thread (pytop's old
default) a threaded web app on a saturated 2-core host served half its requests. So by default
pytop runs at normal priority, skips the samples a busy machine cannot give it on time (in cpu
mode the time itself is the kernel's, so a skipped sample costs precision of a split, not
truth), and keeps its whole process within DEFAULT_CPU_BUDGET of a core by lowering its rate.

`--realtime` asks for the old behaviour: the native sampling thread takes the lowest real-time
priority itself (engine.c, given back past its own budget of a core) and the rest of pytop (the
screen) nice -10 when allowed (root or CAP_SYS_NICE). Measured here with 100 busy threads on 2
cores, 71% of 1 kHz samples came more than an interval late at normal priority, 5% at nice -20
and 1% with SCHED_FIFO: that precision is what the target pays for.
"""

from __future__ import annotations

import os

DEFAULT_CPU_BUDGET = 0.05  # share of one core pytop's process may use, sampling and screen together


def raise_process() -> bool:
    """nice -10 for the calling thread and the threads it starts afterwards."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -10)
        return True
    except (OSError, AttributeError):
        return False
