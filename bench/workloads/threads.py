"""Benchmark workload `threads`: 5 threads that each loop on a 30% chance of 10,000 random
sin*cos products, else a 0.1 s sleep; the main thread does the same work every 50 ms and with a
10% chance adds 1-5 such threads, up to 100."""

import math
import random
import threading
import time

MAX_THREADS = 100


def cpu_work():
    total = 0.0
    for _ in range(10000):
        total += math.sin(random.random()) * math.cos(random.random())
    return total


def worker():
    while True:
        if random.random() < 0.3:
            cpu_work()
        else:
            time.sleep(0.1)


def start(n):
    for _ in range(n):
        threading.Thread(target=worker, daemon=True).start()


def main():
    start(5)
    print("ready", flush=True)
    while True:
        cpu_work()
        if random.random() < 0.1 and threading.active_count() < MAX_THREADS:
            start(random.randint(1, 5))
        time.sleep(0.05)


main()
