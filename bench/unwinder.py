#!/usr/bin/env python3
"""Sampler CPU time per snapshot of all threads: pytop's unwinder against py-spy and CPython
3.15's own _remote_debugging, on the workloads of CPython's benchmark_external_inspection.py.

For each interpreter and workload, a fresh target is started per tool and measured for a few
seconds after it signals readiness:
  pytop C       pytop's native unwinder called back to back (no Python objects built)
  re-read       the same with every stack read again, even of threads that have not run
                since the last sample (the cost of a stack that keeps changing)
  pytop py      the same through pytop's Python API (a Sample of frozen dataclasses per call)
  py-spy        `py-spy record --nonblocking --idle --threads` at its top rate; CPU time of the
                py-spy process over the samples it took (two runs, the difference, so that its
                start-up cost cancels out)
  tachyon       `_remote_debugging.RemoteUnwinder(pid, all_threads=True, cache_frames=True)
                .get_stack_trace()` back to back, only on 3.15 targets (it reads only its own
                version); run by the target's interpreter through its loader
Each cell is microseconds of CPU per snapshot; for `threads` also per thread stack. Ratios are
against pytop C. py-spy is looked for on the PATH and beside this Python (pip install py-spy).
Usage: bench/unwinder.py [--seconds S] [--only NAME ...] [--json FILE] [--no-pyspy]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tools"))
from peers import py_spy  # noqa: E402

import provision_interpreters  # noqa: E402
from pytop.process.attach import attach  # noqa: E402

WORKLOADS = ("basic", "deep_static", "threads")
TACHYON_SCRIPT = r"""
import json, sys, time, _remote_debugging
pid, seconds = int(sys.argv[1]), float(sys.argv[2])
u = _remote_debugging.RemoteUnwinder(pid, all_threads=True, cache_frames=True)
calls = stacks = failed = 0
start = time.thread_time(); end = time.monotonic() + seconds
while time.monotonic() < end:
    try:
        result = u.get_stack_trace()
    except Exception:
        failed += 1
        continue
    calls += 1
    stacks += sum(len(i.threads) for i in result)
