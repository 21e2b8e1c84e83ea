"""The thread panel: every thread with its name, TID, the CPU time the kernel counted for it,
how much of its time it ran and held the GIL, its unreadable stacks, and where it is now.
Enter on a thread narrows the function table to it."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from ..core.model import ThreadKey, ThreadRow
from ..report import format as fmt

COLUMNS = [("name", "Thread"), ("tid", "TID"), ("cpu", "CPU"), ("active", "Active"), ("gil", "GIL"),
           ("errors", "Torn"), ("top", "Now in")]


def row_key(key: ThreadKey) -> str:
    return str(key)


class ThreadTable(DataTable[object]):
    """Threads, alive ones first and the busiest on top."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self.keys: dict[str, ThreadKey] = {}
        self._shown: list[tuple[object, ...]] = []

    def on_mount(self) -> None:
        for key, label in COLUMNS:
            self.add_column(label, key=key)

    def show(self, rows: tuple[ThreadRow, ...], selected: ThreadKey | None, show_pids: bool = False) -> None:
        ordered = sorted(rows, key=lambda r: (not r.alive, r.folded, -r.cpu_time, -r.gil_pct, r.key))
        cells = [self.cells(r, r.key == selected, show_pids) for r in ordered]
        if cells == self._shown:
            return  # nothing changed: keep the cursor and scroll as they are
        cursor = self.cursor_row
        self.clear()
        self.keys = {}
        for row, row_cells in zip(ordered, cells):
            key = row_key(row.key)
            self.keys[key] = row.key
            self.add_row(*row_cells, key=key)
        self._shown = cells
        if self.row_count:
            self.move_cursor(row=min(cursor, self.row_count - 1))

    @staticmethod
    def cells(row: ThreadRow, selected: bool, show_pids: bool) -> tuple[object, ...]:
        style = "bold reverse" if selected else ("" if row.alive else "dim")
        if row.folded:
            name = f"({row.label})"
        else:
            name = (row.name or "") + (" (no Python)" if row.native else "") + ("" if row.alive else " (finished)")
        errors = f"{row.errors}" if row.errors else ""
        return (
            Text(("▶ " if selected else "") + (f"[{row.pid}] " if show_pids else "") + name.strip(), style=style),
            Text("" if row.folded else str(row.native_id or "?"), style=style, justify="right"),
            Text(fmt.seconds(row.cpu_time), style=style, justify="right"),
            Text(fmt.percent(row.active_pct), style=style, justify="right"),
            Text(fmt.percent(row.gil_pct), style=style, justify="right"),
            Text(errors, style=style + (" red" if errors else ""), justify="right"),
            Text(row.top_frame or "", style=style),
        )

    def selected_key(self) -> ThreadKey | None:
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        return self.keys.get(str(key))
