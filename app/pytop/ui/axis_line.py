"""A time axis on a line of its own (the recorded host table's, under its intro): what
ui/timeline.py draws, at the widget's width, and a click on it answered with the window under
the mouse."""

from __future__ import annotations

from textual.events import Click, Resize
from textual.message import Message
from textual.widgets import Static

from .timeline import Axis, timeline_line, window_at


class AxisLine(Static):
    DEFAULT_CSS = "AxisLine { height: 1; display: none; }"  # (until it has an axis)

    class Chosen(Message):
        """A click on the axis: the window (a look) under it."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    axis: Axis | None = None

    def show_axis(self, axis: Axis | None) -> None:
        self.axis = axis
        self._draw()

    def _draw(self) -> None:
        drawn = timeline_line(self.axis, self.size.width) if self.axis is not None and self.size.width else None
        self.display = self.axis is not None  # (kept in the layout when too narrow: a wider terminal redraws it)
        self.update(drawn if drawn is not None else "")

    def on_resize(self, event: Resize) -> None:
        self._draw()

    def on_click(self, event: Click) -> None:
        at = event.get_content_offset(self)
        if at is None or self.axis is None:
            return
        index = window_at(self.axis, self.size.width, at.x)
        if index is not None:
            self.post_message(self.Chosen(index))
