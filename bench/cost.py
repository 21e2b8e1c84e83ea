"""Where pytop's CPU goes, shape by shape, beside py-spy's (issue 33: measure first).

For each target shape it runs, each on the same running target:
- `pytop --batch --duration D` at the defaults: the whole process's CPU (the kernel's count of the
  child, start-up included), split into the sampling thread (the engine's own clock, from
  --stats-file), start-up (the median of 5 runs of --duration 0.001) and the rest (drains, aggregation, the
  report);
  samples a second, late and skipped;
- the same run under cProfile in every Python thread: the Python functions that cost the most;
- `py-spy record --rate 100 --duration D --nonblocking` (its defaults but for not pausing the
  target, which pytop never does): its CPU and samples;
- the live view (in tmux, 160x48, when tmux is here; --no-live: not) for D seconds after 5 to
  settle: the samples a second its header says, and its CPU split between the sampling thread
  and the Python threads (the screen, the drains, the session's memory), from /proc.

    python bench/cost.py [--python PATH] [--duration 10] [--no-live] [--output bench/results/cost.md]

The shapes: deep random recursion (bench/workloads/deep_random.py), 100 busy threads
(threads.py), a pool of 2,000 nappers (pool.py), a thread-per-request server
(tests/targets/server.py). The numbers are this machine's and this moment's: run it beside
nothing else."""

from __future__ import annotations

import argparse
import json
import os
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import peers

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ROOT / "bench" / "workloads"
SHAPES = {
    "deep random recursion": [str(WORKLOADS / "deep_random.py"), "4"],
    "100 busy threads": [str(WORKLOADS / "threads.py"), "100"],
    "2,000-thread pool": [str(WORKLOADS / "pool.py"), "2000"],
    "thread-per-request server": [str(ROOT / "tests" / "targets" / "server.py")],
}
STARTUP_RUNS = 5
PROFILED = """
import cProfile, runpy, sys, threading
profiles = [cProfile.Profile()]
run = threading.Thread.run
def profiled(self):
    p = cProfile.Profile()
    profiles.append(p)
    p.enable()
    try:
        run(self)
    finally:
        p.disable()
threading.Thread.run = profiled
out, sys.argv = sys.argv[1], ["pytop", *sys.argv[2:]]
profiles[0].enable()
try:
    runpy.run_module("pytop", run_name="__main__")
except SystemExit:
    pass
finally:
    profiles[0].disable()
    profiles[0].dump_stats(out)
    for k, p in enumerate(profiles[1:]):
        p.dump_stats(f"{out}.{k}")
"""


def start(python: str, argv: list[str]) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "tests" / "targets"))
    proc = subprocess.Popen([python, *argv], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert proc.stdout is not None
    proc.stdout.readline()  # "ready", or a JSON line
    time.sleep(1.0)  # let it settle into its shape
    return proc


# pytop as installed: its modules' bytecode cached (a machine that sets PYTHONDONTWRITEBYTECODE
# made every start-up compile pytop's sources again: 0.11-0.22 s of CPU a run that no user pays).
PYTOP_ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str], limit: float = 600.0, env: dict[str, str] | None = None) -> tuple[float, int]:
    """Run `command`; the CPU seconds the kernel counted for it (its threads and children), and
    its exit status (-9: killed, still running after `limit` seconds)."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + limit
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime, proc.returncode


WAITS = ("acquire", "get' of '_queue", "wait", "sleep", "select", "poll")  # time spent waiting, not working


def top_python(stats_base: Path, count: int = 8) -> list[tuple[str, float]]:
    """The Python functions with the most time of their own, over every thread's profile (the
    calls that only wait left out)."""
    files = [p for p in stats_base.parent.glob(stats_base.name + "*") if p.stat().st_size]
    stats = pstats.Stats(*map(str, files))
    rows = sorted(((key, value) for key, value in stats.stats.items()  # type: ignore[attr-defined]
                   if not any(w in key[2] for w in WAITS)), key=lambda item: -item[1][2])
    return [(f"{Path(f).name}:{line} {name}", tt) for (f, line, name), (_, _, tt, _, _) in rows[:count]]


def measure(python: str, shape: list[str], duration: float, work: Path, with_live: bool) -> dict[str, object]:
    pytop = [sys.executable, "-m", "pytop"]
    target = start(python, shape)
    try:
        stats_file = work / "stats.json"
        stats_file.unlink(missing_ok=True)
        # The median of 5: one run's CPU moves by a third from run to run on a shared machine.
        startup = statistics.median(timed([*pytop, "--batch", "--duration", "0.001", str(target.pid)],
                                          env=PYTOP_ENV)[0] for _ in range(STARTUP_RUNS))
        cpu, status = timed([*pytop, "--batch", "--duration", str(duration), "--json", "--stats-file",
                             str(stats_file), str(target.pid)], env=PYTOP_ENV)
        stats = json.loads(stats_file.read_text()) if stats_file.exists() else {}
        profile = work / "pytop.prof"
        subprocess.run([sys.executable, "-c", PROFILED, str(profile), "--batch", "--duration", str(duration),
                        str(target.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                       env=PYTOP_ENV)
        spy = peers.py_spy()
        spy_cpu = spy_samples = None
        if spy:
            raw = work / "spy.txt"
            spy_cpu, spy_status = timed([spy, "record", "--rate", "100", "--duration", str(int(duration)),
                                         "--nonblocking", "--format", "raw", "--output", str(raw), "--pid",
                                         str(target.pid)], limit=3 * duration)
            if spy_status == -9:
                spy_samples = -1  # still recording at three times the duration: killed, nothing written
            elif raw.exists():
                spy_samples = sum(int(line.rsplit(" ", 1)[1]) for line in raw.read_text().splitlines()
                                  if line.rsplit(" ", 1)[-1].isdigit())
        watched = live(target.pid, duration) if with_live else None
        return {"status": status, "cpu": cpu, "sampler_cpu": stats.get("sampler_cpu"), "startup": startup,
                "samples": stats.get("samples"), "rate": stats.get("rate"), "late": stats.get("late"),
                "skipped": stats.get("skipped"), "python": top_python(profile),
                "py_spy_cpu": spy_cpu, "py_spy_samples": spy_samples, "live": watched}
    finally:
        target.kill()
        target.wait()


def thread_ticks(pid: int) -> dict[str, int]:
    """CPU ticks so far of each thread of `pid`, summed by the threads' names."""
    ticks: dict[str, int] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # (a thread that ended meanwhile)
        ticks[name] = ticks.get(name, 0) + int(fields[11]) + int(fields[12])  # utime, stime
    return ticks


