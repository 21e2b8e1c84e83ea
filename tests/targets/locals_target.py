"""Target: threads whose frames hold known arguments and locals (pytop --dump --locals), each
asleep on the line that recorded its frames. It reports, per function, what pytop must show:
each variable's repr as Python 3 writes it (the target's own repr() where pytop makes it in
full), arguments first; values pytop shortens are checked by the test."""

import sys
import threading
import time

from report import Collector

PY2 = sys.version_info[0] == 2
collector = Collector(["waiter", "nested"], extra={"expected": {}})
BIG = 3 ** 2000  # more digits than pytop shows: it says about how many


def as_python3(value):
    """repr() as Python 3 writes it (2.7 writes longs with an L, sets as set([...]))."""
    if isinstance(value, set):
        return "{" + ", ".join(as_python3(v) for v in value) + "}"
    text = repr(value)
    return text[:-1] if PY2 and text.endswith("L") else text


def waiter(cfg, n, *rest, **options):
    name = "abc"
    items = [1, 2, 3]
    ratio = 2.5
    flag, nothing, negative = True, None, -12345678901234567890
    raw = b"xy\x00"
    pair = (1, "one")
    one = (7,)
    empty = {}
    members = {5}
    many = list(range(100))
    text = "z" * 150
    shown = [("cfg", cfg), ("n", n), ("rest", rest), ("options", options), ("name", name), ("items", items),
             ("ratio", ratio), ("flag", flag), ("nothing", nothing), ("negative", negative), ("raw", raw),
             ("pair", pair), ("one", one), ("empty", empty), ("members", members)]
    collector.extra["expected"]["waiter"] = [[k, as_python3(v)] for k, v in shown]
    collector.add("waiter", sys._getframe()) or time.sleep(1e6)
    return many, text


def nested(depth):
    inner = {"k": [1, (2, 3)], "deep": {"a": {"b": 1}}}
    big = BIG

    def closure():
        return inner

    collector.add("nested", sys._getframe()) or time.sleep(1e6)
    return closure, big, depth


threading.Thread(target=waiter, args=({"a": 1}, 5, "extra"), kwargs={"key": "v"}, name="waiter").start()
threading.Thread(target=nested, args=(2,), name="nested").start()
while True:
    time.sleep(1e6)
