"""A table drawn through Textual's public Line API: a ScrollView that renders only the lines in
sight, from rows of plain cells. Setting 2,000 rows costs a sort and a list, not 2,000 widget
rows; a refresh redraws what is on screen, and a line drawn before with the same look comes from
a cache. The header stays on the first line (a click on a column's label says so); the cursor
is a row, kept on its key when the rows change; Enter or a click on the cursor's row chooses it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Union

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip

from .cursor_view import CursorView

Part = tuple[str, str]  # some text and its Rich style ("bold", "dim cyan", "")
Cell = Union[str, tuple[Part, ...]]  # plain text, or parts each with a style of its own
LINE_CACHE = 256  # lines kept drawn: a few screens (figures change every refresh; more only fragments the heap)


@dataclass(frozen=True)
class Column:
    label: str
    width: int  # 0: whatever the others leave
    right: bool = False  # right-justified (numbers)
    key: str = ""  # what a click on its label says (HeaderClicked)
    style: str = ""  # the label's own style, on top of the header's


class _Pass(NamedTuple):
    """What a pass of drawing lines looks up once."""

    styles: dict[str, Style]  # the component classes' styles; "": the widget's
    columns: tuple[Column, ...]
    widths: list[int]
    width: int
    top: int  # the first row in sight


@dataclass(frozen=True)
class Row:
    key: object
    cells: tuple[Cell, ...]
    style: str = ""  # a Rich style for the whole row ("dim", "bold reverse", ...)
    cell_styles: tuple[str, ...] = ()  # per cell, on top of the row's


def cell_text(cell: Cell) -> str:
    return cell if isinstance(cell, str) else "".join(text for text, _ in cell)


def cell_parts(cell: Cell, width: int, right: bool) -> list[Part]:
    """The cell's parts cut or padded to `width` columns of the terminal (padding takes no style
    of its own). Counted in cells, not characters: a CJK name takes two cells a character."""
    parts: list[Part] = [(cell, "")] if isinstance(cell, str) else list(cell)
    shown, room = [], width
    for text, style in parts:
        if room <= 0:
            break
        if cell_len(text) > room:
            text = set_cell_size(text, room)  # (a wide character cut in half leaves a space)
        shown.append((text, style))
        room -= cell_len(text)
    pad = (" " * room, "")
    return [pad, *shown] if right else [*shown, pad]


class LineTable(CursorView):
    BINDINGS = [Binding("enter", "choose", show=False)]  # the cursor's keys are CursorView's
    HEADER_LINES = 1
    COMPONENT_CLASSES = {"linetable--header", "linetable--cursor", "linetable--cursor-blurred", "linetable--even"}

    class Chosen(Message):
        """Enter (or a click) on a row."""

        def __init__(self, table: LineTable, key: object) -> None:
            super().__init__()
            self.table = table
            self.key = key

    class Highlighted(Message):
        """The cursor moved to another row."""

        def __init__(self, table: LineTable, key: object) -> None:
            super().__init__()
            self.table = table
            self.key = key

    class HeaderClicked(Message):
        """A click on a column's label."""

        def __init__(self, table: LineTable, column: str) -> None:
            super().__init__()
            self.table = table
            self.column = column

    # The cursor shows where focus is; elsewhere it shows blurred (the function table's row
    # stays marked while the callers panel has the keys).
    show_blurred_cursor = False

    def __init__(self, columns: Sequence[Column], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.columns = list(columns)
        self.rows: list[Row] = []
        self.cursor = 0
        self._lines: dict[tuple[Any, ...], Strip] = {}
        self._pass: _Pass | None = None  # while a pass draws (render_lines)

    # ---- content -----------------------------------------------------------------------------

    def set_rows(self, rows: list[Row]) -> None:
        """New rows; the cursor stays on the key it was on (else at the same position). Only
        the lines in sight that changed are drawn again: each line costs the screen's thread
        about half a millisecond, and below a live table's top rows most stand still."""
        if rows == self.rows:
            return
        key, was, scrolled = self.cursor_key, self.cursor, self.scroll_offset
        old, self.rows = self.rows, rows
        at = next((i for i, row in enumerate(rows) if row.key == key), None) if key is not None else None
        self.cursor = at if at is not None else min(self.cursor, max(0, len(rows) - 1))
        self.fit_to_lines()
        if self.scroll_offset != scrolled:
            self.refresh()
        else:
            self._refresh_changed(old, was)
        if self.cursor_key != key:
            self.post_message(self.Highlighted(self, self.cursor_key))

    def _refresh_changed(self, old: list[Row], was: int) -> None:
        """The lines in sight whose row is not what it was (or that the cursor left or reached),
        a run of them at a time (a refresh is region arithmetic and the screen's bookkeeping:
        one a line cost as much as drawing it, in a live table whose figures all move)."""
        top = self.scroll_offset.y
        run_from = None
        end = top + max(0, self.size.height - self.HEADER_LINES)
        for index in range(top, end + 1):
            before = old[index] if index < len(old) else None
            now = self.rows[index] if index < len(self.rows) else None
            changed = index < end and (before != now or (was != self.cursor and index in (was, self.cursor)))
            if changed and run_from is None:
                run_from = index
            elif not changed and run_from is not None:
                self.refresh_lines(run_from + self.HEADER_LINES, index - run_from)
                run_from = None

    def set_columns(self, columns: Sequence[Column]) -> None:
        if list(columns) != self.columns:
            self.columns = list(columns)
            self.refresh()

    @property
    def row_count(self) -> int:
        return len(self.rows)

    @property
    def line_count(self) -> int:
        return len(self.rows)

    @property
    def cursor_key(self) -> object | None:
        return self.rows[self.cursor].key if 0 <= self.cursor < len(self.rows) else None

    def row_text(self, index: int) -> tuple[str, ...]:
        """Row `index`'s cells as plain text."""
        return tuple(cell_text(cell) for cell in self.rows[index].cells)

    def index_of(self, key: object) -> int | None:
        return next((i for i, row in enumerate(self.rows) if row.key == key), None)

    # ---- drawing ---------------------------------------------------------------------------

    def widths(self) -> list[int]:
        fixed = sum(c.width for c in self.columns) + len(self.columns) - 1
        rest = max(8, self.size.width - fixed)
        return [c.width or rest for c in self.columns]

    def _line(self, p: _Pass, cells: Sequence[Cell], style: Style, cell_styles: Sequence[str] = ()) -> Strip:
        """The line as a strip of the widget's width: its cells are cut or padded to their
        columns' widths, which fill the width unless it is too narrow for them (then it is cut)."""
        segments = []
        space = Segment(" ", style)
        for i, (column, width, cell) in enumerate(zip(p.columns, p.widths, cells)):
            extra = cell_styles[i] if i < len(cell_styles) else ""
            cell_style = style + Style.parse(extra) if extra else style
            if i:
                segments.append(space)
            for text, part_style in cell_parts(cell, width, column.right):
                if text:
                    segments.append(Segment(text, cell_style + Style.parse(part_style) if part_style else cell_style))
        length = sum(p.widths) + len(p.widths) - 1
        # (a strip costs a few caches of its own: one made to the width, not one made and cut)
        return Strip(segments, length) if length == p.width else Strip(segments, length).crop_extend(0, p.width, style)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._lines.clear()  # a new theme: the lines drawn are the old one's

    def _new_pass(self) -> _Pass:
        """What every line of a pass uses, looked up once: each style look-up walks the DOM, and
        the widget's size and scroll are properties that compute (per line, most of a redraw's
        time)."""
        styles = {name: self.get_component_rich_style(name) for name in self.COMPONENT_CLASSES}
        styles[""] = self.rich_style
        return _Pass(styles, tuple(self.columns), self.widths(), self.size.width, self.scroll_offset.y)

    def render_lines(self, crop: Region) -> list[Strip]:
        self._pass = self._new_pass()
        try:
            return super().render_lines(crop)
        finally:
            self._pass = None

    def render_line(self, y: int) -> Strip:
        p = self._pass or self._new_pass()  # (a line drawn outside a pass)
        base = p.styles[""]
        if y == 0:
            header = base + p.styles["linetable--header"]
            key: tuple[Any, ...] = ("header", p.columns, p.width, header)
            cells: Sequence[Cell] = [c.label for c in p.columns]
            return self._cached(key, lambda: self._line(p, cells, header, [c.style for c in p.columns]))
        index = p.top + y - 1
        if not 0 <= index < len(self.rows):
            return Strip.blank(p.width, base)
        row = self.rows[index]
        style = base + p.styles["linetable--even"] if index % 2 else base
        if row.style:
            style += Style.parse(row.style)
        if index == self.cursor and self.has_focus:
            style += p.styles["linetable--cursor"]
        elif index == self.cursor and self.show_blurred_cursor:
            style += p.styles["linetable--cursor-blurred"]
        key = (row, p.columns, p.width, style)
        return self._cached(key, lambda: self._line(p, row.cells, style, row.cell_styles))

    def _cached(self, key: tuple[Any, ...], draw: Callable[[], Strip]) -> Strip:
        """A line drawn before with the same look (a plain dict, emptied when full: a live
        table's rows change every refresh, and keeping the cache in recency order cost a
        quarter of drawing a line)."""
        strip = self._lines.get(key)
        if strip is None:
            if len(self._lines) >= LINE_CACHE:
                self._lines.clear()
            strip = self._lines[key] = draw()
        return strip

    # ---- moving and choosing ---------------------------------------------------------------

    def cursor_moved(self, was: int) -> None:
        if not 0 <= was < len(self.rows) or self.rows[was].key != self.cursor_key:
            self.post_message(self.Highlighted(self, self.cursor_key))

    def action_choose(self) -> None:
        if self.rows:
            self.post_message(self.Chosen(self, self.rows[self.cursor].key))

    def choose(self) -> None:
        self.action_choose()

    def click_header(self, x: int) -> None:
        left = 0
        for column, width in zip(self.columns, self.widths()):
            if left <= x < left + width and column.key:
                self.post_message(self.HeaderClicked(self, column.key))
                return
            left += width + 1

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
