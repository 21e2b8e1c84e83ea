"""Target: COUNT (argv[1], default 50) named threads asleep, each in its own stack."""

import sys
import time

from report import Collector, daemon_thread

COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 50
names = ["worker-%d" % i for i in range(COUNT)]
collector = Collector(names + ["main"])


def nap(name):
    collector.add(name, sys._getframe()) or time.sleep(1e6)


for name in names:
    daemon_thread(nap, name, (name,))
collector.add("main", sys._getframe()) or time.sleep(1e6)
