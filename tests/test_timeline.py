"""The time axis of a recording's view: each window's point is the CPU its live view showed for
it, read whole or alone alike; the points fill coarse to fine and every window is read once;
the header draws them with the cursor and the range on them; `g` goes to a time and a click on
the axis to the window under it."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from pytop import files
from pytop.core.model import ReplayPosition
from pytop.core.snapshot import View
from pytop.record import container
from pytop.record.payloads import read_window, read_window_load, window_load
from pytop.record.recording import open_recording
from pytop.record.replay import Replay
from pytop.record.source import ReplaySource
from pytop.record.timeline import GAP, MAX_POINTS, UNKNOWN, Timeline
from pytop.ui.app import PytopApp
from pytop.ui.session_axis import MAX_POINTS as SESSION_POINTS
from pytop.ui.session_axis import SessionAxis
from pytop.ui.timeline import (
    CURSOR_STYLE,
    RANGE_STYLE,
    Axis,
    axis_of,
    bar_spans,
    layout,
    point_of,
    timeline_line,
    window_at,
)
from pytop.ui.trends import BARS
from record_fakes import write_recording
from ui_fakes import shown, snapshot

SIZE = (120, 30)
CPU_NS = [5_000_000 * (1 + (n % 7)) for n in range(40)]  # 0.5% to 3.5% of a core, window by window


def test_a_windows_point_is_the_cpu_its_live_view_showed_read_whole_or_alone(tmp_path: Path) -> None:
    path = tmp_path / "forty.pytop"
    write_recording(path, 40, CPU_NS)
    recording = open_recording(str(path))
    replay = Replay(recording)
    with files.open_regular(str(path)) as f:
        for index, stored in enumerate(recording.windows):
            data = container.payload(f, stored.frame)
            alone, whole = read_window_load(data), window_load(read_window(data))
            shown = replay.snapshot(index, View())
            assert alone == whole
            assert alone.cpu_pct == shown.cpu_pct == pytest.approx(100 * CPU_NS[index] / 1e9)
            assert alone.rate == shown.rate
    # Windows a replay took in are learned on its way: the rest only when read.
    assert list(replay.timeline.cpu) == [100 * n / 1e9 for n in CPU_NS]
    replay.close()


def test_the_points_fill_coarse_to_fine_each_window_read_once_and_a_stop_loses_nothing() -> None:
    for windows in (0, 1, 5, 64, 65, 300, 1000):
        timeline = Timeline(windows)
        read: list[int] = []
        calls = 0

        def stop() -> bool:
            nonlocal calls
            calls += 1
            return calls % 7 == 0  # interrupted every few windows, as keys interrupt the view's work

        def point(index: int, read: list[int] = read) -> float:
            read.append(index)
            if index == 3:
                raise ValueError("a frame that does not decode")
            return float(index % 100)

        while timeline.fill(point, stop):
            pass
        assert sorted(read) == list(range(windows)), windows
        assert timeline.complete
        if windows > 64:  # the whole recording's shape first: the first reads are a window in 64
            assert read[:2] == [windows - 1, windows - 65]
        if windows > 3:
            assert timeline.cpu[3] == GAP
        # The shape first: after a window in 64 (from the last), and only then, it is shaped.
        coarse = len(range(windows - 1, -1, -64))
        shaping = Timeline(windows)
        shaping.fill(lambda index: 1.0, stop=iter([False] * (coarse - 1) + [False, True]).__next__)
        assert shaping.shaped and shaping.complete == (coarse == windows)
        unshaped = Timeline(windows)
        unshaped.fill(lambda index: 1.0, stop=iter([False] * (coarse - 1) + [True]).__next__)
        assert not unshaped.shaped or windows == 0
        unshaped.grow(windows + 10)  # (a recording still written: its new windows are unknown)
        assert not unshaped.shaped and not unshaped.complete


def test_a_long_recordings_points_are_means_of_equal_runs_of_windows() -> None:
    timeline = Timeline(3 * MAX_POINTS + 2)
    for index in range(0, len(timeline), 2):
        timeline.learn(index, float(index % 10))
    series = timeline.series()
    assert len(series) == MAX_POINTS
    assert series is timeline.series()  # (kept while nothing changes: one tuple for many snapshots)
    windows = len(timeline)
    for point, value in enumerate(series):
        lo, hi = point * windows // MAX_POINTS, (point + 1) * windows // MAX_POINTS
        known = [timeline.cpu[i] for i in range(lo, hi) if timeline.cpu[i] >= 0]
        assert value == pytest.approx(sum(known) / len(known))
        assert all(point_of(i, windows, MAX_POINTS) == point for i in range(lo, hi))
    assert Timeline(4).series() == (UNKNOWN,) * 4


def position(windows: int, index: int, first: int, timeline: tuple[float, ...]) -> Axis:
    return axis_of(ReplayPosition("run.pytop", index, windows, 1000.0 + index, 1001.0 + index, 1000.0 + first,
                                  1000.0, 1000.0 + windows, first=first, timeline=timeline))


@pytest.mark.parametrize("windows, width", [(5, 60), (40, 60), (400, 80), (3000, 120)])
def test_the_axis_marks_the_cursor_and_the_range_and_a_click_finds_the_window_under_it(windows: int,
                                                                                           width: int) -> None:
    timeline = Timeline(windows)
    for index in range(windows):
        timeline.learn(index, 10.0 + index % 13)
    series = timeline.series()
    index, first = windows * 3 // 4, windows // 4
    line = timeline_line(position(windows, index, first, series), width)
    assert line is not None and line.cell_len <= width
    bars = [(span.start, span.style) for span in line.spans if span.end - span.start == 1]
    cursor = [at for at, style in bars if style == CURSOR_STYLE]
    in_range = [at for at, style in bars if style == RANGE_STYLE]
    assert cursor and in_range and max(in_range) < min(cursor)  # the range runs up to the cursor
    place = position(windows, index, first, series)
    shape = layout(place, width)
    assert shape is not None and len(bars) == shape.bars and bars[0][0] == len(shape.label)
    chosen = [window_at(place, width, column) for column in range(width)]
    on_bars = [c for c in chosen if c is not None]
    assert len(on_bars) == shape.bars and chosen[len(shape.label)] == 0  # every bar, from the first window
    assert on_bars == sorted(on_bars)  # left to right
    under = window_at(place, width, cursor[0])  # the cursor's bar stands for the cursor's window
    assert under is not None and under <= index
    assert point_of(index, windows, len(series)) in range(*bar_spans(len(series), shape.bars)[cursor[0] -
                                                                                             len(shape.label)])


def test_points_not_read_yet_and_gaps_are_told_apart_from_no_cpu() -> None:
    place = position(3, 0, 0, (0.0, UNKNOWN, GAP))
    line, shape = timeline_line(place, 60), layout(place, 60)
    assert line is not None and shape is not None
    bars = line.plain[len(shape.label):len(shape.label) + shape.bars]
    third = shape.bars // 3
    assert set(bars[:third]) == {"▁"} and set(bars[third + 1:2 * third]) == {"·"} and set(bars[-third + 1:]) == {" "}


async def test_g_goes_to_a_time_and_a_click_on_the_axis_to_its_window(tmp_path: Path) -> None:
    path = tmp_path / "forty.pytop"
    write_recording(path, 40, CPU_NS, started=1_700_000_000.0)
    app = PytopApp(ReplaySource(Replay(open_recording(str(path))), View()), replay=True)
    async with app.run_test(size=SIZE) as pilot:
        header = await shown(app, pilot, "window 40 of 40")
        header = await shown(app, pilot, "CPU to   3.5%")  # all read: the highest window's CPU is the top
        assert "·" not in header
        start = app.main.snapshot.run.replay.recording_start  # type: ignore[union-attr]
        await pilot.press("g", *"10s", "enter")
        header = await shown(app, pilot, "window 10 of 40")  # (the window that ends at 10 s in)
        assert app.main.snapshot.run.replay.end == start + 10  # type: ignore[union-attr]
        assert "[filter" not in header  # (the filter's prompt is another)
        clock = time.strftime("%H:%M:%S", time.localtime(start + 25))
        await pilot.press("g", *clock, "enter")
        await shown(app, pilot, "window 25 of 40")
        await pilot.press("g", *"soon", "enter")
        await pilot.pause(0.2)
        assert "window 25 of 40" in str(app.main.query_one("#header").render())  # not a time: the cursor stays
        axis = next(i for i, text in enumerate(header.splitlines()) if text.startswith("CPU to"))
        label = next(i for i, c in enumerate(header.splitlines()[axis]) if c in BARS)
        await pilot.click("#header", offset=(1 + label, axis))  # (the header's padding, then the first bar)
        await shown(app, pilot, "window 1 of 40")


def test_a_live_views_session_is_an_axis_with_the_present_at_its_cursor() -> None:
    session = SessionAxis()
    shot = snapshot()
    for n in range(3 * SESSION_POINTS + 1):
        window = replace(shot, cpu_pct=float(n % 50), run=replace(shot.run, window_number=n + 1, window_seconds=1.0))
        session.record(window, 2000.0 + n)
        session.record(window, 2000.5 + n)  # (a view of the same window again adds nothing)
    axis = session.axis(since_reset=10.0)
    assert axis is not None and len(axis.series) <= SESSION_POINTS
    assert sum(session.weights) == 3 * SESSION_POINTS + 1  # every window in some point, once
    assert axis.start == 1999.0 and axis.end == axis.ends[-1] == 2000.0 + 3 * SESSION_POINTS
    assert axis.cursor == axis.windows - 1  # the present
    assert axis.ends[axis.first] > axis.end - 10.0 >= axis.ends[axis.first - 1]  # the range since the reset
    assert sum(c * w for c, w in zip(session.cpu, session.weights)) == pytest.approx(
        sum(float(n % 50) for n in range(3 * SESSION_POINTS + 1)))  # merged by weight: nothing lost
    line = timeline_line(axis, 100)
    assert line is not None and [span.style for span in line.spans][-2] == CURSOR_STYLE


def test_a_live_views_windows_that_came_together_stand_at_their_own_ends() -> None:
    """Snapshots that waited for a busy screen come in a burst: each window's point is at the
    moment its window closed, so a click on the first goes to the first, not to the burst's."""
    session = SessionAxis()
    shot = snapshot()
    for n in range(4):
        window = replace(shot, cpu_pct=50.0, run=replace(shot.run, window_number=n + 1, window_seconds=0.25,
                                                           window_end=1000.0 + 0.25 * n))
        session.record(window, 2000.0)  # (all received at once)
    axis = session.axis(since_reset=10.0)
    assert axis is not None and axis.ends == (1000.0, 1000.25, 1000.5, 1000.75) and axis.start == 999.75
