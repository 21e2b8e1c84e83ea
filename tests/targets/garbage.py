"""Target: the main thread keeps making cyclic garbage and collecting it (argv[1] == "collect"),
or sleeps with the collector switched off (anything else)."""

import gc
import sys
import time

from report import Collector

collector = Collector(["main"], busy=["main"] if sys.argv[1:] == ["collect"] else [])


class Node:
    def __init__(self):
        self.me = self


def churn():
    keep = [Node() for _ in range(200_000)]  # a big young generation makes each collection long
    collector.add("main", sys._getframe())
    while True:
        gc.collect()
        keep.append(Node())


if sys.argv[1:] == ["collect"]:
    churn()
else:
    gc.disable()
    collector.add("main", sys._getframe()) or time.sleep(1e6)
