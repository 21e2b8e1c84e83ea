"""Target: threads (argv[1], default 2) recursing on a random walk over 24 rules, each its own
code object (rule_00 .. rule_23, as a recursive-descent parser's are), 300 to 3,000 frames
deep, a little work at each level and more at the bottom, then unwinding and starting again.
Below its first frames every stack is new: pytop's stack tree soon passes its bound on memory
(past it, stacks are kept coarse: their time is never moved into a catch-all row).

Timed with the thread's CPU clock and logged as self_timer.py logs (SIGUSR2 prints the log):
descend() (a whole walk down and back) and bottom() (the work at the bottom, all its own).
Runs under 2.7 too.
"""

import random
import sys
import threading
import time

from report import daemon_thread, ready
from self_timer import LOG, enter, install_dump, leave

THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 2
COUNT = 24
sys.setrecursionlimit(10000)
threading.stack_size(256 << 20)


def spin(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def bottom():
    mark = enter()
    total = 0
    for i in range(200000):  # here, not in a callee: all of it is bottom's own time (~10 ms: see self_timed.py)
        total += i * i
    leave("bottom", mark)


RULE = """
def rule_{0:02d}(depth, rng):
    spin(20)
    if depth <= 0:
        return bottom()
    return RULES[rng.randrange(COUNT)](depth - 1, rng)
"""
for number in range(COUNT):
    exec(compile(RULE.format(number), __file__, "exec"))
RULES = [globals()["rule_{0:02d}".format(number)] for number in range(COUNT)]


def descend(rng):
    mark = enter()
    RULES[0](rng.randint(300, 3000), rng)
    leave("descend", mark)


def walker(seed):
    rng = random.Random(seed)
    while True:
        descend(rng)


install_dump()
for k in range(THREADS):
    daemon_thread(walker, name="walker-{0}".format(k), args=(k,))
while len(set(entry[1] for entry in list(LOG))) < THREADS:
    time.sleep(0.01)  # every thread at work
ready({"threads": [thread.name for thread in threading.enumerate()], "version": list(sys.version_info[:3])})
# Short naps: a signal the kernel gives another thread (one still waking from a SIGSTOP) runs
# its Python handler only when the main thread wakes.
while True:
    time.sleep(0.05)
