"""`pytop --diff BASE NEW` on a terminal: the comparison (core/compare.py) as a table, each
function's own and total time per second in the compared span beside the baseline's and the
change, sortable with the function table's keys (3 and 4 sort by the changes), filtered with
`/`. What grew most is on top by default; "new" and "gone" mark functions that ran on one
side only."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Footer, Static

from ..core.compare import Change, Comparison, ordered
from ..core.model import MODE_HELP
from ..report import format as fmt
from ..report.compare import signed_percent
from .filter import FilterBar, compile_filter
from .linetable import Column, LineTable, Part, Row

COLUMNS = {"own": "%Own", "base_own": "Base", "own_change": "Change", "total": "%Total", "base_total": "Base",
           "total_change": "Change"}
RISE, FALL, MARK = "red", "green", "bold yellow"  # more time is worse


def change_columns(sorted_by: str) -> list[Column]:
    figures = [Column(f"{label}▼" if key == sorted_by else label, 8, right=True, key=key,
                      style="bold reverse" if key == sorted_by else "") for key, label in COLUMNS.items()]
    return [*figures, Column("Function (filename)", 0)]


class ChangeTable(LineTable):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(change_columns("own_change"), **kwargs)

    def show_changes(self, changes: list[Change], full: bool) -> None:
        self.set_rows([changed_row(c, full) for c in changes])


def changed_row(c: Change, full: bool) -> Row:
    where = c.filename if full else c.module
    name: list[Part] = [(c.function, "bold")]
    if where:  # a pseudo-function (no Python frame, ...) has no file
        name.append((f" ({where}:{c.line})" if c.line is not None else f" ({where})", "dim"))
    if c.status:
        name.append((f"  {c.status}", MARK))
    styles = tuple("" if not key.endswith("change") else RISE if getattr(c, key) > 0.0005 else
                   FALL if getattr(c, key) < -0.0005 else "" for key in COLUMNS)
    cells = (fmt.percent(100 * c.own), fmt.percent(100 * c.base_own), signed_percent(100 * c.own_change),
             fmt.percent(100 * c.total), fmt.percent(100 * c.base_total), signed_percent(100 * c.total_change))
    return Row((c.function, c.module, c.line or 0), (*cells, tuple(name)), cell_styles=(*styles, ""))


def tell_export(widget: Widget | App[Any], said: tuple[str, ...], title: str) -> None:
    """What an export wrote, or why not, in a notice (paths are the user's: not markup)."""
    failed = any(line.startswith("export failed") for line in said)
    widget.notify("\n".join(said), title=title, severity="error" if failed else "information", markup=False)


def kept(changes: list[Change], pattern: re.Pattern[str] | None) -> list[Change]:
    if pattern is None:
        return changes
    return [c for c in changes if pattern.search(f"{c.function} {c.filename}")]


class ComparisonApp(App[int]):
    CSS = """
    #spans { padding: 0 1; background: $boost; }
    ChangeTable { height: 1fr; }
    ChangeTable > .linetable--header { text-style: bold; background: $panel; }
    ChangeTable > .linetable--cursor { background: $accent 60%; }
    ChangeTable > .linetable--even { background: $surface-lighten-1 40%; }
    FilterBar { display: none; }
    """
    TITLE = "pytop"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("1", "sort('own')", "%Own", tooltip="sort by own time per second in the compared span"),
        Binding("2", "sort('total')", "%Total", tooltip="sort by total time per second in the compared span"),
        Binding("3", "sort('own_change')", "Own change", tooltip="sort by the change of own time (grew most first)"),
        Binding("4", "sort('total_change')", "Total change", tooltip="sort by the change of total time"),
        Binding("r", "reverse", "Reverse", tooltip="shrank most first (or back)"),
        Binding("slash", "filter", "Filter", key_display="/", tooltip="show only the functions that match"),
        Binding("e", "export", "Export", tooltip="write the comparison: text, JSON and a differential collapsed file"),
        Binding("f", "full_filenames", "Full names", show=False),
        Binding("q,escape", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]

    def __init__(self, comparison: Comparison, sort: str = "own_change", full_filenames: bool = False,
                 export: Callable[[], tuple[str, ...]] | None = None) -> None:
        """export: what the e key does (the files it wrote, or why none was)."""
        super().__init__()
        self.export = export
        self.exported: tuple[str, ...] = ()  # what the last e said
        self.comparison = comparison
        self.sort = sort
        self.reverse = False
        self.full_filenames = full_filenames
        self.filter_text = ""

    def compose(self) -> ComposeResult:
        c = self.comparison
        base_sum, now_sum = c.added_up()
        spans = Text()
        spans.append("Compared: ", style="bold")
        spans.append(c.now.label)
        spans.append("\nBaseline: ", style="bold")
        spans.append(c.base.label)
        spans.append(f"\nTimes per second of each span ({MODE_HELP[c.mode]}; 100% is one core): the table adds up to "
                     f"{fmt.percent(100 * now_sum)}, the baseline's to {fmt.percent(100 * base_sum)}", style="dim")
        yield Static(spans, id="spans")
        yield ChangeTable()
        yield FilterBar(placeholder="filter: text or regular expression over function and file; Enter applies")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(ChangeTable).focus()
        self._show()

    def _show(self) -> None:
        table = self.query_one(ChangeTable)
        table.set_columns(change_columns(self.sort))
        changes = kept(ordered(self.comparison.changes, self.sort), compile_filter(self.filter_text))
        table.show_changes(changes[::-1] if self.reverse else changes, self.full_filenames)

    def action_sort(self, column: str) -> None:
        self.sort, self.reverse = column, False
        self._show()
        self.query_one(ChangeTable).move_cursor(0)

    def action_reverse(self) -> None:
        self.reverse = not self.reverse
        self._show()
        self.query_one(ChangeTable).move_cursor(0)

    def action_export(self) -> None:
        said = self.export() if self.export is not None else ("export failed: this view writes no exports",)
        self.exported = said
        tell_export(self, said, "Export")

    def action_full_filenames(self) -> None:
        self.full_filenames = not self.full_filenames
        self._show()

    def on_line_table_header_clicked(self, message: LineTable.HeaderClicked) -> None:
        if message.column in COLUMNS:
            self.action_sort(message.column)

    def action_filter(self) -> None:
        self.query_one(FilterBar).open(self.filter_text)

    def on_filter_bar_done(self, message: FilterBar.Done) -> None:
        self.query_one(ChangeTable).focus()
        if message.text is not None:
            self.filter_text = message.text
            self._show()
