"""Benchmark workload `deep_static`: recurse 900 frames deep and sleep at the bottom."""

import sys
import time

DEPTH = 900
sys.setrecursionlimit(DEPTH + 100)


def recurse(n):
    if n > 0:
        return recurse(n - 1)
    print("ready", flush=True)
    while True:
        time.sleep(1)


recurse(DEPTH - 2)  # with <module> and the bottom frame: 900 frames
