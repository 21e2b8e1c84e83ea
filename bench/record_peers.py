"""Recording beside the peers that record (issue 37): the same minutes of the same target written
by pytop (`--batch --record`, its defaults: 1,000/s asked within a 5% CPU budget), by py-spy
(`record -f raw`, its defaults: 100/s, here with --nonblocking as pytop never pauses) and by
CPython 3.15's own profiler (`profiling.sampling attach -a --binary`, its defaults: 1,000/s).

py-spy does not read 3.15 and CPython 3.15's profiler reads nothing but 3.15, so each workload
runs twice: on pyenv 3.12 with pytop and py-spy attached together, on Debian's 3.15 with pytop
and CPython's profiler attached together (the peers' costs and pytop's are each the kernel's
count of the process). Per tool: the file's size and per hour, its CPU, the samples it says it
took, and whether it ended when asked.

    python bench/record_peers.py [--minutes 10] [--targets churn,pool]

Interpreters come from tools/provision_interpreters.py; py-spy from the environment."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from peers import py_spy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import provision_interpreters  # noqa: E402

WORKLOADS = {
    "churn": [str(ROOT / "bench/workloads/churn.py")],
    "pool": [str(ROOT / "bench/workloads/pool.py"), "2000"],
}
PAIRS = (("pyenv-3.12", "py-spy"), ("sid-3.15-loader", "CPython 3.15 --binary"))


def interpreter(name: str) -> list[str]:
    found = {i["name"]: i for i in provision_interpreters.provision(provision_interpreters.default_cache())[0]}
    if name not in found:
        raise SystemExit(f"no {name} here: tools/provision_interpreters.py provides it")
    return list(found[name]["argv"])


def peer_argv(peer: str, interp: list[str], pid: int, seconds: int, out: str) -> list[str]:
    if peer == "py-spy":
        spy = py_spy()
        if spy is None:
            raise SystemExit("py-spy is not installed (pip install py-spy)")
        return [spy, "record", "--nonblocking", "-f", "raw", "-d", str(seconds), "-o", out, "--pid", str(pid)]
    return [*interp, "-m", "profiling.sampling", "attach", "-a", "--binary", "-d", str(seconds), "-o", out,
            str(pid)]


def run_pair(workload: str, interp_name: str, peer: str, seconds: int) -> dict[str, dict[str, object]]:
    interp = interpreter(interp_name)
    target = subprocess.Popen([*interp, *WORKLOADS[workload]], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    results: dict[str, dict[str, object]] = {}
    try:
        assert target.stdout is not None and target.stdout.readline()
        time.sleep(2)
        with tempfile.TemporaryDirectory() as directory:
            ours, theirs = os.path.join(directory, "pytop.rec"), os.path.join(directory, "peer.out")
            logs = {name: open(os.path.join(directory, name + ".out"), "w+") for name in ("pytop", peer, "stderr")}
            tools = {
                "pytop": subprocess.Popen([sys.executable, "-m", "pytop", "--batch", "--json", "--duration",
                                           str(seconds), "--record", ours, str(target.pid)], stdout=logs["pytop"],
                                          stderr=logs["stderr"]),
                peer: subprocess.Popen(peer_argv(peer, interp, target.pid, seconds, theirs), stdout=logs[peer],
                                       stderr=subprocess.STDOUT),
            }
            deadline, usage = time.monotonic() + seconds + max(60, seconds // 2), {}
            while len(usage) < len(tools) and time.monotonic() < deadline:
                for name, process in tools.items():
                    if name not in usage:
                        pid, status, rusage = os.wait4(process.pid, os.WNOHANG)
                        if pid:
                            process.returncode = os.waitstatus_to_exitcode(status)
                            usage[name] = rusage.ru_utime + rusage.ru_stime
                time.sleep(0.5)
            for name, process in tools.items():
                if name not in usage:
                    process.kill()
                    process.wait()
                path = ours if name == "pytop" else theirs
                size = os.path.getsize(path) if os.path.exists(path) else None
                logs[name].seek(0)
                said = logs[name].read()
                row: dict[str, object] = {"ended": name in usage, "size": size, "cpu": usage.get(name),
                                          "samples": None}
                if name == "pytop" and process.returncode == 0 and said:
                    row["samples"] = json.loads(said)["samples"]
                elif name == "py-spy" and size:
                    with open(path) as raw:  # (collapsed stacks, each line ending in its count)
                        row["samples"] = sum(int(line.rsplit(" ", 1)[1]) for line in raw if line.strip())
                elif said_samples := re.search(r"written to .* \(([\d,]+) samples\)", said):
                    row["samples"] = int(said_samples.group(1).replace(",", ""))  # (CPython's own count)
                else:
                    row["tail"] = said[-400:]
                results[name] = row
    finally:
        target.kill()
        target.wait()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--targets", default="churn,pool")
    args = parser.parse_args()
    seconds = round(args.minutes * 60)
    hour = 3600 / seconds
    print(f"{args.minutes:g} minutes a run; sizes per hour extrapolated")
    print("| workload | target | tool | file | per hour | CPU | samples | ended when asked |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | --- |")
    for workload in args.targets.split(","):
        for interp_name, peer in PAIRS:
            for tool, row in run_pair(workload, interp_name, peer, seconds).items():
                size = row["size"]
                weight = f"{size / 1e6:.2f} MB" if isinstance(size, int) else "none written"
                per_hour = f"{size * hour / 1e6:.1f} MB" if isinstance(size, int) else "-"
                cpu = f"{row['cpu']:.1f} s" if isinstance(row["cpu"], float) else "-"
                samples = f"{row['samples']:,}" if isinstance(row["samples"], int) else "-"
                ended = "yes" if row["ended"] else f"no: killed after {seconds + max(60, seconds // 2)} s"
                print(f"| {workload} | {interp_name} | {tool} | {weight} | {per_hour} | {cpu} | {samples} | {ended} |",
                      flush=True)
                if "tail" in row:
                    print(f"<!-- {tool} said: {row['tail']!r} -->", flush=True)


if __name__ == "__main__":
    main()
