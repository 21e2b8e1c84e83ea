"""The header's time axis for a recording shown again (or a live view's past): the target's CPU
over the whole recording as bars, the range the totals cover marked, the cursor's window
reversed, the clock at either end; and the live view's session so far the same way (its cursor
the present). Pure: an Axis in, a line of text out."""

from __future__ import annotations

from typing import NamedTuple

from rich.text import Text

from ..core.model import ReplayPosition
from ..report import format as fmt
from .trends import BARS

MIN_BARS = 8
RANGE_STYLE, OUTSIDE_STYLE, CURSOR_STYLE = "bold yellow", "cyan", "bold reverse yellow"
NOT_READ, NOTHING = "·", " "  # a point not read yet; nothing to show (a damaged frame, a window too short)
UNREAD_POINT = -1.0  # (ReplayPosition.timeline's mark of a point not read yet; -2 a gap)


def bar_spans(points: int, bars: int) -> list[tuple[int, int]]:
    """Each bar's points [lo, hi): several points averaged into a bar when there are more points
    than bars, a point drawn over several bars when there are fewer."""
    return [(b * points // bars, max(b * points // bars + 1, (b + 1) * points // bars)) for b in range(bars)]


def point_of(index: int, windows: int, points: int) -> int:
    """The point window `index` is in (points stand for equal runs of windows, the first ones
    taking the remainder as record/timeline.py cuts them)."""
    if windows <= 0 or points <= 0:
        return 0
    for p in range(min(points - 1, index * points // windows), points):
        if (p + 1) * windows // points > index:
            return p
    return points - 1


class Axis(NamedTuple):
    """What the axis draws: a point a run of windows, where the cursor and the range are."""

    series: tuple[float, ...]  # the target's CPU (100 = a core); UNREAD_POINT, or -2 for a gap
    windows: int  # the points stand for these, in equal runs
    cursor: int  # the cursor's window
    first: int  # the range's first window
    start: float  # wall-clock seconds at the first window's start
    end: float  # ... at the last window's end
    ends: tuple[float, ...] = ()  # (a live view's session) each window's end: where a click goes


def axis_of(place: ReplayPosition) -> Axis:
    return Axis(place.timeline, place.windows, place.index, place.first, place.recording_start, place.recording_end)


class Layout(NamedTuple):
    label: str  # what the bars stand for, and the first window's clock
    bars: int
    end: str  # the last window's clock
    top: float  # the CPU a full bar stands for


def layout(axis: Axis, width: int) -> Layout | None:
    """None when there is nothing to draw (a recording of no window) or the width is too small."""
    if not axis.series or axis.windows <= 0:
        return None
    top = max([1.0, *(v for v in axis.series if v >= 0)])  # (to the highest point: a spike stands out of a steady load)
    # (as wide whatever the top: the bars stay put under the mouse as it changes)
    label = f"CPU to {fmt.percent(top):>6}: {fmt.wall_clock(axis.start)} "
    end = f" {fmt.wall_clock(axis.end)}"
    bars = width - len(label) - len(end)
    return Layout(label, bars, end, top) if bars >= MIN_BARS else None


def timeline_line(axis: Axis, width: int) -> Text | None:
    shape = layout(axis, width)
    if shape is None:
        return None
    series = axis.series
    cursor, first = point_of(axis.cursor, axis.windows, len(series)), point_of(axis.first, axis.windows, len(series))
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(shape.label, style="dim")
    for lo, hi in bar_spans(len(series), shape.bars):
        values = [v for v in series[lo:hi] if v >= 0]
        if values:
            level = sum(values) / len(values) / shape.top
            glyph = BARS[min(len(BARS) - 1, max(0, round(level * (len(BARS) - 1))))]
        else:
            glyph = NOT_READ if UNREAD_POINT in series[lo:hi] else NOTHING
        if lo <= cursor < hi:
            style = CURSOR_STYLE
        elif hi > first and lo <= cursor:
            style = RANGE_STYLE
        else:
            style = OUTSIDE_STYLE
        text.append(glyph, style=style)
    text.append(shape.end, style="dim")
    return text


def window_at(axis: Axis, width: int, column: int) -> int | None:
    """The window a click on the axis drawn `width` wide at `column` (from its line's start)
    points at: the first of its bar's; None off the bars."""
    shape = layout(axis, width)
    bar = column - len(shape.label) if shape is not None else -1
    if shape is None or not 0 <= bar < shape.bars:
        return None
    points = len(axis.series)
    lo, _ = bar_spans(points, shape.bars)[bar]
    return min(axis.windows - 1, lo * axis.windows // points)
