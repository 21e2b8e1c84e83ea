"""Benchmark workload `pool`: N threads (argv[1], default 2000), as a large thread pool: each waits
for work (a random 0.5-5 s nap), then does a little (a few hundred sin*cos products), in one of
a few call paths. Prints "ready" once every thread runs."""

import math
import random
import sys
import threading
import time

COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
threading.stack_size(256 << 10)


def crunch(n: int) -> float:
    total = 0.0
    for _ in range(n):
        total += math.sin(random.random()) * math.cos(random.random())
    return total


def parse(n: int) -> float:
    return crunch(n)


def render(n: int) -> float:
    return crunch(n // 2) + crunch(n // 2)


def worker() -> None:
    paths = (parse, render, crunch)
    while True:
        time.sleep(random.uniform(0.5, 5.0))
        random.choice(paths)(random.randint(200, 1000))


for _ in range(COUNT):
    threading.Thread(target=worker, daemon=True).start()
print("ready", flush=True)
while True:
    time.sleep(3600)
