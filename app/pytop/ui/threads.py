"""The thread panel: every thread with its name, TID, the CPU time the kernel counted for it,
how much of its time it ran and held the GIL, the share of its CPU that it used where no sample
saw it (the "(ran between samples, not seen)" row), its unreadable stacks, and where it is now.
Enter on a thread narrows the function table to it. Drawn through the Line API (LineTable): a
process of 2,000 threads costs a sort a refresh, and only the lines in sight are drawn."""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len

from ..core.model import ThreadKey, ThreadRow
from ..report import format as fmt
from .linetable import Column, LineTable, Row, cell_text

NAME_WIDTH = 48  # the most the names' column takes
COLUMNS = [Column("Thread", NAME_WIDTH), Column("TID", 8, right=True), Column("CPU", 8, right=True),
           Column("Active", 7, right=True), Column("GIL", 7, right=True), Column("Unseen", 7, right=True),
           Column("Torn", 5, right=True),
           Column("Now in", 0)]


class ThreadTable(LineTable):
    """Threads, alive ones first and the busiest on top."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(COLUMNS, **kwargs)

    def show_threads(self, rows: tuple[ThreadRow, ...], selected: ThreadKey | None, show_pids: bool = False) -> None:
        ordered = sorted(rows, key=lambda r: (not r.alive, r.folded, -r.cpu_time, -r.gil_pct, r.key))
        lines = [self.row(r, r.key == selected, show_pids) for r in ordered]
        # The names' column as wide as the longest name, within reason.
        widest = max((cell_len(cell_text(line.cells[0])) for line in lines), default=0)
        self.columns[0] = Column("Thread", max(12, min(NAME_WIDTH, widest)))
        self.set_rows(lines)

    @staticmethod
    def row(row: ThreadRow, selected: bool, show_pids: bool) -> Row:
        style = "bold reverse" if selected else ("" if row.alive else "dim")
        if row.folded:
            name = f"({row.label})"
        else:
            name = (row.name or "") + (" (no Python)" if row.native else "") + ("" if row.alive else " (finished)")
        errors = f"{row.errors}" if row.errors else ""
        unseen = fmt.percent(100.0 * row.unplaced_time / row.cpu_time) if row.unplaced_time and row.cpu_time else ""
        cells = (("▶ " if selected else "") + (f"[{row.pid}] " if show_pids else "") + name.strip(),
                 "" if row.folded else str(row.native_id or "?"), fmt.seconds(row.cpu_time),
                 fmt.percent(row.active_pct), fmt.percent(row.gil_pct), unseen, errors, row.top_frame or "")
        return Row(row.key, cells, style, ("", "", "", "", "", "", "red" if errors else ""))

    def selected_key(self) -> ThreadKey | None:
        key = self.cursor_key
        return key if isinstance(key, int) else None
