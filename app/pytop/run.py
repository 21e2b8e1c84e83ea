"""What the command line runs: the live view and a run without a screen, each wired to a
sampler on a real target. Errors come out as PytopErrors (see errors.py)."""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import psutil

from . import errors
from .core.model import PushStatus, RecordStatus, Snapshot, TargetInfo
from .delivery import deliver, write_statistics
from .native import Unwinder, libdw, terminal_guarded
from .process.attach import Target, attach, command_line
from .report import export, pprof, table
from .report import format as fmt
from .sampling import priority
from .sampling.sampler import Sampler, Settings

# Imported where they are used: a --batch run needs none of them unless asked (--push, --record,
# --async), and they were a quarter of its start-up (0.07 s of 0.27 s of CPU).
if TYPE_CHECKING:
    from .core.compare import Span
    from .process.launch import Child
    from .push.destination import Destination
    from .push.sender import Pusher
    from .record.private import PrivateHistory
    from .record.queued import QueuedWriter
    from .record.recorder import Recorder


@dataclass
class Parent:
    """A target that is not Python, watched with --subprocesses for its Python descendants."""

    pid: int
    cmdline: str
    version: str = "not Python (its Python subprocesses are sampled)"  # see format.python_label
    unwinder: None = None

    def close(self) -> None:
        pass


NOT_PYTHON_AFTER = 1.0  # seconds: a started program that does not look like Python by then is not


def attach_target(pid: int, subprocesses: bool) -> Target | Parent:
    """The process to watch: with --subprocesses, one that is not Python is watched for its
    Python descendants (a shell script that starts Python later), as py-spy does."""
    try:
        return attach(pid)
    except errors.NotPython:
        if not subprocesses:
            raise
        return Parent(pid, command_line(pid))


def info_of(target: Target | Parent) -> TargetInfo:
    try:
        cwd = psutil.Process(target.pid).cwd()
    except (psutil.Error, OSError):
        cwd = None
    return TargetInfo(target.pid, target.cmdline, str(target.version), cwd)


def attach_child(pid: int) -> Unwinder:
    """How --subprocesses starts watching a new descendant."""
    return attach(pid).unwinder


def follow_exec(pid: int) -> tuple[Unwinder, TargetInfo]:
    """How a watched process that exec'd a Python program goes on being sampled."""
    target = attach(pid)
    return target.unwinder, info_of(target)


def notes_for(child_log: str | None) -> tuple[str, ...]:
    return (f"[its output: {child_log}]",) if child_log else ()


def last_words(sampler: Sampler, child: Child | None) -> None:
    """Before a hung shutdown is cut short: a started program must not outlive pytop."""
    sampler.stop(1.0)
    if child:
        child.end()


FOREVER = 1e7  # seconds: as good as no end
# How long the end of a run waits for a sample under way (one of a process of many thousand
# threads on a loaded machine is long), after the sampler's own wait: then it gives up, saying so.
STOP_PATIENCE = 60.0


@contextlib.contextmanager
def terminal_on_stderr() -> Iterator[None]:
    """Textual draws on stderr: with stderr sent to a file (2>log), the screen would go there and
    the terminal stay blank. While the view is up, stderr is the terminal that stdout is."""
    if (sys.stderr is not None and os.isatty(2)) or not os.isatty(1):
        yield
        return
    try:
        saved: int | None = os.dup(2)
    except OSError:  # stderr closed: it gets the terminal, and keeps it
        saved = None
    os.dup2(1, 2)
    try:
        yield
    finally:
        if saved is not None:
            os.dup2(saved, 2)
            os.close(saved)


WENT_BACK = -1  # not an exit status: the live view went back to the host's table


