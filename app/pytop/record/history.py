"""The live view with its past: with --record, the time keys step back into the session so far
(the recording being written), in the same screen, and `>` (or stepping past its last window)
comes back to the live figures. Sampling goes on meanwhile; the live snapshots wait, the newest
kept, until the view comes back to them.

One source for the screen (a SnapshotSource): commands go to the sampler while live, to the
recording's replay while in the past; a view change goes to both, so that coming back shows the
view the keys asked for."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from ..core import commands
from ..core.model import Snapshot
from ..core.snapshot import View
from .recording import open_recording
from .replay import Replay
from .source import Exporter, ReplaySource


class LiveSource(Protocol):
    """What the live view's source is (sampling.sampler.Sampler)."""

    @property
    def view(self) -> View: ...

    def start(self, publish: Callable[[Snapshot], None]) -> None: ...
    def stop(self) -> None: ...
    def send(self, command: commands.Command) -> None: ...


class HistorySource:
    def __init__(self, live: LiveSource, path: str, exporter: Exporter | None = None, private: bool = False):
        """live: the sampler, recording to `path` (private: the view's own memory of its session,
        not a recording the user asked for)."""
        self.live = live
        self.path = path
        self.private = private
        self._exporter = exporter
        self._publish: Callable[[Snapshot], None] = lambda snapshot: None
        self._lock = threading.Lock()
        self._past: ReplaySource | None = None  # while the view shows the past
        self._replay: Replay | None = None  # kept between visits: what was taken in stays
        self._latest: Snapshot | None = None  # the newest live snapshot

    def start(self, publish: Callable[[Snapshot], None]) -> None:
        self._publish = publish
        self.live.start(self._from_live)

    def stop(self) -> None:
        with self._lock:
            past, self._past = self._past, None
        if past is not None:
            past.stop()
        self.live.stop()
        if self._replay is not None:
            self._replay.close()

    def _from_live(self, snapshot: Snapshot) -> None:
        with self._lock:
            self._latest = snapshot
            if self._past is not None:
                return  # shown when the view comes back
        self._publish(snapshot)

    @property
    def in_past(self) -> bool:
        return self._past is not None

    def send(self, command: commands.Command) -> None:
        past = self._past
        if isinstance(command, commands.ViewChange):
            self.live.send(command)
            if past is not None:
                past.send(command)
        elif isinstance(command, commands.Seek):
            if past is None:
                if command.back:
                    self._enter(command)
            elif command.edge > 0 or (past.cursor >= len(past.replay) - 1 and (command.windows > 0
                                                                              or command.seconds > 0)):
                self._leave()
            else:
                past.send(command)
        elif past is not None and isinstance(command, (commands.Reset, commands.Export)):
            past.send(command)
        else:
            self.live.send(command)

    def _enter(self, seek: commands.Seek) -> None:
        """Into the session so far, one window (a minute, the start) before the newest written."""
        if self._replay is None:
            try:
                self._replay = Replay(open_recording(self.path))
            except Exception:  # nothing written yet: there is no past to show
                return
        elif not self._replay.grow():  # the file was rotated (--record-max-size): read it anew
            self._replay.close()
            self._replay = Replay(open_recording(self.path))
        if not len(self._replay):
            return
        last = len(self._replay) - 1
        past = ReplaySource(self._replay, self.live.view, 0, last, exporter=self._exporter)
        past.apply(seek)
        with self._lock:
            self._past = past
        past.start(self._from_past)

    def _from_past(self, snapshot: Snapshot) -> None:
        place = snapshot.run.replay
        if place is not None:
            snapshot = replace(snapshot, run=replace(snapshot.run, replay=replace(place, live=True,
                                                                                  private=self.private)))
        self._publish(snapshot)

    def _leave(self) -> None:
        with self._lock:
            past, self._past = self._past, None
            latest = self._latest
        if past is not None:
            past.stop(close=False)
        if latest is not None:
            self._publish(latest)
