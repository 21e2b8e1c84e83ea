#!/usr/bin/env python3
"""Rates without a screen: `pytop --batch` against CPython 3.15's own profiler
(`python3.15 -m profiling.sampling attach`), rate by rate, on the `basic` workload of a 3.15
target (started through its loader), side by side in one run.

For each tool and rate, a fresh target; the tool samples it twice, for D and for 2D seconds (pytop
with --cpu-budget 0: what it can do, not what it allows itself by default), and the difference
between the two runs is what sampling costs once started (start-up, imports and attaching cancel
out):
  achieved   extra samples / D: pytop's JSON `samples`; the profiler's collapsed stacks' counts
             (one thread: one count per sample)
  CPU        extra CPU of the tool's process (rusage) / D, % of one core
  late       pytop's own `late_pct` of the longer run (the profiler reports none)
Usage: bench/rates.py [--seconds D] [--rates HZ ...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from unwinder import Target, provision_interpreters

RATES = (1000, 10000, 20000, 50000, 100000)


def run_child(argv: list[str]) -> tuple[float, str]:
    """Run `argv` to its end: (its CPU seconds, its output)."""
    with tempfile.TemporaryFile() as out:
        pid = os.posix_spawn(argv[0], argv, {**os.environ, "LC_ALL": "C"},
                             file_actions=[(os.POSIX_SPAWN_DUP2, out.fileno(), 1)])
        _, status, usage = os.wait4(pid, 0)
        out.seek(0)
        text = out.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(argv[:6])}... failed:\n{text[-500:]}")
    return usage.ru_utime + usage.ru_stime, text


def pytop_run(pid: int, rate: int, seconds: int) -> tuple[float, int, float]:
    argv = [sys.executable, "-m", "pytop", "--batch", "--json", "--cpu-budget", "0", "--rate", str(rate),
            "--duration", str(seconds), str(pid)]
    cpu, out = run_child(argv)
    document = json.loads(out[out.index("{"):])
    return cpu, document["samples"], document["late_pct"]


def profiler_run(interp: dict, pid: int, rate: int, seconds: int) -> tuple[float, int, None]:
    with tempfile.NamedTemporaryFile(suffix=".txt") as collapsed:
        argv = [*interp["argv"], "-m", "profiling.sampling", "attach", "-r", str(rate), "-d", str(seconds),
                "--collapsed", "-o", collapsed.name, str(pid)]
        cpu, _ = run_child(argv)
        counts = (line.rpartition(" ")[2] for line in Path(collapsed.name).read_text().splitlines())
        return cpu, sum(int(c) for c in counts if c.isdigit()), None


def measure(interp: dict, tool: str, rate: int, seconds: int) -> dict:
    runs = []
    for length in (seconds, 2 * seconds):
        with Target(interp, "basic") as t:
            runs.append(pytop_run(t.pid, rate, length) if tool == "pytop"
                        else profiler_run(interp, t.pid, rate, length))
    (cpu1, samples1, _), (cpu2, samples2, late) = runs
    return {"tool": tool, "rate_asked": rate, "rate_achieved": (samples2 - samples1) / seconds,
            "cpu_pct": 100 * (cpu2 - cpu1) / seconds, "late_pct": late}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rates", type=int, nargs="*", default=list(RATES))
    args = parser.parse_args()
    interps, problems = provision_interpreters.provision(provision_interpreters.default_cache())
    interp = next((i for i in interps if i["version"] == "3.15" and i["launch"] == "loader"), None)
    if interp is None:
        print("no CPython 3.15 to run (tools/provision_interpreters.py):", *problems, sep="\n", file=sys.stderr)
        return 1
    print(f"basic on {interp['name']}, {args.seconds} s measured per cell (runs of D and 2D s, the difference)")
    print(f"{'tool':<40} {'asked':>9} {'achieved':>9} {'missed':>7} {'CPU':>6} {'late':>7}")
    for rate in args.rates:
        for tool, label in (("pytop", f"pytop --batch --rate {rate}"),
                            ("profiler", f"python3.15 -m profiling.sampling -r {rate}")):
            r = measure(interp, tool, rate, args.seconds)
            missed = max(0.0, 100 * (1 - r["rate_achieved"] / rate))
            late = "-" if r["late_pct"] is None else f"{r['late_pct']:.2f}%"
            print(f"{label:<40} {rate:>9,} {r['rate_achieved']:>9,.0f} {missed:>6.1f}% {r['cpu_pct']:>5.0f}% "
                  f"{late:>7}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
