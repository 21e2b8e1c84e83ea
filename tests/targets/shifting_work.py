"""Target: one thread computing in steady() and grown(TIMES) in turn, grown doing TIMES as much
(the first argument), for a comparison of two runs: with TIMES 1 both take half; with more,
grown's share grows and steady's shrinks. Only a run with TIMES 1 calls retired(), only one with
more calls introduced(): a function gone since the baseline, and a new one. Prints a JSON
readiness line. Runs under 2.7 too."""

import json
import sys


def loop(count):
    total = 0
    for i in range(count):
        total += i * i % 7
    return total


def steady():
    total = 0
    for i in range(20000):
        total += i * i % 7
    return total


def grown(times):
    total = 0
    for i in range(20000 * times):
        total += i * i % 7
    return total


def retired():
    return loop(5000)


def introduced():
    return loop(5000)


def main(times):
    while True:
        steady()
        grown(times)
        if times == 1:
            retired()
        else:
            introduced()


print(json.dumps({"ready": True}))
sys.stdout.flush()
main(int(sys.argv[1]))
