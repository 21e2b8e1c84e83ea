"""Rise and fall between refreshes and the last minute as sparklines: pure, from snapshots."""

from __future__ import annotations

from dataclasses import replace

from pytop.core.model import Snapshot
from pytop.ui.trends import Trends, sparkline
from ui_fakes import snapshot


def test_sparkline_scales_to_the_top_given_or_found() -> None:
    assert sparkline([]) == ""
    assert sparkline([0, 50, 100], top=100) == "▁▅█"
    assert sparkline([1, 2, 4]) == "▃▅█"
    assert sparkline([0, 0]) == "▁▁"


def shares(s: Snapshot, **own: float) -> Snapshot:
    return replace(s, rows=tuple(replace(row, own_pct=own.get(row.function, row.own_pct)) for row in s.rows))


def test_rows_rise_and_fall_between_refreshes_and_keep_a_minute() -> None:
    trends = Trends(seconds=60)
    first = snapshot(cpu_pct=50.0)
    key = {row.function: row.key for row in first.rows}
    trends.record(first, now=0.0)
    assert trends.move(key["is_prime"]) == 0  # nothing to compare with yet
    trends.record(shares(snapshot(cpu_pct=100.0), is_prime=40.0, render_response=19.5, handle_request=0.0), now=1.0)
    assert trends.move(key["is_prime"]) == 1  # 35% -> 40%
    assert trends.move(key["handle_request"]) == -1  # 1% -> 0%
    assert trends.move(key["render_response"]) == 0  # 20% -> 19.5%: less than a point
    assert trends.cpu_line() == "▅█"
    trends.record(shares(snapshot(cpu_pct=0.0), is_prime=0.0), now=60.5)  # the first refresh is past the minute
    assert len(trends.times) == 2 and trends.cpu_line() == "█▁"
    assert trends.share_line(key["is_prime"]) == "█▁"
    gone = replace(snapshot(), rows=snapshot().rows[1:])
    trends.record(gone, now=61.0)
    assert trends.share_line(snapshot().rows[0].key).endswith("▁")  # not in the table: 0


def test_a_long_history_is_averaged_into_a_fixed_width() -> None:
    assert sparkline([0.0] * 30 + [100.0] * 30, top=100, width=4) == "▁▁██"
    assert sparkline([0.0, 100.0] * 30, top=100, width=6) == "▅" * 6  # each bar: the mean of ten
    assert len(sparkline(range(600))) == 20


def test_a_window_shown_again_adds_no_point() -> None:
    """A key right after a refresh shows the last window again in the new view (same window
    number): it is not a minute's point of its own, nor a rise or fall."""
    trends = Trends(seconds=60)
    first = snapshot(window_number=1)
    key = next(row.key for row in first.rows if row.function == "query_database")
    trends.record(first, now=0.0)
    again = shares(first, query_database=90.0)  # the same window in another view
    trends.record(again, now=0.1)
    assert len(trends.times) == 1 and trends.move(key) == 0
    trends.record(replace(again, run=replace(again.run, window_number=2)), now=1.0)
    assert len(trends.times) == 2 and trends.move(key) == 1
