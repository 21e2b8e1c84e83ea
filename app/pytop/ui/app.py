"""The live view: a Textual app that shows the snapshots a source publishes.

Data flows one way: source (the sampler thread) -> Snapshot -> post_message -> widgets. The app
never waits for the source; key presses that need new figures (reset, by-line view) are sent to
the source, which answers with a fresh snapshot at once.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import Protocol

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer

from ..model import Snapshot
from . import format as fmt
from .help import HelpScreen
from .messages import SnapshotReady
from .widgets import SORT_COLUMNS, Banner, FunctionTable, ProcessHeader


class SnapshotSource(Protocol):
    """What the app needs from a sampler (a fake one in UI tests)."""

    def start(self, publish: Callable[[Snapshot], None]) -> None: ...
    def stop(self) -> None: ...
    def reset(self) -> None: ...
    def refresh_now(self) -> None: ...
    def set_by_line(self, by_line: bool) -> None: ...


class PytopApp(App[None]):
    CSS_PATH = "pytop.tcss"
    TITLE = "pytop"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("1", "sort('own_pct')", "%Own"),
        Binding("2", "sort('total_pct')", "%Total"),
        Binding("3", "sort('own_time')", "OwnTime"),
        Binding("4", "sort('total_time')", "TotalTime"),
        Binding("l,L", "toggle_lines", "Lines", key_display="L"),
        Binding("r,R", "reset", "Reset", key_display="R"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]
    KEY_HELP = [
        ("1 2 3 4", "sort by %Own, %Total, OwnTime, TotalTime (or click a column header)"),
        ("L", "show lines instead of functions, and back"),
        ("R", "reset all statistics"),
        ("↑ ↓ PgUp PgDn", "scroll the table (the mouse wheel too)"),
        ("?", "this help"),
        ("q, Ctrl-C", "quit"),
    ]

    def __init__(self, source: SnapshotSource, *, sort: str = "own_time", by_line: bool = False,
                 full_filenames: bool = False, notes: tuple[str, ...] = (), handle_signals: bool = False):
        super().__init__()
        self.handle_signals = handle_signals
        self.source = source
        self.initial_sort = sort
        self.by_line = by_line
        self.full_filenames = full_filenames
        self.notes = list(notes)
        self.snapshot: Snapshot | None = None

    def compose(self) -> ComposeResult:
        yield ProcessHeader(Text("pytop: waiting for the first samples..."), id="header")
        yield Banner(id="error-banner")
        yield Banner(id="behind-banner")
        yield Banner(id="exited-banner")
        yield FunctionTable(id="functions")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(FunctionTable)
        table.set_sort(self.initial_sort)
        table.focus()
        if self.by_line:
            self.source.set_by_line(True)
        if self.handle_signals:  # SIGTERM or a closed terminal: leave the terminal as it was
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGHUP):
                loop.add_signal_handler(sig, self.exit)
        self.source.start(self.publish)

    def publish(self, snapshot: Snapshot) -> None:
        """Called from the sampler thread: post_message is the thread-safe way in."""
        self.post_message(SnapshotReady(snapshot))

    def on_unmount(self) -> None:
        self.source.stop()

    def on_snapshot_ready(self, message: SnapshotReady) -> None:
        self.snapshot = message.snapshot
        self.show(message.snapshot)

    def show(self, s: Snapshot) -> None:
        notes = list(self.notes)
        if s.by_line:
            notes.append("[by line]")
        self.query_one(ProcessHeader).show(s, notes)
        self.query_one("#error-banner", Banner).say(fmt.error_banner(s))
        self.query_one("#behind-banner", Banner).say(fmt.behind_banner(s))
        self.query_one("#exited-banner", Banner).say(fmt.exited_banner(s))
        self.query_one(FunctionTable).show(s.rows, s.target.cwd, self.full_filenames)

    # ---- actions -------------------------------------------------------------------------

    def action_sort(self, column: str) -> None:
        if column in SORT_COLUMNS:
            self.query_one(FunctionTable).set_sort(column)

    def action_toggle_lines(self) -> None:
        self.by_line = not self.by_line
        self.source.set_by_line(self.by_line)

    def action_reset(self) -> None:
        self.source.reset()

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.KEY_HELP))

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        self.action_sort(str(event.column_key.value))
