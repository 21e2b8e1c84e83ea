#!/usr/bin/env python3
"""Whole stacks on a generator-heavy real app: the share of a profile's weight under roots that
are not a thread's first frame.

A Flask app (Werkzeug's threaded server, Jinja templates: generators everywhere) under a bounded
loopback load, optionally with two busy processes saturating the machine. pytop (`--batch
--format collapsed`, its defaults otherwise) and py-spy (`record -f raw`, its defaults) profile
it in turn for --seconds each, --rounds times. A thread's first frame is `<module>` (the main
thread) or threading's `_bootstrap` (every other): a stack rooted anywhere else was cut (its
outer frames were not read), and its weight is counted here, with the roots that held the most.
Usage: bench/roots.py [--seconds S] [--rounds N] [--targets NAME ...] [--quiet-host]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from busy import Load, free_port, interpreter, saturated, site, staged, started  # noqa: E402
from peers import py_spy  # noqa: E402

FIRST_FRAMES = ("<module>", "_bootstrap", "Thread._bootstrap")


def function_of(frame: str) -> str:
    """`name (file:line)` or `name (file)` -> name."""
    return frame.rsplit(" (", 1)[0].strip()


def cut_weight(collapsed: str) -> tuple[int, int, collections.Counter[str]]:
    """(weight under cut roots, all weight, weight by cut root) of a collapsed file, whose lines
    are `frame;frame;... weight`, outermost first; pytop's and py-spy's may start with process
    and thread items (`process ...`, `thread ...`), which are not frames."""
    cut, total, roots = 0, 0, collections.Counter[str]()
    for line in collapsed.splitlines():
        stack, _, weight = line.rpartition(" ")
        if not stack or not weight.isdigit():
            continue
        frames = [f for f in stack.split(";") if not f.startswith(("process ", "thread ", "Thread "))]
        total += int(weight)
        if not frames:
            continue
        root = function_of(frames[0])
        if root.startswith("(") or root in FIRST_FRAMES:  # pytop's own rows: "(idle)", "(torn)"...
            continue
        cut += int(weight)
        roots[root] += int(weight)
    return cut, total, roots


def pytop_profile(pid: int, seconds: float, out: Path) -> str:
    subprocess.run([sys.executable, "-m", "pytop", "--batch", "--format", "collapsed", "--duration", str(seconds),
                    "--output", str(out), str(pid)], check=True, stdout=subprocess.DEVNULL)
    return out.read_text()


def py_spy_profile(pid: int, seconds: float, out: Path) -> str:
    subprocess.run([py_spy() or "py-spy", "record", "-p", str(pid), "-d", str(int(seconds)), "-f", "raw", "-o",
                    str(out)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out.read_text()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--targets", nargs="*", default=["pyenv-3.12", "pyenv-3.10"])
    parser.add_argument("--quiet-host", action="store_true", help="no busy processes beside the app")
    args = parser.parse_args()
    tools = {"pytop": pytop_profile}
    if py_spy():
        tools["py-spy"] = py_spy_profile
    where = site()
    print(f"{'target':<16} {'tool':<7} {'under cut roots':>16}  top cut roots")
    for name in args.targets:
        interp = interpreter(name)
        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(where)}
        busy = saturated() if not args.quiet_host else contextlib.nullcontext()
        with started([*interp["argv"], staged(interp, HERE / "workloads" / "flask_app.py"), str(port)], env) as app, \
                busy, tempfile.TemporaryDirectory() as tmp:
            load = Load(port)
            try:
                for _ in range(args.rounds):
                    for tool, profile in tools.items():
                        cut, total, roots = cut_weight(profile(app.pid, args.seconds, Path(tmp) / f"{tool}.txt"))
                        share = 100 * cut / total if total else 0.0
                        top = ", ".join(f"{r} {100 * w / total:.2f}%" for r, w in roots.most_common(3))
                        print(f"{name:<16} {tool:<7} {share:>15.2f}%  {top}", flush=True)
            finally:
                load.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
