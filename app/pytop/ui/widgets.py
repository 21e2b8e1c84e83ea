"""The widgets of the main screen: the process header, banners and the function table."""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual.events import Click
from textual.message import Message
from textual.widgets import Static

from ..core.model import FunctionRow, RowKey, Snapshot
from ..report import format as fmt
from .linetable import Cell, Column, LineTable, Part, Row
from .timeline import Axis, timeline_line, window_at
from .trends import Trends

SORT_COLUMNS = {
    "own_pct": "%Own",
    "total_pct": "%Total",
    "own_time": "OwnTime",
    "total_time": "TotalTime",
}
RISE, FALL = ("▲", "red"), ("▼", "green")  # more time in a function is the news to notice


Fact = list[tuple[str, str]]  # one fact: its pieces of text, each with its style


def flow(facts: list[Fact], width: int) -> list[list[Fact]]:
    """Facts into lines of at most `width` cells, each fact whole, in order (a fact wider than a
    line has one of its own)."""
    lines: list[list[Fact]] = [[]]
    used = 0
    for fact in facts:
        size = sum(cell_len(piece) for piece, _ in fact)
        if lines[-1] and used + 1 + size > width:
            lines.append([])
            used = 0
        used += size + (1 if lines[-1] else 0)
        lines[-1].append(fact)
    return lines


class ProcessHeader(Static):
    """What is sampled, how sampling goes, and how the process does."""

    class TimeChosen(Message):
        """A click on the time axis: the window under it (of a recording), or its moment (the
        live view's session: wall-clock seconds at its end)."""

        def __init__(self, index: int, moment: float | None) -> None:
            super().__init__()
            self.index = index
            self.moment = moment

    _axis: tuple[int, Axis, int] | None = None  # the time axis's line, what it drew, its width

    def on_click(self, event: Click) -> None:
        at = event.get_content_offset(self)
        if at is None or self._axis is None or at.y != self._axis[0]:
            return
        _, axis, width = self._axis
        index = window_at(axis, width, at.x)
        if index is not None:
            self.post_message(self.TimeChosen(index, axis.ends[index] if axis.ends else None))

    def show_header(self, s: Snapshot, notes: list[str], trends: Trends | None = None, axis: Axis | None = None
                    ) -> None:
        """Facts flowed onto as many lines as the width needs, none cut: every figure shows at 80
        columns (at 120 the error rate and pytop's own CPU once fell off the end). The command
        line comes last on the first line, being the longest, and only it is cut. The time axis
        (ui/timeline.py) comes under the replay's line (a live view's: under the first)."""
        t = s.target
        width = max(self.size.width - 2, 20) if self.size.width else 10_000
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("pytop", style="bold")
        text.append(f"  pid {t.pid}  {fmt.python_label(t.python_version)}  {fmt.usage_line(s)}  ")
        text.append(fmt.one_line(t.command), style="bold cyan")
        groups: list[list[Fact]] = [[[(fact, "bold yellow")] for fact in fmt.replay_facts(s)],
                                    [[(fact, "")] for fact in fmt.samples_facts(s)],
                                    [[(fact, "bold")] for fact in fmt.threads_facts(s)]]
        if trends is not None and len(trends.times) > 1:  # the last minute
            groups[-1] += [[("  CPU ", ""), (trends.cpu_line(), "cyan")],
                          [(" Rate ", ""), (trends.rate_line(s.run.rate_asked or max(trends.rate)), "cyan")]]
        for number, group in enumerate(groups):
            for line in flow(group, width) if group else []:  # (a live view has no replay line)
                text.append("\n")
                for k, fact in enumerate(line):
                    if k:
                        text.append(" ")
                    for piece, style in fact:
                        text.append(piece, style=style)
            if number == 0:  # (not before the header has a width: an axis 10,000 bars wide)
                drawn = timeline_line(axis, width) if axis is not None and self.size.width else None
                self._axis = None
                if axis is not None and drawn is not None:
                    text.append("\n")
                    self._axis = (text.plain.count("\n"), axis, width)
                    text.append_text(drawn)
        if notes:
            text.append("\n")
            for note in notes:
                text.append(f" {note} ", style="bold reverse red" if note == "PAUSED" else "bold yellow")
        # A layout pass only when the header's height is not its lines' (a line of notes came or
        # went, or the last pass has not happened yet): a pass for every refresh measured every
        # widget again, a tenth of the UI's time.
        self.update(text, layout=self.size.height != text.plain.count("\n") + 1)


class Banner(Static):
    """One line of warning; hidden while there is nothing to say."""

    _message: str | None = None

    def say(self, message: str | None) -> None:
        if message == self._message:  # most refreshes: nothing to redo
            return
        self._message = message
        self.display = message is not None
        if message is not None:
            self.update(Text(message))


