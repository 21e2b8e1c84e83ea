"""The host's Python processes, many of them: what a table of them costs pytop, beside what
py-spy (which has no such table) costs to dump each in turn.

    python bench/host.py [--processes 200] [--busy 4] [--pool 16] [--looks 20] [--live 30]

Starts that many Python processes (a few computing, the rest asleep, as on a server; among them
a pool: a parent and its forked workers, one of them busy), then:
- pytop's look (`PythonScan.look`, what the picker and `--batch --all` do at each refresh): the
  first look's CPU and wall time (every program judged), and the later looks' (one stat file a
  process);
- `pytop --batch --all --duration 1`: the whole command's CPU and wall time, start-up included,
  and whether the busiest process it names is one of the busy ones;
- the live table (the picker, headless, with its host sampler) for --live seconds: how soon the
  first rows and the first hottest functions show, pytop's CPU (its whole process: the table,
  its looks and the sampling engine) against its 5% budget, how long keys take (p95), and
  whether the busiest process is named, with its hottest function, at every refresh;
- the same table in a real terminal (tmux, --terminal seconds): key press to the screen showing
  the new sort, beside tmux's own round trip, and pytop's CPU (its process, the kernel's count);
- `py-spy dump` of each process in turn (the nearest a py-spy user gets to the same question).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import peers

from pytop.process.pythons import PythonScan

KEYS = ["1", "2", "3", "4", "down", "down", "up", "1"]


def process_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def in_terminal(seconds: float) -> None:
    """`pytop` without a PID in tmux: keys 2 and 1 in turn, each timed until the table says its
    new sort; pytop's CPU meanwhile."""
    import uuid

    from live import screen, tmux, tmux_round_trips, wait_for

    session = f"pytop-hosts-{uuid.uuid4().hex[:6]}"
    tmux("new-session", "-d", "-s", session, "-x", "160", "-y", "50", f"{sys.executable} -m pytop")
    try:
        wait_for(session, "Which Python process?", timeout=60)
        wait_for(session, "%", timeout=60)
        pid = int(tmux("display-message", "-p", "-t", session, "#{pane_pid}").strip())
        time.sleep(3)  # its first windows of samples
        cpu, began = process_cpu(pid), time.monotonic()
        latencies = []
        while time.monotonic() - began < seconds:
            key, mark = ("2", "Sorted by RSS.") if len(latencies) % 2 == 0 else ("1", "Sorted by CPU%.")
            pressed = time.monotonic()
            tmux("send-keys", "-t", session, key)
            wait_for(session, mark)
            latencies.append(time.monotonic() - pressed)
            time.sleep(0.5)
        used = (process_cpu(pid) - cpu) / (time.monotonic() - began)
        shown = screen(session)
        tmux("send-keys", "-t", session, "q")
        trips = tmux_round_trips(20)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    latencies.sort()
    p95 = latencies[int(0.95 * (len(latencies) - 1))]
    print(f"the table in tmux, {seconds:.0f} s: keys p95 {1000 * p95:.0f} ms, median "
          f"{1000 * statistics.median(latencies):.0f} ms ({len(latencies)} keys; tmux's own round trip: median "
          f"{1000 * statistics.median(trips):.0f} ms); pytop's CPU {100 * used:.1f}% of a core with a key every "
          f"0.5 s; hottest shown: {'crunch' in shown}")


def thread_cpu() -> dict[str, float]:
    """This process's threads' CPU seconds by name (the kernel's count)."""
    ticks = os.sysconf("SC_CLK_TCK")
    found: dict[str, float] = {}
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/stat") as f:
                head, tail = f.read().rsplit(")", 1)
        except OSError:
            continue
        name, fields = head.split("(", 1)[1], tail.split()
        found[name] = found.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / ticks
    return found


