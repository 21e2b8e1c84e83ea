"""Target: a thread that blocks in C without letting the GIL go (ctypes.PyDLL keeps it, as a C
extension blocked on a socket with the GIL held does), between stretches of Python: samples find
it holding the GIL at the sleep's line while it uses no CPU there.

- sleeper: spin() (a Python loop, about a millisecond) then hold_and_sleep() (usleep(2000),
  the GIL held)
- spinner (named as an argument; not by default): a Python loop that never sleeps, holding the
  GIL whenever the sleeper does not

Each call of the sleeper's is timed with its thread's CPU clock (self_timer.py); on SIGUSR2 the
main thread prints the log as one JSON line. Reports each thread's ids. Runs under 2.7 too."""

import ctypes
import ctypes.util
import sys
import time

from report import daemon_thread, ready, thread_info
from self_timer import LOG, enter, install_dump, leave

LIBC = ctypes.PyDLL(ctypes.util.find_library("c"))  # PyDLL: the call keeps the GIL
infos = {}


def spin():
    mark = enter()
    total = 0
    for i in range(20000):
        total += i * i % 7
    leave("spin", mark)


def hold_and_sleep():
    mark = enter()
    LIBC.usleep(2000)
    leave("hold_and_sleep", mark)


def sleeper():
    infos["sleeper"] = thread_info()
    while True:
        spin()
        hold_and_sleep()


def spinner():
    infos["spinner"] = thread_info()
    x = 0
    while True:
        x = (x + 1) % 1000


install_dump()
chosen = ["sleeper"] + [name for name in sys.argv[1:] if name == "spinner"]
for name in chosen:
    daemon_thread(sleeper if name == "sleeper" else spinner, name=name)
while len(infos) < len(chosen) or not LOG:
    time.sleep(0.01)
ready({"threads": infos})
while True:
    time.sleep(0.05)
