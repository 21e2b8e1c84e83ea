"""Target: names and tables at pytop's limits, and a stack deeper than a small depth limit.

    astral      a function and file named with 4-byte characters (U+10300...: Old Italic)
    long_names  a function named with 1,100 characters in a file named with 5,000 (pytop keeps
                1,024 and 4,096)
    big_table   a function whose line table is over 4 KiB, sleeping on its last line
    deep        300 calls deep (for a depth limit below that)
    comprehension  sleeps inside a list comprehension whose element is above its `for` line
                (line numbers that go back: py-spy's negative_linenumber_offsets; a frame of
                its own up to 3.11, inlined from 3.12)

Each sleeps on the line that recorded its frames."""

import sys
import threading
import time

from report import Collector

collector = Collector(["astral", "long_names", "big_table", "deep", "comprehension"])
SLEEP = "collector.add({key!r}, sys._getframe()) or time.sleep(1e6)"


def compiled(source, filename, name):
    space = {"collector": collector, "sys": sys, "time": time}
    exec(compile(source, filename, "exec"), space)
    return space[name]


astral = compiled("def zażółć_λάμβδα_𐌀𐌁𐌂𐌃():\n    " + SLEEP.format(key="astral") + "\n",
                  "/tmp/mod_😀_𐌀.py", "zażółć_λάμβδα_𐌀𐌁𐌂𐌃")
long_name = "f" * 1100
long_names = compiled("def " + long_name + "():\n    " + SLEEP.format(key="long_names") + "\n",
                      "/tmp/" + "x" * 5000 + ".py", long_name)
# 1,000 assignments: well over 4 KiB of line table in every version's format
big_table = compiled("def big_table():\n" + "".join(f"    v{i} = {i}\n" for i in range(1000)) + "    "
                     + SLEEP.format(key="big_table") + "\n", "/tmp/big_table.py", "big_table")


def deep(n):
    if n:
        return deep(n - 1)
    collector.add("deep", sys._getframe()) or time.sleep(1e6)


def comprehension():
    return [
        collector.add("comprehension", sys._getframe()) or time.sleep(1e6)
        for _ in range(1)
    ]


for target, args in ((astral, ()), (long_names, ()), (big_table, ()), (deep, (299,)), (comprehension, ())):
    threading.Thread(target=target, args=args, name=target.__name__[:20], daemon=True).start()
while True:
    time.sleep(1e6)
