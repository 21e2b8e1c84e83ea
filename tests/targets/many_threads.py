"""Target: COUNT (argv[1], default 50) named threads asleep, each in its own stack."""

import sys
import threading
import time

from report import Collector

COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 50
names = [f"worker-{i}" for i in range(COUNT)]
collector = Collector(names + ["main"])


def nap(name):
    collector.add(name, sys._getframe()) or time.sleep(1e6)


for name in names:
    threading.Thread(target=nap, args=(name,), name=name, daemon=True).start()
collector.add("main", sys._getframe()) or time.sleep(1e6)
