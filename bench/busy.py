#!/usr/bin/env python3
"""pytop on a host in trouble: what it takes from the target, how its screen answers, its memory.

  web      A Flask app (Werkzeug's threaded server: a thread per request) under a bounded load
           (4 clients on loopback, one request at a time each), while two busy processes keep both
           cores saturated. Phases of --seconds each, interleaved, --rounds times: no profiler;
           pytop at its defaults (the live view in tmux); py-spy at its defaults (`record`, 100 Hz,
           pausing the target); on a CPython 3.15 target, its own profiler
           (`python3.15 -m profiling.sampling attach`, 1 kHz). Per phase: requests/s, the
           profiler's CPU (% of one core); in pytop's phases, key press to redraw.
  tree     `T` on a thread 50,000 frames deep (the view opens the call tree), on the saturated
           host: the time from the key to the tree on screen.
  memory   pytop's live view for --minutes on the `churn` workload (new code, new threads,
           recursion bursts all the time): its RSS every 30 s, and at the end the share of time in
           rows that memory bounds made (--stats-file's catch_all_share).
  deep     The deep random recursion (`deep_random` workload, 4 threads) for --minutes: pytop's
           live view at its defaults, a key every 2 s as a user presses them; each minute its RSS
           and the keys' p95; at the end `T` (the call tree) from key to tree on screen, and the
           share of time in rows that memory bounds made (issue 33's hour).
  threads  The `pool` workload (2,000 threads) for --minutes: pytop's live view at its defaults,
           then py-spy (`record`, 100 Hz, nonblocking) for --peer-minutes (default as long):
           samples taken, CPU, CPU per sample; pytop's keys in the first and the last minute, and
           how long q takes.
Flask is installed (once) into ~/.cache/pytop/bench-site with pip; the interpreters come from
tools/provision_interpreters.py; py-spy from the environment (pip install py-spy).
Usage: bench/busy.py web|tree|memory|deep|threads [--seconds S] [--rounds N] [--minutes M]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tools"))
from live import key_latencies, screen, tmux, wait_for  # noqa: E402
from peers import py_spy  # noqa: E402

import provision_interpreters  # noqa: E402

SITE = Path(os.environ.get("PYTOP_BENCH_SITE", Path.home() / ".cache" / "pytop" / "bench-site"))
BUSY = "while True: pass"


def site() -> Path:
    """Flask and its dependencies, for any of the target interpreters (pure Python: markupsafe's
    compiled speed-ups are left out, its pure fallback serves every version)."""
    if not (SITE / "flask").is_dir():
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--target", str(SITE), "--no-binary",
                        "markupsafe", "flask"], check=True, env={**os.environ, "MARKUPSAFE_NO_EXTENSION": "1"})
    return SITE


def interpreter(name: str) -> dict:
    interps, problems = provision_interpreters.provision(provision_interpreters.default_cache())
    found = {i["name"]: i for i in interps}
    if name not in found:
        raise SystemExit(f"no {name}: {problems}")
    return found[name]


def staged(interp: dict, path: Path) -> str:
    """The path under which `interp` sees `path` (and the bench site)."""
    if interp["launch"] != "chroot":
        return str(path)
    inside = Path(interp["root"]) / "tmp" / "pytop-bench"
    inside.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, inside / path.name)
    return f"/tmp/pytop-bench/{path.name}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def started(argv: list[str], env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """A workload that prints "ready"; killed afterwards."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd="/")
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != b"ready":
            raise RuntimeError(f"{argv} did not start")
        yield proc
    finally:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def saturated() -> Iterator[None]:
    """Two busy processes: both cores kept busy."""
    procs = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(2)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