def run_live(target: Target | Parent, settings: Settings, *, sort: str, full_filenames: bool,
             child: Child | None = None, stats_file: str | None = None, follow_children: bool = False,
             export_dir: str | None = None, back: bool = False, pusher: Pusher | None = None,
             record: str | None = None, record_max_size: int | None = None, baseline: Span | None = None,
             history: bool = True) -> int:
    """The live view until the user quits (`back`: opened from the host's table; WENT_BACK when
    the user went back to it). history: without --record, the view remembers its session in a
    private temporary recording all the same (record/private.py), for its time keys."""
    from .process.stacks import stacks_now
    from .record.history import HistorySource
    from .ui.app import PytopApp

    if settings.realtime:
        priority.raise_process()
    info = info_of(target)
    recorder = start_recording(record, info, settings, record_max_size)
    private = start_history(info, settings, record_max_size) if history and recorder is None else None
    notes = notes_for(child.log_path if child else None)
    if isinstance(private, str):  # (why the view cannot remember: it goes on without a past)
        notes, private = (*notes, f"[no past: {private}]"), None
    if private is not None:
        recorder, record = private.recorder, private.path
    sampler = Sampler(target.unwinder, info, settings, attach_child if follow_children else None,
                      child.status if child else None, follow_exec, exporter=export.write_stamped, pusher=pusher,
                      recorder=recorder)
    # The d key reads stacks on its own; ptrace belongs to the sampling thread, which holds every
    # thread of the target with --blocking or --native: the native frames are not read then.
    held_by = "--native" if settings.native else "--blocking" if settings.blocking else None
    # With --record, the time keys step back into the session so far (the file being written).
    source = HistorySource(sampler, record, exporter=export.write_stamped,
                           private=private is not None) if record else sampler
    app = PytopApp(source, sort=sort, by_line=settings.by_line, mode=settings.mode, full_filenames=full_filenames,
                   notes=notes, handle_signals=True, export_dir=export_dir,
                   delay=settings.delay, last_words=lambda: last_words(sampler, child), tasks=settings.tasks,
                   tune_gc=True, stacks_now=functools.partial(stacks_now, held_by=held_by), back=back,
                   replay=None if record else False, baseline=baseline)
    try:
        with terminal_on_stderr(), terminal_guarded(2):
            app.run()
    finally:
        sampler.stop()
        target.close()
        stop_pushing(pusher)
        if private is not None:
            private.close()
        else:
            try:
                sampler.end_recording()
            finally:  # (the file is closed, and how it went said, whatever happened before)
                stop_recording(recorder)
        if stats_file:
            write_statistics(stats_file, sampler.statistics())
    if sampler.failure:  # it was on screen until the user quit; say it once more where it stays
        errors.say(f"pytop: sampling failed: {sampler.failure}")
        return 1
    if app.went_back:
        return WENT_BACK
    return app.return_code or 0  # Textual prints its own traceback and sets 1 when the screen failed


def start_pushing(destination: Destination | None) -> Pusher | None:
    """--push: the sender's thread, started (sampling hands it profiles)."""
    if destination is None:
        return None
    from .push.sender import Pusher

    pusher = Pusher(destination)
    pusher.start()
    return pusher


def stop_pushing(pusher: Pusher | None) -> PushStatus | None:
    """Once sampling has stopped: what is queued gets a few seconds to go; how it went is said
    in one line (the live view's screen has gone by then)."""
    if pusher is None:
        return None
    from .push.sender import FLUSH_SECONDS

    quiet_until = time.monotonic() + 0.5  # the last profile usually goes at once: nothing to say then
    while pusher.status().waiting and time.monotonic() < quiet_until:
        time.sleep(0.02)
    waiting = pusher.status().waiting
    if waiting:
        errors.say(f"pytop: sending the last {waiting:,} profile{'s' if waiting != 1 else ''} to "
                   f"{pusher.destination.shown} (at most {FLUSH_SECONDS:g} s)")
    status = pusher.close(FLUSH_SECONDS)
    errors.say(f"pytop: {fmt.push_summary(status)}")
    return status


