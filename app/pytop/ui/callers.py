"""The callers and callees panel of the selected function. Enter on one selects it in turn."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from ..core.model import CallGraph, Neighbour, RowKey
from ..report import format as fmt


def describe(key: RowKey, cwd: str | None, full: bool) -> Text:
    function, filename, line, _ = key
    text = Text(function, style="bold")
    if filename:
        where = filename if full else fmt.short_filename(filename, cwd)
        text.append(f" ({where}{f':{line}' if line else ''})", style="dim")
    return text


class NeighbourTable(DataTable[object]):
    def __init__(self, title: str, **kwargs: object) -> None:
        super().__init__(cursor_type="row", **kwargs)  # type: ignore[arg-type]
        self.title = title
        self.entries: dict[str, RowKey] = {}
        self._shown: tuple[Neighbour, ...] | None = None

    def on_mount(self) -> None:
        self.add_column(Text("Share", justify="right"), key="share", width=6)
        self.add_column(Text("Time", justify="right"), key="time", width=7)
        self.add_column(self.title, key="who")

    def show(self, neighbours: tuple[Neighbour, ...], cwd: str | None, full: bool) -> None:
        if neighbours == self._shown:
            return
        cursor = self.cursor_row
        self.clear()
        self.entries = {}
        for i, n in enumerate(neighbours):
            self.entries[str(i)] = n.key
            self.add_row(Text(f"{100 * n.share:.0f}%", justify="right"),
                         Text(fmt.seconds(n.seconds), justify="right"), describe(n.key, cwd, full), key=str(i))
        self._shown = neighbours
        if self.row_count:
            self.move_cursor(row=min(cursor, self.row_count - 1))


class CallersPanel(Vertical):
    """Who calls the selected function, and what it calls, since the last reset."""

    class Chosen(Message):
        def __init__(self, key: RowKey) -> None:
            super().__init__()
            self.key = key
            """The caller or callee picked, to select next."""

    def compose(self) -> ComposeResult:
        yield Static(id="callers-title")
        with Horizontal():
            yield NeighbourTable("Called by", id="callers")
            yield NeighbourTable("Calls", id="callees")

    def show(self, graph: CallGraph, cwd: str | None, full: bool) -> None:
        title = Text("Callers and callees of ")
        title.append_text(describe(graph.focus, cwd, full))
        title.append(f", {fmt.seconds(graph.total_seconds)} since the reset   ", style="")
        title.append("Enter: go to it   Esc: close", style="dim")
        self.query_one("#callers-title", Static).update(title)
        self.query_one("#callers", NeighbourTable).show(graph.callers, cwd, full)
        self.query_one("#callees", NeighbourTable).show(graph.callees, cwd, full)

    def focus_first(self) -> None:
        """Into the callers (the callees when there are none), so that Enter picks one."""
        callers = self.query_one("#callers", NeighbourTable)
        (callers if callers.row_count else self.query_one("#callees", NeighbourTable)).focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        table = event.data_table
        if isinstance(table, NeighbourTable):
            key = table.entries.get(str(event.row_key.value))
            if key is not None and key[1]:  # (thread start) and (itself) are not functions
                self.post_message(self.Chosen(key))
