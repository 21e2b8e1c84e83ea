"""What the command line runs for the host's Python processes: `pytop --batch --all` (a report of
them), `pytop` without a PID (their table, Enter opening one's live view), and either with
--record FILE (the host's flight recorder: every look at the host written as it is taken)."""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import threading
import time
from collections.abc import Iterator
from dataclasses import replace

from . import errors
from .core.model import Heat, PythonProcess
from .delivery import deliver
from .record.host_recorder import HostRecorder
from .run import FOREVER, WENT_BACK, attach_child, ended_by_signals, stop_recording, terminal_on_stderr, watch
from .sampling import host as host_sampling
from .sampling.host import HostSampler

HOST_PRIMING_SECONDS = 0.5  # --batch --all: how long the first share of the CPU is measured over
LOOK_SECONDS = 2.0  # --batch --all --record: between two looks recorded (the table's refresh)


def host_table(args: argparse.Namespace) -> int:
    """`pytop --batch --all`: the host's Python processes, each one's CPU over --duration (or
    until Ctrl-C) as the kernel counts it, its threads and memory. With --record, a look every
    LOOK_SECONDS is recorded too, with the heats of its busiest (whom the sampler then follows)."""
    from .core.pools import busiest
    from .process.pythons import PythonScan
    from .report import host

    scan, first_share = PythonScan(), PythonScan()  # the run's CPU shares; the busiest's, early
    started = time.monotonic()
    heats: dict[int, Heat] = {}
    looks = Looks(args) if args.record else None
    sampler: HostSampler | None = None
    with ended_by_signals():  # SIGTERM, SIGHUP: no report; Ctrl-C at any moment: the report of the time so far
        try:
            first_share.look()
            scan.look()
            if looks is not None:
                looks.scan.look()
            started = time.monotonic()
            end = started + args.duration if math.isfinite(args.duration) else math.inf
            # one window: the run's (and with --record, the looks')
            sampler = host_sampler(args)(heats.update, window=FOREVER, also=looks.heats if looks else None)
            # The busiest, by a first share of the CPU, have their stacks sampled for the rest
            threading.Event().wait(min(HOST_PRIMING_SECONDS, args.duration / 4))
            sampler.watch(busiest(first_share.look()))
            sampler.start()
            while time.monotonic() < end:
                left = end - time.monotonic()
                if looks is None:
                    threading.Event().wait(None if math.isinf(left) else max(0.0, left))
                    break
                threading.Event().wait(max(0.0, min(LOOK_SECONDS, left)))
                sampler.watch(busiest(looks.take()))
        except KeyboardInterrupt:
            pass
        finally:
            if sampler is not None:
                sampler.stop()
            recorded = stop_recording(looks.recorder) if looks is not None else None
    processes = scan.look(maps=None)  # a report lists every one: all judged, however many
    # The shares are over the scan's own span (look to look), so a share times the duration said
    # is the CPU the kernel counted: a last look that judges a big host's every process takes time
    # the shares are not over (CI's failure: 2.8% more CPU said than was used).
    seconds = scan.seconds or time.monotonic() - started
    form = args.format or ("json" if args.json else "text")
    deliver((host.as_json if form == "json" else host.as_text)(processes, seconds, heats).encode(), args.output)
    return 1 if recorded is not None and recorded.dropped else 0


class Looks:
    """--batch --all --record: looks at the host, each recorded with the heats of the host
    sampler's windows that closed since the look before."""

    def __init__(self, args: argparse.Namespace):
        from .process.pythons import PythonScan

        self.recorder = HostRecorder(args.record, LOOK_SECONDS, args.cpu_budget / 100, max_size=args.record_max_size)
        self.scan = PythonScan()
        self.heats = (host_sampling.WINDOW_SECONDS, self.recorder.heats_came)  # (the host sampler's windows)

    def take(self) -> list[PythonProcess]:
        processes = self.scan.look()
        self.recorder.look(processes, self.scan.seconds)
        return processes


def host_sampler(args: argparse.Namespace) -> functools.partial[HostSampler]:
    """How the host's table samples its busiest processes: within pytop's CPU budget."""
    return functools.partial(HostSampler, attach_child, cpu_budget=args.cpu_budget / 100)


def host_views(args: argparse.Namespace) -> int:
    """`pytop` without a PID: the host's table of Python processes; Enter opens the live view of
    one (of a pool: its root's and every Python process's under it, as -s does), and b (or Esc
    with nothing open) in it comes back to the table as it was. With --record, the table's looks
    are recorded (while a process's view is open from it, the host's looks go on being recorded,
    without heats: the view's own sampling is the budget's)."""
    recorder = HostRecorder(args.record, LOOK_SECONDS, args.cpu_budget / 100,
                            max_size=args.record_max_size) if args.record else None
    args.record = None  # (a view opened from the table records nothing of its own)
    try:
        return _host_views(args, recorder)
    finally:
        stop_recording(recorder)


def _host_views(args: argparse.Namespace, recorder: HostRecorder | None) -> int:
    from .ui.picker import PickerApp, PickerState

    state, family = PickerState(), args.subprocesses  # (pytop -s without a PID: every pick with its family)
    while True:
        picker = PickerApp(state=state, sampler=host_sampler(args), recorder=recorder)
        with terminal_on_stderr():  # (2>log: the table still on the terminal)
            pid = picker.run()
        if pid is None:
            return 0  # the user left the table
        state, args.pid, args.back = picker.chosen, pid, True
        args.subprocesses = family or state.pool  # a pool: its root and every Python process under it
        try:
            with looking_on(recorder):
                status = watch(args, [])
        except errors.Interrupted:
            raise
        except errors.PytopError as exc:  # it ended, or cannot be read: said on the table
            state = replace(state, note=f"pid {pid}: {exc}")
            continue
        if status != WENT_BACK:
            return status


@contextlib.contextmanager
def looking_on(recorder: HostRecorder | None) -> Iterator[None]:
    """While a process's view is open from the recorded table: a look at the host every
    LOOK_SECONDS, recorded (one /proc stat file a process: no stacks, so no heats), so that the
    host's recording has no gap."""
    if recorder is None:
        yield
        return
    from .process.pythons import PythonScan

    stop = threading.Event()

    def look() -> None:
        scan = PythonScan()
        scan.look()
        while not stop.wait(LOOK_SECONDS):
            recorder.look(scan.look(), scan.seconds, sampled=False)

    thread = threading.Thread(target=look, name="pytop-host-looks", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(LOOK_SECONDS * 2)
