"""The main screen's time keys and axis: stepping and jumping through a recording (or a live
view's past), a click on the header's time axis, `g`'s prompt; a live view whose memory holds
no window yet says so. MainScreen (ui/screen.py) is built on it."""

from __future__ import annotations

from textual.screen import Screen

from ..core import commands
from ..core.model import Snapshot
from .linetable import LineTable
from .session_axis import SessionAxis
from .source import SnapshotSource
from .time_bar import TimeBar
from .timeline import Axis, axis_of
from .widgets import ProcessHeader


class TimeTravel(Screen[None]):
    source: SnapshotSource
    replay: bool | None  # a recording (True), a live view (False), or a live view with its past (None)
    snapshot: Snapshot | None  # on screen
    session: SessionAxis  # the live view's session so far

    def main_table(self) -> LineTable:
        raise NotImplementedError

    def axis(self, s: Snapshot) -> Axis | None:
        """A recording's time axis, or the live view's session's while it has a past to go to."""
        if s.run.replay is not None:
            return axis_of(s.run.replay) if s.run.replay.timeline else None
        return self.session.axis(s.run.elapsed) if self.replay is None else None

    def action_seek(self, windows: int) -> None:
        self.seek(commands.Seek(windows=windows))

    def action_seek_seconds(self, seconds: float) -> None:
        self.seek(commands.Seek(seconds=seconds))

    def action_seek_edge(self, edge: int) -> None:
        self.seek(commands.Seek(edge=edge))

    def on_process_header_time_chosen(self, message: ProcessHeader.TimeChosen) -> None:
        self.seek(commands.Seek(index=message.index) if message.moment is None else commands.Seek(to=message.moment))

    def seek(self, command: commands.Seek) -> None:
        """To the source; a live view whose memory holds no window yet says so (its first is
        written at the first refresh) rather than leave a key without an answer."""
        if command.back and self.replay is None and self.no_past_yet():
            self.notify("nothing to go back to yet: the session's first window is kept at the first refresh",
                        title="The past", timeout=4)
            return
        self.source.send(command)

    def no_past_yet(self) -> bool:
        s = self.snapshot
        if s is not None and s.run.replay is not None:
            return False  # in the past already
        return s is None or s.run.record is None or s.run.record.windows == 0

    def action_go_to(self) -> None:
        self.query_one(TimeBar).open("")

    def on_time_bar_chosen(self, message: TimeBar.Chosen) -> None:
        self.main_table().focus()
        if message.problem is not None:
            self.notify(message.problem, title="Go to", severity="warning", timeout=6, markup=False)
        elif message.when is not None:  # (from the recording's start; a live view's: its session's)
            place = self.snapshot.run.replay if self.snapshot is not None else None
            start = place.recording_start if place is not None else self.session.start
            self.seek(commands.Seek(to=message.when.at(start)))
