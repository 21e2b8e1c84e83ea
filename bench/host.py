"""The host's Python processes, many of them: what a table of them costs pytop, beside what
py-spy (which has no such table) costs to dump each in turn.

    python bench/host.py [--processes 200] [--busy 4] [--looks 20]

Starts that many Python processes (a few computing, the rest asleep, as on a server), then:
- pytop's look (`PythonScan.look`, what the picker and `--batch --all` do at each refresh): the
  first look's CPU and wall time (every program judged), and the later looks' (one stat file a
  process);
- `pytop --batch --all --duration 1`: the whole command's CPU and wall time, start-up included,
  and whether the busiest process it names is one of the busy ones;
- `py-spy dump` of each process in turn (the nearest a py-spy user gets to the same question).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

import peers

from pytop.process.pythons import PythonScan

IDLE = "import time, sys; print('ready', flush=True); time.sleep(3600)"
BUSY = "import sys; print('ready', flush=True)\nwhile True: sum(range(1000))"


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall and CPU seconds of a command (its CPU from the kernel's count of reaped children)."""
    cpu, wall = children_cpu(), time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True)
    return time.monotonic() - wall, children_cpu() - cpu, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, default=200)
    parser.add_argument("--busy", type=int, default=4)
    parser.add_argument("--looks", type=int, default=20)
    args = parser.parse_args()
    started = [subprocess.Popen([sys.executable, "-c", BUSY if i < args.busy else IDLE], stdout=subprocess.PIPE)
               for i in range(args.processes)]
    try:
        for process in started:
            assert process.stdout is not None and process.stdout.readline()
        busy = {p.pid for p in started[:args.busy]}
        scan = PythonScan()
        cpu, wall = time.process_time(), time.perf_counter()
        scan.look()
        first = (time.process_time() - cpu, time.perf_counter() - wall)
        costs = []
        for _ in range(args.looks):
            time.sleep(0.5)
            cpu = time.process_time()
            found = scan.look()
            costs.append(time.process_time() - cpu)
        print(f"{args.processes} Python processes ({args.busy} busy), {len(found)} listed in all")
        print(f"pytop's first look: {1000 * first[0]:.1f} ms of CPU, {1000 * first[1]:.1f} ms")
        print(f"pytop's later looks: {1000 * statistics.median(costs):.2f} ms of CPU each (median of "
              f"{len(costs)}; at one look a second, {statistics.median(costs) * 100:.2f}% of a core)")
        wall, cpu_used, done = timed([sys.executable, "-m", "pytop", "--batch", "--all", "--json", "--duration", "1"])
        table = json.loads(done.stdout)
        top = table["processes"][0]["pid"] if table["processes"] else None
        print(f"pytop --batch --all --duration 1: {wall:.2f} s, {cpu_used:.2f} s of CPU (start-up included); "
              f"busiest named: {'a busy one' if top in busy else top}")
        spy = peers.py_spy()
        if spy is None:
            print("py-spy: not installed (pip install py-spy)")
            return
        wall = cpu_used = 0.0
        for process in started:
            w, c, _ = timed([spy, "dump", "--pid", str(process.pid)])
            wall, cpu_used = wall + w, cpu_used + c
        print(f"py-spy dump of each in turn: {wall:.2f} s, {cpu_used:.2f} s of CPU")
    finally:
        for process in started:
            process.kill()
            process.wait()


if __name__ == "__main__":
    main()