def start_recording(path: str | None, info: TargetInfo, settings: Settings, max_size: int | None) -> Recorder | None:
    """--record FILE: the file opened and locked, the run's key frame written (a file pytop
    cannot write is refused before sampling starts); max_size: its bound (--record-max-size)."""
    if path is None:
        return None
    from .record.keys import RunRecord
    from .record.recorder import Recorder

    return Recorder(path, RunRecord(info, settings.rate, settings.cpu_budget, settings.mode, time.time()),
                    max_size=max_size)


def start_history(info: TargetInfo, settings: Settings, max_size: int | None) -> PrivateHistory | str:
    """The live view's memory of its session (no --record): a private temporary recording, or
    why there cannot be one."""
    from .record.keys import RunRecord
    from .record.private import PrivateHistory

    try:
        return PrivateHistory(RunRecord(info, settings.rate, settings.cpu_budget, settings.mode, time.time()),
                              max_size)
    except errors.UsageError as exc:
        return str(exc)


def stop_recording(recorder: QueuedWriter[Any] | None) -> RecordStatus | None:
    """Once sampling has stopped: the windows still queued are written, and how it went is said
    in one line."""
    if recorder is None:
        return None
    status = recorder.close()
    errors.say(f"pytop: {fmt.record_summary(status)}")
    return status


def shell_status(status: int | None) -> int:
    """pytop's exit status in batch mode: that of the program it started, if it ended by itself
    (killed by signal N: 128 + N, as a shell says), else 0."""
    if status is None:
        return 0
    return status if status >= 0 else 128 - status


def collect(sampler: Sampler, duration: float) -> tuple[Snapshot, errors.Interrupted | None]:
    """Run the sampler for `duration` seconds (or until the target exits, Ctrl-C, SIGTERM or
    SIGHUP) and return one snapshot covering the whole run, and the signal that ended it, if
    one did: the report is still written, then pytop ends as that signal says. (A `--batch
    --duration inf` started in the background by a script ignores Ctrl-C, as background jobs
    do: SIGTERM was its only way to end, and it wrote no report.)"""
    final: list[Snapshot] = []
    done = threading.Event()
    ended_by: errors.Interrupted | None = None

    def publish(snapshot: Snapshot) -> None:
        if snapshot.run.exited:
            final.append(snapshot)
            done.set()

    try:
        # (Ctrl-C while sampling starts too: its engine's thread samples before start() returns)
        sampler.start(publish)
        done.wait(duration if math.isfinite(duration) else None)  # inf: until the program ends
    except KeyboardInterrupt:
        pass
    except errors.Interrupted as signal_said:
        ended_by = signal_said
    finally:  # a signal too (errors.Interrupted): sampling ends before pytop does
        sampler.stop()
        if sampler.running:
            errors.say("pytop: waiting for the sample under way to end")
            deadline = time.monotonic() + STOP_PATIENCE
            while sampler.running and time.monotonic() < deadline:
                sampler.stop(1.0)
    if final:
        return final[0], ended_by
    if sampler.running:
        raise errors.PytopError(f"sampling did not stop (a sample of the target did not end within "
                                f"{STOP_PATIENCE:.0f} s): no report")
    return sampler.final_snapshot(), ended_by


