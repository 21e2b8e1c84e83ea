"""The main screen: the function table with its header, banners and panels, the keys that
change what it shows, and the view's state (sort, filter, pause, trends). It shows the snapshots
the app hands it and sends the source what the keys ask for; the app around it owns the process
(signals, the garbage collector, the source's start and stop)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from ..core import commands
from ..core.compare import Span, ordered
from ..core.model import MODES, FunctionRow, Mode, Snapshot
from ..report import format as fmt
from ..report.compare import write_comparison
from . import screen_keys
from .baseline import compared, span_label, span_of
from .callers import CallersPanel
from .calltree import CallTreeView
from .compare import ChangeTable, change_columns, kept, tell_export
from .filter import FilterBar, compile_filter, keep
from .help import HelpScreen
from .linetable import LineTable
from .screen_keys import SCREEN_KEYS
from .screen_time import TimeTravel
from .session_axis import SessionAxis
from .source import SnapshotSource, StacksNow
from .stacks_panel import StacksPanel
from .threads import ThreadTable
from .time_bar import TimeBar
from .trends import Trends
from .widgets import SORT_COLUMNS, Banner, FunctionTable, KeyBar, ProcessHeader

REFRESH_STEPS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)  # seconds between refreshes, for + and -
# Rows the function table holds: a program of thousands of functions made every refresh cost the
# screen a quarter of a second; the filter (/) reaches the rest.
MAX_TABLE_ROWS = 500
# 1-4 with a baseline: the compared span's own and total time, and their changes
CHANGE_KEYS = {"own_pct": "own", "total_pct": "total", "own_time": "own_change", "total_time": "total_change"}


def top_rows(rows: tuple[FunctionRow, ...], column: str) -> tuple[FunctionRow, ...]:
    """The MAX_TABLE_ROWS first by the table's sort (ties as the table breaks them)."""
    if len(rows) <= MAX_TABLE_ROWS:
        return rows
    other = "total_time" if column != "total_time" else "own_time"
    return tuple(sorted(rows, key=lambda r: (-getattr(r, column), -getattr(r, other), r.function))[:MAX_TABLE_ROWS])


