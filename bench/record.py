"""What `--record` costs and weighs: pytop's CPU (its whole process, the kernel's count) for
`--batch` runs on the same target with and without recording, the recording's size per hour,
how long opening it takes to its first table, and how long stepping the time cursor back takes
(each replayed from the start of the file); beside py-spy `record -f raw` over the same time.
With --open FILE: only the replay's times on FILE (the cursor's steps, the time axis, ranges).

    python bench/record.py [--python PATH] [--duration 60] [--runs 3] [--targets churn,pool,server]

Runs with and without recording alternate (a target's own pace drifts over minutes: one pair of
runs differed by 30% in samples either way); the medians are shown.

Targets: bench/workloads/churn.py (new code, threads and recursion all the time), a pool of
2,000 threads (bench/workloads/pool.py), the thread-per-request server (tests/targets/server.py)."""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {
    "churn": [str(ROOT / "bench/workloads/churn.py")],
    "pool": [str(ROOT / "bench/workloads/pool.py"), "2000"],
    "server": [str(ROOT / "tests/targets/server.py")],
}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def pytop(*args: str) -> tuple[float, float, dict[str, object]]:
    """CPU seconds, wall seconds, the JSON report."""
    before, started = children_cpu(), time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytop", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"pytop failed: {done.stderr}")
    return children_cpu() - before, time.monotonic() - started, json.loads(done.stdout)


