"""The live view's baseline (B, or --baseline FILE[:FROM-TO]): a span of time the table is
compared against, function by function, as `pytop --diff` compares two recordings.

In a running process's view, B makes the totals so far the baseline and the totals start again
from that moment: the table then shows, per second, what ran since against what ran before, so
a regression shows while it happens. In a recording (or the past of the live view), B makes the
range shown the baseline; move the cursor, start another range with R, and the table compares
it. Both sides are taken per second of their own span (core/compare.py)."""

from __future__ import annotations

from ..core.compare import CannotCompare, Comparison, Span, compare
from ..core.model import Snapshot
from ..report import format as fmt


def span_seconds(s: Snapshot) -> float:
    """The seconds a snapshot's totals cover: since the reset live, the range's in a recording
    (the session's seconds, as the live view counted them)."""
    return max(s.run.elapsed, 0.0)


def span_label(s: Snapshot, marked_at: float) -> str:
    """What a baseline made of the snapshot is: its range, or the time up to the mark (wall
    clock) live."""
    place = s.run.replay
    if place is not None:
        return f"{fmt.wall_clock(place.range_start)} to {fmt.wall_clock(place.end)}"
    return f"the {fmt.clock(span_seconds(s))} up to {fmt.wall_clock(marked_at)}"


def span_of(s: Snapshot, label: str) -> Span:
    """The snapshot's totals as one side of a comparison."""
    return Span(s.rows, span_seconds(s), s.mode, s.by_line, s.target.cwd, label)


MIN_SECONDS = 0.5  # a span shorter than this is not taken per second (its first refresh after B)


def compared(baseline: Span, s: Snapshot) -> Comparison | str | None:
    """The snapshot's totals against the baseline, or why they cannot be compared, or None
    while the span since is too short to take per second yet (the view waits for it)."""
    now = span_of(s, "since")
    if 0 < now.seconds < MIN_SECONDS:
        return None
    return compared_spans(baseline, now)


def compared_spans(baseline: Span, now: Span) -> Comparison | str:
    """Per second of a few milliseconds (the view's refresh just after B started the totals
    again), a function's time read +28,572%: a baseline that short is refused."""
    for side, what in ((baseline, "the baseline"), (now, "the span compared")):
        if 0 < side.seconds < MIN_SECONDS:
            return (f"{what} covers {side.seconds:.2f} s: too short to compare per second (at least "
                    f"{MIN_SECONDS:g} s; B marks a new baseline, or drops this one)")
    try:
        return compare(baseline, now)
    except CannotCompare as exc:
        return f"{exc} (B marks a new baseline, or drops this one)"