@contextlib.contextmanager
def ended_by_signals() -> Iterator[None]:
    """SIGTERM or SIGHUP at any moment (start-up included: attaching may take seconds on a busy
    machine) ends pytop through its normal way out, so that a program it started ends with it.
    (The live view handles them itself while it runs.)"""

    def end(signum: int, _frame: object) -> None:
        raise errors.Interrupted(signum)

    previous = {sig: signal.signal(sig, end) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def watch(args: argparse.Namespace, command: list[str]) -> int:
    with ended_by_signals():
        return _watch(args, command)


def _watch(args: argparse.Namespace, command: list[str]) -> int:
    if args.native and libdw.why_unavailable():  # before anything starts
        raise errors.UsageError(f"--native: {libdw.why_unavailable()}")
    child = None
    if args.demo or command:
        # Imported here: a run of a command is the only one that needs subprocess and tempfile
        # (~10 ms of a ~190 ms start-up).
        from .process.launch import Child, demo_command

        child = Child(demo_command() if args.demo else command, quiet=not args.batch, log=args.child_output)
    try:
        target: Target | Parent | None
        if child:
            from .process.launch import attach_when_ready

            target = attach_when_ready(child, not_python_after=NOT_PYTHON_AFTER if args.subprocesses else None)
            target = target or Parent(child.pid, command_line(child.pid))
        else:
            target = attach_target(args.pid_option or args.pid, args.subprocesses)
        sort = table.SORT_CHOICES[args.sort]
        # (the capability, as --dump checks it; with -s, a child may have it where the target has not)
        if args.tasks and isinstance(target, Target) and not args.subprocesses and \
                not _tasks_supported(target):
            raise errors.UsageError(f"--async needs CPython 3.14 or newer (process {target.pid} runs "
                                    f"{target.version}: its threads do not say which asyncio task they run)")
        settings = Settings(rate=args.rate, delay=args.delay, mode=args.mode, by_line=args.by_line,
                            realtime=args.realtime, cpu_budget=args.cpu_budget / 100, blocking=args.blocking,
                            tasks=args.tasks, native=args.native)
        pusher = start_pushing(getattr(args, "destination", None))
        if args.batch:  # one window for the whole run
            settings = replace(settings, delay=min(args.duration + 3600, FOREVER), quick_start=False)
            info = info_of(target)
            recorder = start_recording(args.record, info, settings, args.record_max_size)
            sampler = Sampler(target.unwinder, info, settings, attach_child if args.subprocesses else None,
                              child.status if child else None, follow_exec, pusher=pusher, recorder=recorder)
            try:
                snapshot, ended_by = collect(sampler, args.duration)
            finally:
                pushed = stop_pushing(pusher)
                recorded = stop_recording(recorder)
            if pushed is not None:  # the report says how it went to the end
                snapshot = replace(snapshot, run=replace(snapshot.run, push=pushed))
            if recorded is not None:
                snapshot = replace(snapshot, run=replace(snapshot.run, record=recorded))
            if snapshot.run.failure:
                raise errors.PytopError(f"sampling failed: {snapshot.run.failure}")
            form = args.format or ("json" if args.json else "text")
            if form == "pprof":
                first = snapshot.sampled_from or time.monotonic() - snapshot.run.elapsed  # CLOCK_MONOTONIC
                started = time.time_ns() - int((time.monotonic() - first) * 1e9)
                duration = int(snapshot.run.elapsed * 1e9)
                report = pprof.profile(sampler.profile(), snapshot.mode, args.rate, started, duration)
            else:
                report = table.render(snapshot, sampler.profile(), form, sort, args.full_filenames).encode()
            deliver(report, args.output)
            if args.stats_file:
                write_statistics(args.stats_file, sampler.statistics())
            if ended_by is not None:  # reported: now ended as the signal asked (128 + its number)
                raise ended_by
            status = shell_status(sampler.status)
            # A script that pushes or records learns that the server or the file lacks some of the
            # run (the line said why).
            lost = (pushed is not None and pushed.lost) or (recorded is not None and recorded.dropped)
            return status or (1 if lost else 0)
        return run_live(target, settings, sort=sort, full_filenames=args.full_filenames, child=child,
                        stats_file=args.stats_file, follow_children=args.subprocesses, export_dir=args.output_dir,
                        back=args.back, pusher=pusher, record=args.record, record_max_size=args.record_max_size,
                        baseline=getattr(args, "baseline_span", None), history=args.history)
    finally:
        if child:
            child.end()
            log = child.finish_log()
            if log and not args.batch:
                errors.say(f"pytop: the program's output is in {log}")


def _tasks_supported(target: Target) -> bool:
    from .process import asyncio_tasks

    return asyncio_tasks.supported(target.layout)