class FunctionTable(LineTable):
    """Functions (or lines) with their figures, sorted by one of them. Drawn through the Line
    API (LineTable): a refresh builds a row only for what changed and draws the lines in sight."""

    show_blurred_cursor = True  # the chosen row stays marked while the callers panel has the keys

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(function_columns("own_time"), **kwargs)
        self.sort_column = "own_time"
        self.show_pids = False  # several processes: say whose each row is
        self._rows: dict[RowKey, FunctionRow] = {}
        self._built: dict[RowKey, tuple[FunctionRow, int, Row]] = {}  # what each row was drawn from
        self._drawn_for: tuple[object, ...] = ()  # cwd, full names, pids: what every row's text depends on

    def cells(self, row: FunctionRow, cwd: str | None, full: bool) -> tuple[Cell, ...]:
        name: list[Part] = []
        if self.show_pids:
            name.append((f"[{row.pid}] ", "cyan"))
        name.append((row.function, "bold"))
        where = fmt.where(row, cwd, full)
        if where:  # a pseudo-function (no Python frame, ...) has no file
            name.append((f" ({where})", "dim"))
        return (fmt.percent(row.own_pct), fmt.percent(row.total_pct), fmt.seconds(row.own_time),
                fmt.seconds(row.total_time), tuple(name))

    def build(self, row: FunctionRow, move: int, cwd: str | None, full: bool) -> Row:
        built = self._built.get(row.key)
        if built is not None and built[0] == row and built[1] == move:
            return built[2]
        trend, trend_style = RISE if move > 0 else FALL if move < 0 else ("", "")
        *figures, name = self.cells(row, cwd, full)
        line = Row(row.key, (*figures, trend, name), cell_styles=("", "", "", "", trend_style))
        self._built[row.key] = (row, move, line)
        return line

    def show_functions(self, rows: tuple[FunctionRow, ...], cwd: str | None, full: bool, show_pids: bool = False,
             trends: Trends | None = None) -> None:
        context = (cwd, full, show_pids)
        if context != self._drawn_for:
            self._drawn_for = context
            self.show_pids = show_pids
            self._built = {}
        self._rows = {row.key: row for row in rows}
        lines = [self.build(row, trends.move(row.key) if trends is not None else 0, cwd, full)
                 for row in sort_rows(rows, self.sort_column)]
        self._built = {key: built for key, built in self._built.items() if key in self._rows}
        self.set_rows(lines)

    def current_key(self) -> RowKey | None:
        """The row under the cursor."""
        key = self.cursor_key
        return key if isinstance(key, tuple) else None

    def row_of(self, key: RowKey) -> FunctionRow | None:
        return self._rows.get(key)

    def select_key(self, key: RowKey) -> None:
        """Move the cursor to the row of `key`, if it is shown."""
        index = self.index_of(key)
        if index is not None:
            self.move_cursor(index)

    def set_sort(self, column: str) -> None:
        self.sort_column = column
        self.set_columns(function_columns(column))
        rows = sort_rows(tuple(self._rows.values()), column)
        self.set_rows([self._built[row.key][2] for row in rows if row.key in self._built])
        self.move_cursor(0)  # a new order: its top is what to look at


def function_columns(sorted_by: str) -> list[Column]:
    """The function table's columns, the one it is sorted by marked. ("100.0%" must fit under
    the shortest label.)"""
    figures = [Column(f"{label}▼" if key == sorted_by else label, max(len(label) + 1, 6), right=True, key=key,
                      style="bold reverse" if key == sorted_by else "")
               for key, label in SORT_COLUMNS.items()]
    return [*figures, Column("", 1), Column("Function (filename)", 0)]  # the trend: rose or fell


def sort_rows(rows: tuple[FunctionRow, ...], column: str) -> list[FunctionRow]:
    """Largest first; ties broken by the other time and then by name, so rows that are equal do
    not swap places between refreshes."""
    other = "total_time" if column != "total_time" else "own_time"
    return sorted(rows, key=lambda r: (-getattr(r, column), -getattr(r, other), r.function, r.key))


class KeyBar(Static):
    """Every key the screen answers now with its name, flowed onto as many lines as the width
    needs: Textual's Footer is one line, and at 120 columns it ended "p Paus" (e, d, A and P
    were not shown at all). The sort keys share one entry, "1-4 Sort"."""

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self.bindings_changed)
        self.bindings_changed()

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def on_resize(self) -> None:
        self.bindings_changed()

    def bindings_changed(self, _screen: object = None) -> None:
        keys: list[tuple[str, str]] = []
        actions: set[str] = set()
        for active in self.screen.active_bindings.values():
            binding = active.binding
            if not binding.show or binding.action in actions:
                continue
            actions.add(binding.action)
            keys.append((self.app.get_key_display(binding), binding.description))
        sort_keys = [key for key, description in keys if description in SORT_COLUMNS.values()]
        if len(sort_keys) == len(SORT_COLUMNS):  # one entry: "1-4 Sort", where the first was
            at = next(i for i, (_, description) in enumerate(keys) if description in SORT_COLUMNS.values())
            keys = [k for k in keys if k[1] not in SORT_COLUMNS.values()]
            keys.insert(at, (f"{sort_keys[0]}-{sort_keys[-1]}", "Sort"))
        facts: list[Fact] = [[(f" {key} ", "bold reverse"), (f" {description}", "")] for key, description in keys]
        width = max(self.size.width - 1, 20) if self.size.width else 10_000
        text = Text(no_wrap=True, overflow="ellipsis")
        for n, line in enumerate(flow(facts, width)):
            if n:
                text.append("\n")
            for k, fact in enumerate(line):
                if k:
                    text.append(" ")
                for piece, style in fact:
                    text.append(piece, style=style)
        self.update(text, layout=self.size.height != text.plain.count("\n") + 1)
