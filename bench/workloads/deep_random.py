"""Benchmark workload `deep_random`: THREADS threads (argv[1], default 4) each recurse on a random
walk over 24 functions, 500 to 15,000 frames deep, computing a little at each level and more at
the bottom, then unwind and start again: the shape of recursive-descent parsers, tree walkers
and symbolic maths (issue 33). Prints "ready" once every thread runs."""

import random
import sys
import threading

THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 4
sys.setrecursionlimit(20000)
threading.stack_size(512 << 20)


def work(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def make(name):
    def step(depth, rng):
        work(20)
        if depth <= 0:
            return work(2000)
        return FUNCTIONS[rng.randrange(len(FUNCTIONS))](depth - 1, rng)
    step.__name__ = step.__qualname__ = name
    return step


FUNCTIONS = [make(f"rule_{i:02d}") for i in range(24)]


def walker(seed):
    rng = random.Random(seed)
    while True:
        FUNCTIONS[0](rng.randint(500, 15000), rng)


started = threading.Barrier(THREADS + 1)


def run(seed):
    started.wait()
    walker(seed)


for k in range(THREADS):
    threading.Thread(target=run, args=(k,), daemon=True).start()
started.wait()
print("ready", flush=True)
threading.Event().wait()
