"""The live view driven with Textual's pilot, fed by a fake source: every key does what it
says to the table, the header and the source."""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual.binding import Binding

from pytop.core.model import FunctionRow, Snapshot
from pytop.ui.app import PytopApp
from pytop.ui.callers import CallersPanel, NeighbourTable
from pytop.ui.calltree import CallTreeView
from pytop.ui.help import HelpScreen
from pytop.ui.screen import MainScreen
from pytop.ui.stacks_panel import StacksPanel
from pytop.ui.threads import ThreadTable
from pytop.ui.widgets import FunctionTable, ProcessHeader
from ui_fakes import TARGET, FakeSource, snapshot

pytestmark = pytest.mark.ui  # the app driven by its pilot

SIZE = (120, 30)


def table_functions(app: PytopApp) -> list[str]:
    table = app.query_one(FunctionTable)
    return [table.row_text(i)[-1].split(" (")[0] for i in range(table.row_count)]


def header_text(app: PytopApp) -> str:
    return str(app.query_one(ProcessHeader).render())


def column_labels(app: PytopApp) -> list[str]:
    table = app.query_one(FunctionTable)
    return [c.label for c in table.columns]


async def test_first_snapshot_fills_header_and_table() -> None:
    app = PytopApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        # GIVEN the default sort (OwnTime) THEN rows are by own time, largest first
        assert table_functions(app) == ["query_database", "is_prime", "JSONEncoder.iterencode",
                                        "render_response", "handle_request", "Thread.run"]
        text = header_text(app)
        assert "pid 4242" in text and "python shop.py --port 8080" in text and "Python 3.12.1" in text
        assert "GIL: 61.5%, Active: 43.3%, Threads: 6" in text
        assert "Samples: 5,012" in text and "CPU: 88%" in text and "RSS: 73.0 MiB" in text
        assert "OwnTime▼" in column_labels(app)


async def test_number_keys_sort_by_each_column() -> None:
    app = PytopApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("1")
        assert table_functions(app)[0] == "is_prime"
        assert "%Own▼" in column_labels(app)
        await pilot.press("2")
        assert table_functions(app)[:2] == ["Thread.run", "handle_request"]
        assert "%Total▼" in column_labels(app) and "%Own" in column_labels(app)
        await pilot.press("4")
        assert table_functions(app)[0] == "Thread.run"
        await pilot.press("3")
        assert table_functions(app)[0] == "query_database"


async def test_clicking_a_header_sorts_by_it() -> None:
    app = PytopApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.click(FunctionTable, offset=(3, 0))  # the %Own header
        await pilot.pause()
        assert "%Own▼" in column_labels(app)
        assert table_functions(app)[0] == "is_prime"


async def test_initial_sort_from_the_command_line() -> None:
    app = PytopApp(FakeSource(), sort="total_pct")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert table_functions(app)[0] == "Thread.run"


async def test_l_toggles_lines() -> None:
    source = FakeSource()
    app = PytopApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("L")
        await pilot.pause()
        assert source.by_line
        table = app.query_one(FunctionTable)
        assert table.row_text(0)[-1] == "query_database (db.py:17)"
        assert "[by line]" in header_text(app)
        await pilot.press("l")
        await pilot.pause()
        assert not source.by_line
        assert table.row_text(0)[-1] == "query_database (db.py)"


async def test_r_resets() -> None:
    source = FakeSource()
    app = PytopApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("R")
        await pilot.pause()
        assert source.resets == 1
        assert "Samples: 50 " in header_text(app)
        table = app.query_one(FunctionTable)
        assert table.row_text(0)[2] == "0.20s"  # OwnTime of the top row after reset


async def test_help_opens_and_closes() -> None:
    app = PytopApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_q_and_ctrl_c_quit_and_stop_the_source() -> None:
    for key in ("q", "ctrl+c"):
        source = FakeSource()
        app = PytopApp(source)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(key)
            await pilot.pause()
        assert source.stopped
        assert app.return_code in (0, None)


async def test_banners_appear_only_when_due() -> None:
    source = FakeSource(snapshot(errors=100, samples=900, last_error="torn read", skipped_share=0.37))
    app = PytopApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.query_one("#error-banner").display
        assert "Error rate 10.0% (last: torn read)" in str(app.query_one("#error-banner").render())
        assert "37% of samples skipped" in str(app.query_one("#behind-banner").render())
        assert not app.query_one("#exited-banner").display
        source._send(snapshot(exited=True, exit_reason="process 4242 has exited"))
        await pilot.pause()
        assert app.query_one("#exited-banner").display
        assert not app.query_one("#error-banner").display
        assert table_functions(app)  # the last results stay


