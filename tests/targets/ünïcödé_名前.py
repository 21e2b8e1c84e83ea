"""Target: non-ASCII file, class and function names."""

import sys
import time

from report import Collector

collector = Collector(["main"])


class Ĉlasse_ß:
    def función_λ(self):
        collector.add("main", sys._getframe()) or time.sleep(1e6)


def 関数():
    Ĉlasse_ß().función_λ()


関数()
