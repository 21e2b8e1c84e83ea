"""The g prompt of a recording's view: a time to go to, as a person gives one (core/when.py:
14:05:30 on the clock, 5m30s from the start). Enter goes there, Escape leaves the cursor."""

from __future__ import annotations

from textual.message import Message
from textual.widgets import Input

from ..core.when import When, parse_when
from .filter import PromptBar


class TimeBar(PromptBar):
    class Chosen(Message):
        def __init__(self, when: When | None, problem: str | None) -> None:
            super().__init__()
            self.when = when
            """The time asked for (None: cancelled, or not a time)."""
            self.problem = problem
            """Why the text is not a time, said to the user."""

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.display = False
        text = event.value.strip()
        if not text:
            self.post_message(self.Chosen(None, None))
            return
        try:
            self.post_message(self.Chosen(parse_when(text), None))
        except ValueError as exc:
            self.post_message(self.Chosen(None, str(exc)))

    def action_cancel(self) -> None:
        self.display = False
        self.post_message(self.Chosen(None, None))
