"""Target: three threads with known stacks. The sleeper and the main thread block on the very
line that recorded their frames, so the target's own f_lineno is what pytop must report;
the spinner keeps running pure Python (it holds the GIL most of the time)."""

import sys
import threading
import time

from report import Collector

collector = Collector(["main", "sleeper", "spinner"], extra={"spin_lines": []}, busy=["spinner"])


class Worker:
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
threading.Thread(target=worker.sleeping, name="sleeper", daemon=True).start()
threading.Thread(target=worker.spinning, name="spinner", daemon=True).start()
level_one()
