"""`pytop` without a PID: the picker lists real Python processes and hands back the chosen one."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from textual.widgets import DataTable

import helpers
from pytop.process.pythons import PythonProcess, python_processes
from pytop.ui.picker import PickerApp


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
            table = app.query_one(DataTable)
            row = app.pids.index(t.pid)
            assert "stacks.py" in str(table.get_row_at(row)[3])
            table.move_cursor(row=row)
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
        app.query_one(DataTable).move_cursor(row=1)
        app.show_processes([PythonProcess(12, "a", "new", 90.0), PythonProcess(11, "a", "two", 80.0),
                  PythonProcess(10, "a", "one", 0.0)])
        await pilot.pause()
        assert app.pids == [10, 11, 12]  # busier now, still where they were; the newcomer last
        assert app.pids[app.query_one(DataTable).cursor_row] == 11
