"""What `--push` costs: pytop's CPU (its whole process, the kernel's count) for `--batch` runs on
the same target with and without pushing to a loopback server that keeps Pyroscope's rules
(tests/pyroscope_contract.py), and what went over the wire.

    python bench/push.py [--python PATH] [--duration 20] [--runs 3]

The target is the thread-per-request server (tests/targets/server.py): new threads and stacks
all the time, the shape whose profiles are the biggest for their CPU."""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import pyroscope_contract as contract  # noqa: E402


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(argv: list[str]) -> tuple[float, dict[str, object]]:
    before = children_cpu()
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"pytop failed: {done.stderr}")
    return children_cpu() - before, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=str(Path.home() / ".pyenv/versions/3.12.1/bin/python"))
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    target = subprocess.Popen([args.python, str(ROOT / "tests/targets/server.py")], stdout=subprocess.PIPE,
                              cwd=str(ROOT / "tests/targets"))
    try:
        assert target.stdout is not None and target.stdout.readline()
        base = [sys.executable, "-m", "pytop", "--batch", "--json", "--duration", str(args.duration), str(target.pid)]
        plain, pushed, sizes, counts = [], [], [], []
        for _ in range(args.runs):
            cpu, report = run(base)
            plain.append((cpu, report["samples"]))
            with contract.pyroscope() as server:
                cpu, report = run([*base, "--push", server.url])
                received = server.taken()
            pushed.append((cpu, report["samples"]))
            counts.append(len(received))
            sizes.extend(r.size for r in received)
            time.sleep(1)
        for name, figures in (("without --push", plain), ("with --push", pushed)):
            cpu = statistics.median(c for c, _ in figures)
            rate = statistics.median(n for _, n in figures) / args.duration
            print(f"{name}: pytop's CPU {cpu:.2f} s for {args.duration:.0f} s ({100 * cpu / args.duration:.1f}% of a "
                  f"core, start-up included), {rate:.0f} samples a second (median of {args.runs})")
        print(f"profiles received: {statistics.median(counts):.0f} a run (one per 10 s), "
              f"{statistics.median(sizes) / 1024:.1f} KiB each (median; gzipped pprof)")
    finally:
        target.kill()
        target.wait()


if __name__ == "__main__":
    main()
