"""The header's time axis for a recording shown again (or a live view's past): the target's CPU
over the whole recording as bars, the range the totals cover marked, the cursor's window
reversed, the clock at either end. Pure: a ReplayPosition in, a line of text out."""

from __future__ import annotations

from typing import NamedTuple

from rich.text import Text

from ..core.model import ReplayPosition
from ..report import format as fmt
from .trends import BARS

MIN_BARS = 8
RANGE_STYLE, OUTSIDE_STYLE, CURSOR_STYLE = "bold yellow", "cyan", "bold reverse yellow"
NOT_READ, NOTHING = "·", " "  # a point not read yet; a window whose frame did not decode
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


class Layout(NamedTuple):
    label: str  # what the bars stand for, and the first window's clock
    bars: int
    end: str  # the last window's clock
    top: float  # the CPU a full bar stands for


def layout(place: ReplayPosition, width: int) -> Layout | None:
    """None when the position has no timeline (a recording of no window) or the width is too
    small for one."""
    series = place.timeline
    if not series or place.windows <= 0:
        return None
    top = max([1.0, *(v for v in series if v >= 0)])  # (to the highest point: a spike stands out of a steady load)
    label = f"CPU to {fmt.percent(top)}: {fmt.wall_clock(place.recording_start)} "
    end = f" {fmt.wall_clock(place.recording_end)}"
    bars = width - len(label) - len(end)
    return Layout(label, bars, end, top) if bars >= MIN_BARS else None


def timeline_line(place: ReplayPosition, width: int) -> Text | None:
    shape = layout(place, width)
    if shape is None:
        return None
    series = place.timeline
    cursor, first = point_of(place.index, place.windows, len(series)), point_of(place.first, place.windows,
                                                                                  len(series))
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


def window_at(place: ReplayPosition, width: int, column: int) -> int | None:
    """The window a click on the timeline drawn `width` wide at `column` (from its line's start)
    points at: the first of its bar's; None off the bars."""
    shape = layout(place, width)
    bar = column - len(shape.label) if shape is not None else -1
    if shape is None or not 0 <= bar < shape.bars:
        return None
    points = len(place.timeline)
    lo, _ = bar_spans(points, shape.bars)[bar]
    return min(place.windows - 1, lo * place.windows // points)
