"""The live view: a Textual app that shows the snapshots a source publishes on its main screen
(screen.py). The app owns the process around the view: the source's start and stop, signals,
the garbage collector's settings.

Data flows one way: source (the sampler thread) -> Snapshot -> post_message -> widgets. The app
never waits for the source; key presses that need new figures (reset, by-line view) are sent to
the source, which answers with a fresh snapshot at once.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import threading
import time
from collections.abc import Callable

from textual.app import App
from textual.binding import Binding
from textual.screen import Screen

from ..core.compare import Span
from ..core.model import Mode, Snapshot
from .messages import SnapshotReady
from .screen import MainScreen
from .source import SnapshotSource, StacksNow

SHUTDOWN_GRACE_SECONDS = 5.0  # after a signal, the longest the process waits for a clean shutdown
FULL_COLLECTION_EVERY = 100  # middle-generation collections per full one (Python's default: 10)


class PytopApp(App[None]):
    CSS_PATH = "pytop.tcss"
    TITLE = "pytop"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [Binding("ctrl+c", "quit", "Quit", show=False, priority=True)]  # the rest are the screen's

    def __init__(self, source: SnapshotSource, *, sort: str = "own_time", by_line: bool = False, mode: Mode = "cpu",
                 full_filenames: bool = False, notes: tuple[str, ...] = (), handle_signals: bool = False,
                 export_dir: str | None = None, delay: float = 1.0, last_words: Callable[[], None] | None = None,
                 tasks: bool = False, tune_gc: bool = False, stacks_now: StacksNow | None = None,
                 back: bool = False, replay: bool | None = False, baseline: Span | None = None):
        """The view's settings go to the main screen (see MainScreen). last_words: what must be
        done before the process ends if a signal's shutdown hangs (see on_signal); tune_gc: the
        app owns the process, and sets its garbage collector for a steady screen (see
        on_snapshot_ready); back: opened from the host's table, to which b and Esc go back (the
        app ends with went_back set); replay: the source is a recording (pytop FILE), or None: a
        live view that can step back into its own recording (--record); baseline: what the
        table is compared against from the start (--baseline)."""
        self.last_words = last_words
        super().__init__()
        self.handle_signals = handle_signals
        self.source = source
        self.went_back = False
        self.main = MainScreen(source, sort=sort, by_line=by_line, mode=mode, full_filenames=full_filenames,
                               notes=notes, export_dir=export_dir, delay=delay, tasks=tasks, stacks_now=stacks_now,
                               back=self._go_back if back else None, replay=replay, baseline=baseline)
        self._frozen = not tune_gc  # gc.freeze() done, once the screen is up

    def _go_back(self) -> None:
        self.went_back = True
        self.exit()

    def get_default_screen(self) -> Screen[None]:
        return self.main

    @property
    def snapshot(self) -> Snapshot | None:
        """What the main screen shows."""
        return self.main.snapshot

    def on_mount(self) -> None:
        if self.handle_signals:  # SIGTERM or a closed terminal: leave the terminal as it was
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGHUP):
                loop.add_signal_handler(sig, self.on_signal, sig)
        self.source.start(self.publish)

    def on_signal(self, signum: int) -> None:
        """SIGTERM, or SIGHUP when the terminal went away. Textual's shutdown writes to the
        terminal, and with the terminal gone it can block for ever (1 time in 2 when a tmux
        server was killed): the process ends after SHUTDOWN_GRACE_SECONDS regardless."""
        threading.Thread(target=self._end_anyway, args=(signum,), name="pytop-shutdown", daemon=True).start()
        self.exit()

    def _end_anyway(self, signum: int) -> None:
        time.sleep(SHUTDOWN_GRACE_SECONDS)
        try:
            if self.last_words is not None:
                self.last_words()
        finally:
            os._exit(128 + signum)

    def publish(self, snapshot: Snapshot) -> None:
        """Called from the sampler thread: post_message is the thread-safe way in."""
        self.post_message(SnapshotReady(snapshot))

    def on_unmount(self) -> None:
        self.source.stop()

    def on_snapshot_ready(self, message: SnapshotReady) -> None:
        self.main.receive(message.snapshot)
        if not self._frozen:
            # Textual's and pytop's own long-lived objects (about 100,000) out of the collector's
            # sight: a full collection took 35-50 ms of the UI thread (100-300 ms under load),
            # every 30-70 s, and a key pressed then waited for it. What lives on after this
            # (tallies, trends) still makes full collections of 60-150 ms under load, which the
            # default thresholds ran every ~50 s: now one in ten as often (young objects, the
            # garbage of each refresh, are collected as before).
            gc.freeze()
            young, middle, _ = gc.get_threshold()
            gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)
            self._frozen = True

