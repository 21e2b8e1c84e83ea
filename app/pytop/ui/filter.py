"""Filtering the function table: a pattern over "function filename". Filtered-out rows still
count in every total; only the display is narrowed."""

from __future__ import annotations

import re

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input

from ..core.model import FunctionRow


def compile_filter(text: str) -> re.Pattern[str] | None:
    """A case-insensitive regular expression, or the text as a plain substring if it is not one
    (so "list[int]" or "a(b" work as typed)."""
    if not text:
        return None
    try:
        return re.compile(text, re.IGNORECASE)
    except re.error:
        return re.compile(re.escape(text), re.IGNORECASE)


def keep(rows: tuple[FunctionRow, ...], pattern: re.Pattern[str] | None) -> tuple[FunctionRow, ...]:
    if pattern is None:
        return rows
    return tuple(row for row in rows if pattern.search(f"{row.function} {row.filename}"))


class PromptBar(Input):
    """A line of input at the bottom, shown when a key asks for it: Enter submits, Escape
    cancels (each kind says what that does: on_input_submitted, action_cancel)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", show=False)]

    def open(self, text: str) -> None:
        """Show the prompt with `text`, to edit."""
        self.value = text
        self.display = True
        self.focus()


class FilterBar(PromptBar):
    """The `/` prompt. Enter applies the filter, Escape leaves it as it was."""

    class Done(Message):
        def __init__(self, text: str | None) -> None:
            super().__init__()
            self.text = text
            """The new filter text, or None when cancelled."""

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.display = False
        self.post_message(self.Done(event.value.strip()))

    def action_cancel(self) -> None:
        self.display = False
        self.post_message(self.Done(None))
