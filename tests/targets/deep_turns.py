"""Target: THREADS threads (argv[2], default 2) each recurse DEPTH frames deep (argv[1], default
3000) through a function of its own (climb_0, climb_1, ...), then stay there, taking turns:
each computes for about a millisecond in the same function, compute(), and naps a millisecond,
for ever. Their outer frames never change, and the thread a sample finds running is seldom the
one the sample before found. Before 3.11 compute()'s frame object is one spare frame that passes
from thread to thread: a read of one thread's stack that follows it after the thread has left
it walks into another thread's stack."""

import sys
import threading
import time

from report import daemon_thread, ready, thread_info

DEPTH = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
THREADS = int(sys.argv[2]) if len(sys.argv) > 2 else 2
sys.setrecursionlimit(DEPTH + 1000)
# Before 3.11 every Python call also nests in C: give the threads room for it.
threading.stack_size(256 << 20)
ready_lock = threading.Condition()


def compute():
    total = 0
    for i in range(20000):  # about a millisecond (2.7 and 3.6 have no thread_time to time it)
        total += i
    return total


infos = {}


def bottom():
    with ready_lock:
        infos[threading.current_thread().name] = thread_info()
        ready_lock.notify()
    while True:
        compute()
        time.sleep(0.001)


def make_climb(name):
    """A function of its own code object, named `name` (2.7 has no code.replace)."""
    space = {"bottom": bottom}
    exec("def {0}(n):\n    if n > 0:\n        return {0}(n - 1)\n    return bottom()\n".format(name), space)
    return space[name]


names = ["climb_{0}".format(i) for i in range(THREADS)]
for name in names:
    daemon_thread(make_climb(name), name, (DEPTH,))
with ready_lock:
    while len(infos) < THREADS:
        ready_lock.wait(1)
ready({"threads": infos, "depth": DEPTH})
time.sleep(1e6)
