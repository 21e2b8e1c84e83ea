"""The help screen: every key, what each column means."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

COLUMNS_HELP = [
    ("%Own", "share of the last refresh's time spent in the function itself (the innermost "
             "frame); like top's %CPU, one thread busy in it all the time is 100%"),
    ("%Total", "the same, counting the functions it called too (recursion counted once)"),
    ("OwnTime", "seconds spent in the function itself since the start or the last reset: in cpu mode, "
                "time on a CPU as the kernel counts it"),
    ("TotalTime", "seconds spent in it or in what it called, since the start or the last reset"),
    ("GIL", "share of samples in which some thread held the GIL"),
    ("Active", "share of thread samples in which the thread was running, not waiting or asleep"),
    ("Threads", "Python threads in the last sample"),
]
FOOTNOTE = ("cpu mode counts time on a CPU (sleeping threads add nothing); wall mode counts every thread's "
            "time, sleeping or not; gil mode the GIL holder's. m switches between them.")


def two_columns(rows: list[tuple[str, str]], key_style: str) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style=key_style, no_wrap=True)
    grid.add_column()
    for key, text in rows:
        grid.add_row(key, text)
    return grid


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,question_mark,q,x", "close", "Close help"),
    ]

    def __init__(self, bindings: list[tuple[str, str]]):
        super().__init__()
        self.key_help = bindings

    def compose(self) -> ComposeResult:
        body = Group(
            Text("Keys", style="bold"),
            two_columns(self.key_help, "bold cyan"),
            Text(""),
            Text("Columns and figures", style="bold"),
            two_columns(COLUMNS_HELP, "bold"),
            Text(""),
            Text(FOOTNOTE),
            Text("Press Escape or ? to close.", style="dim"),
        )
        with VerticalScroll(id="help-body"):
            yield Static(body)

    def action_close(self) -> None:
        self.dismiss(None)