async def live_table(seconds: float, busy: set[int]) -> None:
    """The picker with its host sampler, headless (no terminal: the keys' time is pytop's own),
    sorted by CPU: at each refresh, is the busiest row one of the busy programs, with its hottest
    function (`crunch`) named?"""

    from pytop.run import attach_child
    from pytop.sampling.host import HostSampler
    from pytop.ui.hosts import HostTable
    from pytop.ui.picker import PickerApp

    cpu, threads, began = time.process_time(), thread_cpu(), time.monotonic()
    app = PickerApp(refresh_seconds=2.0, sampler=functools.partial(HostSampler, attach_child))
    first_rows = first_hottest = None
    keys: list[float] = []
    refreshes = named = hottest_named = 0
    quiet_from: tuple[float, float] | None = None  # (CPU, clock) once the table is whole, no key pressed
    keys_from: tuple[float, float] | None = None  # ... from the second half on, keys pressed
    async with app.run_test(size=(160, 50)) as pilot:
        table = app.query_one(HostTable)
        await pilot.press("1")
        next_check = began + 2.0
        while time.monotonic() - began < seconds:
            await asyncio.sleep(0.1)
            if app.keys and first_rows is None:
                first_rows = time.monotonic() - began
            if not app.keys:
                continue
            top = app.lines[app.keys[0]]
            hot = table.cell(app.keys[0], "hottest")
            if first_hottest is None and hot.startswith("crunch"):
                first_hottest = time.monotonic() - began
            if quiet_from is None and first_hottest is not None:
                quiet_from = (time.process_time(), time.monotonic())
            if keys_from is None and time.monotonic() - began >= seconds / 2:
                keys_from = (time.process_time(), time.monotonic())
            if time.monotonic() >= next_check and first_hottest is not None:
                refreshes += 1
                named += bool({m.pid for m in top.row.members} & busy)
                hottest_named += hot.startswith("crunch")
                next_check += 2.0
                for key in KEYS if keys_from is not None else ():  # (ends sorted by CPU again)
                    pressed = time.perf_counter()
                    await pilot.press(key)
                    await pilot.pause()
                    keys.append(time.perf_counter() - pressed)
        ended = (time.process_time(), time.monotonic())
        floor = []  # a key the table does not take: what the pilot's press and pause cost alone
        for _ in range(20):
            pressed = time.perf_counter()
            await pilot.press("x")
            await pilot.pause()
            floor.append(time.perf_counter() - pressed)
    used = time.process_time() - cpu
    after = thread_cpu()
    split = ", ".join(f"{name} {100 * (after[name] - threads.get(name, 0.0)) / seconds:.1f}%"
                      for name in sorted(after, key=lambda n: threads.get(n, 0.0) - after[n])[:4])
    keys.sort()
    p95 = keys[int(0.95 * (len(keys) - 1))] if keys else float("nan")
    assert quiet_from is not None and keys_from is not None

    def share(start: tuple[float, float], end: tuple[float, float]) -> float:
        return 100 * (end[0] - start[0]) / (end[1] - start[1])

    print(f"the live table, {seconds:.0f} s: first rows after {first_rows or float('nan'):.2f} s, first hottest "
          f"function after {first_hottest or float('nan'):.2f} s; pytop's CPU {100 * used / seconds:.1f}% of a core "
          f"in all (start-up included), {share(quiet_from, keys_from):.1f}% while nobody pressed a key, "
          f"{share(keys_from, ended):.1f}% with {len(KEYS)} keys every 2 s (its budget 5%; by thread: {split}); "
          f"keys p95 {1000 * p95:.0f} ms (median "
          f"{1000 * statistics.median(keys or [0]):.0f} ms, {len(keys)} keys; an unbound key, the pilot's own floor: "
          f"median {1000 * statistics.median(floor):.0f} ms); at {refreshes} refreshes sorted by CPU "
          f"the busiest row was a busy program's {named} times, its hottest function named {hottest_named} times")


IDLE = "import time, sys; print('ready', flush=True); time.sleep(3600)"
BUSY = "import sys; print('ready', flush=True)\ndef crunch():\n    while True: sum(range(1000))\ncrunch()"
POOL = """\
import os, sys, time
def serve():
    while os.getppid() == parent: sum(range(1000))
workers, parent = int(sys.argv[1]), os.getpid()
for n in range(workers):
    if os.fork() == 0:
        if n == 0:
            serve()
        while os.getppid() == parent: time.sleep(0.5)
        os._exit(0)
print('ready', flush=True)
time.sleep(3600)
"""


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall and CPU seconds of a command (its CPU from the kernel's count of reaped children)."""
    cpu, wall = children_cpu(), time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True)
    return time.monotonic() - wall, children_cpu() - cpu, done


def recording(seconds: float) -> None:
    """`pytop --batch --all --duration SECONDS`, then the same with --record: what recording the
    host's looks adds to pytop's CPU, what the file weighs an hour, and what reading it back takes
    (the whole recording summed, as `pytop --batch FILE` prints it)."""
    import tempfile

    from pytop.record.host_replay import HostReplay, open_host_recording

    base = [sys.executable, "-m", "pytop", "--batch", "--all", "--json", "--duration", str(seconds)]
    _, plain_cpu, _ = timed(base)
    with tempfile.TemporaryDirectory() as where:
        path = os.path.join(where, "host.pytop")
        _, recording_cpu, done = timed([*base, "--record", path])
        size = os.path.getsize(path)
        cpu, wall = time.process_time(), time.perf_counter()
        replay = HostReplay(open_host_recording(path))
        processes, _, _ = replay.summed(0, len(replay) - 1)
        read = (time.process_time() - cpu, time.perf_counter() - wall)
        looks = len(replay)
        replay.close()
        shown_wall, _, shown = timed([sys.executable, "-m", "pytop", "--batch", path])
    print(f"pytop --batch --all --duration {seconds:g}: {plain_cpu:.2f} s of CPU; with --record {recording_cpu:.2f} s "
          f"(+{100 * (recording_cpu - plain_cpu) / plain_cpu:.0f}%), {looks} looks, {size:,} bytes "
          f"({size / 1e6 * 3600 / seconds:.2f} MB an hour; {size / max(looks, 1):,.0f} bytes a look of "
          f"{len(processes)} processes); read back and summed in {1000 * read[1]:.0f} ms ({1000 * read[0]:.0f} ms "
          f"of CPU); `pytop --batch FILE` {shown_wall:.2f} s, exit {shown.returncode}; batch exit {done.returncode}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, default=200)
    parser.add_argument("--busy", type=int, default=4)
    parser.add_argument("--pool", type=int, default=16, help="workers of the pool among the processes")
    parser.add_argument("--looks", type=int, default=20)
    parser.add_argument("--live", type=float, default=30.0, help="seconds of the live table")
    parser.add_argument("--terminal", type=float, default=30.0, help="seconds of the table in tmux")
    parser.add_argument("--record", type=float, default=60.0,
                        help="seconds of `pytop --batch --all` with and without --record (0: not measured)")
    args = parser.parse_args()
    alone = args.processes - args.pool - 1
    started = [subprocess.Popen([sys.executable, "-c", BUSY if i < args.busy else IDLE], stdout=subprocess.PIPE)
               for i in range(alone)]
    started.append(subprocess.Popen([sys.executable, "-c", POOL, str(args.pool)], stdout=subprocess.PIPE))
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
        if args.record:
            recording(args.record)
        if args.live:
            asyncio.run(live_table(args.live, busy))
        if args.terminal:
            in_terminal(args.terminal)
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
