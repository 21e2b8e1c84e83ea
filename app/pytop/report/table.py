"""The final table of a run without a screen (`pytop --batch`), as text or JSON, or every stack
sampled as collapsed stacks or speedscope JSON."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from ..core.model import MODE_HELP, FunctionRow, ReplayPosition, Snapshot, ThreadRow
from ..core.profile import Profile
from ..core.visible import visible_command
from . import export
from . import format as fmt

SORT_FIELDS = ("own_pct", "total_pct", "own_time", "total_time")
# --sort values (py-spy's key numbers too) -> the field they sort by
SORT_CHOICES = {"own": "own_pct", "total": "total_pct", "owntime": "own_time", "totaltime": "total_time",
                "1": "own_pct", "2": "total_pct", "3": "own_time", "4": "total_time"}


def ordered(rows: tuple[FunctionRow, ...], sort: str) -> list[FunctionRow]:
    if sort not in SORT_FIELDS:
        raise ValueError(f"cannot sort by {sort!r}")
    return sorted(rows, key=lambda r: (-getattr(r, sort), -r.total_time, r.function, r.filename, r.line or 0))


def as_text(s: Snapshot, sort: str, full_filenames: bool, limit: int | None = None, pids: bool = False) -> str:
    """`pids`: each row says whose it is (a run that followed children; rows of several
    processes say so in any case: forked children's rows were otherwise the same)."""
    t = s.target
    lines = [
        f"pytop: pid {t.pid}, {t.command}, {fmt.python_label(t.python_version)}",
        f"{fmt.samples_line(s)}, Duration: {s.run.elapsed:.1f} s",
        f"{fmt.threads_line(s)} ({MODE_HELP[s.mode]})",
        f"The kernel counted {s.cpu_time:.2f} s of CPU for the process; the table adds up to {s.attributed:.2f} s "
        f"of {s.mode} time",
    ]
    if s.run.work_elsewhere:
        lines.append(s.run.work_elsewhere)
    for said in (fmt.push_summary(s.run.push) if s.run.push is not None else None,
                 fmt.record_summary(s.run.record) if s.run.record is not None else None, replay_summary(s)):
        if said:
            lines.append(said[:1].upper() + said[1:] + ".")
    if s.run.exited:
        if s.run.exit_status is None:
            lines.append(f"The process exited during the run ({s.run.exit_reason}).")
        else:
            lines.append(f"The process {fmt.exit_status(s.run.exit_status)} during the run.")
    lines += ["", f"{'%Own':>7} {'%Total':>7} {'OwnTime':>9} {'TotalTime':>10}  Function (filename)"]
    rows = ordered(s.rows, sort)
    pids = pids or len({row.pid for row in rows}) > 1
    for row in rows[:limit]:
        whose = f"[{row.pid}] " if pids else ""
        lines.append(f"{fmt.percent(row.own_pct):>7} {fmt.percent(row.total_pct):>7} "
                     f"{fmt.seconds(row.own_time):>9} {fmt.seconds(row.total_time):>10}  "
                     f"{whose}{row.function} ({fmt.where(row, t.cwd, full_filenames)})")
    return "\n".join(lines) + "\n"


def replay_record(p: ReplayPosition) -> dict[str, object]:
    """Where a replay stands, as --json says it: not the view's time axis (its points are what
    the view has read so far, not figures of the range)."""
    record = dataclasses.asdict(p)
    del record["timeline"]
    return record


def replay_summary(s: Snapshot) -> str | None:
    """A range of a recording: which, and its time."""
    p = s.run.replay
    if p is None:
        return None
    return (f"replay of {visible_command(p.path)}: {fmt.wall_clock(p.range_start)} to {fmt.wall_clock(p.end)} "
            f"(windows {p.first + 1:,} to {p.index + 1:,} of {p.windows:,})")


def render(s: Snapshot, profile: Profile, form: str, sort: str, full_filenames: bool) -> str:
    """The report in one of the --format choices; `profile` holds every stack counted."""
    if form == "text":
        return as_text(s, sort, full_filenames, pids=profile.subprocesses)
    if form == "json":
        return as_json(s, sort)
    if form == "collapsed":
        return "".join(line + "\n" for line in export.collapsed(profile.counts, profile.book, s.mode,
                                                                 profile.subprocesses))
    labels = profile.thread_labels()
    document = export.speedscope(profile.counts, profile.book, s.mode, lambda t: labels.get(t, f"thread {t}"),
                                 f"pytop: pid {s.target.pid}, {s.target.command}")
    return json.dumps(document) + "\n"


def thread_record(t: ThreadRow) -> dict[str, Any]:
    # A row of folded finished threads says what it stands for ("12 finished threads").
    return {"pid": t.pid, "thread_id": t.thread_id or None, "native_id": t.native_id,
            "name": t.label if t.folded else t.name, "alive": t.alive, "native": t.native, "threads": t.threads,
            "folded": t.folded, "samples": t.samples,
            "cpu_time": round(t.cpu_time, 6), "own_time": round(t.own_time, 6), "wait_time": round(t.wait_time, 6),
            "unplaced_time": round(t.unplaced_time, 6),
            "active_pct": round(t.active_pct, 3), "gil_pct": round(t.gil_pct, 3), "errors": t.errors,
            "last_error": t.last_error}


def as_json(s: Snapshot, sort: str) -> str:
    functions: list[dict[str, Any]] = []
    for row in ordered(s.rows, sort):
        entry: dict[str, Any] = {"function": row.function, "filename": row.filename, "pid": row.pid}
        if row.native:
            entry["native"] = True  # filename is its library
        if row.line is not None:
            entry["line"] = row.line
        entry.update(own=row.own_count, total=row.total_count, own_time=round(row.own_time, 6),
                     total_time=round(row.total_time, 6), own_pct=round(row.own_pct, 3),
                     total_pct=round(row.total_pct, 3))
        functions.append(entry)
    document = {
        "pid": s.target.pid,
        "command": s.target.command,
        "python_version": s.target.python_version,
        "mode": s.mode,
        "samples": s.samples,
        "errors": s.errors,
        "torn_stacks": s.torn,
        "duration": round(s.run.elapsed, 6),
        "rate_asked": s.run.rate_asked,
        "rate_achieved": round(s.samples / s.run.elapsed, 3) if s.run.elapsed else 0.0,
        "late_pct": round(s.late_pct, 3),
        "skipped": s.skipped,
        "rate_held": s.run.rate_held,
        "cpu_budget_pct": round(100 * s.run.cpu_budget, 3),
        "longest_delay_ms": round(1000 * s.longest_delay, 3),
        "sampled_from": s.sampled_from,
        "sampled_until": s.sampled_until,
        "cpu_time": round(s.cpu_time, 6),
        "unseen_cpu_time": round(s.unseen_time, 6),
        "attributed_time": round(s.attributed, 6),
        "sampler_cpu_time": round(s.run.sampler_cpu, 6),
        "start_up_cpu_time": round(s.run.start_up_cpu, 6),  # pytop's, to its first read's end
        "stacks_coarsened": s.run.stacks_coarsened,  # kept as their frames only: the tree had no room
        "stacks_dropped": s.run.stacks_dropped,  # not even so: an overflow row (memory)
        "gil_pct": round(s.gil_pct, 3),
        "active_pct": round(s.active_pct, 3),
        "threads": s.threads,
        "exited": s.run.exited,
        "exit_reason": s.run.exit_reason,
        "exit_status": s.run.exit_status,
        "by_line": s.by_line,
        "stack_samples": sum(row.own_count for row in s.rows if row.line is None or s.by_line),
        "per_thread": [thread_record(t) for t in s.thread_rows],
        "gc_pct": None if s.gc_pct is None else round(s.gc_pct, 3),
        "push": None if s.run.push is None else dataclasses.asdict(s.run.push),
        "record": None if s.run.record is None else dataclasses.asdict(s.run.record),
        "replay": None if s.run.replay is None else replay_record(s.run.replay),
        "functions": functions,
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