def stepping(path: str, steps: int = 40, pace: float = 0.0) -> tuple[float, float, float, float]:
    """Seconds to the last window's table (as `pytop FILE` opens: the totals from the start),
    the 95th percentile of `steps` steps of the time cursor back from there, one window at a
    time and a minute at a time in turn (the `[` and `{` keys; forward again from the start),
    and a range of the second half
    as one window. pace: seconds between two steps, in which the replay works ahead as the
    view's replay thread does while no key is pressed (0: keys back to back)."""
    sys.path.insert(0, str(ROOT / "app"))
    from pytop.core.snapshot import View
    from pytop.record.recording import open_recording
    from pytop.record.replay import Replay

    started = time.monotonic()
    replay = Replay(open_recording(path))
    last = len(replay) - 1
    replay.snapshot(last, View())
    first = time.monotonic() - started
    windows = replay.recording.windows
    minute = max(1, round(60 / max((windows[-1].end - windows[0].start) / len(windows), 1e-3)))
    times, at, direction = [], last, -1
    for step in range(steps):
        deadline = time.monotonic() + pace
        while time.monotonic() < deadline and replay.warm(at, 0, stop=lambda until=deadline: time.monotonic() >= until):
            pass
        time.sleep(max(0.0, deadline - time.monotonic()))
        if at == 0 or at == last:  # (at an end, the steps turn: a step that stays put costs nothing)
            direction = 1 if at == 0 else -1
        at = max(0, min(last, at + direction * (1 if step % 2 == 0 else minute)))
        started = time.monotonic()
        replay.snapshot(at, View())
        times.append(time.monotonic() - started)
    back = statistics.quantiles(times, n=20)[-1]
    started = time.monotonic()
    replay.snapshot(last, View(), last // 2, whole=True)
    ranged = time.monotonic() - started
    replay.close()
    return first, back, ranged, statistics.median(times)


def time_axis(path: str) -> tuple[float, float]:
    """Seconds to the time axis's shape (a window in 64 read for its load), and to its every
    point, as the view's replay thread reads them while no key is pressed (the cursor at the
    end, its windows taken in first)."""
    sys.path.insert(0, str(ROOT / "app"))
    from pytop.core.snapshot import View
    from pytop.record.recording import open_recording
    from pytop.record.replay import Replay

    replay = Replay(open_recording(path))
    replay.snapshot(len(replay) - 1, View())
    timeline = replay.timeline
    started = time.monotonic()
    replay.fill_timeline(stop=lambda: timeline.shaped)
    shaped = time.monotonic() - started
    replay.fill_timeline(stop=lambda: False)
    whole = time.monotonic() - started
    replay.close()
    return shaped, whole


def comparing(path: str, pairs: int = 12) -> tuple[float, float, float]:
    """Seconds to start a range at the cursor (the `R` key, a second after the cursor came
    there), at worst over a few cursors a minute apart; and the median and worst of comparing
    two 10-minute ranges by difference (`--diff`'s way, record/prefix.py) at random places."""
    sys.path.insert(0, str(ROOT / "app"))
    import random

    from pytop.core.snapshot import View
    from pytop.record.prefix import range_tables
    from pytop.record.recording import open_recording
    from pytop.record.replay import Replay

    replay = Replay(open_recording(path))
    windows = replay.recording.windows
    last = len(windows) - 1
    minute = max(1, round(60 / max((windows[-1].end - windows[0].start) / len(windows), 1e-3)))
    starts = []
    for at in range(last, max(0, last - 6 * minute), -minute):
        replay.snapshot(at, View())
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and replay.warm(at, 0, stop=lambda until=deadline: time.monotonic() >= until):
            pass
        started = time.monotonic()
        replay.snapshot(at, View(), at)
        starts.append(time.monotonic() - started)
    replay.close()
    span = 10 * minute
    pick = random.Random(1)
    compares = []
    for _ in range(pairs if last >= 4 * span else 0):
        a = pick.randrange(0, last - 2 * span)
        b = pick.randrange(a + span, last - span)
        started = time.monotonic()
        range_tables(replay.recording, a, a + span - 1)
        range_tables(replay.recording, b, b + span - 1)
        compares.append(time.monotonic() - started)
    return (max(starts), statistics.median(compares) if compares else float("nan"),
            max(compares, default=float("nan")))


def py_spy_size(pid: int, seconds: float, directory: str) -> int | None:
    py_spy = shutil.which("py-spy") or shutil.which("py-spy", path=os.path.dirname(sys.executable))
    if py_spy is None:
        return None
    out = os.path.join(directory, "py-spy.raw")
    try:  # (on the pool of 2,000 threads it ran 12 minutes for 30 s of samples before it was stopped)
        subprocess.run([py_spy, "record", "--nonblocking", "-f", "raw", "-d", str(int(seconds)), "-o", out, "--pid",
                        str(pid)], capture_output=True, timeout=3 * seconds + 30)
    except subprocess.TimeoutExpired:
        return -1
    return os.path.getsize(out) if os.path.exists(out) else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=str(Path.home() / ".pyenv/versions/3.12.1/bin/python"))
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--targets", default="churn,pool,server")
    parser.add_argument("--open", metavar="FILE", help="only open FILE, a recording, and step through it")
    args = parser.parse_args()
    if args.open:
        for pace in (0.0, 1.0):
            first, back, ranged, back_median = stepping(args.open, pace=pace)
            how = "keys back to back" if not pace else f"a key every {pace:g} s, the replay working ahead between"
            print(f"{args.open}: opened to the last window {first:.2f} s; the time cursor back p95 {back:.3f} s "
                  f"(median {back_median:.3f} s; {how}); the second half as one range {ranged:.2f} s")
        shaped, whole = time_axis(args.open)
        print(f"{args.open}: the time axis's shape in {shaped:.3f} s, its every point in {whole:.2f} s")
        at_cursor, compare, compare_worst = comparing(args.open)
        print(f"{args.open}: a range begun at the cursor at worst {at_cursor:.3f} s; two 10-minute ranges "
              f"compared by difference: median {compare:.2f} s, at worst {compare_worst:.2f} s")
        return
    hour = 3600 / args.duration
    print(f"pytop --batch --duration {args.duration:g} at the defaults, with and without --record; "
          f"sizes per hour are extrapolated from the run")
    for name in args.targets.split(","):
        target = subprocess.Popen([args.python, *TARGETS[name]], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  cwd=str(ROOT / "tests/targets"))
        try:
            assert target.stdout is not None and target.stdout.readline()
            time.sleep(2)
            with tempfile.TemporaryDirectory() as directory:
                path = os.path.join(directory, "run.pytop")
                base = ("--batch", "--json", "--duration", str(args.duration), str(target.pid))
                plain_runs, recorded_runs = [], []
                for _ in range(args.runs):
                    cpu, _, report = pytop(*base)
                    plain_runs.append((cpu, report["samples"]))
                    if os.path.exists(path):
                        os.unlink(path)
                    cpu, _, recorded = pytop(*base, "--record", path)
                    recorded_runs.append((cpu, recorded["samples"]))
                plain_cpu, plain_samples = (statistics.median(v) for v in zip(*plain_runs))
                recorded_cpu, recorded_samples = (statistics.median(v) for v in zip(*recorded_runs))
                size = os.path.getsize(path)
                _, opened, _ = pytop("--batch", "--json", path)
                first, back, ranged, back_median = stepping(path)
                spy = py_spy_size(target.pid, args.duration, directory)
            print(f"\n{name}:")
            print(f"  pytop CPU (medians of {args.runs}): {plain_cpu:.2f} s plain ({plain_samples:,.0f} samples), "
                  f"{recorded_cpu:.2f} s recording ({recorded_samples:,.0f} samples): "
                  f"{100 * (recorded_cpu / plain_cpu - 1):+.1f}% CPU, "
                  f"{100 * (recorded_samples / plain_samples - 1):+.1f}% samples")
            print(f"  recording: {size / 1e6:.2f} MB in {args.duration:g} s, {size * hour / 1e6:.1f} MB per hour; "
                  f"{recorded['record']['windows']} windows, {recorded['record']['dropped']} lost")  # type: ignore[index]
            print(f"  pytop --batch FILE (the whole recording): {opened:.2f} s; in-process: opened to the last "
                  f"window {first:.2f} s, the time cursor back a window or a minute p95 {back:.3f} s (median "
                  f"{back_median:.3f} s), the second half as one range {ranged:.2f} s")
            if spy == -1:
                print(f"  py-spy record -f raw over {args.duration:g} s: had not ended after "
                      f"{3 * args.duration + 30:g} s")
            elif spy is not None:
                print(f"  py-spy record -f raw over {args.duration:g} s: {spy / 1e6:.2f} MB, "
                      f"{spy * hour / 1e6:.1f} MB per hour")
        finally:
            target.kill()
            target.wait()


if __name__ == "__main__":
    main()