def many_rows(count: int) -> tuple[FunctionRow, ...]:
    first = snapshot().rows[0]
    return tuple(replace(first, key=(f"f{i}", first.filename, 0, first.pid), function=f"f{i}",
                         own_time=first.own_time - i / 1000) for i in range(count))


async def test_the_table_scrolls() -> None:
    app = PytopApp(FakeSource(snapshot(rows=many_rows(40))))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.query_one(FunctionTable)
        assert table.scroll_y == 0
        for _ in range(30):
            await pilot.press("down")
        await pilot.pause()
        assert table.cursor == 30
        assert table.scroll_y > 0  # the row came into view
        for _ in range(30):
            await pilot.press("up")
        await pilot.pause()
        assert table.scroll_y == 0


def spy_refreshes(table: FunctionTable) -> list[tuple[tuple[object, ...], bool]]:
    """The table's refreshes from now on, as they are asked for: (regions, whether a layout pass)."""
    asked: list[tuple[tuple[object, ...], bool]] = []
    refresh = table.refresh

    def counted(*regions: object, **kwargs: bool) -> object:
        asked.append((regions, bool(kwargs.get("layout"))))
        return refresh(*regions, **kwargs)  # type: ignore[arg-type]

    table.refresh = counted  # type: ignore[method-assign]
    return asked


async def test_rows_that_come_and_go_need_no_layout_pass() -> None:
    """A live server's table gains or loses a row most refreshes. A layout pass repaints every
    widget on the screen (half the screen's CPU, measured); while the scrollbar stays as it was,
    the table's scrolled length changes without one, and scrolls to its new end."""
    source = FakeSource(snapshot(rows=many_rows(40)))
    app = PytopApp(source)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.query_one(FunctionTable)
        refreshes = spy_refreshes(table)
        for count in (45, 52, 30):
            source.publish(snapshot(rows=many_rows(count)))  # type: ignore[misc]
            await pilot.pause()
            await pilot.press("end")
            await pilot.pause()
            assert table.cursor == count - 1
            assert table.vertical_scrollbar.window_virtual_size == count + 1  # the header, the rows
            assert table.scroll_y == table.max_scroll_y == count + 1 - table.scrollable_content_region.height
        assert not any(layout for _, layout in refreshes)
        source.publish(snapshot(rows=many_rows(5)))  # type: ignore[misc]
        await pilot.pause()
        assert any(layout for _, layout in refreshes)  # the scrollbar goes: that is a layout pass
        assert table.scroll_y == 0 and not table.show_vertical_scrollbar


async def test_a_refresh_draws_again_only_the_lines_that_changed() -> None:
    rows = many_rows(40)
    source = FakeSource(snapshot(rows=rows))
    app = PytopApp(source)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.query_one(FunctionTable)
        drawn = spy_refreshes(table)
        moved = replace(rows[3], total_time=rows[3].total_time + 1)  # its place in the order stays
        source.publish(snapshot(rows=(*rows[:3], moved, *rows[4:])))  # type: ignore[misc]
        await pilot.pause()
        assert [[(r.y, r.height) for r in regions] for regions, _ in drawn] == [[(4, 1)]]  # type: ignore[attr-defined]
        assert table.row_text(3)[3] == "13.50s"  # and it shows the new figure (12.50s before)
        drawn.clear()
        source.publish(snapshot(rows=(*rows[:3], moved, *rows[4:])))  # type: ignore[misc]
        await pilot.pause()
        assert drawn == []  # nothing changed: nothing drawn
        # Lines that changed side by side are asked for as one region (a refresh a line cost as
        # much as drawing it): rows 3-4 and 6, below the header line.
        more = [replace(row, total_time=row.total_time + 2) if i in (3, 4, 6) else row for i, row in enumerate(rows)]
        source.publish(snapshot(rows=tuple(more)))  # type: ignore[misc]
        await pilot.pause()
        assert [[(r.y, r.height) for r in regions] for regions, _ in drawn] == [[(4, 2)], [(7, 1)]]  # type: ignore[attr-defined]
        assert [table.row_text(i)[3] for i in (3, 4, 5, 6)] == [
            f"{rows[i].total_time + (2 if i != 5 else 0):.2f}s" for i in (3, 4, 5, 6)]


