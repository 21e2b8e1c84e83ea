"""Benchmark workload `churn`: a target whose stacks never settle, for pytop's memory over hours.

All the time, at once:
- new code: a "template" compiled from fresh source and run every few milliseconds, as a template
  engine or an ORM does (same function names, new code objects; some with names never seen before);
- new threads: short request threads, each living a few milliseconds (thread-per-request);
- recursion bursts: now and then a recursion of random depth (up to 3,000 frames) that does a
  little work at every level on its way back;
- a steady worker whose stack changes line by line.
Prints "ready" once everything runs.
"""

import random
import sys
import threading
import time

sys.setrecursionlimit(10_000)
threading.stack_size(64 << 20)

TEMPLATE = """
def render_{kind}(rows):
    out = []
    for row in rows:
        out.append("<td>" + str(row) + "</td>")
    return "".join(out)
def helper_{unique}(n):
    return sum(i * i for i in range(n))
result = render_{kind}(range({size})) + str(helper_{unique}({size}))
"""


def templates() -> None:
    n = 0
    while True:
        n += 1
        source = TEMPLATE.format(kind=random.choice(("page", "row", "table", "form")), unique=n, size=200)
        exec(compile(source, f"<template {n % 50}>", "exec"), {})
        time.sleep(0.002)


def handle(request: int) -> None:
    deadline = time.perf_counter() + 0.002
    while time.perf_counter() < deadline:
        sum(range(100))


def server() -> None:
    request = 0
    while True:
        request += 1
        threading.Thread(target=handle, args=(request,), name=f"request-{request}").start()
        time.sleep(0.02)


def recurse(n: int) -> int:
    if n <= 0:
        return 0
    total = recurse(n - 1)
    for i in range(20):
        total += i
    return total


def bursts() -> None:
    while True:
        recurse(random.randint(10, 3000))
        time.sleep(random.uniform(0.05, 0.5))


def worker() -> None:
    while True:
        a = sum(range(1000))
        b = sorted(range(500), key=lambda x: -x)
        c = "".join(str(i) for i in range(200))
        del a, b, c
        time.sleep(0.001)


for target in (templates, server, bursts, worker):
    threading.Thread(target=target, name=target.__name__, daemon=True).start()
print("ready", flush=True)
while True:
    time.sleep(1)
