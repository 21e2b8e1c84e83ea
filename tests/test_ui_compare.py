"""`pytop --diff` on a terminal (ui/compare.py), driven with the pilot on a made comparison: what
grew most is on top, the keys sort and reverse, `/` filters, a target's names stay text."""

from __future__ import annotations

from typing import Any

import pytest

from pytop.core.compare import Comparison, Span, compare
from pytop.core.model import FunctionRow
from pytop.ui.compare import ChangeTable, ComparisonApp

SIZE = (120, 24)


def row(function: str, filename: str, own: float, total: float) -> FunctionRow:
    return FunctionRow((function, filename, 0, 1), function, filename, None, 1, 0.0, 0.0, own, total, 0, 0)


def comparison() -> Comparison:
    base = Span((row("encode", "/srv/v1/app/codec.py", 2.0, 2.0), row("handle", "/srv/v1/app/views.py", 0.5, 6.0),
                 row("old_cache", "/srv/v1/app/cache.py", 1.0, 1.0), row("parse", "/srv/v1/app/codec.py", 2.0, 2.0)),
                10.0, "cpu", cwd="/srv/v1", label="base.pytop, 14:00:00 to 14:00:10 (10.0 s), pid 10, python app.py")
    now = Span((row("encode", "/srv/v2/app/codec.py", 3.0, 3.0), row("handle", "/srv/v2/app/views.py", 0.5, 5.5),
                row("[red]new_index[/]", "/srv/v2/app/index.py", 0.6, 0.6),
                row("parse", "/srv/v2/app/codec.py", 0.5, 0.5)),
               5.0, "cpu", cwd="/srv/v2", label="now.pytop, 15:00:00 to 15:00:05 (5.0 s), pid 20, python app.py")
    return compare(base, now)


def names(app: ComparisonApp) -> list[str]:
    table = app.query_one(ChangeTable)
    return [table.row_text(i)[-1].split(" (")[0] for i in range(table.row_count)]


async def test_the_comparison_table_and_its_keys() -> None:
    app = ComparisonApp(comparison())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert names(app) == ["encode", "[red]new_index[/]", "handle", "old_cache", "parse"]  # grew most first
        table = app.query_one(ChangeTable)
        assert table.row_text(0)[:3] == ("60.0%", "20.0%", "+40.0%")  # per second of each span
        assert table.row_text(1)[-1] == "[red]new_index[/] (app/index.py)  new"  # data, not markup
        await pilot.press("4")
        assert names(app)[0] == "handle" and names(app)[-1] == "parse"  # by the change of total time: +50 points
        await pilot.press("r")
        assert names(app)[0] == "parse"
        await pilot.press("1")
        assert names(app)[:2] == ["encode", "[red]new_index[/]"]  # by own time per second of the compared span
        await pilot.press("slash")
        await pilot.press(*"codec", "enter")
        assert sorted(names(app)) == ["encode", "parse"]
        await pilot.press("q")


def test_the_comparison_screen(snap_compare: Any) -> None:
    assert snap_compare(ComparisonApp(comparison()), terminal_size=SIZE)


# ---- the live view's baseline (B, --baseline) ------------------------------------------------------

async def test_b_makes_the_totals_so_far_the_baseline_and_counts_again() -> None:
    """Live: B marks the totals as the baseline and resets; the table then compares what came
    since, per second (the fake's reset is the same figures over a hundredth of the time: no
    change); a function that doubles its share shows it; another mode cannot be compared, and
    drops the baseline with a word; B again gives the plain table back."""
    from dataclasses import replace

    from pytop.ui.app import PytopApp
    from pytop.ui.widgets import FunctionTable
    from ui_fakes import FakeSource, snapshot

    source = FakeSource()
    app = PytopApp(source)
    async with app.run_test(size=(140, 36)) as pilot:
        await pilot.pause()
        await pilot.press("B")
        await pilot.pause()
        changes = app.main.query_one(ChangeTable)
        assert source.resets == 1 and changes.display and not app.main.query_one(FunctionTable).display
        header = str(app.main.query_one("#header").render())
        assert "[against the baseline: the 00:00:50 up to" in header, header
        assert all(changes.row_text(i)[2] == "0.0%" for i in range(changes.row_count))  # per second alike
        later = snapshot(scale=0.01)
        rows = tuple(replace(r, own_time=2 * r.own_time) if r.function == "query_database" else r
                     for r in later.rows)
        assert source.publish is not None
        source.publish(replace(later, rows=rows))
        await pilot.pause()
        assert changes.row_text(0)[-1].startswith("query_database") and changes.row_text(0)[2].startswith("+")
        await pilot.press("m")  # wall time: not comparable with a baseline of CPU time
        await pilot.pause()
        assert app.main.baseline is None and app.main.query_one(FunctionTable).display and not changes.display
        await pilot.press("B")
        await pilot.pause()
        assert app.main.baseline is not None and app.main.baseline.mode == "wall" and source.resets == 2
        await pilot.press("B")
        await pilot.pause()
        assert app.main.baseline is None and app.main.query_one(FunctionTable).display


