"""Target: one thread recursing DEPTH (argv[1], default 10000) frames deep, then sleeping; or,
with "spin" (argv[2]), computing there for ever, holding the GIL: each sample reads it all."""

import sys
import threading
import time

from report import Collector, daemon_thread, frames_of

DEPTH = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
SPIN = sys.argv[2:3] == ["spin"]
sys.setrecursionlimit(DEPTH + 1000)
# Before 3.11 every Python call also nests in C: give the thread room for it.
threading.stack_size(512 << 20)


collector = Collector(["deep"], busy=["deep"] if SPIN else [])


def recurse(n):
    if n > 1:
        return recurse(n - 1)
    collector.extra["depth"] = len(frames_of(sys._getframe()))
    if SPIN:
        collector.add("deep", sys._getframe())
        x = 0
        while True:
            x = (x + 1) % 1000
    collector.add("deep", sys._getframe()) or time.sleep(1e6)


def main():
    daemon_thread(recurse, "deep", (DEPTH,)).join()


main()
