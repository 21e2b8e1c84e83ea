"""Target: a thread that keeps switching between two functions, sleeping 5 ms in each, so
every few samples its stack changes while it is mostly idle."""

import sys
import threading
import time

from report import ready, thread_info


def phase_a():
    time.sleep(0.005)


def phase_b():
    time.sleep(0.005)


def alternate():
    while True:
        phase_a()
        phase_b()


thread = threading.Thread(target=alternate, name="alternating", daemon=True)
thread.start()
time.sleep(0.05)
ready({"threads": {"main": thread_info(sys._getframe())}, "alternating": thread.ident})
time.sleep(1e6)
