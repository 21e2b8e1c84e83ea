"""Pure text formatting for the screen and the batch report (tested without a terminal)."""

from __future__ import annotations

import signal
import time

from ..core.model import FunctionRow, PushStatus, RecordStatus, Snapshot
from ..core.modules import module_relative
from ..core.visible import visible_command

STALL_SECONDS = 0.02  # a sample that began this late (a stall of pytop's sampling) is named in the samples line
short_filename = module_relative  # a file name as short as it can be while still telling files apart


def where(row: FunctionRow, cwd: str | None, full: bool) -> str:
    name = row.filename if full else short_filename(row.filename, cwd)
    if row.line is not None:
        return f"{name}:{row.line}"
    return name


def seconds(value: float) -> str:
    if value >= 3600:
        return f"{value / 3600:.1f}h"
    if value >= 100:
        return f"{value:.0f}s"
    return f"{value:.2f}s"


def percent(value: float) -> str:
    return f"{value:.1f}%" if value < 1000 else f"{value:.0f}%"


def byte_size(value: int | None) -> str:
    if value is None:
        return "?"
    size = float(value)
    for unit in ("B", "KiB", "MiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def clock(value: float) -> str:
    whole = int(value)
    return f"{whole // 3600:02d}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def one_line(text: str) -> str:
    """A command line for one screen line: a `-c` script's newlines and tabs shown, not done
    (a target's command line is made so as it enters pytop: visible_command())."""
    return visible_command(text)


def threads_facts(s: Snapshot) -> list[str]:
    facts = [f"Mode: {s.mode},", f"GIL: {s.gil_pct:.1f}%,", f"Active: {s.active_pct:.1f}%,", f"Threads: {s.threads}"]
    if s.gc_pct is not None:
        facts[-1] += ","
        facts.append(f"GC: {s.gc_pct:.1f}%")
    return facts


def threads_line(s: Snapshot) -> str:
    return " ".join(threads_facts(s))


def samples_facts(s: Snapshot) -> list[str]:
    """How sampling goes, in short facts that a narrow screen can put on lines of their own
    (their punctuation included: joined by spaces, they read as one sentence)."""
    rate = [f"{s.rate:,.0f}/s" + (f" of {s.run.rate_asked:,.0f}/s" if s.run.rate_asked else "")]
    if s.run.rate_held is not None:  # pytop gives way rather than take more than its share
        rate.append(f"held down by pytop's {100 * s.run.cpu_budget:g}% CPU budget")
    # late_pct counts the slots skipped with the samples taken late: said apart
    asked = s.samples + s.skipped
    taken_late = 100.0 * s.late / asked if asked else 0.0
    skipped = 100.0 * s.skipped / asked if asked else 0.0
    if taken_late >= 0.05:
        rate.append(f"{taken_late:.1f}% late")
    if skipped >= 0.05:
        rate.append(f"{skipped:.1f}% skipped")
    if s.longest_delay >= STALL_SECONDS:  # what the target did in a stall is a guess: say so
        rate.append(f"a {1000 * s.longest_delay:,.0f} ms stall")
    rate = [part + "," for part in rate[:-1]] + [rate[-1] + "),"]
    rate[0] = "(" + rate[0]
    facts = [f"Samples: {s.samples:,} in {clock(s.run.elapsed)}", *rate, f"Errors: {100 * s.error_rate:.1f}%"]
    if s.run.pytop_cpu_pct is not None:
        facts[-1] += ","
        facts.append(f"pytop CPU {s.run.pytop_cpu_pct:.1f}%")
    if s.run.push is not None:
        facts[-1] += ","
        facts.append(f"pushed {s.run.push.sent:,}")
    for fact in record_facts(s):
        facts[-1] += ","
        facts.append(fact)
    return facts


def record_facts(s: Snapshot) -> list[str]:
    """--record: how big the recording has grown."""
    r = s.run.record
    if r is None or r.private:  # (the view's own memory: its time keys say it is there)
        return []
    return [f"recorded {byte_size(r.size)}"]


def wall_clock(seconds: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(seconds))


def replay_facts(s: Snapshot) -> list[str]:
    """A recording shown again: which window, and the range its totals cover."""
    p = s.run.replay
    if p is None:
        return []
    if p.private:
        said = "The past (> back to live):"
    else:
        said = f"{'The past (> back to live), recorded in' if p.live else 'Replay of'} {visible_command(p.path)}:"
    facts = [said, f"window {p.index + 1:,} of {p.windows:,}",
             f"({wall_clock(p.start)}-{wall_clock(p.end)}{', damaged: not shown' if p.gap else ''}),"]
    span = f"{wall_clock(p.range_start)}-{wall_clock(p.end)}"
    if p.first:
        facts.append(f"totals from {span} (R: the range starts at the cursor)")
    else:
        start = "the first window kept" if p.private else "the recording's start"
        facts.append(f"totals from {start}, {span}")
    return facts


def record_banner(s: Snapshot) -> str | None:
    """--record is failing, or had to give windows up: said while it lasts."""
    r = s.run.record
    if r is None or not (r.failing or r.dropped):
        return None
    return record_summary(r)


def record_summary(r: RecordStatus) -> str:
    """How --record went: `recorded 120 windows (1.2 MiB) to FILE`, with what was lost."""
    plural = "s" if r.windows != 1 else ""
    if r.private:
        said = f"the view's memory of the past holds {r.windows:,} window{plural} ({byte_size(r.size)})"
    else:
        said = f"recorded {r.windows:,} window{plural} ({byte_size(r.size)}) to {visible_command(r.path)}"
    if r.dropped:
        said += f"; {r.dropped:,} window{'s' if r.dropped != 1 else ''} lost (the disk did not keep up, or failed)"
    if r.failing:
        said += f"; writing fails now: {r.failing}"
    elif r.dropped and r.last_failure:
        said += f"; the last failure: {r.last_failure}"
    return said


def samples_line(s: Snapshot) -> str:
    return " ".join(samples_facts(s))


def python_label(version: str) -> str:
    """'Python 3.12.1', or what the target is when it is not Python (--subprocesses)."""
    return f"Python {version}" if version[:1].isdigit() else version


def usage_line(s: Snapshot) -> str:
    cpu = "?" if s.cpu_pct is None else f"{s.cpu_pct:.0f}%"
    return f"CPU: {cpu}, RSS: {byte_size(s.run.rss)}"


def error_banner(s: Snapshot) -> str | None:
    """py-spy's rule: shown once errors reach 1% after 100 samples."""
    if s.samples + s.errors >= 100 and s.error_rate >= 0.01:
        return f"Error rate {100 * s.error_rate:.1f}% (last: {s.run.last_error or 'unknown'})"
    return None


def behind_banner(s: Snapshot) -> str | None:
    """Sampling fell behind a busy machine: pytop skipped what it could not take on time (never
    catching up in a burst that would take more from the target)."""
    if s.run.skipped_share < 0.1:
        return None
    return (f"Behind on a busy machine: {100 * s.run.skipped_share:.0f}% of samples skipped lately (never made up in "
            "a burst); times stay the kernel's.")


def push_banner(s: Snapshot) -> str | None:
    """--push is failing, or has had to give profiles up: said while it lasts (the server's own
    words are data: made visible where they came in)."""
    push = s.run.push
    if push is None or not (push.failing or push.lost):
        return None
    return push_summary(push)


def push_summary(push: PushStatus) -> str:
    """How --push went: `pushed 6 profiles to http://host:4040`, with what failed."""
    said = f"pushed {push.sent:,} profile{'s' if push.sent != 1 else ''} to {push.server}"
    if push.dropped:
        said += f"; {push.dropped:,} dropped for room, the oldest first (the server did not take them in time)"
    if push.unsent:
        said += f"; {push.unsent:,} not sent by the end"
    if push.refused:
        said += f"; {push.refused:,} refused by the server ({push.last_refusal})"
    if push.failing:
        said += (f"; the last try failed: {push.failing}" if push.closed else
                 f"; failing now: {push.failing}, trying again ({push.waiting:,} waiting)")
    return said


def elsewhere_banner(s: Snapshot) -> str | None:
    """The process idles and a child of it computes: say so, and how to see it."""
    return s.run.work_elsewhere


def exit_status(status: int) -> str:
    """`exited with status 3`, `was killed by SIGSEGV` (a negative status: the signal)."""
    if status >= 0:
        return f"exited with status {status}"
    try:
        return f"was killed by {signal.Signals(-status).name}"
    except ValueError:
        return f"was killed by signal {-status}"


def exited_banner(s: Snapshot) -> str | None:
    if s.run.failure:
        return f"pytop failed: {s.run.failure}. The results below are the last it had; press q to quit."
    if s.run.stopped and not s.run.exited:
        which = ", ".join(str(pid) for pid in s.run.stopped)
        return (f"Process {which} is stopped (SIGSTOP, or a debugger holds it): nothing in it runs, so nothing "
                f"changes until it continues (kill -CONT {which}).")
    if not s.run.exited:
        return None
    if s.run.exit_reason and "exited" not in s.run.exit_reason:
        return f"Sampling stopped: {s.run.exit_reason}. The results below are final; press q to quit."
    how = "has exited" if s.run.exit_status is None else exit_status(s.run.exit_status)
    return f"Process {s.target.pid} {how}. The results below are final; press q to quit."
