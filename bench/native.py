#!/usr/bin/env python3
"""Native stacks side by side: `pytop --dump --native`, `py-spy dump --native` and
`pystack remote --native` on the same target, one after another, --rounds times each.

The target (CPython 3.12 from pyenv, symbols and debug info) runs 7 threads: 6 sleep and one
spins, noting the longest gap between two of its iterations (a pause the tool imposed shows
there; so does a scheduler hiccup: "none", no tool, says how large those are here). One spinner
only: spinners sharing the GIL would wait for it 5 ms at a time. Per tool: the time one dump
takes (median), and the longest pause the spinner saw during a dump (median and worst over the
rounds). Usage: bench/native.py [--rounds N]
"""

from __future__ import annotations

import argparse
import shutil
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

TARGET = textwrap.dedent("""
    import sys, threading, time
    longest = [0.0]

    def spin():
        last = time.perf_counter()
        while True:
            now = time.perf_counter()
            if now - last > longest[0]:
                longest[0] = now - last
            last = now

    def sleep():
        time.sleep(1e6)

    threading.Thread(target=spin, daemon=True).start()
    for i in range(6):
        threading.Thread(target=sleep, daemon=True).start()
    print("ready", flush=True)
    for line in sys.stdin:  # each line: print the longest gap since the last line, and start again
        print(longest[0], flush=True)
        longest[0] = 0.0
""")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    interp = interpreter("pyenv-3.12")
    tools = {"none": ["true"], "pytop": [sys.executable, "-m", "pytop", "--dump", "--native"]}
    if py_spy():
        tools["py-spy"] = [py_spy() or "py-spy", "dump", "--native", "--pid"]
    pystack = shutil.which("pystack") or str(Path(sys.executable).parent / "pystack")
    if Path(pystack).exists():
        tools["pystack"] = [pystack, "remote", "--native"]
    with tempfile.NamedTemporaryFile("w", suffix=".py") as script:
        script.write(TARGET)
        script.flush()
        target = subprocess.Popen([*interp["argv"], script.name], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        assert target.stdin is not None and target.stdout is not None
        try:
            assert target.stdout.readline().strip() == "ready"
            time.sleep(1)
            results: dict[str, tuple[list[float], list[float]]] = {tool: ([], []) for tool in tools}
            for _ in range(args.rounds):
                for tool, argv in tools.items():
                    target.stdin.write("\n")
                    target.stdin.flush()
                    target.stdout.readline()  # gaps so far: forgotten
                    time.sleep(0.3)
                    start = time.monotonic()
                    subprocess.run([*argv, str(target.pid)], check=True, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
                    took = time.monotonic() - start
                    time.sleep(0.3)
                    target.stdin.write("\n")
                    target.stdin.flush()
                    results[tool][0].append(took)
                    results[tool][1].append(float(target.stdout.readline()))
        finally:
            target.kill()
            target.wait()
    print(f"{'tool':<8} {'dump takes (median)':>20} {'longest pause (median)':>24} {'(worst)':>9}")
    for tool, (times, pauses) in results.items():
        print(f"{tool:<8} {1000 * statistics.median(times):>17.0f} ms {1000 * statistics.median(pauses):>21.1f} ms "
              f"{1000 * max(pauses):>6.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
