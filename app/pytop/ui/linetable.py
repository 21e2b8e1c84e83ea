"""A table drawn through Textual's public Line API: a ScrollView that renders only the lines in
sight, from rows of plain cells. Setting 2,000 rows costs a sort and a list, not 2,000 widget
rows; a refresh redraws what is on screen. The header stays on the first line; the cursor is a
row, kept on its key when the rows change; Enter or a click on the cursor's row chooses it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip


@dataclass(frozen=True)
class Column:
    label: str
    width: int  # 0: whatever the others leave
    right: bool = False  # right-justified (numbers)


@dataclass(frozen=True)
class Row:
    key: object
    cells: tuple[str, ...]
    style: str = ""  # a Rich style for the whole row ("dim", "bold reverse", ...)
    cell_styles: tuple[str, ...] = ()  # per cell, on top of the row's


class LineTable(ScrollView, can_focus=True):
    BINDINGS = [
        Binding("up", "cursor(-1)", show=False),
        Binding("down", "cursor(1)", show=False),
        Binding("pageup", "page(-1)", show=False),
        Binding("pagedown", "page(1)", show=False),
        Binding("home", "cursor(-1000000000)", show=False),
        Binding("end", "cursor(1000000000)", show=False),
        Binding("enter", "choose", show=False),
    ]
    COMPONENT_CLASSES = {"linetable--header", "linetable--cursor", "linetable--even"}

    class Chosen(Message):
        """Enter (or a click) on a row."""

        def __init__(self, table: LineTable, key: object) -> None:
            super().__init__()
            self.table = table
            self.key = key

    def __init__(self, columns: Sequence[Column], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.columns = list(columns)
        self.rows: list[Row] = []
        self.cursor = 0

    # ---- content -----------------------------------------------------------------------------

    def set_rows(self, rows: list[Row]) -> None:
        """New rows; the cursor stays on the key it was on (else at the same position)."""
        if rows == self.rows:
            self.refresh()  # the columns may have changed
            return
        key = self.rows[self.cursor].key if 0 <= self.cursor < len(self.rows) else None
        self.rows = rows
        at = next((i for i, row in enumerate(rows) if row.key == key), None) if key is not None else None
        self.cursor = at if at is not None else min(self.cursor, max(0, len(rows) - 1))
        self.virtual_size = Size(self.size.width, len(rows) + 1)
        self.refresh()

    @property
    def cursor_key(self) -> object | None:
        return self.rows[self.cursor].key if 0 <= self.cursor < len(self.rows) else None

    def row_text(self, index: int) -> tuple[str, ...]:
        return self.rows[index].cells

    # ---- drawing ---------------------------------------------------------------------------

    def _widths(self) -> list[int]:
        fixed = sum(c.width for c in self.columns) + len(self.columns) - 1
        rest = max(8, self.size.width - fixed)
        return [c.width or rest for c in self.columns]

    def _line(self, cells: Sequence[str], style: Style, cell_styles: Sequence[str] = ()) -> list[Segment]:
        segments = []
        for i, (column, width, cell) in enumerate(zip(self.columns, self._widths(), cells)):
            text = cell[:width]
            text = text.rjust(width) if column.right else text.ljust(width)
            extra = cell_styles[i] if i < len(cell_styles) else ""
            segments.append(Segment(text, style + Style.parse(extra) if extra else style))
            segments.append(Segment(" ", style))
        return segments

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        if y == 0:
            style = base + self.get_component_rich_style("linetable--header")
            return Strip(self._line([c.label for c in self.columns], style)).crop_extend(0, width, style)
        index = self.scroll_offset.y + y - 1
        if not 0 <= index < len(self.rows):
            return Strip.blank(width, base)
        row = self.rows[index]
        style = base
        if index % 2:
            style += self.get_component_rich_style("linetable--even")
        if row.style:
            style += Style.parse(row.style)
        if index == self.cursor and self.has_focus:
            style += self.get_component_rich_style("linetable--cursor")
        return Strip(self._line(row.cells, style, row.cell_styles)).crop_extend(0, width, style)

    # ---- moving and choosing ---------------------------------------------------------------

    def move_cursor(self, index: int) -> None:
        if not self.rows:
            return
        self.cursor = max(0, min(len(self.rows) - 1, index))
        # The cursor's row in sight (line 0 is the header: the rows start at line 1).
        self.scroll_to_region(Region(0, self.cursor, 1, 2), animate=False, force=True)
        self.refresh()

    def action_cursor(self, step: int) -> None:
        self.move_cursor(self.cursor + step)

    def action_page(self, step: int) -> None:
        self.move_cursor(self.cursor + step * max(1, self.size.height - 2))

    def action_choose(self) -> None:
        if self.rows:
            self.post_message(self.Chosen(self, self.rows[self.cursor].key))

    def on_click(self, event: Click) -> None:
        index = self.scroll_offset.y + event.y - 1
        if 0 <= index < len(self.rows):
            if index == self.cursor:
                self.action_choose()
            else:
                self.move_cursor(index)

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, len(self.rows) + 1)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