@contextlib.contextmanager
def pytop_live(pid: int, *options: str, stats: Path | None = None,
               quits: list[float] | None = None) -> Iterator[tuple[str, psutil.Process]]:
    """The real pytop in a tmux terminal, at its defaults unless `options` say; `quits` gets how
    long `q` took to end it."""
    session = f"pytop-busy-{uuid.uuid4().hex[:6]}"
    extra = f"--stats-file {stats} " if stats else ""
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40",
         f"{sys.executable} -m pytop {extra}{' '.join(options)} {pid}")
    try:
        wait_for(session, "Function (filename)", timeout=120)
        me = next(p for p in psutil.process_iter(["cmdline"])
                  if (p.info["cmdline"] or [""])[-1] == str(pid) and "pytop" in " ".join(p.info["cmdline"]))
        yield session, me
        start = time.monotonic()
        tmux("send-keys", "-t", session, "q")
        while not ended(me):  # tmux, not this script, reaps it: a zombie has ended
            if time.monotonic() - start > 30:
                raise RuntimeError("q did not end pytop within 30 s")
            time.sleep(0.005)
        if quits is not None:
            quits.append(time.monotonic() - start)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def ended(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def cpu_of(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return times.user + times.system


class Load:
    """The load generator: completed requests, read at a phase's edges."""

    def __init__(self, port: int, clients: int = 4):
        self.proc = subprocess.Popen([sys.executable, str(HERE / "workloads" / "load.py"), str(port), str(clients)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def count(self) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def phase(load: Load, seconds: float, tool: str, pid: int, interp: dict) -> dict:
    """One phase with `tool` watching the app: requests/s, the tool's CPU, pytop's keys."""
    result: dict = {"tool": tool}
    if tool == "none":
        before = load.count()
        time.sleep(seconds)
        result["rps"] = (load.count() - before) / seconds
        return result
    if tool == "pytop":
        with pytop_live(pid) as (session, me):
            time.sleep(2)  # its start-up is not the phase
            before, cpu, start = load.count(), cpu_of(me), time.monotonic()
            latencies: list[float] = []
            while time.monotonic() - start < seconds - 1:  # a key every 2 s: a user's pace, not a load
                latencies += key_latencies(session, 1)
                time.sleep(1.7)
            elapsed = time.monotonic() - start
            result.update(rps=(load.count() - before) / elapsed, cpu=100 * (cpu_of(me) - cpu) / elapsed,
                          keys=latencies)
        return result
    if tool == "py-spy":
        argv = [py_spy() or "py-spy", "record", "-p", str(pid), "-d", str(int(seconds) + 2), "-o", os.devnull,
                "-f", "raw"]
    else:  # CPython 3.15's profiler, run by the target's own interpreter
        argv = [*interp["argv"], "-m", "profiling.sampling", "attach", "-d", str(int(seconds) + 2), str(pid)]
    proc = psutil.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2)
    before, cpu, start = load.count(), cpu_of(proc), time.monotonic()
    time.sleep(seconds - 1)
    elapsed = time.monotonic() - start
    result.update(rps=(load.count() - before) / elapsed, cpu=100 * (cpu_of(proc) - cpu) / elapsed)
    proc.wait(60)
    return result


def web(args: argparse.Namespace) -> None:
    where = site()
    for name, peer in (("pyenv-3.12", "py-spy"), ("sid-3.15-loader", "tachyon")):
        if name not in args.targets:
            continue
        interp = interpreter(name)
        if peer == "py-spy" and not py_spy():
            print("py-spy not found (pip install py-spy): its phases are left out", file=sys.stderr)
            peer = ""
        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(where)}
        with started([*interp["argv"], staged(interp, HERE / "workloads" / "flask_app.py"), str(port)], env) as app, \
                saturated():
            load = Load(port)
            try:
                time.sleep(3)  # warm: the first requests compile templates
                results: list[dict] = []
                tools = [tool for tool in ("none", "pytop", peer) if tool]
                for round_no in range(args.rounds):
                    # Each round in another order: a machine whose pace drifts favours no tool.
                    for tool in tools[round_no % len(tools):] + tools[:round_no % len(tools)]:
                        if tool:
                            results.append(phase(load, args.seconds, tool, app.pid, interp))
                            print(f"  {name} {tool}: {results[-1].get('rps', 0):.1f} req/s", file=sys.stderr,
                                  flush=True)
            finally:
                load.close()
        report_web(name, results)


def report_web(name: str, results: list[dict]) -> None:
    base = statistics.mean(r["rps"] for r in results if r["tool"] == "none")
    print(f"\n{name}: Flask (threaded), 4 clients, both cores saturated by 2 busy processes")
    print(f"{'profiler':<14} {'req/s':>7} {'of none':>8} {'CPU':>6}  phases")
    for tool in dict.fromkeys(r["tool"] for r in results):
        mine = [r for r in results if r["tool"] == tool]
        rps = statistics.mean(r["rps"] for r in mine)
        cpu = f"{statistics.mean(r['cpu'] for r in mine):.1f}%" if "cpu" in mine[0] else "-"
        print(f"{tool:<14} {rps:>7.1f} {100 * rps / base:>7.0f}% {cpu:>6}  "
              + ", ".join(f"{r['rps']:.1f}" for r in mine))
    keys = [k for r in results if r["tool"] == "pytop" for k in r["keys"]]
    if keys:
        keys.sort()
        print(f"pytop keys: median {1000 * statistics.median(keys):.0f} ms, p95 "
              f"{1000 * keys[int(0.95 * (len(keys) - 1))]:.0f} ms, max {1000 * keys[-1]:.0f} ms over {len(keys)} "
              f"presses (goals: 50 / 150 ms)")


DEEP = """
import sys, threading, time
sys.setrecursionlimit(60_000)
threading.stack_size(1 << 30)
def recurse(n):
    if n > 0:
        return recurse(n - 1)
    print("ready", flush=True)
    while True:
        time.sleep(1)
threading.Thread(target=recurse, args=(50_000 - 4,)).start()
"""


def tree(args: argparse.Namespace) -> None:
    interp = interpreter("pyenv-3.12")
    with tempfile.NamedTemporaryFile("w", suffix=".py") as script:
        script.write(DEEP)
        script.flush()
        with started([*interp["argv"], script.name]) as deep, saturated(), pytop_live(deep.pid, "--mode", "wall") as (
                session, _):
            time.sleep(3)
            for key in ("/", "recurse", "Enter"):  # the table narrowed to it: T opens along its path
                tmux("send-keys", "-t", session, key)
                time.sleep(0.3)
            times = []
            for _ in range(args.rounds):
                start = time.monotonic()
                tmux("send-keys", "-t", session, "T")
                wait_for(session, "deep", timeout=60)  # the recursion's line: "recurse ... ×49,996 deep"
                times.append(time.monotonic() - start)
                tmux("send-keys", "-t", session, "T")
                wait_for(session, "Function (filename)")
                time.sleep(1)
            last = screen(session)
    print(f"T on a 50,000-frame stack, saturated host: first draw {1000 * times[0]:.0f} ms; "
          f"then median {1000 * statistics.median(times):.0f} ms, max {1000 * max(times):.0f} ms "
          f"(goal: 300 ms)")
    print(next((line.strip() for line in last.splitlines() if "recurse" in line), ""))


def memory(args: argparse.Namespace) -> None:
    interp = interpreter("pyenv-3.12")
    stats = Path(tempfile.mkstemp(suffix=".json")[1])
    with started([*interp["argv"], str(HERE / "workloads" / "churn.py")]) as churn, \
            pytop_live(churn.pid, stats=stats) as (session, me):
        start = time.monotonic()
        print("minute  RSS MiB", flush=True)
        while time.monotonic() - start < args.minutes * 60:
            time.sleep(30)
            print(f"{(time.monotonic() - start) / 60:6.1f}  {me.memory_info().rss / 2**20:7.1f}", flush=True)
        # Into the session's past (the live view remembers it, --record or not): back a minute
        # at a time, as a user looking for a spike, the replay working ahead between the keys.
        began = time.monotonic()
        tmux("send-keys", "-t", session, "{")
        wait_for(session, "The past")
        print(f"into the past: {time.monotonic() - began:.2f} s to the first table", flush=True)
        for _ in range(10):
            time.sleep(2)
            tmux("send-keys", "-t", session, "{")
        time.sleep(5)
        print(f"ten minutes back: RSS {me.memory_info().rss / 2**20:.1f} MiB", flush=True)
        tmux("send-keys", "-t", session, ">")
        wait_gone(session, "The past")
    result = json.loads(stats.read_text())
    stats.unlink()
    print(f"catch-all rows: {100 * result['catch_all_share']:.3f}% of the time (goal 1%); stack tree "
          f"{result['stack_nodes']:,} nodes; detail aged out for {100 * result['aged_share']:.1f}% of the time; "
          f"{result['samples']:,} samples at {result['rate']:.0f}/s")


def deep(args: argparse.Namespace) -> None:
    interp = interpreter("pyenv-3.12")
    stats = Path(tempfile.mkstemp(suffix=".json")[1])
    keys: list[float] = []
    rss: list[float] = []
    with started([*interp["argv"], str(HERE / "workloads" / "deep_random.py"), "4"]) as target, \
            pytop_live(target.pid, stats=stats) as (session, me):
        start = time.monotonic()
        print("minute  RSS MiB  keys p95 ms (that minute)", flush=True)
        while time.monotonic() - start < args.minutes * 60:
            minute: list[float] = []
            while len(minute) < 30 and time.monotonic() - start < args.minutes * 60:
                minute += key_latencies(session, 1)  # (it waits 0.3 s after the redraw)
                time.sleep(1.7)
            keys += minute
            rss.append(me.memory_info().rss / 2**20)
            print(f"{(time.monotonic() - start) / 60:6.1f}  {rss[-1]:7.1f}  {1000 * p95(minute):6.0f}", flush=True)
        trees = []
        for _ in range(3):
            began = time.monotonic()
            tmux("send-keys", "-t", session, "T")
            wait_gone(session, "Function (filename)")
            trees.append(time.monotonic() - began)
            tmux("send-keys", "-t", session, "T")
            wait_for(session, "Function (filename)")
            time.sleep(1)
    result = json.loads(stats.read_text())
    stats.unlink()
    print(f"{args.minutes:g} min on the deep random recursion (4 threads, pyenv 3.12), defaults: RSS "
          f"{rss[0]:.1f} MiB after the first minute, {max(rss):.1f} at most, {rss[-1]:.1f} at the end (goal: within "
          f"100, flat); keys p95 {1000 * p95(keys):.0f} ms, max {1000 * max(keys):.0f} ms over {len(keys)} presses "
          f"(goal: 150); T to the tree {', '.join(f'{1000 * t:.0f}' for t in trees)} ms (goal: under 1 s); "
          f"rows made by memory bounds {100 * result['catch_all_share']:.3f}% of the time (goal: none); "
          f"{result['samples']:,} samples at {result['rate']:.1f}/s")


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[int(0.95 * (len(ordered) - 1))] if ordered else float("nan")


def wait_gone(session: str, text: str, timeout: float = 30.0) -> None:
    start = time.monotonic()
    while text in screen(session):
        if time.monotonic() - start > timeout:
            raise RuntimeError(f"{text!r} never went")
        time.sleep(0.002)


def threads(args: argparse.Namespace) -> None:
    interp = interpreter("pyenv-3.12")
    seconds = args.minutes * 60
    stats = Path(tempfile.mkstemp(suffix=".json")[1])
    quits: list[float] = []
    with started([*interp["argv"], str(HERE / "workloads" / "pool.py"), "2000"]) as pool:
        with pytop_live(pool.pid, stats=stats, quits=quits) as (session, me):
            time.sleep(2)
            first = key_latencies(session, 10)
            cpu, start = cpu_of(me), time.monotonic()
            time.sleep(max(0.0, seconds - 30))
            last = key_latencies(session, 10)
            elapsed = time.monotonic() - start
            pytop_cpu = cpu_of(me) - cpu
        result = json.loads(stats.read_text())
        stats.unlink()
        print(f"pytop (defaults: 1,000/s asked, 5% budget), {args.minutes:g} min on 2,000 threads: "
              f"{result['rate']:.0f}/s over the run, {result['rate_now']:.0f}/s at the end, CPU "
              f"{100 * pytop_cpu / elapsed:.1f}%, {1e6 * pytop_cpu / max(result['samples'], 1):.0f} us a sample; "
              f"keys median {1000 * statistics.median(first):.0f} ms in the first minute, "
              f"{1000 * statistics.median(last):.0f} ms in the last; q ended it in {1000 * quits[0]:.0f} ms")
        if py_spy():
            peer_seconds = 60 * (args.peer_minutes or args.minutes)
            with tempfile.NamedTemporaryFile(suffix=".txt") as out:
                proc = psutil.Popen([py_spy() or "py-spy", "record", "--nonblocking", "-p", str(pool.pid), "-d",
                                     str(int(peer_seconds)), "-o", out.name, "-f", "raw"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                cpu, start = 0.0, time.monotonic()
                while proc.poll() is None:
                    with contextlib.suppress(psutil.Error):
                        cpu = cpu_of(proc)
                    time.sleep(1)
                elapsed = time.monotonic() - start
                stacks = sum(int(line.rpartition(" ")[2]) for line in Path(out.name).read_text().splitlines() if line)
            print(f"py-spy record --nonblocking (100/s asked): {stacks / elapsed:.0f} thread stacks/s "
                  f"({stacks / elapsed / 2000:.1f} samples/s of 2,000 threads), CPU {100 * cpu / elapsed:.1f}%")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("web", "tree", "memory", "deep", "threads"))
    parser.add_argument("--seconds", type=float, default=20.0, help="web: each phase")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--minutes", type=float, default=60.0, help="memory, deep, threads")
    parser.add_argument("--peer-minutes", type=float, default=None, help="threads: py-spy's run (default --minutes)")
    parser.add_argument("--targets", nargs="*", default=["pyenv-3.12", "sid-3.15-loader"],
                        choices=["pyenv-3.12", "sid-3.15-loader"], help="web: which apps")
    args = parser.parse_args()
    {"web": web, "tree": tree, "memory": memory, "deep": deep, "threads": threads}[args.what](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
