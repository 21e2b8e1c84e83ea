#!/usr/bin/env python3
"""End-to-end: the real pytop in a terminal (tmux) on the `threads` workload at 1 kHz.

Measures, over --minutes (default 3):
  late      share of samples taken more than one interval after they were due, given-up ones
            included (goals: < 0.1% at 1 kHz, < 1% at 10 kHz)
  CPU       pytop's own CPU use, % of one core (goal at 1 kHz: < 10%), and its sampling thread's
  latency   key press to redraw: `1`/`2` sent with tmux, until the sort mark moved (goals: median
            < 50 ms, max < 150 ms); includes tmux's own round trip, measured alone at the end
            (keys echoed by `cat` in another session)
  RSS       pytop's resident memory at the end (goal < 100 MiB after 10 minutes)
  floor     over the same minutes, a bare wait on pytop's schedule that samples nothing
            (bench/floor.c, built with cc): the share of its ticks that came late is what the
            machine allows (a VM's host may hold a vCPU for milliseconds), and its CPU is what
            waking up costs here, part of pytop's own
Usage: bench/live.py [--minutes M] [--rate HZ] [--python PATH]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


def screen(session: str) -> str:
    return tmux("capture-pane", "-p", "-t", session)


def wait_for(session: str, text: str, timeout: float = 30.0) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if text in screen(session):
            return time.monotonic() - start
        time.sleep(0.002)
    raise RuntimeError(f"never saw {text!r}")


def key_latencies(session: str, presses: int) -> list[float]:
    latencies = []
    for i in range(presses):
        key, mark = ("2", "%Total▼") if i % 2 == 0 else ("1", "%Own▼")
        start = time.monotonic()
        tmux("send-keys", "-t", session, key)
        wait_for(session, mark)
        latencies.append(time.monotonic() - start)
        time.sleep(0.3)
    return latencies


def tmux_round_trips(presses: int) -> list[float]:
    """The measurement's own floor for key latency: keys sent to `cat` in another tmux session
    until the pane shows them (the terminal echoes them at once), measured the same way."""
    session = f"pytop-echo-{uuid.uuid4().hex[:6]}"
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", "cat")
    try:
        trips = []
        for i in range(presses):
            tmux("send-keys", "-t", session, "C-u")  # start from an empty line
            start = time.monotonic()
            tmux("send-keys", "-t", session, "-l", f"<{i}>")
            wait_for(session, f"<{i}>")
            trips.append(time.monotonic() - start)
            time.sleep(0.05)
        return trips
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def start_floor(rate: int, seconds: float, build_dir: Path, realtime: bool) -> subprocess.Popen[str] | None:
    """The floor probe (see the top), or None without a C compiler. It waits on the engine's own
    schedule (native/schedule.c), at the priority pytop's sampling thread has."""
    binary = build_dir / "floor"
    native = HERE.parent / "native"
    built = subprocess.run(["cc", "-O2", f"-I{native}", "-o", str(binary), str(HERE / "floor.c"),
                            str(native / "schedule.c"), "-lpthread"], capture_output=True, text=True)
    if built.returncode != 0:
        print(f"floor probe not built: {built.stderr.strip()}", file=sys.stderr)
        return None
    command = [str(binary), str(rate), str(seconds)] + (["realtime"] if realtime else [])
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--python", default=sys.executable, help="interpreter for the workload")
    parser.add_argument("--extra", default="", help="more pytop options")
    args = parser.parse_args()
    workload = subprocess.Popen([args.python, str(HERE / "workloads" / "threads.py")], stdout=subprocess.PIPE)
    session = f"pytop-bench-{uuid.uuid4().hex[:6]}"
    stats = Path(tempfile.mkstemp(suffix=".json")[1])
    build_dir = Path(tempfile.mkdtemp())
    floor = None
    try:
        assert workload.stdout is not None and workload.stdout.readline().strip() == b"ready"
        command = f"{sys.executable} -m pytop -r {args.rate} --stats-file {stats} {args.extra} {workload.pid}"
        tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", command)
        wait_for(session, "Function (filename)")
        pytop = next(p for p in psutil.process_iter(["cmdline"])
                     if (p.info["cmdline"] or [""])[-1] == str(workload.pid) and "pytop" in p.info["cmdline"])
        cpu_start, wall_start = sum(pytop.cpu_times()[:2]), time.monotonic()
        deadline = wall_start + args.minutes * 60
        floor = start_floor(args.rate, args.minutes * 60, build_dir, "--realtime" in args.extra.split())
        latencies: list[float] = []
        rss_peak = 0
        while time.monotonic() < deadline:
            latencies += key_latencies(session, 4)
            rss_peak = max(rss_peak, pytop.memory_info().rss)
            time.sleep(min(20.0, max(0.0, deadline - time.monotonic())))
        cpu = (sum(pytop.cpu_times()[:2]) - cpu_start) / (time.monotonic() - wall_start)
        trips = tmux_round_trips(20)  # while the workload still loads the machine
        rss = pytop.memory_info().rss
        threads = screen(session).split("Threads: ")[1].split()[0].rstrip(",")
        tmux("send-keys", "-t", session, "q")
        pytop.wait(20)
        result = json.loads(stats.read_text())
        floor_result = json.loads(floor.communicate(timeout=60)[0]) if floor is not None else None
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        workload.kill()
        if floor is not None and floor.poll() is None:
            floor.kill()
        stats.unlink(missing_ok=True)
        shutil.rmtree(build_dir, ignore_errors=True)
    late = (result["late"] + result["skipped"]) / max(result["samples"] + result["skipped"], 1)
    goal = "0.1%" if args.rate <= 1000 else "1%"
    print(f"workload threads: {threads}, rate asked {args.rate}/s, "
          f"achieved {result['rate']:.0f}/s over {args.minutes:g} min")
    print(f"late samples:   {100 * late:.3f}%   ({result['late']} late, {result['skipped']} skipped; goal < {goal})")
    if floor_result is not None:
        missed = floor_result["late"] + floor_result["skipped"]
        floor_late = missed / max(floor_result["ticks"] + floor_result["skipped"], 1)
        print(f"machine floor:  {100 * floor_late:.3f}% late "
              f"({floor_result['late']} late, {floor_result['skipped']} skipped of {floor_result['ticks']} ticks of a "
              "bare wait, same minutes, "
              f"{'real-time' if floor_result['realtime'] else 'normal'} priority); waking up costs "
              f"{100 * floor_result['cpu_seconds'] / (args.minutes * 60):.1f}% of a core here")
    print(f"failed samples: {result['errors']} of {result['samples']}")
    print(f"pytop CPU:      {100 * cpu:.1f}% of one core, of which the sampling thread "
          f"{100 * result['sampler_cpu'] / result['elapsed']:.1f}% (goal at 1 kHz: < 10%)")
    print(f"key to redraw:  median {1000 * statistics.median(latencies):.0f} ms, "
          f"max {1000 * max(latencies):.0f} ms over {len(latencies)} presses (goals: 50 ms, 150 ms)")
    print(f"tmux alone:     median {1000 * statistics.median(trips):.0f} ms, max {1000 * max(trips):.0f} ms "
          f"(keys echoed by cat, measured the same way)")
    print(f"pytop RSS:      {rss / 2**20:.0f} MiB at the end, peak {rss_peak / 2**20:.0f} MiB (goal < 100 MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
