"""`pytop --diff` on a terminal (ui/compare.py), driven with the pilot on a made comparison: what
grew most is on top, the keys sort and reverse, `/` filters, a target's names stay text."""

from __future__ import annotations

from typing import Any

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
