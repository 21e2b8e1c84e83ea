#!/usr/bin/env python3
"""Sampling with native frames side by side: `pytop --batch --native` and `py-spy record
--native`, both at 100 samples a second for --seconds, on the same target, --rounds times each.

The target (CPython 3.12 from pyenv, symbols and debug info) runs 7 threads: 6 sleep and one
spins, noting every gap over 0.2 ms between two of its iterations: the pauses a tool's samples
imposed on it ("none", no tool, shows the host's own hiccups). Per tool: samples taken, its CPU
per sample (user + system, from the kernel's count of the finished child; py-spy counts the
samples in which some thread ran), the share of the run the spinner lost to pauses, what that
comes to per sample beyond the host's own ("none"), and the 99th percentile of its gaps. pytop
runs without its CPU budget here (--cpu-budget 100) so that it takes the asked rate, as py-spy
does.
Usage: bench/native_sampling.py [--rounds N] [--seconds S]
"""

from __future__ import annotations

import argparse
import json
import os
import re
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
    parser.add_argument("--seconds", type=int, default=10)
    args = parser.parse_args()
    interp = interpreter("pyenv-3.12")
    seconds = str(int(args.seconds))  # py-spy takes whole seconds
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
                    done = subprocess.run([*argv, *([str(target.pid)] if tool != "none" else [])],
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                    out = done.stdout
                    after = os.times()
                    cpu = sum(after[i] - before[i] for i in (2, 3))  # children's user + system
                    target.stdin.write("\n")
                    target.stdin.flush()
                    gaps = json.loads(target.stdout.readline())
                    if tool == "py-spy" and "Samples:" not in out:
                        print("py-spy:", out[-600:], file=sys.stderr)
                    samples = json.loads(out[out.index("{"):])["samples"] if tool == "pytop" else \
                        int(re.search(r"Samples: (\d+)", out).group(1)) if "Samples:" in out else 0
                    results[tool].append((cpu, samples, gaps))
        finally:
            target.kill()
            target.wait()
    # The spinner's lost time: what it lost with no tool is the host's own; the rest, spread over
    # the tool's samples, is the pause a sample costs a running thread.
    span = args.rounds * args.seconds
    lost = {tool: sum(g for r in rounds for g in r[2]) / span for tool, rounds in results.items()}
    print(f"{'tool':<8} {'samples':>8} {'CPU/sample':>11} {'spinner lost':>13} {'pause/sample':>13} {'p99 gap':>8}")
    for tool, rounds in results.items():
        samples = sum(r[1] for r in rounds)
        cpu = sum(r[0] for r in rounds)
        gaps = sorted(g for r in rounds for g in r[2])
        p99 = gaps[min(len(gaps) - 1, int(0.99 * len(gaps)))] if gaps else 0.0
        extra = (lost[tool] - lost["none"]) * span / samples if samples else 0.0
        print(f"{tool:<8} {samples:>8} {1000 * cpu / max(samples, 1):>8.2f} ms {100 * lost[tool]:>12.1f}% "
              f"{1000 * extra:>10.2f} ms {1000 * p99:>5.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
