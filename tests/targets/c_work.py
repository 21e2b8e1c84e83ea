"""Target: a thread busy in C library code (zlib compressing, the GIL let go) beside one asleep,
for --dump --native: the compressor's C frames (libz's) lie under the Python frame that called
into it. Reports once both run."""

import sys
import threading
import time
import zlib

from report import Collector

collector = Collector(["compressor", "sleeper"], busy=["compressor"])
DATA = bytes(range(256)) * 40000  # 10 MB: each compress call takes a while in libz


def compressor():
    collector.add("compressor", sys._getframe())
    while True:
        zlib.compress(DATA, 9)


def sleeper():
    collector.add("sleeper", sys._getframe()) or time.sleep(1e6)


threading.Thread(target=compressor, name="compressor").start()
threading.Thread(target=sleeper, name="sleeper").start()
while True:
    time.sleep(1e6)
