"""A recording as the live view's source of snapshots (pytop FILE): the same screen and keys,
with a time cursor. Its own thread decodes and sums (a long recording's first table, or a jump
back, takes a moment: the screen never waits for it); the UI sends commands, as to a sampler.

The cursor is a window of the recording; the totals run from the range's start (the recording's,
until R starts the range at the cursor, as R counts from now in the live view) to the cursor.
While no key is pressed, the thread works ahead: checkpoints behind the cursor, for steps back."""

from __future__ import annotations

import bisect
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from ..core import commands
from ..core.model import Mode, Snapshot
from ..core.profile import Profile
from ..core.snapshot import View
from .replay import Replay

Exporter = Callable[[str, Profile, Mode], tuple[str, ...]]
TIMELINE_SLICE = 0.5  # seconds of reading the timeline's points between two showings of it


class ReplaySource:
    def __init__(self, replay: Replay, view: View, first: int = 0, last: int | None = None,
                 exporter: Exporter | None = None):
        """first, last: the range shown at the start (last: the cursor; default the end)."""
        self.replay = replay
        self.view = view
        self.first = first
        self.cursor = len(replay) - 1 if last is None else last
        self._exporter = exporter
        self._exported: tuple[str, ...] = ()
        self._inbox: queue.SimpleQueue[commands.Command | None] = queue.SimpleQueue()
        self._publish: Callable[[Snapshot], None] = lambda snapshot: None
        self._thread = threading.Thread(target=self._run, name="pytop-replay", daemon=True)
        self.failure: str | None = None

    def start(self, publish: Callable[[Snapshot], None]) -> None:
        self._publish = publish
        self._thread.start()

    def stop(self, close: bool = True) -> None:
        """close: the replay too (not when the live view goes back to its present and may come
        back to the same past)."""
        self._inbox.put(None)
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(5.0)
        if close and not self._thread.is_alive():
            self.replay.close()

    def send(self, command: commands.Command) -> None:
        self._inbox.put(command)

    def _run(self) -> None:
        try:
            self._publish(self.current())
            while True:
                self._warm()
                command = self._inbox.get()
                if command is None:
                    return
                # Keys pressed faster than windows are summed go together: the last view wins,
                # the cursor moves by all of them.
                batch = [command]
                while not self._inbox.empty():
                    more = self._inbox.get()
                    if more is None:
                        return
                    batch.append(more)
                if any([self.apply(c) for c in batch]):
                    self._publish(self.current())
        except Exception as exc:  # a bug in pytop: said on screen, never a frozen view
            self.failure = f"{type(exc).__name__}: {exc}"
            try:
                snapshot = self.replay.snapshot(self.cursor, View(), self.first)
            except Exception:
                return  # (said when pytop ends: replaying.py prints the failure)
            self._publish(replace(snapshot, run=replace(snapshot.run, exited=True, failure=self.failure,
                                                         exit_reason=self.failure)))

    def _warm(self) -> None:
        """While no key is pressed: the timeline's shape (a window in 64: ~30 ms an hour),
        then checkpoints behind the cursor (Replay.warm), so that a step back is a restore and a
        few windows, not the five minutes since a key frame, then the timeline's every point
        (shown each TIMELINE_SLICE). A key pressed stops any of them between two windows."""
        waiting = self._inbox.empty
        timeline = self.replay.timeline
        self._fill_timeline(lambda: timeline.shaped)
        while waiting() and self.replay.warm(self.cursor, self.first, stop=lambda: not waiting()):
            pass
        self._fill_timeline(lambda: timeline.complete)

    def _fill_timeline(self, done: Callable[[], bool]) -> None:
        waiting = self._inbox.empty
        while waiting() and not done():
            self.replay.fill_timeline(stop=_until(time.monotonic() + TIMELINE_SLICE, lambda: not waiting() or done()))
            if waiting():
                self._publish(self.current())  # (the state is the cursor's, or a checkpoint away)

    def apply(self, command: commands.Command) -> bool:
        """One command; True if the view or the cursor changed."""
        last = len(self.replay) - 1
        if isinstance(command, commands.ViewChange):
            self.view = command.applied(self.view)
        elif isinstance(command, commands.Seek):
            self.cursor = self._moved(command, last)
            self.first = min(self.first, self.cursor)
        elif isinstance(command, commands.Reset):  # the range starts at the cursor
            self.first = self.cursor if self.first != self.cursor else 0
        elif isinstance(command, commands.Export):
            exporter = self._exporter
            profile = self.replay.profile(self.cursor, self.first)
            self._exported = (exporter(command.directory, profile, self.view.mode) if exporter is not None
                              else ("export failed: this view writes no exports",))
        else:
            return False
        return True

    def _moved(self, seek: commands.Seek, last: int) -> int:
        if seek.edge:
            return 0 if seek.edge < 0 else last
        if seek.windows:
            return max(0, min(last, self.cursor + seek.windows))
        if seek.index is not None:
            return max(0, min(last, seek.index))
        windows = self.replay.recording.windows
        if seek.to is not None:  # the window the moment falls in (the nearest end's, outside the recording)
            return min(bisect.bisect_left([w.end for w in windows], seek.to), last)
        goal = windows[self.cursor].end + seek.seconds
        if seek.seconds > 0:
            return next((i for i in range(self.cursor, last + 1) if windows[i].end >= goal), last)
        return next((i for i in range(self.cursor, -1, -1) if windows[i].end <= goal), 0)

    def current(self) -> Snapshot:
        snapshot = self.replay.snapshot(self.cursor, self.view, self.first)
        if self._exported:
            snapshot = replace(snapshot, run=replace(snapshot.run, exported=self._exported))
        return snapshot


def _until(deadline: float, stop: Callable[[], bool]) -> Callable[[], bool]:
    return lambda: stop() or time.monotonic() >= deadline