async def test_a_recordings_range_as_the_baseline(tmp_path: Any) -> None:
    """In a recording, B makes the range shown the baseline, and resets nothing: the range is
    the recording's, and the cursor moves on from it."""
    from test_ui_replay import shown

    from pytop.core.snapshot import View
    from pytop.record.recording import open_recording
    from pytop.record.replay import Replay
    from pytop.record.source import ReplaySource
    from pytop.ui.app import PytopApp
    from record_fakes import write_recording

    path = tmp_path / "five.pytop"
    write_recording(path, 5)
    app = PytopApp(ReplaySource(Replay(open_recording(str(path))), View()), replay=True)
    async with app.run_test(size=(140, 36)) as pilot:
        await shown(app, pilot, "window 5 of 5")
        await pilot.press("B")
        header = await shown(app, pilot, "[against the baseline:")
        assert app.main.baseline is not None and app.main.baseline.seconds == pytest.approx(5.0, abs=0.01), header
        await pilot.press("left_square_bracket", "left_square_bracket", "R")
        await shown(app, pilot, "(R: the range starts at the cursor)")
        changes = app.main.query_one(ChangeTable)
        assert changes.display and changes.row_count > 0
        assert "Worker.spin" in " ".join(changes.row_text(i)[-1] for i in range(changes.row_count))


async def test_e_writes_the_comparison(tmp_path: Any) -> None:
    """e: the comparison's text, JSON and differential collapsed file, new files in the
    directory; a directory that is gone says so in the notice, nothing raised."""
    import json
    import shutil

    from pytop.core.counts import Counts
    from pytop.core.profile import Profile
    from pytop.core.stack_book import StackBook
    from pytop.report.compare import write_comparison

    empty = Profile(Counts(), StackBook(), {}, 1, "python app.py")
    c = comparison()
    app = ComparisonApp(c, export=lambda: write_comparison(str(tmp_path), c, empty, empty))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        await pilot.pause()
        written = sorted(path.name for path in tmp_path.iterdir())
        assert len(written) == 3 and all(name.startswith("pytop-diff-") for name in written), written
        [report] = [path for path in tmp_path.iterdir() if path.suffix == ".json"]
        assert {f["function"] for f in json.loads(report.read_text())["functions"]} >= {"encode", "old_cache"}
        gone = tmp_path / "gone"
        gone.mkdir()
        app.export = lambda: write_comparison(str(gone), c, empty, empty)
        shutil.rmtree(gone)
        await pilot.press("e")
        await pilot.pause()
        assert app.exported[-1].startswith("export failed:") and str(gone) in app.exported[-1], app.exported


async def test_e_with_a_baseline_writes_the_comparison_too(tmp_path: Any) -> None:
    from pytop.ui.app import PytopApp
    from ui_fakes import FakeSource

    source = FakeSource()
    app = PytopApp(source, export_dir=str(tmp_path))
    async with app.run_test(size=(140, 36)) as pilot:
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        assert not list(tmp_path.iterdir())  # without a baseline: the source's export only
        await pilot.press("B", "e")
        await pilot.pause()
        assert source.exports == [str(tmp_path)] * 2
        written = sorted(path.name for path in tmp_path.iterdir())
        assert [name.rsplit(".", 1)[-1] for name in written] == ["json", "txt"], written
        assert "against the baseline the 00:00:50 up to" in (tmp_path / written[1]).read_text()


async def test_the_tree_takes_the_comparisons_place_and_gives_it_back() -> None:
    from pytop.ui.app import PytopApp
    from pytop.ui.calltree import CallTreeView
    from pytop.ui.widgets import FunctionTable
    from ui_fakes import FakeSource

    app = PytopApp(FakeSource())
    async with app.run_test(size=(140, 36)) as pilot:
        await pilot.pause()
        screen = app.main

        def shown() -> tuple[bool, bool, bool]:
            return (screen.query_one(FunctionTable).display, screen.query_one(ChangeTable).display,
                    screen.query_one(CallTreeView).display)

        await pilot.press("B")
        await pilot.pause()
        assert shown() == (False, True, False)
        await pilot.press("T")
        await pilot.pause()
        assert shown() == (False, False, True)
        await pilot.press("T")
        await pilot.pause()
        assert shown() == (False, True, False)
        await pilot.press("T", "B")  # the baseline dropped under the tree: the plain table after it
        await pilot.pause()
        assert shown() == (False, False, True)
        await pilot.press("T")
        await pilot.pause()
        assert shown() == (True, False, False)
