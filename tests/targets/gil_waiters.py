"""Target: a thread blocked for good on a lock (a futex too, not the GIL's), then two threads
that spin in Python, so that one of them waits to take the GIL at almost any moment. Reports
each thread's ids. Runs under 2.7 too."""

import threading
import time

from report import daemon_thread, ready, thread_info

infos = {}
held = threading.Lock()
held.acquire()


def locked():
    infos["locked"] = thread_info()
    held.acquire()  # blocks for good, before any thread spins


def spin(name):
    infos[name] = thread_info()
    x = 0
    while True:
        x = (x + 1) % 1000


daemon_thread(locked, name="locked")
while "locked" not in infos:
    time.sleep(0.001)
time.sleep(0.1)  # it has blocked
for name in ("spinner-1", "spinner-2"):
    daemon_thread(spin, name=name, args=(name,))
while len(infos) < 3:
    time.sleep(0.001)
ready({"threads": infos})
while True:
    time.sleep(1)
