# -*- coding: utf-8 -*-
"""Target: threads whose names sit in every place CPython keeps instance attributes: plain,
non-ASCII, renamed after start, a subclass that sets attributes before Thread.__init__, a
subclass with __slots__, one with 40 extra attributes and one with a deleted attribute (which
turn its values into a real dict), and the main thread renamed."""

import sys
import threading
import time

from report import Collector

NAMES = ["plain", "ünïcode-名前-🚀", "renamed-later", "early-attributes", "slotted", "many-attributes",
         "deleted-attribute"]
collector = Collector(NAMES + ["main"])


def nap(key):
    collector.add(key, sys._getframe()) or time.sleep(1e6)


class EarlyAttributes(threading.Thread):
    def __init__(self, **kwargs):
        self.first = 1
        self.second = 2
        super(EarlyAttributes, self).__init__(**kwargs)


class Slotted(threading.Thread):
    __slots__ = ("extra",)


threads = {
    "plain": threading.Thread(target=nap, args=("plain",), name="plain"),
    "ünïcode-名前-🚀": threading.Thread(target=nap, args=("ünïcode-名前-🚀",), name="ünïcode-名前-🚀"),
    "renamed-later": threading.Thread(target=nap, args=("renamed-later",), name="before"),
    "early-attributes": EarlyAttributes(target=nap, args=("early-attributes",), name="early-attributes"),
    "slotted": Slotted(target=nap, args=("slotted",), name="slotted"),
    "many-attributes": threading.Thread(target=nap, args=("many-attributes",), name="many-attributes"),
    "deleted-attribute": threading.Thread(target=nap, args=("deleted-attribute",), name="deleted-attribute"),
}
for i in range(40):
    setattr(threads["many-attributes"], "attribute_%d" % i, i)
threads["deleted-attribute"].scratch = 1
del threads["deleted-attribute"].scratch
for thread in threads.values():
    thread.daemon = True
    thread.start()
threads["renamed-later"].name = "renamed-later"
threading.current_thread().name = "główny-wątek"
nap("main")
