"""The callers and callees panel of the selected function. Enter on one selects it in turn."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Static

from ..core.model import CallGraph, Neighbour, RowKey
from ..report import format as fmt
from .linetable import Column, LineTable, Part, Row


def describe(key: RowKey, cwd: str | None, full: bool) -> Text:
    text = Text()
    for part, style in describe_parts(key, cwd, full):
        text.append(part, style=style)
    return text


def describe_parts(key: RowKey, cwd: str | None, full: bool) -> tuple[Part, ...]:
    function, filename, line, _ = key
    if not filename:
        return ((function, "bold"),)
    where = filename if full else fmt.short_filename(filename, cwd)
    return ((function, "bold"), (f" ({where}{f':{line}' if line else ''})", "dim"))


class NeighbourTable(LineTable):
    def __init__(self, title: str, **kwargs: Any) -> None:
        super().__init__([Column("Share", 6, right=True), Column("Time", 7, right=True), Column(title, 0)], **kwargs)
        self.title = title
        self._shown: tuple[Neighbour, ...] | None = None

    def show_neighbours(self, neighbours: tuple[Neighbour, ...], cwd: str | None, full: bool) -> None:
        if neighbours == self._shown:
            return
        self._shown = neighbours
        self.set_rows([Row(n.key, (f"{100 * n.share:.0f}%", fmt.seconds(n.seconds), describe_parts(n.key, cwd, full)))
                       for n in neighbours])


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

    def show_graph(self, graph: CallGraph, cwd: str | None, full: bool) -> None:
        title = Text("Callers and callees of ")
        title.append_text(describe(graph.focus, cwd, full))
        title.append(f", {fmt.seconds(graph.total_seconds)} since the reset   ", style="")
        title.append("Enter: go to it   Esc: close", style="dim")
        self.query_one("#callers-title", Static).update(title)
        self.query_one("#callers", NeighbourTable).show_neighbours(graph.callers, cwd, full)
        self.query_one("#callees", NeighbourTable).show_neighbours(graph.callees, cwd, full)

    def focus_first(self) -> None:
        """Into the callers (the callees when there are none), so that Enter picks one."""
        callers = self.query_one("#callers", NeighbourTable)
        (callers if callers.row_count else self.query_one("#callees", NeighbourTable)).focus()

    def on_line_table_chosen(self, event: LineTable.Chosen) -> None:
        event.stop()
        key = event.key
        if isinstance(event.table, NeighbourTable) and isinstance(key, tuple) and key[1]:
            self.post_message(self.Chosen(key))  # (thread start) and (itself) are not functions
