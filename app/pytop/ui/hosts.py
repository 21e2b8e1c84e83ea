"""The host's table: one line per process, pool or (under an open pool) member, drawn through
the Line API (LineTable), as the function table is. A refresh of 200 processes costs a list of
rows and the lines in sight, where Textual's DataTable measured and rebuilt every cell (a sort key
on 200 rows took 250-500 ms of the screen's thread; the issue asks 150 ms at p95)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.model import Heat
from ..core.pools import HostRow, merged_heat
from ..report import format as fmt
from ..report import host
from .linetable import Column, LineTable, Row, cell_text

# (name, column): the names say which cell is which (tests, the bench)
COLUMNS = [("pid", Column("PID", 8, right=True, key="pid")), ("user", Column("User", 10)),
           ("python", Column("Python", 6)), ("cpu", Column("CPU%", 6, right=True, key="cpu")),
           ("gil", Column("GIL%", 5, right=True)), ("threads", Column("Threads", 7, right=True, key="threads")),
           ("rss", Column("RSS", 10, right=True, key="rss")), ("hottest", Column("Hottest now", host.HOTTEST_WIDTH)),
           ("command", Column("Command", 0))]
NAMES = [name for name, _ in COLUMNS]


@dataclass(frozen=True)
class Line:
    """A line of the table: a process, a pool, or (under an open pool) one of its members."""

    key: str  # the table's row key: stays the same from look to look
    pid: int  # what Enter watches (a pool: its root, with its subprocesses)
    pool: bool
    row: HostRow
    member: bool = False
    pool_key: str | None = None  # a pool's, or a member's pool's: what Space opens and folds


class HostTable(LineTable):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__([column for _, column in COLUMNS], **kwargs)

    def show_lines(self, lines: list[Line], heats: dict[int, Heat], open_pools: set[str]) -> None:
        self.set_rows([self.row(line, heats, open_pools) for line in lines])

    @staticmethod
    def row(line: Line, heats: dict[int, Heat], open_pools: set[str]) -> Row:
        row = line.row
        heat = merged_heat([m.pid for m in row.members], heats)
        mark = ("▾ " if line.key in open_pools else "▸ ") if line.pool else "  └ " if line.member else ""
        hottest = host.hottest(heat)
        # (cells are plain text: a command line is any user's, and is never read as markup)
        cells = (str(line.pid), row.leader.user, row.leader.version or "?", f"{row.cpu_pct:.0f}%", host.gil(heat),
                 str(row.threads), fmt.byte_size(row.rss), hottest, mark + row.described)
        styles = ("", "", "", "", "", "", "", "dim" if hottest == "idle" else "")
        return Row(line.key, cells, "dim" if line.member else "", styles)

    def cell(self, key: str, name: str) -> str:
        """The text of row `key`'s cell in column `name` ("hottest", "gil", "command", ...)."""
        at = self.index_of(key)
        if at is None:
            raise KeyError(key)
        return cell_text(self.rows[at].cells[NAMES.index(name)])
