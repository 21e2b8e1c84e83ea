"""Target: a parent that starts CHILDREN (argv[2], default 3) Python children one after another,
each computing for SECONDS (argv[3], default 0.4) of its own CPU time from its first moment and
then exiting, and writes the CPU time of the whole family (its own and its reaped children's,
as the kernel counted it) to the file argv[1] before it exits."""

import os
import subprocess
import sys
import time


def child_compute(seconds):
    end = time.thread_time() + seconds
    x = 0
    while time.thread_time() < end:
        x = (x + 1) % 1000
    return x


if sys.argv[1:2] == ["child"]:
    child_compute(float(sys.argv[2]))
else:
    out, count = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3
    seconds = sys.argv[3] if len(sys.argv) > 3 else "0.4"
    for _ in range(count):
        subprocess.run([sys.executable, sys.argv[0], "child", seconds], check=True)
    times = os.times()
    with open(out, "w") as f:
        f.write(str(times.user + times.system + times.children_user + times.children_system))