def live(target: int, duration: float) -> dict[str, object] | None:
    """The live view on `target` (tmux): the rate its header says, and the shares of a core its
    sampling thread and its other (Python) threads used over `duration` seconds."""
    if not shutil.which("tmux"):
        return None
    session = f"pytop-cost-{os.getpid()}"
    command = " ".join([sys.executable, "-m", "pytop", str(target)])
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "48", f"exec {command}"],
                   check=True, env=PYTOP_ENV)
    try:
        pane = int(subprocess.run(["tmux", "display", "-p", "-t", session, "#{pane_pid}"], capture_output=True,
                                  text=True, check=True).stdout)
        time.sleep(5.0)  # attached, settled
        before = thread_ticks(pane)
        time.sleep(duration)
        after = thread_ticks(pane)
        header = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True,
                                check=False).stdout
    finally:
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=False)
        time.sleep(1.0)
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True, check=False)
    hz = os.sysconf("SC_CLK_TCK")
    used = {name: (after.get(name, 0) - before.get(name, 0)) / hz / duration for name in after}
    rate = re.search(r"\(([\d,]+)/s of", header)
    return {"rate": int(rate.group(1).replace(",", "")) if rate else None, "sampling": used.get("pytop-sampling", 0.0),
            "python": sum(v for name, v in used.items() if name != "pytop-sampling")}


def report(results: dict[str, dict[str, object]], duration: float, python: str) -> str:
    lines = [f"# pytop's CPU by shape ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, target {python}, "
             f"{duration:g} s runs at the defaults)", "",
             "| shape | pytop CPU | sampling thread | start-up | the rest | samples/s | late | py-spy CPU (100/s) "
             "| py-spy samples/s |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for shape, r in results.items():
        cpu, sampler, startup = (float(r[k] or 0) for k in ("cpu", "sampler_cpu", "startup"))
        samples = float(r["samples"] or 0)
        late = f"{100 * float(r['late'] or 0) / samples:.1f}%" if samples else "-"
        spy = f"{float(r['py_spy_cpu']):.2f} s" if r["py_spy_cpu"] is not None else "-"
        spy_samples = r["py_spy_samples"]
        spy_rate = ("-" if spy_samples is None else "killed at 3x the duration" if spy_samples == -1
                    else f"{float(spy_samples) / duration:.0f}")
        lines.append(f"| {shape} | {cpu:.2f} s ({100 * cpu / duration:.1f}%) | {sampler:.2f} s | {startup:.2f} s "
                     f"| {max(0.0, cpu - sampler - startup):.2f} s | {float(r['rate'] or 0):.0f} | {late} | {spy} "
                     f"| {spy_rate} |")
    watched = {shape: r["live"] for shape, r in results.items() if r.get("live")}
    if watched:
        lines += ["", f"The live view (tmux 160x48, the defaults, {duration:g} s after 5 to settle): the rate its "
                  "header says, and its CPU by thread (% of a core):", "",
                  "| shape | samples/s | sampling thread | Python threads (screen, drains, the session's memory) |",
                  "| --- | ---: | ---: | ---: |"]
        for shape, w in watched.items():
            rate = w["rate"]  # type: ignore[index]
            lines.append(f"| {shape} | {rate if rate is not None else '-'} | {100 * w['sampling']:.2f}% "  # type: ignore[index]
                         f"| {100 * w['python']:.2f}% |")  # type: ignore[index]
    lines += ["", "Python functions with the most time of their own in pytop (cProfile, every thread; the "
              "sampling thread's C is not in it):", ""]
    for shape, r in results.items():
        lines.append(f"- {shape}: " + "; ".join(f"`{name}` {tt:.2f} s" for name, tt in r["python"]))  # type: ignore
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=str(Path.home() / ".pyenv/versions/3.12.1/bin/python"))
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--output")
    parser.add_argument("--no-live", action="store_true", help="leave the live view out")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as work:
        for shape, argv in SHAPES.items():
            results[shape] = measure(args.python, argv, args.duration, Path(work), not args.no_live)
            print(shape, {k: v for k, v in results[shape].items() if k != "python"}, file=sys.stderr, flush=True)
    text = report(results, args.duration, args.python)
    if args.output:
        Path(args.output).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
