"""Target: three threads with known stacks. The sleeper and the main thread block on the very
line that recorded their frames, so the target's own f_lineno is what pytop must report;
the spinner keeps running pure Python (it holds the GIL most of the time)."""

import sys
import time

from report import Collector, daemon_thread

collector = Collector(["main", "sleeper", "spinner"], extra={"spin_lines": []}, busy=["spinner"])


class Worker(object):
    def sleeping(self):
        collector.add("sleeper", sys._getframe()) or time.sleep(1e6)

    def spinning(self):
        first = sys._getframe().f_lineno + 3
        collector.extra["spin_lines"] = list(range(first, first + 3))
        collector.add("spinner", sys._getframe())
        x = 0
        while True:
            x = (x + 1) % 1000


def level_two():
    collector.add("main", sys._getframe()) or time.sleep(1e6)


def level_one():
    level_two()


worker = Worker()
daemon_thread(worker.sleeping, "sleeper")
daemon_thread(worker.spinning, "spinner")
level_one()
