"""Target: a thread that keeps switching between two functions, sleeping 5 ms in each, so
every few samples its stack changes while it is mostly idle."""

import sys
import time

from report import Collector, daemon_thread


def phase_a():
    time.sleep(0.005)


def phase_b():
    time.sleep(0.005)


def alternate():
    while True:
        phase_a()
        phase_b()


thread = daemon_thread(alternate, "alternating")
time.sleep(0.05)
Collector(["main"], extra={"alternating": thread.ident}).add("main", sys._getframe()) or time.sleep(1e6)
