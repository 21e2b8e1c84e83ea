"""`pytop` without a PID: the machine's Python processes, to pick one from. Sorted by a key (1-4,
as the function table's are, or a click on a column's header) or kept where they were (so that a
refresh never moves a row away from the cursor), and narrowed by `/`."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Footer, Static
from textual.worker import get_current_worker

from ..core.model import Heat, PythonProcess, RecordStatus
from ..core.pools import HostRow, busiest, fold, merged_heat
from ..core.visible import visible
from ..process.pythons import MAPS_PER_LOOK, PythonScan
from ..report import format as fmt
from .axis_line import AxisLine
from .filter import FilterBar, compile_filter
from .hosts import HostTable, Line
from .linetable import LineTable
from .picker_replay import RecordedLooks, RecordedTable
from .time_bar import TimeBar
from .time_keys import TIME_KEYS

PRIMING_SECONDS = 0.3
LOOK_SHARE = 0.025  # of a core, that looks at /proc may take on average (pytop's budget is 5%)
# The orders a key (or a click on the column's header) gives: busiest, biggest first.
SORTS: dict[str, tuple[str, Callable[[HostRow], Any]]] = {
    "cpu": ("CPU%", lambda r: (-r.cpu_pct, r.root)), "rss": ("RSS", lambda r: (-r.rss, r.root)),
    "threads": ("Threads", lambda r: (-r.threads, r.root)), "pid": ("PID", lambda r: r.root)}


class HostSampling(Protocol):
    """Samples the processes it is told to watch; what it found goes to `publish` every window
    (run.py hands the picker one: sampling/host.py's HostSampler)."""

    failure: str | None  # a bug that ended it

    def watch(self, pids: list[int]) -> None: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...


SamplerMaker = Callable[[Callable[[dict[int, Heat]], None]], HostSampling]


class LookRecorder(Protocol):
    """Where the table's looks are recorded (--record: record/host_recorder.py's HostRecorder)."""

    def heats_came(self, heats: dict[int, Heat]) -> None: ...
    def look(self, processes: list[PythonProcess], seconds: float) -> None: ...
    def status(self) -> RecordStatus: ...


def _row_key(row: HostRow) -> str:
    """Stays the same from look to look. A pool of one parent's workers is known by its root; a
    pool of siblings by their parent and command line (one parent may start several programs,
    each a pool: a supervisor's)."""
    if not row.pool:
        return str(row.root)
    return f"pool:{row.root}" if row.leader.pid == row.root else f"pool:{row.root}:{row.leader.command}"


@dataclass(frozen=True)
class PickerState:
    """What the table keeps while a process's view is open from it."""

    sort: str | None = None
    filter_text: str = ""
    key: str | None = None  # the line under the cursor
    pool: bool = False  # ... a pool (watched with its subprocesses)
    open_pools: frozenset[str] = frozenset()  # their keys
    note: str | None = None  # why the last view ended (the process exited, could not be read)


class PickerApp(RecordedLooks):
    """Returns the chosen pid (None when the user quits)."""

    CSS = """
    #intro { padding: 0 1; background: $boost; }
    HostTable { height: 1fr; }
    HostTable > .linetable--header { text-style: bold; background: $panel; }
    HostTable > .linetable--cursor { background: $accent 60%; }
    HostTable > .linetable--cursor-blurred { background: $accent 30%; }
    HostTable > .linetable--even { background: $surface-lighten-1 40%; }
    FilterBar, TimeBar { display: none; }
    """
    TITLE = "pytop"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("enter", "choose", "Watch it"),
        Binding("1", "sort('cpu')", "CPU%", tooltip="sort by CPU (or click a column header)"),
        Binding("2", "sort('rss')", "RSS", tooltip="sort by resident memory"),
        Binding("3", "sort('threads')", "Threads", tooltip="sort by threads"),
        Binding("4", "sort('pid')", "PID", tooltip="sort by pid"),
        Binding("space", "open_pool", "Open/close pool", tooltip="show a pool's processes, or fold them again"),
        Binding("slash", "filter", "Filter", key_display="/", tooltip="show only the processes that match"),
        Binding("c", "clear_filter", "Clear filter", show=False),
        *TIME_KEYS,
        Binding("q,escape", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]

    class Heats(Message):
        """The host sampler's latest window (posted from its thread)."""

        def __init__(self, heats: dict[int, Heat]):
            super().__init__()
            self.heats = heats

    def __init__(self, refresh_seconds: float = 2.0, state: PickerState = PickerState(),
                 sampler: SamplerMaker | None = None, recorder: LookRecorder | None = None,
                 replay: RecordedTable | None = None, at: int = -1):
        """sampler: makes the host sampler that finds each busy process's hottest function and
        GIL share (None: those columns stay blank). recorder: each look is recorded to it.
        replay: a recording of the table shown instead of the host, from its look `at` (-1:
        the last); its keys step through the looks."""
        super().__init__()
        self.recorder = recorder
        self.replay = replay
        self.at = at % len(replay) if replay is not None and len(replay) else 0
        self.refresh_seconds = refresh_seconds
        self.pids: list[int] = []  # as shown: what Enter on each line watches
        self.keys: list[str] = []  # ... each line's key
        self.lines: dict[str, Line] = {}
        self.open_pools: set[str] = set(state.open_pools)
        self.sort = state.sort  # None: busiest first at the start, then each row kept where it was
        self.filter_text = state.filter_text
        self.note = state.note
        self._wanted = state.key  # the cursor's line, once it shows
        self.chosen = state  # once a process is chosen: the table as it was then
        self.latest: list[PythonProcess] = []  # the last look's, busiest first
        self._scan_of_host = PythonScan()
        self._primed = False
        self.heats: dict[int, Heat] = {}  # pid -> what its samples of the last window say
        self.unjudged = 0  # processes the last look has not judged yet (a host of thousands)
        self.look_seconds = 0.0  # the CPU the last look took
        self._make_sampler = sampler
        self._sampler: HostSampling | None = None
        self._look_missing = False
        self._series: tuple[float, ...] = ()  # the recording's time axis, as far as it is read

    def compose(self) -> ComposeResult:
        yield Static(Text("Which Python process? Enter watches the one under the cursor.", style="bold"),
                     id="intro")
        yield AxisLine()
        yield HostTable()
        yield FilterBar(placeholder="filter: text or regular expression over pid, user, version and command; "
                                    "Enter applies")
        yield TimeBar(placeholder="go to: a time of day (14:05:30) or from the start (5m30s); Enter goes there")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(HostTable).focus()
        if self.replay is not None:
            self._show_look()
            if len(self.replay):
                self.run_worker(self._read_axis, thread=True, exclusive=True, group="axis")
            return
        if self._make_sampler is not None:
            self._sampler = self._make_sampler(self._heats_came)
            self._sampler.start()
        self.refresh_list()


    def _heats_came(self, heats: dict[int, Heat]) -> None:
        """(on the host sampler's thread: a message, which never waits for the screen)"""
        self.post_message(self.Heats(heats))

    def on_unmount(self) -> None:
        if self._sampler is not None:
            self._sampler.stop()

    def on_picker_app_heats(self, message: PickerApp.Heats) -> None:
        self.heats = message.heats
        if self.recorder is not None:
            self.recorder.heats_came(message.heats)
        self._show()

    def refresh_list(self) -> None:
        self.run_worker(self._scan, thread=True, exclusive=True, group="scan")

    def _scan(self) -> None:
        """A look at every process in /proc takes a while on a big host: not on the event loop.
        The next look comes after refresh_seconds, or later if looks cost more than LOOK_SHARE of
        a core at that pace (a host of 10,000 processes: 0.17 s of CPU a look)."""
        if not self._primed:  # CPU shares are measured between two looks
            self._primed = True
            self._scan_of_host.look()
            time.sleep(PRIMING_SECONDS)
        cpu = time.thread_time()
        processes = self._scan_of_host.look()
        self.look_seconds = time.thread_time() - cpu
        if self._sampler is not None:  # (busiest first)
            self._sampler.watch(busiest(processes))
        if not get_current_worker().is_cancelled:
            self.unjudged = self._scan_of_host.unjudged
            self.call_from_thread(self.show_processes, processes)

    def show_processes(self, processes: list[PythonProcess]) -> None:
        """A look's processes (busiest first), as the sort and the filter say; the next look is
        set for its time."""
        self.latest = processes
        if self.recorder is not None:
            self.recorder.look(processes, self._scan_of_host.seconds)
        self._show()
        self.set_timer(max(self.refresh_seconds, self.look_seconds / LOOK_SHARE), self.refresh_list)

    def _lines(self) -> list[Line]:
        """The rows as the filter, the sort and the open pools say, each pool's members under it."""
        pattern = compile_filter(self.filter_text)
        rows = [r for r in fold(self.latest) if pattern is None
                or any(pattern.search(f"{p.pid} {p.user} {p.version} {p.described}") for p in r.members)]
        if self.sort is not None:
            rows.sort(key=SORTS[self.sort][1])
        elif self.keys:  # each row where it was; new ones at the end
            at = {key: n for n, key in enumerate(self.keys)}
            rows.sort(key=lambda r: at.get(_row_key(r), len(at)))
        lines = []
        for row in rows:
            key = _row_key(row)
            lines.append(Line(key, row.root, row.pool, row, pool_key=key if row.pool else None))
            if row.pool and key in self.open_pools:
                lines.extend(Line(f"{row.root}:{m.pid}", m.pid, False, HostRow(m.pid, (m,)), member=True, pool_key=key)
                             for m in row.members)
        return lines

    def _show(self, keep: str | None = None) -> None:
        """In the order sorted by, or busiest first when the picker opens and then each row where
        it was (new processes come at the end, ended ones go); the cursor stays on its row (or
        goes to `keep`, or to the line it was on when the table was left)."""
        lines = self._lines()
        table = self.query_one(HostTable)
        self.lines = {line.key: line for line in lines}
        self.keys = [line.key for line in lines]
        self.pids = [line.pid for line in lines]
        table.show_lines(lines, self.heats, self.open_pools)  # (the cursor stays on its key)
        if keep is None and self._wanted in self.lines:
            keep, self._wanted = self._wanted, None
        if keep is not None and keep in self.lines:
            table.move_cursor(self.keys.index(keep))
        self.query_one("#intro", Static).update(self._intro())

    def _intro(self) -> Text:
        intro = Text()
        if self.note:
            # (a Text, and visible(): the message may quote a path or a name another user chose)
            intro.append(f"{visible(self.note)}\n", style="bold red")
        if self.replay is not None:
            return self._replay_intro(intro)
        if self.recorder is not None:
            status = self.recorder.status()
            intro.append(f"{fmt.record_summary(status)}\n", style="bold red" if status.failing or status.dropped
                         else "dim")
        if not self.latest:
            if self.unjudged:
                return intro.append(f"No Python process found yet: {self.unjudged:,} processes still to look at "
                                    f"({MAPS_PER_LOOK} a refresh); q quits.", style="bold")
            return intro.append("No Python process found (yet); q quits.", style="bold")
        intro.append("Which Python process? Enter watches the one under the cursor (b comes back).", style="bold")
        if self.sort is not None:
            intro.append(f"  Sorted by {SORTS[self.sort][0]}.")
        if self._sampler is not None and self._sampler.failure:
            intro.append(f"  (no hottest functions: pytop's host sampler failed: {visible(self._sampler.failure)})",
                         style="red")
        if self.unjudged:
            intro.append(f"  ({self.unjudged:,} more processes to look at: {MAPS_PER_LOOK} a refresh)", style="dim")
        if self.filter_text:
            intro.append(f"  {len(self.pids)} of {len(self.latest)} match ")
            intro.append(self.filter_text, style="reverse")  # (a Text: never read as markup)
            intro.append(" (c clears).")
        return intro

    def _replay_intro(self, intro: Text) -> Text:
        """Which look of which recording is shown, and the keys that move."""
        assert self.replay is not None
        replay = self.replay
        if not len(replay):
            return intro.append(f"{visible(replay.path)} holds no look at the host yet; q quits.", style="bold")
        end = replay.end_of(self.at)
        when = time.strftime("%H:%M:%S", time.localtime(end))
        offset = fmt.seconds(end - replay.start)
        intro.append(f"A recording of {visible(replay.host)}'s table: the look at {when} ({offset} in), "
                     f"{self.at + 1:,} of {len(self.replay):,}.", style="bold")
        intro.append("  [ ] a look back, on; { } a minute; < > first, last; Enter: its hottest functions.")
        if self._look_missing:
            intro.append("  (this look could not be read: damaged)", style="red")
        if self.sort is not None:
            intro.append(f"  Sorted by {SORTS[self.sort][0]}.")
        if self.filter_text:
            intro.append(f"  {len(self.pids)} of {len(self.latest)} match ")
            intro.append(self.filter_text, style="reverse")
            intro.append(" (c clears).")
        return intro

    def _hottest_note(self, line: Line) -> str:
        """What a recording says of a row's hottest functions at the look shown."""
        heat = merged_heat([m.pid for m in line.row.members], self.heats)
        what = "pool " if line.pool else ""
        if heat is None:
            return f"{what}{line.pid}: not sampled at this look (only the busiest are)"
        if not heat.functions:
            return f"{what}{line.pid}: idle at this look"
        named = ", ".join(f"{function} {100 * heat.share(seconds):.0f}%" for function, _, seconds in heat.functions)
        return f"{what}{line.pid}, hottest at this look: {named}"

    def action_sort(self, column: str) -> None:
        self.sort = column
        self._show()

    def on_line_table_header_clicked(self, message: LineTable.HeaderClicked) -> None:
        if message.column in SORTS:
            self.action_sort(message.column)

    def action_filter(self) -> None:
        self.query_one(FilterBar).open(self.filter_text)

    def on_filter_bar_done(self, message: FilterBar.Done) -> None:
        self.query_one(HostTable).focus()
        if message.text is not None:
            self.filter_text = message.text
            self._show()

    def action_clear_filter(self) -> None:
        self.filter_text = ""
        self._show()

    def _cursor_line(self) -> Line | None:
        key = self.query_one(HostTable).cursor_key
        return self.lines.get(key) if isinstance(key, str) else None

    def action_open_pool(self) -> None:
        line = self._cursor_line()
        if line is not None and line.pool_key is not None:
            self.open_pools ^= {line.pool_key}
            self._show(keep=line.pool_key)

    def action_choose(self) -> None:
        line = self._cursor_line()
        if line is not None:
            self._choose(line.key)

    def on_line_table_chosen(self, message: LineTable.Chosen) -> None:
        self._choose(str(message.key))

    def _choose(self, key: str) -> None:
        line = self.lines[key]
        if self.replay is not None:  # (a recording: no process to watch; what it says of this one)
            self.note = self._hottest_note(line)
            self._show(keep=key)
            return
        # (to come back to)
        self.chosen = PickerState(self.sort, self.filter_text, key, line.pool, frozenset(self.open_pools))
        self.exit(line.pid)
