"""Target: a napper, a thread that wakes every 4 ms for a few microseconds of work, beside a
bursty thread that computes for 20-60 ms at a time with 50-200 ms pauses. Both run for SECONDS
(argv[1], default 1e6) after they start, then stop and idle; with `gated` as argv[2] they start
on SIGUSR1. Reports the TIDs at once, and `{"done": true}` when both have stopped."""

import math
import random
import signal
import sys
import threading
import time

from report import ready, thread_info

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 1e6
GATED = sys.argv[2:3] == ["gated"]
go = threading.Event()
infos = {}


def napper(end_event):
    infos["napper"] = thread_info()
    go.wait()
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        sum(range(50))
        time.sleep(0.004)
    end_event.set()


def crunch(seconds):
    end = time.monotonic() + seconds
    x = 0.0
    while time.monotonic() < end:
        x += math.sqrt(x + 1.0)
    return x


def bursty(end_event):
    infos["bursty"] = thread_info()
    go.wait()
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        crunch(random.uniform(0.02, 0.06))
        time.sleep(random.uniform(0.05, 0.2))
    end_event.set()


signal.signal(signal.SIGUSR1, lambda *_: go.set())
stopped = [threading.Event(), threading.Event()]
threading.Thread(target=napper, args=(stopped[0],), name="napper", daemon=True).start()
threading.Thread(target=bursty, args=(stopped[1],), name="bursty", daemon=True).start()
while len(infos) < 2:
    time.sleep(0.001)
infos["main"] = thread_info()
ready({"threads": infos, "version": list(sys.version_info[:3])})
if not GATED:
    go.set()
for event in stopped:
    event.wait()
ready({"done": True})
while True:
    time.sleep(1e6)
