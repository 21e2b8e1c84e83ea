"""The `d` panel: the watched process's threads as they are now, each frame with its arguments
and local variables, and the C frames between (what `pytop --dump --locals --native` prints),
read on demand by a worker thread: the screen and sampling go on meanwhile."""

from __future__ import annotations

import threading
from dataclasses import replace

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from .. import errors
from ..core.records import ProcessStacks
from ..report import dump
from .source import StacksNow


class StacksPanel(ModalScreen[None]):
    BINDINGS = [Binding("escape,d,q", "close", "Close")]

    def __init__(self, stacks_now: StacksNow | None, pid: int, thread_id: int | None):
        """stacks_now: how to read them (None: this view cannot); thread_id: the one thread to
        show (the view is narrowed to it), or None for all."""
        super().__init__()
        self.stacks_now, self.pid, self.thread_id = stacks_now, pid, thread_id
        self._gone = threading.Event()

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="stacks-body"):
            yield Static(Text(f"Reading the stacks of process {self.pid} ...", style="dim"), id="stacks-text")

    def on_mount(self) -> None:
        self.run_worker(self._read, thread=True, exclusive=True)

    def on_unmount(self) -> None:
        self._gone.set()  # (closed, or pytop ends: the read stops at its next thread)

    def _read(self) -> None:
        if self.stacks_now is None:
            self.app.call_from_thread(self._show, Text("This view cannot read stacks now.", style="bold red"))
            return
        try:
            stacks, note = self.stacks_now(self.pid, self._gone.is_set)
        except errors.ReadStopped:
            return
        except errors.PytopError as exc:
            self.app.call_from_thread(self._show, Text(f"Cannot read process {self.pid}: {exc}", style="bold red"))
            return
        text = Text(dump.as_text(self._chosen(stacks)))
        if note:
            text.append(note + "\n", style="yellow")
        self.app.call_from_thread(self._show, text.append("Escape closes.", style="dim"))

    def _chosen(self, stacks: ProcessStacks) -> ProcessStacks:
        if self.thread_id is None:
            return stacks
        return replace(stacks, threads=tuple(t for t in stacks.threads if t.thread_id == self.thread_id))

    def _show(self, text: Text) -> None:
        self.query_one("#stacks-text", Static).update(text)

    def action_close(self) -> None:
        self._gone.set()
        self.dismiss()
