# -*- coding: utf-8 -*-
"""Target for 2.7 (whose identifiers are ASCII): a non-ASCII file name, UTF-8 bytes in 2.7's
str, read as text."""

import sys
import time

from report import Collector

collector = Collector(["main"])


class Classe(object):
    def function_27(self):
        collector.add("main", sys._getframe()) or time.sleep(1e6)


def outer():
    Classe().function_27()


outer()
