"""Target: threads that are mostly asleep and move on between naps, as CPython's frame-cache
tests and austin's do: one moves to the next line of the same frame (on 3.11+ the same frame
pointer), one returns and calls another function (a new frame where the old one was), one
recurses deeper and comes back. Each nap is NAP seconds, so every position holds half of its
thread's time. A stack read once and kept while the thread moves on shows one position only."""

import sys
import threading
import time

from report import ready, thread_info

NAP = float(sys.argv[1]) if len(sys.argv) > 1 else 0.03


def same_frame():
    while True:
        time.sleep(NAP)  # same_frame:first
        time.sleep(NAP)  # same_frame:second


def nap_a():
    time.sleep(NAP)


def nap_b():
    time.sleep(NAP)


def call_and_return():
    while True:
        nap_a()
        nap_b()


def descend(depth):
    if depth:
        return descend(depth - 1)
    time.sleep(NAP)


def recursion():
    while True:
        descend(0)  # recursion:shallow
        descend(3)  # recursion:deep


threads = [threading.Thread(target=f, name=f.__name__, daemon=True) for f in (same_frame, call_and_return, recursion)]
for t in threads:
    t.start()
ready({"main": thread_info()})
time.sleep(1e6)
