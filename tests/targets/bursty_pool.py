"""Target: a pool of COUNT threads (argv[1], default 64) that nap NAP/10 to NAP seconds (argv[2],
default 0.2), then compute for a millisecond of their own CPU time in burst(): all of their CPU
goes to burst(), none to the nap. (A thousand at the default naps keep 2 cores saturated: ~300
threads runnable at once.)"""

import random
import sys
import threading
import time

from report import ready

COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 64
NAP = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2


def burst():
    end = time.thread_time() + 0.001
    total = 0.0
    while time.thread_time() < end:
        total += random.random()
    return total


# The workers start their work together, once all have started: started one by one while the
# earlier ones already competed for the GIL, 300 of them took over a minute on a loaded machine.
go = threading.Event()


def worker():
    go.wait()
    while True:
        time.sleep(random.uniform(NAP / 10, NAP))
        burst()


for _ in range(COUNT):
    threading.Thread(target=worker, daemon=True).start()
go.set()
ready({"threads": COUNT})
while True:
    time.sleep(3600)
