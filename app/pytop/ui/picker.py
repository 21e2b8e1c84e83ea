"""`pytop` without a PID: pick one of the machine's Python processes."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Static
from textual.worker import get_current_worker

from ..process.pythons import PythonProcess, python_processes

PRIMING_SECONDS = 0.3


class PickerApp(App[int]):
    """Returns the chosen pid (None when the user quits)."""

    CSS = """
    #intro { padding: 0 1; background: $boost; }
    DataTable { height: 1fr; }
    """
    TITLE = "pytop"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("enter", "choose", "Watch it"),
        Binding("q,escape", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]

    def __init__(self, refresh_seconds: float = 2.0):
        super().__init__()
        self.refresh_seconds = refresh_seconds
        self.pids: list[int] = []

    def compose(self) -> ComposeResult:
        yield Static(Text("Which Python process? Enter watches the one under the cursor.", style="bold"),
                     id="intro")
        yield DataTable(cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, label in (("pid", "PID"), ("user", "User"), ("cpu", "CPU%"), ("command", "Command")):
            table.add_column(label, key=key)
        table.focus()
        self.refresh_list()
        self.set_interval(self.refresh_seconds, self.refresh_list)

    def refresh_list(self) -> None:
        self.run_worker(self._scan, thread=True, exclusive=True, group="scan")

    def _scan(self) -> None:
        """Reading every process's maps and ELF headers takes a while: not on the event loop."""
        if not self.pids:
            python_processes()  # CPU shares are measured between two looks
            time.sleep(PRIMING_SECONDS)
        processes = python_processes()
        if not get_current_worker().is_cancelled:
            self.call_from_thread(self.show_processes, processes)

    def show_processes(self, processes: list[PythonProcess]) -> None:
        """The list, busiest first when it opens; then rows keep their places under the cursor
        (new processes come at the end, ended ones go), so a refresh never moves a row away."""
        if self.pids:
            shown = set(self.pids)
            by_pid = {p.pid: p for p in processes}
            kept = [by_pid[pid] for pid in self.pids if pid in by_pid]
            processes = kept + [p for p in processes if p.pid not in shown]
        table = self.query_one(DataTable)
        keep = self.pids[table.cursor_row] if self.pids and table.row_count else None
        table.clear()
        self.pids = [p.pid for p in processes]
        for p in processes:
            # Text, not str: a str cell is read as markup, and a command line is any user's ("[/]"
            # once crashed root's picker, "[white on white]" hid text)
            table.add_row(Text(str(p.pid), justify="right"), Text(p.user), Text(f"{p.cpu_pct:.0f}%", justify="right"),
                          Text(p.command), key=str(p.pid))
        if not processes:
            self.query_one("#intro", Static).update(Text("No Python process found (yet); q quits.", style="bold"))
        elif keep in self.pids:
            table.move_cursor(row=self.pids.index(keep))

    def action_choose(self) -> None:
        table = self.query_one(DataTable)
        if self.pids and table.row_count:
            self.exit(self.pids[table.cursor_row])

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.exit(int(str(event.row_key.value)))
