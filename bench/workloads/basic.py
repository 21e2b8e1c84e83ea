"""Benchmark workload `basic` (after CPython's Tools/inspection/benchmark_external_inspection.py):
a loop with a 1 ms sleep per iteration; every 50th iteration a recursive fib(20), every 10th a
3-deep nested call into a 1,000-step sqrt/sin loop, every 5th a string split/join, else a
100-step sum."""

import math
import sys
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def level_three():
    total = 0.0
    for i in range(1000):
        total += math.sqrt(i) * math.sin(i)
    return total


def level_two():
    return level_three()


def level_one():
    return level_two()


def strings():
    return "-".join("the quick brown fox jumps over the lazy dog".split()) * 2


def main():
    print("ready", flush=True)
    i = 0
    while True:
        i += 1
        if i % 50 == 0:
            fib(20)
        elif i % 10 == 0:
            level_one()
        elif i % 5 == 0:
            strings()
        else:
            sum(range(100))
        time.sleep(0.001)


if __name__ == "__main__":
    sys.exit(main())