class MainScreen(TimeTravel):
    BINDINGS = SCREEN_KEYS  # (ui/screen_keys.py: with the help's lines)
    key_help = staticmethod(screen_keys.key_help)
    shown_in = staticmethod(screen_keys.shown_in)

    def __init__(self, source: SnapshotSource, *, sort: str = "own_time", by_line: bool = False, mode: Mode = "cpu",
                 full_filenames: bool = False, notes: tuple[str, ...] = (), export_dir: str | None = None,
                 delay: float = 1.0, tasks: bool = False, stacks_now: StacksNow | None = None,
                 back: Callable[[], None] | None = None, replay: bool | None = False,
                 baseline: Span | None = None):
        """export_dir: where the e key writes (default: the current directory); delay: seconds
        between refreshes, as the source starts with; stacks_now: how the d key reads every
        stack now (None: it says it cannot); back: how to go back to the host's table, when the
        view was opened from it; replay: the source is a recording (its time keys, not the
        keys of a running process), or None: a live view with its past (--record: both);
        baseline: what the table is compared against from the start (--baseline)."""
        super().__init__()
        self.back = back
        self.replay = replay
        self.stacks_now = stacks_now
        self.export_dir = export_dir
        self.delay = delay
        self.source = source
        self.initial_sort = sort
        self.by_line = by_line
        self.mode = mode
        self.tasks = tasks  # asyncio tasks shown (the source starts with the same)
        self.full_filenames = full_filenames
        self.notes = list(notes)
        self.snapshot: Snapshot | None = None  # on screen
        self.latest: Snapshot | None = None  # newest received (differs while paused)
        self.paused = False
        self.filter_text = ""
        self.pattern: re.Pattern[str] | None = None
        self._announced: tuple[str, ...] = ()
        self._panel_wanted = False  # Enter on a function: move into its callers once they show
        self.trends = Trends()
        self.session = SessionAxis()  # the live view's session so far, for its time axis
        self.baseline = baseline  # the table shows each function's change against it (ui/baseline.py)
        self.change_sort = "own_change"

    def compose(self) -> ComposeResult:
        yield ProcessHeader(Text("pytop: waiting for the first samples..."), id="header")
        yield Banner(id="error-banner")
        yield Banner(id="behind-banner")
        yield Banner(id="elsewhere-banner")
        yield Banner(id="push-banner")
        yield Banner(id="record-banner")
        yield Banner(id="exited-banner")
        yield FunctionTable(id="functions")
        yield ChangeTable(id="changes")
        yield Static(id="detail")
        yield CallTreeView(id="tree")
        yield CallersPanel(id="callers-panel")
        yield ThreadTable(id="threads")
        yield FilterBar(placeholder="filter: text or regular expression over function and file; Enter applies",
                        id="filter")
        yield TimeBar(placeholder="go to: a time of day (14:05:30) or from the start (5m30s); Enter goes there",
                      id="time-bar")
        yield KeyBar(id="keys")

    def on_mount(self) -> None:
        table = self.query_one(FunctionTable)
        table.set_sort(self.initial_sort)
        table.focus()
        if self.by_line:
            self.source.send(commands.ByLine(True))
        self.source.send(commands.ShowThreads(self.query_one(ThreadTable).display))  # their rows, only while shown
        if self.latest is not None and not self.paused:
            self.show_snapshot(self.latest)

    def receive(self, snapshot: Snapshot) -> None:
        """A snapshot from the source (through the app)."""
        self.latest = snapshot
        place = snapshot.run.replay
        if place is not None:  # a recording: its trends are its own minute up to the window shown
            before = self.snapshot.run.replay if self.snapshot is not None else None
            if before is None or place.index not in (before.index, before.index + 1):
                self.trends = Trends()  # a jump: the minute before it is not what was shown
            self.trends.record(snapshot, now=place.end)
        elif not snapshot.run.exited or self.snapshot is None or not self.snapshot.run.exited:
            self.trends.record(snapshot)  # after the end, views of the same figures
            self.session.record(snapshot, time.time())
        # (a snapshot may come before the screen's widgets are there, or while they are taken
        # down at the end: shown once they are, by on_mount)
        if not self.paused and self.query(FunctionTable):
            self.show_snapshot(snapshot)

    def show_snapshot(self, s: Snapshot) -> None:
        self.snapshot = s
        notes = list(self.notes)
        if s.by_line:
            notes.append("[by line]")
        if len(s.run.processes) > 1:
            notes.append(f"[{len(s.run.processes)} processes]")
        if s.process_filter is not None:
            notes.append(f"[process {s.process_filter}]")
        if s.thread_filter:
            notes.append(f"[thread: {s.thread_filter.label}]")
        if self.filter_text:
            notes.append(f"[filter: {self.filter_text}]")
        if self.paused:
            notes.append("PAUSED")
        table = self.query_one(FunctionTable)
        rows = keep(s.rows, self.pattern)
        shown = top_rows(rows, table.sort_column)
        if len(shown) < len(rows) and self.baseline is None:  # the screen's work follows what it shows
            notes.append(f"[the top {len(shown):,} of {len(rows):,} rows: / finds the others]")
        if self.baseline is not None:
            notes.append(f"[against the baseline: {self.baseline.label}]")
        self.query_one(ProcessHeader).show_header(s, notes, self.trends, self.axis(s))
        self.show_changes(s)
        self.query_one("#error-banner", Banner).say(fmt.error_banner(s))
        self.query_one("#behind-banner", Banner).say(fmt.behind_banner(s))
        self.query_one("#elsewhere-banner", Banner).say(fmt.elsewhere_banner(s))
        self.query_one("#push-banner", Banner).say(fmt.push_banner(s))
        self.query_one("#record-banner", Banner).say(fmt.record_banner(s))
        self.query_one("#exited-banner", Banner).say(fmt.exited_banner(s))
        several = len({row.pid for row in s.rows}) > 1 or len(s.run.processes) > 1
        table.show_functions(shown, s.target.cwd, self.full_filenames, several, self.trends)
        self.show_detail()
        threads = self.query_one(ThreadTable)
        if threads.display:
            threads.show_threads(s.thread_rows, s.thread_filter.key if s.thread_filter else None, several)
        tree = self.query_one(CallTreeView)
        if tree.display and s.call_tree is not None:
            tree.show_tree(s.call_tree, s.target.cwd, self.full_filenames)
        panel = self.query_one(CallersPanel)
        panel.display = s.call_graph is not None
        if s.call_graph is not None:
            panel.show_graph(s.call_graph, s.target.cwd, self.full_filenames)
            if self._panel_wanted:
                self._panel_wanted = False
                panel.focus_first()
        if s.run.exported and s.run.exported != self._announced:
            self._announced = s.run.exported
            self.notify("\n".join(s.run.exported), title="Exported" if len(s.run.exported) > 1 else "Export",
                        markup=False)  # paths are the user's: "[/]" in one froze the screen

    def show_changes(self, s: Snapshot) -> None:
        """With a baseline, its comparison in place of the function table."""
        changes = self.query_one(ChangeTable)
        functions = self.query_one(FunctionTable)
        tree_shown = self.query_one(CallTreeView).display  # in the table's place
        if self.baseline is None:
            if changes.display:
                changes.display, functions.display = False, not tree_shown
                if not tree_shown:
                    functions.focus()
            return
        comparison = compared(self.baseline, s)
        if comparison is None:
            return  # (the span since B is a few milliseconds old: compared from its next refresh)
        if isinstance(comparison, str):
            self.notify(comparison, title="Baseline", severity="warning", timeout=6, markup=False)
            self.baseline = None
            self.show_changes(s)
            return
        if functions.display or (not changes.display and not tree_shown):
            changes.display, functions.display = not tree_shown, False
            if not tree_shown:
                changes.focus()
        changes.set_columns(change_columns(self.change_sort))
        chosen = kept(ordered(comparison.changes, self.change_sort), self.pattern)
        changes.show_changes(chosen[:MAX_TABLE_ROWS], self.full_filenames)

    def show_detail(self) -> None:
        """The row under the cursor over the last minute."""
        key = self.query_one(FunctionTable).current_key()
        shares = [share for _, share in self.trends.shares.get(key, ())] if key else []
        detail = self.query_one("#detail", Static)
        if not key or not shares:  # a row not seen in a refresh yet (or after the end, another view)
            detail.update("", layout=False)  # one line, always: no layout pass for it
            return
        # the figures first, the name last: a narrow screen cuts the name, never a figure
        text = Text(f" %Own now {fmt.percent(self.trends.latest.get(key, 0.0))}, high {fmt.percent(max(shares))}, "
                    "last minute ", style="dim", no_wrap=True, overflow="ellipsis")
        text.append(self.trends.share_line(key), style="cyan")
        text.append(f"  {key[0]}", style="dim")
        detail.update(text, layout=False)

    def on_line_table_highlighted(self, event: LineTable.Highlighted) -> None:
        if isinstance(event.table, FunctionTable):
            self.show_detail()

    def redraw(self) -> None:
        if self.snapshot is not None:
            self.show_snapshot(self.snapshot)

    # ---- actions -------------------------------------------------------------------------

    def action_sort(self, column: str) -> None:
        if self.baseline is not None:  # 1-4: own, total, and their changes
            self.change_sort = CHANGE_KEYS.get(column, self.change_sort)
            self.redraw()
            self.query_one(ChangeTable).move_cursor(0)
            return
        if column in SORT_COLUMNS:
            self.query_one(FunctionTable).set_sort(column)
            if self.snapshot is not None and len(self.snapshot.rows) > MAX_TABLE_ROWS:
                self.redraw()  # the top rows by the new column
            self.show_detail()  # another row is under the cursor

    def action_toggle_lines(self) -> None:
        self.by_line = not self.by_line
        self.source.send(commands.ByLine(self.by_line))

    def action_toggle_tasks(self) -> None:
        version = self.snapshot.target.python_version if self.snapshot is not None else ""
        if version[:1].isdigit() and tuple(int(part) for part in version.split(".")[:2] if part.isdigit()) < (3, 14):
            self.notify(f"asyncio tasks are read from CPython 3.14 on (its threads list their tasks); this target "
                        f"runs Python {version}", title="Tasks", timeout=4, markup=False)
            return
        self.tasks = not self.tasks
        self.source.send(commands.ShowTasks(self.tasks))
        self.notify("asyncio tasks shown as frames (CPython 3.14+ targets)" if self.tasks else "asyncio tasks hidden",
                    timeout=3)

    def action_reset(self) -> None:
        self.source.send(commands.Reset())

    def action_baseline(self) -> None:
        """B: the totals shown become the baseline (live, counting starts again from now), or
        the baseline is dropped."""
        if self.baseline is not None:
            self.baseline = None
            self.notify("the plain table again", title="Baseline", timeout=3)
        elif self.snapshot is not None:
            s = self.snapshot
            self.baseline = span_of(s, span_label(s, time.time()))
            if s.run.replay is None:
                self.source.send(commands.Reset())  # what runs from now on is compared with it
            self.notify(f"the baseline: {self.baseline.label}; the table shows each function's change per second "
                        "against it", title="Baseline", timeout=4, markup=False)
        self.redraw()

    def action_next_mode(self) -> None:
        """cpu -> wall -> gil -> cpu: the table keeps its history in every mode."""
        self.mode = MODES[(MODES.index(self.mode) + 1) % len(MODES)]
        self.source.send(commands.ChangeMode(self.mode))

    def action_stacks_now(self) -> None:
        if self.snapshot is None:
            return
        thread = self.snapshot.thread_filter
        pid = thread.pid if thread else self.snapshot.process_filter or self.snapshot.target.pid
        self.app.push_screen(StacksPanel(self.stacks_now, pid, thread.thread_id if thread else None))

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self.key_help(back=self.back is not None, replay=self.replay)))

    def main_table(self) -> LineTable:
        """The table the tree takes the place of: the comparison's, with a baseline."""
        return self.query_one(ChangeTable) if self.baseline is not None else self.query_one(FunctionTable)

    def action_toggle_tree(self) -> None:
        tree, table = self.query_one(CallTreeView), self.main_table()
        showing = not tree.display
        if showing:
            focus = self.snapshot.call_graph.focus if self.snapshot and self.snapshot.call_graph else None
            tree.open_at(focus or self.query_one(FunctionTable).current_key())
        tree.display = showing
        table.display = not showing
        self.query_one("#detail", Static).display = not showing
        (tree if showing else table).focus()
        self.source.send(commands.ShowTree(showing))

    def action_toggle_threads(self) -> None:
        threads = self.query_one(ThreadTable)
        threads.display = not threads.display
        self.source.send(commands.ShowThreads(threads.display))
        if threads.display:
            self.redraw()
            threads.focus()
        else:
            self.query_one(FunctionTable).focus()

    def action_all_threads(self) -> None:
        self.source.send(commands.NarrowToThread(None))
        self.source.send(commands.NarrowToProcess(None))

    def action_next_process(self) -> None:
        """All processes -> the first -> the next ... -> all again."""
        if self.snapshot is None:
            return
        # Processes that have ended stay in the figures (and after the last one, all have).
        pids = sorted(set(self.snapshot.run.processes) | {row.pid for row in self.snapshot.thread_rows})
        if len(pids) < 2:
            self.notify("P steps through the processes a run with --subprocesses (-s) watches: this one has "
                        "one so far", title="Process", timeout=4)
            return
        current = self.snapshot.process_filter
        following = pids[0] if current is None else (pids[pids.index(current) + 1] if current in pids[:-1] else None)
        self.source.send(commands.NarrowToProcess(following))

    def action_filter(self) -> None:
        self.query_one(FilterBar).open(self.filter_text)

    def on_filter_bar_done(self, message: FilterBar.Done) -> None:
        self.query_one(FunctionTable).focus()
        if message.text is not None:
            self.filter_text = message.text
            self.pattern = compile_filter(message.text)
            self.redraw()

    def action_clear_filter(self) -> None:
        self.filter_text = ""
        self.pattern = None
        self.redraw()

    def action_pause(self) -> None:
        """Freeze the screen; sampling and counting go on. Again: show what came in."""
        self.paused = not self.paused
        if not self.paused and self.latest is not None:
            self.show_snapshot(self.latest)
        else:
            self.redraw()

    def on_line_table_header_clicked(self, event: LineTable.HeaderClicked) -> None:
        if isinstance(event.table, ChangeTable):
            self.change_sort = event.column
            self.redraw()
            return
        if isinstance(event.table, FunctionTable):
            self.action_sort(event.column)

    def on_line_table_chosen(self, event: LineTable.Chosen) -> None:
        if isinstance(event.table, ThreadTable) and isinstance(event.key, int):
            self.source.send(commands.NarrowToThread(event.key))
        elif isinstance(event.table, FunctionTable):
            row = event.table.row_of(event.key) if isinstance(event.key, tuple) else None
            if row is not None:
                self._panel_wanted = True
                self.source.send(commands.Focus(row.key))

    def on_callers_panel_chosen(self, message: CallersPanel.Chosen) -> None:
        self.source.send(commands.Focus(message.key))
        self.query_one(FunctionTable).select_key(message.key)

    def action_close_panel(self) -> None:
        if self.query_one(CallTreeView).display:
            self.action_toggle_tree()
            return
        if self.snapshot is not None and self.snapshot.call_graph is not None:
            self.source.send(commands.Focus(None))
            self.query_one(FunctionTable).focus()
            return
        self.action_back()  # nothing was open

    def action_back(self) -> None:
        if self.back is not None:
            self.back()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The back key only where there is a table to go back to (else not in the key bar); a
        recording's keys only in its view, a running process's only in theirs."""
        if action == "back":
            return self.back is not None
        return self.shown_in(action, self.replay)

    def action_refresh_rate(self, step: int) -> None:
        """One step along REFRESH_STEPS (from a --delay between steps, to the next one)."""
        if step < 0:
            self.delay = max([s for s in REFRESH_STEPS if s < self.delay] or [REFRESH_STEPS[0]])
        else:
            self.delay = min([s for s in REFRESH_STEPS if s > self.delay] or [REFRESH_STEPS[-1]])
        self.source.send(commands.Delay(self.delay))
        self.notify(f"every {self.delay:g} s", title="Refresh", timeout=2)

    def action_export(self) -> None:
        directory = self.export_dir or os.getcwd()
        self.source.send(commands.Export(directory))
        if self.baseline is not None and self.snapshot is not None:  # and the comparison shown
            comparison = compared(self.baseline, self.snapshot)
            if comparison is not None and not isinstance(comparison, str):
                tell_export(self, write_comparison(directory, comparison), "Comparison")