cpu = time.thread_time() - start
print(json.dumps({"cpu": cpu, "calls": calls, "stacks": stacks, "failed": failed}))
"""


class Target:
    def __init__(self, interp: dict, workload: str):
        script = HERE / "workloads" / f"{workload}.py"
        path = str(script)
        if interp["launch"] == "chroot":
            inside = Path(interp["root"]) / "tmp" / "pytop-bench"
            inside.mkdir(parents=True, exist_ok=True)
            (inside / script.name).write_bytes(script.read_bytes())
            path = f"/tmp/pytop-bench/{script.name}"
        self.proc = subprocess.Popen([*interp["argv"], path], stdout=subprocess.PIPE, cwd="/")
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != b"ready":
            raise RuntimeError(f"{workload} did not start on {interp['name']}")
        time.sleep(0.5)  # let it settle (threads start, caches warm)
        self.pid = self.proc.pid

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait()


def measure_pytop(interp: dict, workload: str, seconds: float, raw: bool, reuse: bool = True) -> dict:
    with Target(interp, workload) as t:
        target = attach(t.pid)
        unwinder = target.unwinder
        unwinder.set_reuse_stacks(reuse)
        calls = stacks = syscalls = attempts = 0
        end = time.monotonic() + seconds
        start = time.thread_time()
        while time.monotonic() < end:
            if raw:  # 100 samples per call into C: no Python in the measured loop
                good, threads, reads = unwinder.bench(100)
                calls, stacks, syscalls, attempts = calls + good, stacks + threads, syscalls + reads, attempts + 100
                continue
            attempts += 1
            try:
                sample = unwinder.sample()
            except Exception:
                continue
            calls += 1
            stacks += len(sample.threads)
            syscalls += sample.syscalls
        cpu = time.thread_time() - start
        target.close()
    return {"cpu": cpu, "calls": calls, "stacks": stacks, "failed": attempts - calls,
            "syscalls_per_call": syscalls / max(attempts, 1)}


# py-spy takes duration x rate samples even when it falls behind, so each workload gets a rate
# py-spy can keep up with (per the figures in ../shared/PEERS.md).
PYSPY_RATE = {"basic": 1000, "deep_static": 40, "threads": 100}


def _pyspy_run(pid: int, seconds: float, rate: int) -> tuple[float, int, int]:
    with tempfile.NamedTemporaryFile(suffix=".txt") as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run(
            [py_spy() or "py-spy", "record", "--nonblocking", "--idle", "--threads", "--rate", str(rate),
             "--duration", str(int(seconds)), "--format", "raw", "--output", out.name, "--pid", str(pid)],
            capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        stacks = 0
        for line in Path(out.name).read_text(errors="replace").splitlines():
            count = line.rsplit(" ", 1)[-1]
            stacks += int(count) if count.isdigit() else 0
    samples = 0
    text = proc.stdout + proc.stderr
    if "Samples:" in text:
        samples = int(text.split("Samples:")[1].split()[0])
    return cpu, samples, stacks


def measure_pyspy(interp: dict, workload: str, seconds: float) -> dict | None:
    if not py_spy():
        print("py-spy not found (pip install py-spy, or --no-pyspy): its column is left empty", file=sys.stderr)
        return None
    if interp["launch"] == "loader":
        return None  # py-spy does not recognise a python started through ld-linux
    short = max(1, int(seconds / 2))
    with Target(interp, workload) as t:
        cpu1, samples1, stacks1 = _pyspy_run(t.pid, short, PYSPY_RATE[workload])
    with Target(interp, workload) as t:
        cpu2, samples2, stacks2 = _pyspy_run(t.pid, short + max(2, int(seconds)), PYSPY_RATE[workload])
    if samples2 <= samples1:
        return None
    return {"cpu": cpu2 - cpu1, "calls": samples2 - samples1, "stacks": stacks2 - stacks1, "failed": 0}


def measure_tachyon(interp: dict, workload: str, seconds: float) -> dict | None:
    if interp["version"] != "3.15":
        return None
    root = Path(interp["root"]) if interp["launch"] == "chroot" else None
    if root is not None:
        return None  # measured once, on the loader-launched target (the chroot has no /proc)
    with Target(interp, workload) as t:
        proc = subprocess.run([*interp["argv"], "-c", TACHYON_SCRIPT, str(t.pid), str(seconds)],
                              capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"  tachyon failed: {proc.stderr.strip()[-300:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout)


def per(result: dict | None, key: str) -> float | None:
    if not result or not result[key]:
        return None
    return result["cpu"] / result[key] * 1e6


def fmt(value: float | None, base: float | None = None) -> str:
    if value is None:
        return "-"
    text = f"{value:,.1f}"
    if base:
        text += f" ({value / base:,.1f}x)"
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--only", nargs="*", help="interpreter names (default: all provisioned)")
    parser.add_argument("--workloads", nargs="*", default=list(WORKLOADS))
    parser.add_argument("--no-pyspy", action="store_true")
    parser.add_argument("--json", type=Path, help="also write all figures here")
    args = parser.parse_args()
    interps, problems = provision_interpreters.provision(provision_interpreters.default_cache())
    for problem in problems:
        print(f"note: {problem}", file=sys.stderr)
    if args.only:
        interps = [i for i in interps if i["name"] in args.only]
    rows = []
    header = (f"{'interpreter':<17} {'workload':<12} {'pytop C':>8} {'re-read':>8} {'pytop py':>14} "
              f"{'py-spy':>18} {'tachyon':>14} {'reads':>6}")
    print(header)
    for interp in interps:
        for workload in args.workloads:
            results = {
                "pytop_c": measure_pytop(interp, workload, args.seconds, raw=True),
                "reread": measure_pytop(interp, workload, args.seconds, raw=True, reuse=False),
                "pytop_py": measure_pytop(interp, workload, args.seconds, raw=False),
                "pyspy": None if args.no_pyspy else measure_pyspy(interp, workload, args.seconds),
                "tachyon": measure_tachyon(interp, workload, args.seconds),
            }
            unit = "stacks" if workload == "threads" else "calls"
            base = per(results["pytop_c"], unit)
            cells = [fmt(per(results[k], unit), None if k in ("pytop_c", "reread") else base)
                     for k in ("pytop_c", "reread", "pytop_py", "pyspy", "tachyon")]
            label = workload + (" /thr" if workload == "threads" else "")
            reads = results["pytop_c"]["syscalls_per_call"]
            print(f"{interp['name']:<17} {label:<12} {cells[0]:>8} {cells[1]:>8} {cells[2]:>14} {cells[3]:>18} "
                  f"{cells[4]:>14} {reads:>6.1f}", flush=True)
            rows.append({"interpreter": interp["name"], "workload": workload, **results})
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
