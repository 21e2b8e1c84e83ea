#!/usr/bin/env python3
"""Sampling with native frames side by side: `pytop --batch --native` and `py-spy record
--native`, both at 100 samples a second for --seconds, on the same target, --rounds times each.

The target (CPython 3.12 from pyenv, symbols and debug info) runs 7 threads: 6 sleep and one
spins, noting every gap over 0.2 ms between two of its iterations: the pauses a tool's samples
imposed on it ("none", no tool, shows the host's own hiccups). Per tool: samples taken, its CPU
per sample (user + system, from the kernel's count of the finished child), and the spinner's
pauses during the run: how many, median and 99th percentile. pytop runs without its CPU budget
here (--cpu-budget 100) so that it takes the asked rate, as py-spy does.
Usage: bench/native_sampling.py [--rounds N] [--seconds S]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from busy import interpreter  # noqa: E402
from peers import py_spy  # noqa: E402

RATE = 100
TARGET = textwrap.dedent("""
    import json, sys, threading, time
    gaps = []

    def spin():
        last = time.perf_counter()
        while True:
            now = time.perf_counter()
            if now - last > 0.0002:
                gaps.append(now - last)
            last = now

    def sleep():
        time.sleep(1e6)

    threading.Thread(target=spin, daemon=True).start()
    for i in range(6):
        threading.Thread(target=sleep, daemon=True).start()
    print("ready", flush=True)
    for line in sys.stdin:  # each line: the gaps since the last line, and start again
        print(json.dumps(gaps[:]), flush=True)
        gaps.clear()
""")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()
    interp = interpreter("pyenv-3.12")
    seconds = str(args.seconds)
    tools: dict[str, list[str]] = {
        "none": ["sleep", seconds],
        "pytop": [sys.executable, "-m", "pytop", "--batch", "--native", "--json", "--rate", str(RATE),
                  "--cpu-budget", "100", "--duration", seconds],
    }
    spy = py_spy()
    if spy:
        tools["py-spy"] = [spy, "record", "--native", "--rate", str(RATE), "--duration", seconds,
                           "--format", "raw", "--output", "/dev/null", "--pid"]
    with tempfile.NamedTemporaryFile("w", suffix=".py") as script:
        script.write(TARGET)
        script.flush()
        target = subprocess.Popen([*interp["argv"], script.name], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        assert target.stdin is not None and target.stdout is not None
        results: dict[str, list[tuple[float, int, list[float]]]] = {tool: [] for tool in tools}
        try:
            assert target.stdout.readline().strip() == "ready"
            time.sleep(1)
            for _ in range(args.rounds):
                for tool, argv in tools.items():
                    target.stdin.write("\n")
                    target.stdin.flush()
                    target.stdout.readline()  # gaps so far: forgotten
                    before = os.times()
                    out = subprocess.run([*argv, *([str(target.pid)] if tool != "none" else [])],
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
                    after = os.times()
                    cpu = sum(after[i] - before[i] for i in (2, 3))  # children's user + system
                    target.stdin.write("\n")
                    target.stdin.flush()
                    gaps = json.loads(target.stdout.readline())
                    samples = json.loads(out)["samples"] if tool == "pytop" else int(RATE * args.seconds)
                    results[tool].append((cpu, samples, gaps))
        finally:
            target.kill()
            target.wait()
    print(f"{'tool':<8} {'samples':>8} {'CPU/sample':>11} {'pauses':>7} {'median':>8} {'p99':>8}")
    for tool, rounds in results.items():
        samples = sum(r[1] for r in rounds)
        cpu = sum(r[0] for r in rounds)
        gaps = sorted(g for r in rounds for g in r[2])
        p99 = gaps[min(len(gaps) - 1, int(0.99 * len(gaps)))] if gaps else 0.0
        print(f"{tool:<8} {samples:>8} {1000 * cpu / max(samples, 1) if tool != 'none' else 0:>8.2f} ms "
              f"{len(gaps):>7} {1000 * statistics.median(gaps) if gaps else 0:>5.2f} ms {1000 * p99:>5.2f} ms")
    print("(py-spy's samples: the rate asked for times the duration; it does not report how many it took)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
