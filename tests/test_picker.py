"""`pytop` without a PID: the picker lists real Python processes and hands back the chosen one."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
from textual.widgets import Static

import helpers
from pytop.core.model import PythonProcess
from pytop.process.pythons import python_processes
from pytop.ui.hosts import HostTable
from pytop.ui.picker import PickerApp, PickerState


@pytest.mark.process  # a Python and a sleep to tell apart
def test_python_processes_are_listed_and_others_not() -> None:
    python = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE)
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        assert python.stdout is not None and python.stdout.readline()
        pids = {p.pid: p for p in python_processes()}
    finally:
        for process in (python, sleeper):
            process.kill()
            process.wait()
    assert python.pid in pids and sleeper.pid not in pids
    assert "time.sleep(60)" in pids[python.pid].command and pids[python.pid].user == "root"


async def test_choosing_a_process_in_the_picker(some_interp: dict[str, Any]) -> None:
    with helpers.running(some_interp, "stacks.py") as t:
        app = PickerApp(refresh_seconds=60)
        async with app.run_test(size=(140, 30)) as pilot:
            await app.workers.wait_for_complete()  # the list is made in a thread
            await pilot.pause()
            table = app.query_one(HostTable)
            row = app.pids.index(t.pid)
            assert "stacks.py" in table.cell(str(t.pid), "command")
            table.move_cursor(row)
            await pilot.press("enter")
            await pilot.pause()
        assert app.return_value == t.pid


@pytest.mark.ui  # the picker driven by its pilot
async def test_leaving_the_picker() -> None:
    app = PickerApp(refresh_seconds=60)
    async with app.run_test(size=(100, 20)) as pilot:
        await pilot.press("q")
    assert app.return_value is None


@pytest.mark.ui  # the picker driven by its pilot
async def test_a_refresh_does_not_move_rows_under_the_cursor() -> None:
    app = PickerApp(refresh_seconds=60)
    async with app.run_test(size=(100, 20)) as pilot:
        await app.workers.wait_for_complete()
        app.show_processes([PythonProcess(10, "a", "one", 50.0), PythonProcess(11, "a", "two", 10.0)])
        app.query_one(HostTable).move_cursor(1)
        app.show_processes([PythonProcess(12, "a", "new", 90.0), PythonProcess(11, "a", "two", 80.0),
                  PythonProcess(10, "a", "one", 0.0)])
        await pilot.pause()
        assert app.pids == [10, 11, 12]  # busier now, still where they were; the newcomer last
        assert app.pids[app.query_one(HostTable).cursor] == 11


@contextlib.asynccontextmanager
async def picker_showing(processes: list[PythonProcess], **options: Any) -> AsyncIterator[tuple[PickerApp, Any]]:
    """The picker (its own look done) showing `processes` instead, and its pilot."""
    app = PickerApp(refresh_seconds=60, **options)
    async with app.run_test(size=(140, 20)) as pilot:
        await app.workers.wait_for_complete()
        app.show_processes(processes)
        await pilot.pause()
        yield app, pilot


def two_processes() -> list[PythonProcess]:
    return [PythonProcess(10, "a", "one", 50.0, "3.12", threads=2, rss=1 << 20),
            PythonProcess(11, "b", "two", 10.0, "2.7", threads=9, rss=5 << 20)]


@pytest.mark.ui  # the picker driven by its pilot
async def test_the_keys_sort_as_the_function_tables_do_and_the_cursor_stays() -> None:
    async with picker_showing(two_processes()) as (app, pilot):
        table = app.query_one(HostTable)
        table.move_cursor(0)
        orders = {}
        for key in "2314":
            await pilot.press(key)
            await pilot.pause()
            orders[key] = list(app.pids)
            assert app.pids[table.cursor] == 10  # on its process, wherever it went
        intro = str(app.query_one("#intro", Static).render())
    assert orders == {"2": [11, 10], "3": [11, 10], "1": [10, 11], "4": [10, 11]}, orders
    assert "Sorted by PID" in intro, intro


@pytest.mark.ui  # the picker driven by its pilot
async def test_a_filter_narrows_the_table_and_c_clears_it() -> None:
    async with picker_showing(two_processes()) as (app, pilot):
        await pilot.press("slash", *"[/]tw", "enter")  # markup in the pattern is text
        await pilot.pause()
        nothing = list(app.pids)
        await pilot.press("slash", "ctrl+u", *"2.7", "enter")
        await pilot.pause()
        narrowed, intro = list(app.pids), str(app.query_one("#intro", Static).render())
        await pilot.press("c")
        await pilot.pause()
        cleared = list(app.pids)
    assert nothing == [] and narrowed == [11] and sorted(cleared) == [10, 11], (nothing, narrowed, cleared)
    assert "1 of 2 match" in intro, intro


def a_pool_and_a_loner() -> list[PythonProcess]:
    master = PythonProcess(100, "a", "gunicorn app", 1.0, "3.12", threads=2, rss=1 << 20, parent=1)
    workers = [PythonProcess(101 + i, "a", "gunicorn app", 40.0, "3.12", threads=3, rss=2 << 20, parent=100)
               for i in range(3)]
    return [*workers, PythonProcess(300, "b", "python other.py", 50.0, "3.11", parent=1), master]


@pytest.mark.ui  # the picker driven by its pilot
async def test_a_pool_is_one_row_that_opens_and_is_watched_whole() -> None:
    async with picker_showing(a_pool_and_a_loner()) as (app, pilot):
        table = app.query_one(HostTable)
        folded = list(app.keys)
        pool_row = table.cell("pool:100", "command"), table.cell("pool:100", "cpu")
        table.move_cursor(0)
        await pilot.press("space")
        await pilot.pause()
        opened = list(app.keys)
        table.move_cursor(2)  # a worker
        await pilot.press("space")  # on a member: the pool folds, the cursor on it
        await pilot.pause()
        refolded, cursor = list(app.keys), app.keys[table.cursor]
        await pilot.press("enter")
        await pilot.pause()
    assert folded == ["pool:100", "300"], folded
    assert pool_row == ("▸ [pool of 4, 3 busy] gunicorn app", "121%"), pool_row
    assert opened == ["pool:100", "100:100", "100:101", "100:102", "100:103", "300"], opened
    assert refolded == folded and cursor == "pool:100"
    assert app.return_value == 100 and app.chosen.pool and app.chosen.key == "pool:100"


@pytest.mark.ui  # the picker driven by its pilot
async def test_a_member_of_an_open_pool_is_watched_alone() -> None:
    async with picker_showing(a_pool_and_a_loner()) as (app, pilot):
        table = app.query_one(HostTable)
        table.move_cursor(0)
        await pilot.press("space")
        await pilot.pause()
        table.move_cursor(3)
        await pilot.press("enter")
        await pilot.pause()
    assert app.return_value == 102 and not app.chosen.pool and app.chosen.open_pools == {"pool:100"}


@pytest.mark.ui  # the picker driven by its pilot
async def test_why_the_last_view_ended_is_said_as_text() -> None:
    """The message may quote what another user chose (a program's path): never markup, never a
    control character sent to the terminal."""
    state = PickerState(note="pid 5: [bold]x[/] \x1b]2;pwned\x07")
    async with picker_showing(two_processes(), state=state) as (app, _):
        intro = str(app.query_one("#intro", Static).render())
    assert "pid 5: [bold]x[/] \\x1b]2;pwned\\x07" in intro, intro


async def test_the_busiest_show_their_hottest_function_and_gil(target_interp: dict[str, Any]) -> None:
    """The host sampler samples the busiest processes: the table names each one's hottest
    function with its share of the CPU, and its GIL share, as they come in."""
    import functools

    from pytop.run import attach_child
    from pytop.sampling.host import HostSampler

    with helpers.running(target_interp, "hot_spinner.py", "render_thumbnails") as t:
        app = PickerApp(refresh_seconds=1.0, sampler=functools.partial(HostSampler, attach_child, window=1.0))
        async with app.run_test(size=(160, 30)) as pilot:
            table = app.query_one(HostTable)

            def hottest() -> str:
                return table.cell(str(t.pid), "hottest") if str(t.pid) in app.keys else ""

            for _ in range(300):
                if hottest().startswith("render_thumbnails"):
                    break
                await pilot.pause(0.1)
            shown, gil = hottest(), table.cell(str(t.pid), "gil")
    share = int(shown.rsplit(" ", 1)[1].rstrip("%"))
    assert shown.startswith("render_thumbnails ") and 80 <= share <= 100, shown
    assert 80 <= int(gil.rstrip("%")) <= 100, gil


@pytest.mark.ui  # the picker driven by its pilot
async def test_a_pools_row_merges_its_members_heat() -> None:
    """A pool's hottest function is its members' summed, its GIL share over all their samples;
    a process not sampled shows blank, one sampled without CPU 'idle'."""
    from pytop.core.model import Heat

    processes = a_pool_and_a_loner()
    heats = {101: Heat((("handle", "app.py", 0.3), ("log", "app.py", 0.1)), 0.5, 100, 50),
             102: Heat((("log", "app.py", 0.25), ("handle", "app.py", 0.2)), 0.5, 100, 90),
             300: Heat((), 0.0, 40, 0)}
    async with picker_showing(processes) as (app, pilot):
        app.post_message(PickerApp.Heats(heats))
        await pilot.pause()
        table = app.query_one(HostTable)
        pool = table.cell("pool:100", "hottest"), table.cell("pool:100", "gil")
        loner = table.cell("300", "hottest"), table.cell("300", "gil")
    assert pool == ("handle 50%", "70%"), pool  # (0.3 + 0.2) of 1.0 s; 140 of 200 samples
    assert loner == ("idle", "0%"), loner


@pytest.mark.ui  # the picker driven by its pilot
async def test_two_programs_started_by_one_parent_are_two_pools() -> None:
    """A supervisor's two programs, each run several times: two pools with one root, each its
    own row, opened on its own (they were one key: the table refused the second, and the
    picker died with DuplicateKey on a host where the same parent started two programs)."""
    web = [PythonProcess(200 + i, "a", "python web.py", 10.0, "3.12", parent=50) for i in range(3)]
    jobs = [PythonProcess(300 + i, "a", "python jobs.py", 5.0, "3.12", parent=50) for i in range(2)]
    async with picker_showing([*web, *jobs]) as (app, pilot):
        keys = list(app.keys)
        app.query_one(HostTable).move_cursor(keys.index("pool:50:python jobs.py"))
        await pilot.press("space")
        await pilot.pause()
        opened = list(app.keys)
    assert keys == ["pool:50:python web.py", "pool:50:python jobs.py"], keys
    assert opened == [*keys, "50:300", "50:301"], opened
