"""Target: code objects that die young, as a module body, a .pth line or an exec'd string do.

Round after round, a new function `work_<n>` is compiled from a string, runs for WORK seconds of
CPU and is dropped with its code objects; the next round's objects are allocated where the last
ones were. A profiler that names frames by a cached address must notice the new object.
"""

import time

from report import ready

# Longer than the stalls of a saturated machine's sampler (0.1 s), so that none hides a round
# whole (see the test). Up to 0.12 s a round, 3.11's objects still come back at one address.
WORK = 0.12
SOURCE = """
def work_{n}():
    start = time.process_time()
    while time.process_time() - start < {work}:
        pass
work_{n}()
"""

ready({"work": WORK})
n = 0
while True:
    exec(compile(SOURCE.format(n=n, work=WORK), "<generated>", "exec"), {"time": time})
    n += 1
