"""Target: stacks that change every microsecond, to tear reads that race them: a 6-deep
generator pipeline (each generator frame links to its caller only while it runs) and a recursion
1-40 deep, each in a thread of its own."""

import threading
import time

from report import ready, thread_info

DEEPEST = 40


def source():
    while True:
        yield 1


def plus_one(items):
    for x in items:
        yield x + 1


def double(items):
    for x in items:
        yield x * 2


def minus_one(items):
    for x in items:
        yield x - 1


def same(items):
    yield from items


def pipeline():
    total = 0
    for x in same(same(minus_one(double(plus_one(source()))))):
        total += x


def recurse(n):
    if n <= 1:
        return 1
    return recurse(n - 1) + 1


def recursion():
    while True:
        for depth in range(1, DEEPEST + 1):
            recurse(depth)


for work in (pipeline, recursion):
    threading.Thread(target=work, name=work.__name__, daemon=True).start()
ready({"main": thread_info()})
time.sleep(1e6)
