#!/usr/bin/env python3
"""Accuracy against the kernel: per-thread and summed CPU time of pytop, py-spy and CPython
3.15's own profiler ("Tachyon"), on the shapes of tests/test_truth.py, in one run.

For each target and tool a fresh target process starts and is frozen (SIGSTOP); the tool
attaches and starts sampling; the target runs for --seconds and is frozen again. The kernel's
counts, read by this script before and after, are the truth: per thread from
/proc/PID/task/TID/schedstat, for the process from its CPU clock. What each tool says:
  pytop    `--batch --json` (cpu mode): per-thread own_time, and the table's total
  py-spy   `record --nonblocking --threads --format raw`: samples x 1/rate per thread (py-spy
           counts a sample for each thread it finds active)
  Tachyon  `attach -a --mode cpu --collapsed` (3.15 only): samples x 1/rate per thread
Each tool's own CPU time (its rusage) is reported too. Targets: napper (a thread waking every
4 ms beside a bursty one), server (a thread per request, client in the same process), demo.

Usage: bench/accuracy.py [--seconds S] [--rate HZ] [--only NAMES] [--targets ...] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
import helpers  # noqa: E402
import kernel  # noqa: E402
import pytop.demo  # noqa: E402

TARGETS = {"napper": ("napper.py",), "server": ("server.py",), "demo": ("demo_target.py", "DEMO")}
WARM_UP, SETTLE = 0.8, 0.8  # seconds the tool samples the frozen target before and after


@contextlib.contextmanager
def target(interp: dict, name: str) -> Iterator[helpers.RunningTarget]:
    script, *args = TARGETS[name]
    args = [helpers.stage_file(interp, Path(pytop.demo.__file__)) if a == "DEMO" else a for a in args]
    with helpers.running(interp, script, *args) as t:
        yield t


def run_tool(argv: list[str], pid: int, seconds: float, env: dict | None = None) -> tuple[kernel.Usage, float, str]:
    """Freeze the target, start the tool, let the target run `seconds`: (kernel usage, the tool's
    CPU seconds, its output)."""
    os.kill(pid, signal.SIGSTOP)
    kernel.all_stopped(pid)
    tool = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    try:
        time.sleep(WARM_UP)
        usage = kernel.run_for(pid, seconds)
        out = tool.stdout.read().decode(errors="replace") if tool.stdout else ""
        _, _, rusage = os.wait4(tool.pid, 0)
    finally:
        os.kill(pid, signal.SIGCONT)
    return usage, rusage.ru_utime + rusage.ru_stime, out


def pytop_figures(interp: dict, pid: int, seconds: float, rate: float) -> dict:
    duration = WARM_UP + seconds + SETTLE
    argv = [sys.executable, "-m", "pytop", "--batch", "--json", "--rate", str(rate), "--duration", str(duration),
            str(pid)]
    usage, cpu, out = run_tool(argv, pid, seconds)
    document = json.loads(out[out.index("{"):])
    threads = {t["native_id"]: t["own_time"] for t in document["per_thread"] if t["native_id"] and t["threads"] == 1}
    return {"usage": usage, "cpu": cpu, "total": document["attributed_time"], "threads": threads}


def counted(lines: str, tid_pattern: str, rate: float) -> tuple[float, dict[int, float]]:
    threads: dict[int, float] = {}
    total = 0
    for line in lines.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        total += int(count)
        match = re.match(tid_pattern, stack)
        if match:
            tid = int(match.group(1))
            threads[tid] = threads.get(tid, 0.0) + int(count) / rate
    return total / rate, threads


def pyspy_figures(interp: dict, pid: int, seconds: float, rate: float, py_spy: str) -> dict | None:
    if interp["launch"] == "loader":
        return None  # py-spy does not recognise a python started through ld-linux
    with tempfile.NamedTemporaryFile(suffix=".txt") as out:
        duration = int(WARM_UP + seconds + SETTLE + 0.999)
        argv = [py_spy, "record", "--nonblocking", "--threads", "--format", "raw", "--rate", str(int(rate)),
                "--duration", str(duration), "--output", out.name, "--pid", str(pid)]
        usage, cpu, _ = run_tool(argv, pid, seconds)
        total, threads = counted(Path(out.name).read_text(errors="replace"), r"thread \((\d+)\)", rate)
    return {"usage": usage, "cpu": cpu, "total": total, "threads": threads}


def tachyon_figures(interp: dict, pid: int, seconds: float, rate: float) -> dict | None:
    if interp["version"] != "3.15" or interp["launch"] != "loader":
        return None  # CPython's own profiler reads only its own version, and needs /proc
    with tempfile.NamedTemporaryFile(suffix=".txt") as out:
        duration = int(WARM_UP + seconds + SETTLE + 0.999)  # whole seconds only
        argv = [*interp["argv"], "-m", "profiling.sampling", "attach", "-a", "--mode", "cpu", "-r", str(int(rate)),
                "-d", str(duration), "--collapsed", "-o", out.name, str(pid)]
        usage, cpu, _ = run_tool(argv, pid, seconds, env={**os.environ, "LC_ALL": "C"})
        total, threads = counted(Path(out.name).read_text(errors="replace"), r"tid:(\d+)", rate)
    return {"usage": usage, "cpu": cpu, "total": total, "threads": threads}


def errors_of(figures: dict, seconds: float) -> dict:
    """The total's error (%) and the worst thread's (% of the window), against the kernel."""
    usage = figures["usage"]
    busy = [tid for tid, used in usage.threads.items() if used > 0.001 * seconds]
    worst = max((abs(figures["threads"].get(tid, 0.0) - usage.threads[tid]) for tid in busy), default=0.0)
    return {"kernel": usage.process, "total": figures["total"],
            "total_error_pct": 100 * (figures["total"] - usage.process) / usage.process if usage.process else 0.0,
            "worst_thread_error_pct": 100 * worst / seconds, "tool_cpu": figures["cpu"]}


def measure(interp: dict, name: str, seconds: float, rate: float, saturated: bool, py_spy: str | None) -> dict:
    results = {}
    load = kernel.saturated() if saturated else contextlib.nullcontext()
    with load:
        with target(interp, name) as t:
            results["pytop"] = errors_of(pytop_figures(interp, t.pid, seconds, rate), seconds)
        if py_spy:
            with target(interp, name) as t:
                figures = pyspy_figures(interp, t.pid, seconds, rate, py_spy)
                if figures:
                    results["py-spy"] = errors_of(figures, seconds)
        with target(interp, name) as t:
            figures = tachyon_figures(interp, t.pid, seconds, rate)
            if figures:
                results["Tachyon"] = errors_of(figures, seconds)
    return results


def cell(result: dict | None) -> str:
    if not result:
        return "-"
    return f"{result['total']:.2f} s ({result['total_error_pct']:+.0f}%), {result['worst_thread_error_pct']:.1f}%"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rate", type=float, default=100.0, help="samples per second, for every tool")
    parser.add_argument("--only", nargs="*", default=["pyenv-3.12", "sid-3.15-chroot", "sid-3.15-loader"])
    parser.add_argument("--targets", nargs="*", default=list(TARGETS))
    parser.add_argument("--json", help="also write every figure to this file")
    args = parser.parse_args()
    found, complaints = helpers.provision()
    py_spy = shutil.which("py-spy")
    if not py_spy:
        print("py-spy not found on PATH: `pip install py-spy` to compare with it", file=sys.stderr)
    rows, everything = [], []
    for name in args.only:
        if name not in found:
            print(f"{name}: not available ({complaints})", file=sys.stderr)
            continue
        for target_name in args.targets:
            for saturated in (False, True):
                result = measure(found[name], target_name, args.seconds, args.rate, saturated, py_spy)
                kernel_cpu = result["pytop"]["kernel"]
                machine = "saturated" if saturated else "idle"
                rows.append(f"| {name} | {target_name} | {machine} | {kernel_cpu:.2f} s | "
                            + " | ".join(cell(result.get(tool)) for tool in ("pytop", "py-spy", "Tachyon"))
                            + " | " + " / ".join(f"{result[t]['tool_cpu']:.2f}" if t in result else "-"
                                                 for t in ("pytop", "py-spy", "Tachyon")) + " |")
                everything.append({"interpreter": name, "target": target_name, "machine": machine, **result})
                print(rows[-1], flush=True)
    print()
    print(f"Window {args.seconds:g} s at {args.rate:g} Hz. Each tool cell: the total it shows (its error against "
          "the kernel's count for the process), then its worst error on one thread, in % of the window.")
    print("| interpreter | target | machine | kernel | pytop | py-spy | Tachyon | tools' CPU s (pytop / py-spy / "
          "Tachyon) |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    print("\n".join(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(everything, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
