"""What `pytop FILE` runs: a recording shown again, in the live view with its time cursor, or
printed (--batch) over a range (--from, --to) in any of --batch's formats; and `pytop --diff
BASE NEW`, two recordings (or ranges of them) compared function by function."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

from . import errors
from .core.compare import CannotCompare, Span
from .core.compare import compare as compared
from .core.profile import Profile
from .core.snapshot import View, rows_of
from .core.when import When
from .delivery import deliver
from .record.host_payloads import HOST
from .record.host_replay import HostRecording, HostReplay, open_host_recording, recording_kind
from .record.prefix import range_tables
from .record.ranges import parse_span, window_range
from .record.recording import Recording, open_recording
from .record.replay import Replay
from .record.source import ReplaySource
from .report import compare as comparing
from .report import export, pprof, table
from .report import format as fmt
from .run import terminal_on_stderr


def chosen_range(recording: Recording | HostRecording, args: argparse.Namespace) -> tuple[int, int]:
    return windows_between(recording, args.time_from, args.time_to)


def say_notes(recording: Recording | HostRecording) -> None:
    """What a reader of the recording should know before its figures: bytes it could not read,
    an oldest part rotated away."""
    for note in (recording.damage_note(), rotation_note(recording)):
        if note:
            errors.say(f"pytop: {note}")


def rotation_note(recording: Recording | HostRecording) -> str | None:
    r = recording.rotation
    if r is None:
        return None
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.since))
    return (f"{recording.path} holds the session from {since} on: its oldest part ({fmt.byte_size(r.rotated)}) went "
            "to keep it within --record-max-size")


def say_damaged(count: int, what: str, where: str = "") -> None:
    """How many windows (or looks) of a range did not decode, if any: the figures leave them out."""
    if count:
        errors.say(f"pytop: {where}{count:,} {what}{'s' if count != 1 else ''} of the range could not be read "
                   "(damaged): the figures leave them out")


def windows_between(recording: Recording | HostRecording, begin: When | None, end: When | None) -> tuple[int, int]:
    try:
        return window_range([(w.start, w.end) for w in recording.windows], recording.start, begin, end)
    except ValueError as exc:
        raise errors.UsageError(f"{recording.path}: {exc}") from None


def replay(args: argparse.Namespace) -> int:
    if recording_kind(args.recording) == HOST:
        return replay_host(args)
    recording = open_recording(args.recording)
    say_notes(recording)
    first, last = chosen_range(recording, args)
    view = View(mode=args.mode, by_line=args.by_line, tasks=args.tasks)
    player = Replay(recording)
    try:
        if args.batch:
            return _print(player, view, first, last, args)
        return _show(player, view, first, last, args)
    finally:
        player.close()


def _print(player: Replay, view: View, first: int, last: int, args: argparse.Namespace) -> int:
    """The range as one window: the table a --batch run over that time would have printed."""
    snapshot = player.snapshot(last, view, first, whole=True)
    profile = player.profile(last, first)
    form = args.format or ("json" if args.json else "text")
    sort = table.SORT_CHOICES[args.sort]
    if form == "pprof":
        windows = player.recording.windows
        started = int(windows[first].start * 1e9)
        report = pprof.profile(profile, snapshot.mode, player.recording.run.rate, started,
                               int((windows[last].end - windows[first].start) * 1e9))
    else:
        report = table.render(snapshot, profile, form, sort, args.full_filenames).encode()
    deliver(report, args.output)
    say_damaged(player.damaged, "window")
    return 0


def _show(player: Replay, view: View, first: int, last: int, args: argparse.Namespace) -> int:
    from .ui.app import PytopApp

    source = ReplaySource(player, view, first, last, exporter=export.write_stamped)
    app = PytopApp(source, sort=table.SORT_CHOICES[args.sort], by_line=args.by_line, mode=args.mode,
                   full_filenames=args.full_filenames, handle_signals=True, export_dir=args.output_dir,
                   tasks=args.tasks, tune_gc=True, replay=True, baseline=args.baseline_span)
    with terminal_on_stderr():
        app.run()
    if source.failure:
        errors.say(f"pytop: the replay failed: {source.failure}")
        return 1
    return app.return_code or 0





def replay_host(args: argparse.Namespace) -> int:
    """A recording of the host's table: its looks in the table, stepped through with the time
    keys (from the range's last); or (--batch) the range printed as `pytop --batch --all` over
    that time would have printed it."""
    from .report import host

    recording = open_host_recording(args.recording)
    say_notes(recording)
    form = args.format or ("json" if args.json else "text")
    if args.batch and form not in ("text", "json"):
        raise errors.UsageError(f"{recording.path} is a recording of the host's table: it prints as text or json")
    first, last = chosen_range(recording, args)
    player = HostReplay(recording)
    try:
        if args.batch:
            processes, seconds, heats = player.summed(first, last)
            deliver((host.as_json if form == "json" else host.as_text)(processes, seconds, heats).encode(),
                    args.output)
            say_damaged(player.damaged, "look")
            return 0
        from .ui.picker import PickerApp

        with terminal_on_stderr():
            PickerApp(replay=player, at=last).run()
        return 0
    finally:
        player.close()


def compare(args: argparse.Namespace) -> int:
    """--diff BASE NEW: each side's range as one table, compared per second of its span; printed
    (--batch), or shown in a table of its own."""
    view = View(mode=args.mode, by_line=args.by_line, tasks=args.tasks)
    (base, base_profile), (now, now_profile) = (recorded_span(text, view) for text in args.diff)
    try:
        comparison = compared(base, now)
    except CannotCompare as exc:
        raise errors.UsageError(str(exc)) from None
    sort = comparing.CHANGE_SORT_CHOICES[args.sort]
    if not args.batch:
        from .ui.compare import ComparisonApp

        directory = args.output_dir or os.getcwd()
        with terminal_on_stderr():
            ComparisonApp(comparison, sort=sort, full_filenames=args.full_filenames,
                          export=lambda: comparing.write_comparison(directory, comparison, base_profile(),
                                                                    now_profile())).run()
        return 0
    form = args.format or ("json" if args.json else "text")
    if form == "json":
        report = comparing.as_json(comparison, sort)
    elif form == "collapsed":
        report = "".join(line + "\n" for line in comparing.diff_collapsed(comparison, base_profile(), now_profile()))
    else:
        report = comparing.as_text(comparison, sort, args.full_filenames)
    deliver(report.encode(), args.output)
    return 0


def baseline(args: argparse.Namespace) -> Span:
    """--baseline FILE[:FROM-TO], as the view compares against it."""
    return recorded_span(args.baseline, View(mode=args.mode, by_line=args.by_line, tasks=args.tasks),
                          "--baseline")[0]


def recorded_span(text: str, view: View, option: str = "--diff") -> tuple[Span, Callable[[], Profile]]:
    """One side of --diff: FILE or FILE:FROM-TO, as one table, and how to get its profile (its
    stacks: only an export of the comparison asks, and replaying a range for them costs)."""
    try:
        wanted = parse_span(text, os.path.exists)
    except ValueError as exc:
        raise errors.UsageError(f"{option}: {exc}") from None
    if recording_kind(wanted.path) == HOST:
        raise errors.UsageError(f"{option}: {wanted.path} is a recording of the host's table: {option} takes a "
                                "recording of a process's run")
    recording = open_recording(wanted.path)
    say_notes(recording)
    first, last = windows_between(recording, wanted.begin, wanted.end)
    # The range's tables by difference of the session's (record/prefix.py): a few key frames and
    # light reads. Else (a rotated or damaged file) the range replayed whole.
    tables = range_tables(recording, first, last)
    if tables is not None:
        rows = rows_of(tables.sums, tables.sums, tables.span, view.mode, view.by_line, view.tasks)
        seconds = tables.seconds
    else:
        player = Replay(recording)
        try:
            snapshot = player.snapshot(last, view, first, whole=True)
            say_damaged(player.damaged, "window", f"{wanted.path}: ")
        finally:
            player.close()
        rows, seconds = snapshot.rows, snapshot.run.elapsed  # (the session's seconds, as the live view counted them)

    def profile() -> Profile:
        again = Replay(recording)
        try:
            return again.profile(last, first)
        finally:
            again.close()

    windows = recording.windows
    label = (f"{wanted.path}, {fmt.wall_clock(windows[first].start)} to {fmt.wall_clock(windows[last].end)} "
             f"({seconds:,.1f} s), pid {recording.run.target.pid}, {recording.run.target.command}")
    return Span(rows, seconds, view.mode, view.by_line, recording.run.target.cwd, label), profile
