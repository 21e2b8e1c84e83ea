"""The widgets of the main screen: the process header, banners and the function table."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.coordinate import Coordinate
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import DataTable, Static
from textual.widgets.data_table import ColumnKey as DataColumnKey
from textual.widgets.data_table import RowKey as DataRowKey

from ..core.model import FunctionRow, RowKey, Snapshot
from ..report import format as fmt
from .trends import Trends

SORT_COLUMNS = {
    "own_pct": "%Own",
    "total_pct": "%Total",
    "own_time": "OwnTime",
    "total_time": "TotalTime",
}
TREND = "trend"
FUNCTION = "function"
RISE, FALL = ("▲", "red"), ("▼", "green")  # more time in a function is the news to notice
FAST_CELL_CACHE = 4000
# FunctionTable renders its cells itself where DataTable's cell renderer is the one it knows
# (textual 0.80 to 8.x): see FunctionTable._render_cell. Elsewhere DataTable's own is used.
_KNOWN_CELL_RENDERER = (
    hasattr(DataTable, "_get_styles_to_render_cell") and hasattr(DataTable, "_render_cell")
    and list(inspect.signature(DataTable._render_cell).parameters)
    == ["self", "row_index", "column_index", "base_style", "width", "cursor", "hover"])


# The row renderer FunctionTable stands in for (textual 8.x): see FunctionTable.render_lines.
_KNOWN_ROW_RENDERER = _KNOWN_CELL_RENDERER and (
    list(inspect.signature(DataTable._render_line_in_row).parameters)
    == ["self", "row_key", "line_no", "base_style", "cursor_location", "hover_location"]
    and list(inspect.signature(DataTable._render_line).parameters) == ["self", "y", "x1", "x2", "base_style"])


@dataclass(frozen=True)
class PassStyles:
    """The styles one drawing pass of the table uses on every line."""

    base: Style
    header: Style
    even: Style
    odd: Style


class Number:
    """A numeric cell: sorts by its value, shows its text right-aligned."""

    __slots__ = ("value", "text")

    def __init__(self, value: float, text: str):
        self.value = value
        self.text = text

    def __rich__(self) -> Text:
        return Text(self.text, justify="right")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Number) and other.text == self.text


class ProcessHeader(Static):
    """What is sampled, how sampling goes, and how the process does."""

    _lines = 0  # lines shown

    def show(self, s: Snapshot, notes: list[str], trends: Trends | None = None) -> None:
        """One line per fact, cut at the edge, never wrapped: a long command line must not push
        the table off a small terminal. The command comes last on its line, being the longest."""
        t = s.target
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("pytop", style="bold")
        text.append(f"  pid {t.pid}  {fmt.python_label(t.python_version)}  {fmt.usage_line(s)}  ")
        text.append(fmt.one_line(t.command), style="bold cyan")
        text.append("\n" + fmt.samples_line(s) + "\n")
        text.append(fmt.threads_line(s), style="bold")
        if trends is not None and len(trends.times) > 1:  # the last minute
            text.append("   CPU ")
            text.append(trends.cpu_line(), style="cyan")
            text.append("  Rate ")
            text.append(trends.rate_line(s.rate_asked or max(trends.rate)), style="cyan")
        if notes:
            text.append("\n")
            for note in notes:
                text.append(f" {note} ", style="bold reverse red" if note == "PAUSED" else "bold yellow")
        # A layout pass only when the header's height changes (a line of notes comes or goes):
        # a pass for every refresh measured every widget again, a tenth of the UI's time.
        lines = text.plain.count("\n") + 1
        self.update(text, layout=lines != self._lines)
        self._lines = lines


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


class FunctionTable(DataTable[object]):
    """Functions (or lines) with their figures; rows keyed, updated in place, then sorted."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self.sort_column = "own_time"
        self.show_pids = False  # several processes: say whose each row is
        self._rows: dict[str, FunctionRow] = {}
        self._moves: dict[str, int] = {}
        self._fast_cells: dict[tuple[object, ...], list[Segment]] = {}
        self._pass: PassStyles | None = None  # set while render_lines runs
        self._places: dict[tuple[int, int], Style] = {}  # (row, column) -> its mouse metadata

    def on_mount(self) -> None:
        for key, label in SORT_COLUMNS.items():
            # "100.0%" must fit under the shortest label.
            self.add_column(Text(label, justify="right"), key=key, width=max(len(label) + 1, 6))
        self.add_column("", key=TREND, width=1)  # rose or fell since the refresh before
        self.add_column("Function (filename)", key=FUNCTION)
        self._mark_sort_column()

    def on_resize(self) -> None:
        """The function column takes the width the figures leave (long names are cut)."""
        columns = {str(key.value): column for key, column in self.columns.items()}
        figures = sum(columns[key].get_render_width(self) for key in (*SORT_COLUMNS, TREND))
        column = columns[FUNCTION]
        column.auto_width = False
        # Keep room for the vertical scrollbar, which comes and goes with the number of rows.
        column.width = max(20, self.size.width - figures - 2 * self.cell_padding - self.styles.scrollbar_size_vertical)
        self.refresh()

    @staticmethod
    def row_key(row: FunctionRow) -> str:
        return "\0".join(map(str, row.key))

    def cells(self, row: FunctionRow, cwd: str | None, full: bool, move: int = 0) -> dict[str, object]:
        name = Text()
        if self.show_pids:
            name.append(f"[{row.pid}] ", style="cyan")
        name.append(row.function, style="bold")
        where = fmt.where(row, cwd, full)
        if where:  # a pseudo-function (no Python frame, ...) has no file
            name.append(f" ({where})", style="dim")
        return {
            "own_pct": Number(row.own_pct, fmt.percent(row.own_pct)),
            "total_pct": Number(row.total_pct, fmt.percent(row.total_pct)),
            "own_time": Number(row.own_time, fmt.seconds(row.own_time)),
            "total_time": Number(row.total_time, fmt.seconds(row.total_time)),
            TREND: Text(*RISE) if move > 0 else Text(*FALL) if move < 0 else Text(""),
            FUNCTION: name,
        }

    def show(self, rows: tuple[FunctionRow, ...], cwd: str | None, full: bool, show_pids: bool = False,
             trends: Trends | None = None) -> None:
        if show_pids != self.show_pids:
            self.show_pids = show_pids
            self.clear()
            self._rows = {}
            self._moves = {}
        wanted = {self.row_key(row): row for row in rows}
        changes: list[tuple[str, str, object]] = []
        for key in [k for k in self._rows if k not in wanted]:
            self.remove_row(key)
            del self._rows[key]
            self._moves.pop(key, None)
        for key, row in wanted.items():
            old = self._rows.get(key)
            move = trends.move(row.key) if trends is not None else 0
            if old is None:
                self.add_row(*self.cells(row, cwd, full, move).values(), key=key)
            elif old != row or move != self._moves.get(key, 0):
                old_cells = self.cells(old, cwd, full, self._moves.get(key, 0))
                changes += [(key, column, value) for column, value in self.cells(row, cwd, full, move).items()
                            if value != old_cells[column]]  # only what shows differently
            self._rows[key] = row
            self._moves[key] = move
        self._update_cells(changes)
        self.apply_sort()

    def _update_cells(self, changes: list[tuple[str, str, object]]) -> None:
        """DataTable.update_cell refreshes the table once per cell: a refresh of the view changes
        a hundred cells or more, and those refreshes were half of show()'s time. The cells are set
        the way update_cell sets them (the table's data, then its update count, which its render
        caches are keyed by), and the table is refreshed once."""
        data = getattr(self, "_data", None)
        if not (isinstance(data, dict) and isinstance(getattr(self, "_update_count", None), int)):
            for key, column, value in changes:  # a DataTable that keeps its cells otherwise
                self.update_cell(key, column, value)
            return
        for key, column, value in changes:
            data[DataRowKey(key)][DataColumnKey(column)] = value
        if changes:
            self._update_count += len(changes)
            self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._fast_cells.clear()  # a new theme: the cached looks are the old one's

    def render_lines(self, crop: Region) -> list[Strip]:
        """DataTable looks up the table's own style and its rows' component styles again for
        every line it draws (each lookup walks the DOM): with a key press that redraws the
        whole table, most of its time. They cannot change while one pass draws, so a pass
        looks them up once."""
        if not _KNOWN_ROW_RENDERER:
            return super().render_lines(crop)
        zebra = self.zebra_stripes
        base = self.rich_style
        self._pass = PassStyles(
            base=base, header=self.get_component_styles("datatable--header").rich_style,
            even=self.get_component_styles("datatable--even-row").rich_style if zebra else base,
            odd=self.get_component_styles("datatable--odd-row").rich_style if zebra else base)
        try:
            return super().render_lines(crop)
        finally:
            self._pass = None

    def render_line(self, y: int) -> Strip:
        styles = self._pass
        if styles is None or self.fixed_rows:
            return super().render_line(y)
        width = self.size.width
        scroll_x, scroll_y = self.scroll_offset
        if y >= (self.header_height if self.show_header else 0):
            y += scroll_y
        return self._render_line(y, scroll_x, scroll_x + width, styles.base)

    def _render_line_in_row(self, row_key: DataRowKey, line_no: int, base_style: Style,
                            cursor_location: Coordinate, hover_location: Coordinate
                            ) -> tuple[list[list[Segment]], list[list[Segment]]]:
        """DataTable's row, drawn with the pass's styles (see render_lines) where the table is
        as this one uses it: a row cursor, no fixed columns, no row labels, one line a row."""
        styles = self._pass
        if (styles is None or self.cursor_type != "row" or self.fixed_columns or line_no
                or (self._labelled_row_exists and self.show_row_labels)):
            return super()._render_line_in_row(row_key, line_no, base_style, cursor_location, hover_location)
        found = self._row_locations.get(row_key)
        row_index = -1 if found is None else found  # -1: the header
        row_style = styles.header if row_index == -1 else styles.odd if row_index % 2 else styles.even
        cursor, hover = cursor_location.row == row_index, hover_location.row == row_index
        cells, table_width = [], self._row_label_column_width
        for column_index, column in enumerate(self.ordered_columns):
            width = column.get_render_width(self)
            table_width += width
            cells.append(self._render_cell(row_index, column_index, row_style, width, cursor=cursor,
                                           hover=hover)[line_no])
        # The row's style carried to the right edge, as DataTable does for a row cursor.
        extend, _ = self._get_styles_to_render_cell(row_index == -1, False, False, hover, cursor, self.show_cursor,
                                                    self._show_hover_cursor, False, False)
        extend = row_style + extend + Style.from_meta({"row": row_index, "column": 0, "out_of_bounds": True})
        cells.append([Segment(" " * max(0, self.size.width - table_width), extend)])
        return [], cells

    def _render_cell(self, row_index: int, column_index: int, base_style: Style, width: int,
                     cursor: bool = False, hover: bool = False) -> list[list[Segment]]:
        """DataTable renders every cell through Rich's general path (padding, wrapping) and
        forgets all of them at any update or sort, so each refresh re-rendered every visible
        cell: 3/4 of the UI thread's time, and the wait after a sort key. A cell here is one
        line: it is cut and padded directly, and cached by what it shows, not by the table's
        update count. The header (row -1) too: its labels are redrawn at every refresh."""
        header = row_index == -1
        if not _KNOWN_CELL_RENDERER or row_index < -1 or column_index < 0 or (header and self.header_height != 1):
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        column_key = self._column_locations.get_key(column_index)
        row_key = self._header_row_key if header else self._row_locations.get_key(row_index)
        if row_key is None or column_key is None:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        cell = self.columns[column_key].label if header else self._data[row_key][column_key]
        justify = cell.justify if isinstance(cell, Text) else None
        if justify not in (None, "default", "left", "right"):
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        shown = cell.text if isinstance(cell, Number) else (
            (cell.plain, tuple(cell.spans), str(cell.style), justify) if isinstance(cell, Text) else str(cell))
        key = (shown, header, column_index, base_style, width, cursor, hover, self.show_cursor,
               self._show_hover_cursor, self._pseudo_class_state)
        plain = self._fast_cells.get(key)
        if plain is None:  # a cell's look, wherever it is: a sort moves rows, not what they show
            component, post = self._get_styles_to_render_cell(
                header, False, False, hover, cursor, self.show_cursor, self._show_hover_cursor,
                self.cursor_foreground_priority == "css", self.cursor_background_priority == "css")
            pad = self.cell_padding
            inner = max(0, width - 2 * pad)
            if isinstance(cell, Number):
                segments = [Segment(cell.text[:inner].rjust(inner))]
            else:
                text = cell if isinstance(cell, Text) else Text(str(cell))
                if justify == "right":  # as Rich justifies a line: the padding takes the text's style
                    text = text.copy()
                    text.rstrip()
                    text.truncate(inner, overflow=text.overflow or "fold")
                    text.pad_left(inner - text.cell_len)
                rendered = text.render(self.app.console, end="")
                if text.style:  # render() leaves the text's own style to its caller
                    rendered = Segment.apply_style(rendered, self.app.console.get_style(text.style))
                segments = Segment.adjust_line_length(list(rendered), inner)
            segments = [Segment(" " * pad), *segments, Segment(" " * pad)]
            # One segment where the look does not change (a number and its padding): fewer to
            # mark with the cell's place below.
            plain = list(Segment.simplify(Segment.apply_style(segments, base_style + component, post or None)))
            if len(self._fast_cells) > FAST_CELL_CACHE:
                self._fast_cells.clear()
            self._fast_cells[key] = plain
        # Where it is (mouse clicks find their row and column by it) is added on each use.
        where = self._places.get((row_index, column_index))
        if where is None:
            if len(self._places) > FAST_CELL_CACHE:
                self._places.clear()
            where = self._places[row_index, column_index] = Style.from_meta({"row": row_index, "column": column_index})
        return [[Segment(text, style + where if style else where, control) for text, style, control in plain]]

    def current_key(self) -> RowKey | None:
        """The row under the cursor."""
        if not self.row_count:
            return None
        row = self._rows.get(str(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value))
        return row.key if row else None

    def row_of(self, key: str) -> FunctionRow | None:
        return self._rows.get(key)

    def select_key(self, key: tuple[str, str, int, int]) -> None:
        """Move the cursor to the row of `key`, if it is shown."""
        for row_key, row in self._rows.items():
            if row.key == key:
                self.move_cursor(row=self.get_row_index(row_key))
                return

    def set_sort(self, column: str) -> None:
        self.sort_column = column
        self._mark_sort_column()
        self.apply_sort()

    def apply_sort(self) -> None:
        # Largest first; ties broken by the other time and then by name, so rows that are
        # equal do not swap places between refreshes.
        other = "total_time" if self.sort_column != "total_time" else "own_time"

        def order(cells: tuple[Number, Number, Text]) -> tuple[float, float, str]:
            return (-cells[0].value, -cells[1].value, cells[2].plain)

        if self.row_count:
            self.sort(self.sort_column, other, FUNCTION, key=order)

    def _mark_sort_column(self) -> None:
        for key, label in SORT_COLUMNS.items():
            sorted_here = key == self.sort_column
            self.columns[key].label = Text(  # type: ignore[index]
                f"{label}▼" if sorted_here else label, justify="right",
                style="bold reverse" if sorted_here else "")
        self.refresh()
