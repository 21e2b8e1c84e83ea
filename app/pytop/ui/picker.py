"""`pytop` without a PID: the machine's Python processes, to pick one from. Sorted by a key (1-4,
as the function table's are, or a click on a column's header) or kept where they were (so that a
refresh never moves a row away from the cursor), and narrowed by `/`."""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Static
from textual.worker import get_current_worker

from ..core.model import PythonProcess
from ..process.pythons import PythonScan
from ..report import format as fmt
from .filter import FilterBar, compile_filter

PRIMING_SECONDS = 0.3
# The orders a key (or a click on the column's header) gives: busiest, biggest first.
SORTS = {"cpu": ("CPU%", lambda p: (-p.cpu_pct, p.pid)), "rss": ("RSS", lambda p: (-p.rss, p.pid)),
         "threads": ("Threads", lambda p: (-p.threads, p.pid)), "pid": ("PID", lambda p: p.pid)}


@dataclass(frozen=True)
class PickerState:
    """What the table keeps while a process's view is open from it."""

    sort: str | None = None
    filter_text: str = ""
    pid: int | None = None  # under the cursor
    note: str | None = None  # why the last view ended (the process exited, could not be read)


class PickerApp(App[int]):
    """Returns the chosen pid (None when the user quits)."""

    CSS = """
    #intro { padding: 0 1; background: $boost; }
    DataTable { height: 1fr; }
    FilterBar { display: none; }
    """
    TITLE = "pytop"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("enter", "choose", "Watch it"),
        Binding("1", "sort('cpu')", "CPU%", tooltip="sort by CPU (or click a column header)"),
        Binding("2", "sort('rss')", "RSS", tooltip="sort by resident memory"),
        Binding("3", "sort('threads')", "Threads", tooltip="sort by threads"),
        Binding("4", "sort('pid')", "PID", tooltip="sort by pid"),
        Binding("slash", "filter", "Filter", key_display="/", tooltip="show only the processes that match"),
        Binding("c", "clear_filter", "Clear filter", show=False),
        Binding("q,escape", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]

    def __init__(self, refresh_seconds: float = 2.0, state: PickerState = PickerState()):
        super().__init__()
        self.refresh_seconds = refresh_seconds
        self.pids: list[int] = []  # as shown
        self.sort = state.sort  # None: busiest first at the start, then each row kept where it was
        self.filter_text = state.filter_text
        self.note = state.note
        self._wanted = state.pid  # the cursor's process, once it shows
        self.chosen = state  # once a process is chosen: the table as it was then
        self.latest: list[PythonProcess] = []  # the last look's, busiest first
        self._scan_of_host = PythonScan()

    def compose(self) -> ComposeResult:
        yield Static(Text("Which Python process? Enter watches the one under the cursor.", style="bold"),
                     id="intro")
        yield DataTable(cursor_type="row", zebra_stripes=True)
        yield FilterBar(placeholder="filter: text or regular expression over pid, user, version and command; "
                                    "Enter applies")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, label in (("pid", "PID"), ("user", "User"), ("python", "Python"), ("cpu", "CPU%"),
                           ("threads", "Threads"), ("rss", "RSS"), ("command", "Command")):
            table.add_column(label, key=key)
        table.focus()
        self.refresh_list()
        self.set_interval(self.refresh_seconds, self.refresh_list)

    def refresh_list(self) -> None:
        self.run_worker(self._scan, thread=True, exclusive=True, group="scan")

    def _scan(self) -> None:
        """A look at every process in /proc takes a while on a big host: not on the event loop."""
        if not self.pids:
            self._scan_of_host.look()  # CPU shares are measured between two looks
            time.sleep(PRIMING_SECONDS)
        processes = self._scan_of_host.look()
        if not get_current_worker().is_cancelled:
            self.call_from_thread(self.show_processes, processes)

    def show_processes(self, processes: list[PythonProcess]) -> None:
        """A look's processes (busiest first), as the sort and the filter say."""
        self.latest = processes
        self._show()

    def _show(self) -> None:
        """In the order sorted by, or busiest first when the picker opens and then each row where
        it was (new processes come at the end, ended ones go); the cursor stays on its process."""
        pattern = compile_filter(self.filter_text)
        processes = [p for p in self.latest
                     if pattern is None or pattern.search(f"{p.pid} {p.user} {p.version} {p.described}")]
        if self.sort is not None:
            processes.sort(key=SORTS[self.sort][1])
        elif self.pids:
            shown = set(self.pids)
            by_pid = {p.pid: p for p in processes}
            kept = [by_pid[pid] for pid in self.pids if pid in by_pid]
            processes = kept + [p for p in processes if p.pid not in shown]
        table = self.query_one(DataTable)
        keep = self.pids[table.cursor_row] if self.pids and table.row_count else self._wanted
        table.clear()
        self.pids = [p.pid for p in processes]
        for p in processes:
            # Text, not str: a str cell is read as markup, and a command line is any user's ("[/]"
            # once crashed root's picker, "[white on white]" hid text)
            table.add_row(Text(str(p.pid), justify="right"), Text(p.user), Text(p.version or "?"),
                          Text(f"{p.cpu_pct:.0f}%", justify="right"), Text(str(p.threads), justify="right"),
                          Text(fmt.byte_size(p.rss), justify="right"),
                          Text(p.described), key=str(p.pid))
        self.query_one("#intro", Static).update(self._intro())
        if keep in self.pids:
            table.move_cursor(row=self.pids.index(keep))

    def _intro(self) -> Text:
        intro = Text()
        if self.note:
            intro.append(f"{self.note}\n", style="bold red")  # (a Text: the message is data, not markup)
        if not self.latest:
            return intro.append("No Python process found (yet); q quits.", style="bold")
        intro.append("Which Python process? Enter watches the one under the cursor (b comes back).", style="bold")
        if self.sort is not None:
            intro.append(f"  Sorted by {SORTS[self.sort][0]}.")
        if self.filter_text:
            intro.append(f"  {len(self.pids)} of {len(self.latest)} match ")
            intro.append(self.filter_text, style="reverse")  # (a Text: never read as markup)
            intro.append(" (c clears).")
        return intro

    def action_sort(self, column: str) -> None:
        self.sort = column
        self._show()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        if event.column_key.value in SORTS:
            self.action_sort(event.column_key.value)

    def action_filter(self) -> None:
        bar = self.query_one(FilterBar)
        bar.value = self.filter_text
        bar.display = True
        bar.focus()

    def on_filter_bar_done(self, message: FilterBar.Done) -> None:
        bar = self.query_one(FilterBar)
        bar.display = False
        self.query_one(DataTable).focus()
        if message.text is not None:
            self.filter_text = message.text
            self._show()

    def action_clear_filter(self) -> None:
        self.filter_text = ""
        self._show()

    def action_choose(self) -> None:
        table = self.query_one(DataTable)
        if self.pids and table.row_count:
            self._choose(self.pids[table.cursor_row])

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self._choose(int(str(event.row_key.value)))

    def _choose(self, pid: int) -> None:
        self.chosen = PickerState(self.sort, self.filter_text, pid)  # to come back to
        self.exit(pid)