async def test_a_small_terminal_keeps_the_table_in_sight() -> None:
    """80x24, a `-c` script for a command line, every banner, the threads panel and notes: the
    header stays one line per fact and the table keeps at least 8 rows in view."""
    target = replace(snapshot().target, command="python -c import time\ndef spin():\n    while True: pass\nspin() "
                     + "--a-long-argument " * 6)
    crowded = snapshot(rows=many_rows(40), target=target, errors=100, samples=900, last_error="torn read",
                       skipped_share=0.37, exited=True, exit_reason="process 4242 has exited")
    app = PytopApp(FakeSource(crowded), notes=("[its output: /tmp/pytop-child-abcdefgh.log]",))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("t")
        await pilot.pause()
        header = app.query_one(ProcessHeader)
        assert header.size.height == 4  # pid and command, samples, threads, notes
        assert "⏎" in header_text(app)  # the script's newlines are shown, not done
        table = app.query_one(FunctionTable)
        assert table.size.height - 1 >= 8, table.size  # its header row, then 8 rows
        assert app.query_one(ThreadTable).display


async def test_thread_panel_narrows_and_widens() -> None:
    source = FakeSource()
    app = PytopApp(source)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("t")
        await pilot.pause()
        threads = app.query_one(ThreadTable)
        assert threads.display and threads.has_focus
        # GIVEN threads sorted busiest first WHEN Enter on the first THEN the table narrows to it
        assert threads.row_text(0)[0] == "handler-0"
        assert threads.row_text(len(threads.rows) - 1)[0] == "Thread-7 (process_request_thread) (finished)"
        await pilot.press("enter")
        await pilot.pause()
        assert source.thread == 2
        assert "[thread: handler-0 (TID 4250)]" in header_text(app)
        assert threads.row_text(0)[0] == "▶ handler-0"
        await pilot.press("a")
        await pilot.pause()
        assert source.thread is None
        assert "[thread:" not in header_text(app)
        await pilot.press("t")
        assert not threads.display


async def test_filter_narrows_the_rows_not_the_totals() -> None:
    app = PytopApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash")
        await pilot.press(*"web\\.py")
        await pilot.press("enter")
        await pilot.pause()
        assert table_functions(app) == ["render_response", "handle_request"]
        assert "[filter: web\\.py]" in header_text(app)
        assert "GIL: 61.5%" in header_text(app)  # figures over all functions, as before
        await pilot.press("slash", *"list[int", "enter")  # not a regular expression: a substring
        await pilot.pause()
        assert table_functions(app) == []
        await pilot.press("c")
        await pilot.pause()
        assert len(table_functions(app)) == 6 and "[filter" not in header_text(app)


async def test_escape_leaves_the_filter_as_it_was() -> None:
    app = PytopApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash", *"prime", "enter")
        await pilot.press("slash", *"xyz", "escape")
        await pilot.pause()
        assert table_functions(app) == ["is_prime"]


async def test_pause_freezes_the_screen_not_the_counting() -> None:
    source = FakeSource()
    app = PytopApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")
        await pilot.pause()
        assert "PAUSED" in header_text(app)
        source._send(snapshot(scale=2.0))  # samples keep coming in
        await pilot.pause()
        assert "Samples: 5,012 " in header_text(app)
        await pilot.press("p")
        await pilot.pause()
        assert "PAUSED" not in header_text(app)
        assert "Samples: 10,024 " in header_text(app)


async def test_callers_and_callees() -> None:
    source = FakeSource()
    app = PytopApp(source)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("1", "down", "enter")  # render_response is second by %Own
        await pilot.pause()
        assert source.focus == ("render_response", "/srv/shop/web.py", 0, 4242)
        panel = app.query_one(CallersPanel)
        assert panel.display
        callers, callees = panel.query_one("#callers", NeighbourTable), panel.query_one("#callees", NeighbourTable)
        assert callers.row_text(0)[2] == "handle_request (web.py)"
        assert [callees.row_text(i)[0] for i in range(2)] == ["57%", "42%"]
        # The panel has the keys at once: Enter picks a caller, no Tab first.
        assert callers.has_focus
        # WHEN a caller is chosen THEN it becomes the selected function, in the table too
        await pilot.press("enter")
        await pilot.pause()
        assert source.focus == ("handle_request", "/srv/shop/web.py", 0, 4242)
        table = app.query_one(FunctionTable)
        assert table.row_text(table.cursor)[-1].startswith("handle_request")
        assert "query_database" in callees.row_text(0)[2]
        await pilot.press("escape")
        await pilot.pause()
        assert source.focus is None and not panel.display


