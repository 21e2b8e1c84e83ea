"""Target: COUNT (argv[1], default 60) threads asleep, and a `hasher` thread that hashes a
4 MiB buffer over and over: hashlib lets the GIL go while it hashes, so nearly all of that
thread's CPU time is spent without the GIL. Reports once every thread is in place."""

import hashlib
import sys
import threading
import time

from report import Collector

COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 60
names = [f"sleeper-{i}" for i in range(COUNT)]
collector = Collector(names + ["hasher", "main"], busy=["hasher"])
DATA = b"x" * (4 << 20)


def nap(name):
    collector.add(name, sys._getframe()) or time.sleep(1e6)


def hash_forever():
    collector.add("hasher", sys._getframe())
    while True:
        hashlib.sha256(DATA).digest()


for name in names:
    threading.Thread(target=nap, args=(name,), name=name, daemon=True).start()
threading.Thread(target=hash_forever, name="hasher", daemon=True).start()
collector.add("main", sys._getframe()) or time.sleep(1e6)
