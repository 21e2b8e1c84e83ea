"""The recorded host table's keys and time axis (`pytop host.pytop`): stepping through the
looks, `g`'s prompt, the axis read on a worker thread and a click on it. PickerApp
(ui/picker.py) is built on it; the live table offers none of these keys."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from textual.app import App
from textual.message import Message
from textual.worker import get_current_worker

from ..core.model import Heat, PythonProcess
from .axis_line import AxisLine
from .hosts import HostTable
from .time_bar import TimeBar
from .time_keys import TIME_ACTIONS
from .timeline import Axis

AXIS_SLICE = 0.5  # seconds of reading a recording's looks for its time axis between two drawings


class RecordedLook(Protocol):
    @property
    def processes(self) -> tuple[PythonProcess, ...]: ...
    @property
    def heats(self) -> tuple[tuple[int, Heat], ...]: ...


class RecordedTable(Protocol):
    """A recording of the table, shown again (record/host_replay.py's HostReplay)."""

    @property
    def path(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def start(self) -> float: ...

    def __len__(self) -> int: ...
    def look(self, index: int) -> RecordedLook | None: ...
    def end_of(self, index: int) -> float: ...
    def fill_timeline(self, stop: Callable[[], bool]) -> bool: ...
    def timeline_series(self) -> tuple[float, ...]: ...


class RecordedLooks(App[int]):
    replay: RecordedTable | None  # None: the live table
    at: int  # the look shown
    note: str | None
    latest: list[PythonProcess]
    heats: dict[int, Heat]
    _look_missing: bool
    _series: tuple[float, ...]  # the recording's time axis, as far as it is read

    class AxisRead(Message):
        def __init__(self, series: tuple[float, ...]):
            super().__init__()
            self.series = series

    def _show(self, keep: str | None = None) -> None:
        raise NotImplementedError

    def _read_axis(self) -> None:
        """(a worker thread) The recording's time axis: its looks read coarsely first, drawn
        every AXIS_SLICE seconds of reading, until all are read or the app goes."""
        assert self.replay is not None
        worker = get_current_worker()
        until = 0.0

        def stop() -> bool:
            return worker.is_cancelled or time.monotonic() > until
        more = True
        while more and not worker.is_cancelled:
            until = time.monotonic() + AXIS_SLICE
            more = self.replay.fill_timeline(stop)
            self.post_message(self.AxisRead(self.replay.timeline_series()))

    def on_recorded_looks_axis_read(self, message: RecordedLooks.AxisRead) -> None:
        self._series = message.series
        self._show_axis()

    def _show_axis(self) -> None:
        replay = self.replay
        if replay is None or not len(replay) or not self._series:
            return
        self.query_one(AxisLine).show_axis(Axis(self._series, len(replay), self.at, self.at,
                                                replay.start, replay.end_of(len(replay) - 1)))

    def on_axis_line_chosen(self, message: AxisLine.Chosen) -> None:
        self._go(message.index)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The time keys only in a recording."""
        return self.replay is not None or action not in TIME_ACTIONS

    def _show_look(self) -> None:
        assert self.replay is not None
        window = self.replay.look(self.at) if len(self.replay) else None
        self._look_missing = window is None and len(self.replay) > 0
        self.latest = list(window.processes) if window is not None else []
        self.heats = dict(window.heats) if window is not None else {}
        self._show()

    def _go(self, index: int) -> None:
        assert self.replay is not None
        if len(self.replay):
            self.at = max(0, min(index, len(self.replay) - 1))
            self.note = None
            self._show_look()
            self._show_axis()

    def action_seek(self, looks: int) -> None:
        self._go(self.at + looks)

    def action_seek_seconds(self, seconds: float) -> None:
        """The look nearest `seconds` from the one shown (at least one look away)."""
        replay = self.replay
        assert replay is not None
        if not len(replay):
            return
        goal = replay.end_of(self.at) + seconds
        nearest = min(range(len(replay)), key=lambda i: abs(replay.end_of(i) - goal))
        step = 1 if seconds > 0 else -1
        self._go(nearest if (nearest - self.at) * step > 0 else self.at + step)

    def action_seek_edge(self, edge: int) -> None:
        self._go(0 if edge < 0 else len(self.replay or ()) - 1)

    def action_go_to(self) -> None:
        self.query_one(TimeBar).open("")

    def on_time_bar_chosen(self, message: TimeBar.Chosen) -> None:
        """The look taken at the time asked for, or the first after it (the last, past the end)."""
        self.query_one(HostTable).focus()
        replay = self.replay
        if message.problem is not None:
            self.notify(message.problem, title="Go to", severity="warning", timeout=6, markup=False)
        elif message.when is not None and replay is not None and len(replay):
            moment = message.when.at(replay.start)
            self._go(next((i for i in range(len(replay)) if replay.end_of(i) >= moment), len(replay) - 1))