async def test_export_says_where_it_wrote() -> None:
    source = FakeSource()
    app = PytopApp(source, export_dir="/srv/profiles")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        await pilot.pause()
        assert source.exports == ["/srv/profiles"]  # --output-dir
        assert any("pytop-4242.speedscope.json" in str(n.message) for n in app._notifications)


async def test_gc_share_in_the_header() -> None:
    app = PytopApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "GIL: 61.5%, Active: 43.3%, Threads: 6, GC: 1.2%" in header_text(app)


def test_every_key_the_app_binds_is_explained_in_the_help() -> None:
    explained = {key for key, _ in MainScreen.key_help()}
    bound = {b.key_display or b.key for b in MainScreen.BINDINGS
             if isinstance(b, Binding) and b.action != "close_panel"}
    assert bound - {"ctrl+c"} <= explained, bound - explained


async def test_plus_and_minus_change_the_refresh_interval() -> None:
    source = FakeSource()
    app = PytopApp(source, delay=1.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("plus", "plus", "minus", "minus", "minus")
        await pilot.pause()
        assert source.delays == [0.5, 0.25, 0.5, 1.0, 2.0]
        for _ in range(8):
            await pilot.press("plus")
        await pilot.pause()
        assert source.delays[-1] == 0.1  # the shortest step stays
        assert any("every 0.1 s" in str(n.message) for n in app._notifications)


async def test_rows_show_their_trend_and_the_selected_rows_last_minute() -> None:
    source = FakeSource()
    app = PytopApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        rows = tuple(replace(row, own_pct=row.own_pct + 10 if row.function == "is_prime" else row.own_pct)
                     for row in snapshot().rows)
        source.publish(snapshot(rows=rows, cpu_pct=40.0))  # type: ignore[misc]
        await pilot.pause()
        table = app.query_one(FunctionTable)
        marks = {table.row_text(i)[-1].split(" (")[0]: table.row_text(i)[-2]
                 for i in range(table.row_count)}
        assert marks["is_prime"] == "▲" and marks["render_response"] == ""
        assert "CPU ▇▄  Rate ██" in header_text(app)  # 88% then 40% of a core; 100/s of 100/s
        await pilot.press("1")  # is_prime is first by %Own now
        await pilot.pause()
        detail = str(app.query_one("#detail").render())
        assert detail.startswith(" %Own now 45.0%, high 45.0%, last minute ") and detail.rstrip().endswith("is_prime")


def tree_lines(app: PytopApp) -> list[str]:
    tree = app.query_one(CallTreeView)
    return [tree.line_text(i) for i in range(len(tree.lines))]


async def test_call_tree_opens_along_the_hottest_path_and_keeps_its_place() -> None:
    source = FakeSource()
    app = PytopApp(source)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("T")
        await pilot.pause()
        tree = app.query_one(CallTreeView)
        assert source.tree and tree.display and tree.has_focus and not app.query_one(FunctionTable).display
        lines = tree_lines(app)
        # Thread.run > handle_request > query_database is the hottest path: open down to it.
        assert [line.split("  ")[-1].lstrip("▾▸ ") for line in lines[:4]] == [
            "Thread.run (threading.py)", "handle_request (web.py)", "query_database (db.py)",
            "render_response (web.py)"]
        assert lines[0].split()[:2] == ["100.0%", "50.10s"] and "own  0.40s" in lines[1]
        assert not any("iterencode" in line for line in lines)  # render_response stays closed
        # The user opens render_response; a refresh keeps it open and the cursor on it.
        tree.select_line(3)
        await pilot.press("space")
        source.publish(source.current())  # type: ignore[misc]
        await pilot.pause()
        assert any("JSONEncoder.iterencode" in line for line in tree_lines(app))
        assert tree.cursor_node is not None and tree.cursor_node.key[0] == "render_response"
        await pilot.press("left", "left")  # closes it, then goes to its caller
        await pilot.pause()
        assert not any("iterencode" in line for line in tree_lines(app))
        assert tree.cursor_node is not None and tree.cursor_node.key[0] == "handle_request"
        await pilot.press("escape")
        await pilot.pause()
        assert not tree.display and app.query_one(FunctionTable).display and not source.tree


async def test_call_tree_from_a_function_opens_its_hottest_path() -> None:
    source = FakeSource()
    app = PytopApp(source)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("1")  # %Own: is_prime, render_response, ...
        await pilot.press("down", "T")
        await pilot.pause()
        tree = app.query_one(CallTreeView)
        assert tree.cursor_node is not None and tree.cursor_node.key[0] == "render_response"
        assert any("handle_request" in line for line in tree_lines(app))


async def test_call_tree_from_a_root_function_opens_where_its_time_goes() -> None:
    """T on a thread's outermost function (its time all below it): opened along the hottest path
    under it, not a single collapsed line."""
    source = FakeSource()
    app = PytopApp(source)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("2")  # %Total: the outermost functions first
        await pilot.press("T")
        await pilot.pause()
        tree = app.query_one(CallTreeView)
        assert tree.cursor_node is not None and tree.cursor_node is tree.lines[tree.cursor].node
        below = [line for line in tree.lines if line.depth > tree.lines[tree.cursor].depth]
        assert len(below) >= 2, tree_lines(app)


async def test_a_row_without_history_has_no_detail_line() -> None:
    """After the target exits, a new view (by line) brings rows no refresh recorded."""
    class Ended(FakeSource):
        def current(self, **changes: object) -> Snapshot:
            return super().current(exited=True, exit_reason="process 4242 has exited", **changes)

    source = Ended(snapshot(exited=True, exit_reason="process 4242 has exited"))
    app = PytopApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "last minute" in str(app.query_one("#detail").render())
        await pilot.press("L")
        await pilot.pause()
        assert str(app.query_one("#detail").render()).strip() == ""


async def test_a_program_of_thousands_of_functions_shows_the_top_ones() -> None:
    """The table holds the top rows by its sort; the header says so; the filter reaches the rest."""
    from pytop.ui.screen import MAX_TABLE_ROWS

    rows = many_rows(MAX_TABLE_ROWS + 300)
    app = PytopApp(FakeSource(snapshot(rows=rows)))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        table = app.query_one(FunctionTable)
        assert table.row_count == MAX_TABLE_ROWS
        assert f"[the top {MAX_TABLE_ROWS} of {len(rows):,} rows" in header_text(app)
        await pilot.press("slash", *"f799", "enter")  # the last by own time: not among the top rows
        await pilot.pause()
        assert [table.row_text(i)[-1].split(" (")[0] for i in range(table.row_count)] == ["f799"]


async def test_q_quits() -> None:
    app = PytopApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.return_code is None
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code == 0


async def test_d_shows_the_stacks_now_with_arguments_and_locals() -> None:
    """`d` reads the process's stacks now, off the screen's thread, and shows each frame with
    its arguments and locals; Escape closes the panel."""
    source = FakeSource()
    app = PytopApp(source, stacks_now=source.stacks_now)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("d")
        for _ in range(50):
            await pilot.pause(0.02)
            shown = isinstance(app.screen, StacksPanel) and str(app.screen.query_one("#stacks-text").render())
            if shown and "Arguments:" in shown:
                break
        text = str(app.screen.query_one("#stacks-text").render())
        assert source.looked == TARGET.pid
        frame = ("    wait (/srv/app.py:12)\n        Arguments:\n          timeout: 5\n"
                 "        Locals:\n          left: 4.5")
        assert frame in text, text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, StacksPanel)


async def test_b_and_escape_go_back_to_the_hosts_table_when_opened_from_it() -> None:
    """b, or Esc with nothing open, ends a view opened from the host's table (which opens again);
    Esc closes the tree first."""
    went = {}
    for keys in (["b"], ["T", "escape"], ["T", "escape", "escape"]):
        app = PytopApp(FakeSource(), back=True)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            shown = str(app.query_one("#keys").render())
            for key in keys:
                await pilot.press(key)
                await pilot.pause()
        went[" ".join(keys)] = app.went_back
    assert went == {"b": True, "T escape": False, "T escape escape": True}, went
    assert "Hosts" in shown


async def test_no_way_back_in_a_view_not_opened_from_the_table() -> None:
    app = PytopApp(FakeSource())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("b", "escape")
        await pilot.pause()
        shown = str(app.query_one("#keys").render())
        running = app.is_running
    assert running and not app.went_back and "Hosts" not in shown
