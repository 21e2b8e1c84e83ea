"""A recording of the host's table read back: its looks in order, any one of them as the table
showed it, and a range of them summed as `pytop --batch --all` over that time would have
printed it (each process's CPU over the range's time, its threads and memory at its last look,
its hottest functions summed over the looks).

Opening reads every window's new texts (command lines, users: a few bytes a process over a
session), so that any look can then be read alone."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

from .. import errors, files
from ..core.model import Heat, PythonProcess
from ..core.pools import merge_heats
from . import container
from .codec import Damaged
from .host_payloads import HostKey, HostWindow, key_kind, learn_texts, read_host_key_texts, read_host_window
from .payloads import Rotation, read_note
from .recording import StoredWindow
from .timeline import Timeline

HEATS_BACK = 30  # looks a look without heats of its own looks back for the last ones written


def recording_kind(path: str) -> str:
    """HOST or "run", by the recording's first readable key frame ("run" when none is: the
    run's reader then says what is wrong). Raises errors.UsageError for a file that is not one."""
    for frame, data in container.frames(path):
        if frame is not None and frame.kind == container.KEY:
            try:
                return key_kind(data)
            except ValueError:
                continue
    return "run"


@dataclass(frozen=True)
class HostRecording:
    path: str
    key: HostKey
    windows: tuple[StoredWindow, ...]
    texts: tuple[str | None, ...]
    lost_bytes: int  # damaged or cut short, passed over
    damaged: int  # whole frames whose payload did not decode
    rotation: Rotation | None = None  # the oldest part went (--record-max-size)

    @property
    def start(self) -> float:
        return self.windows[0].start if self.windows else self.key.started

    def damage_note(self) -> str | None:
        if not (self.lost_bytes or self.damaged):
            return None
        return (f"{self.path}: {self.lost_bytes:,} bytes and {self.damaged:,} looks could not be read (a write cut "
                "short, or damage); the rest is shown")


def open_host_recording(path: str) -> HostRecording:
    found = container.scan(path)
    key = None
    windows = []
    texts: list[str | None] = []
    damaged = 0
    rotation = None
    for frame, data in container.frames(path, found):
        try:
            if frame is None:
                raise Damaged("a payload that does not expand")
            if frame.kind == container.KEY:  # (each key holds the texts before it: the file may start at any)
                found_key, held = read_host_key_texts(data)
                key = key or found_key
                texts.extend([None] * (len(held) - len(texts)))
                texts[:len(held)] = [t if t is not None else was for t, was in zip(held, texts)]
            elif frame.kind == container.WINDOW:
                learn_texts(data, texts)
                windows.append(StoredWindow(frame.start, frame.end, frame))
            elif frame.kind == container.NOTE and not windows:
                rotation = read_note(data) or rotation
        except ValueError:
            damaged += 1
    if key is None:
        raise errors.UsageError(f"{path}: the recording has no readable start (its first frame is cut or damaged)")
    return HostRecording(path, key, tuple(windows), tuple(texts), found.lost, damaged, rotation)


class HostReplay:
    """Any look of a host recording."""

    def __init__(self, recording: HostRecording):
        self.recording = recording
        self._file = files.open_regular(recording.path)
        self._last: tuple[int, HostWindow | None] | None = None
        self.damaged = 0  # looks that did not decode (a text lost with a damaged window)
        # The time axis: the CPU of the host's Python processes at each look, read on the
        # view's worker thread (with a file of its own: the table reads looks meanwhile).
        self.timeline = Timeline(len(recording.windows))
        self._timeline_file: BinaryIO | None = None

    def close(self) -> None:
        self._file.close()
        if self._timeline_file is not None:
            self._timeline_file.close()

    def __len__(self) -> int:
        return len(self.recording.windows)

    @property
    def path(self) -> str:
        return self.recording.path

    @property
    def host(self) -> str:
        return self.recording.key.host

    @property
    def start(self) -> float:
        return self.recording.start

    def end_of(self, index: int) -> float:
        """When look `index` was taken (wall-clock seconds)."""
        return self.recording.windows[index].end

    def _read(self, index: int) -> HostWindow | None:
        try:
            return self._decode(self._file, index)
        except (Damaged, ValueError, zlib.error):
            self.damaged += 1
            return None

    def _decode(self, f: BinaryIO, index: int) -> HostWindow:
        return read_host_window(container.payload(f, self.recording.windows[index].frame), self.recording.texts)

    def fill_timeline(self, stop: Callable[[], bool]) -> bool:
        """Read looks' points for the axis (coarsely first: record/timeline.py) until `stop` says
        so; returns whether any is left. A look's point: its processes' CPU summed (100 = a core)."""
        if self._timeline_file is None:
            self._timeline_file = files.open_regular(self.recording.path)
        f = self._timeline_file

        def cpu_of(index: int) -> float:
            try:
                return sum(p.cpu_pct for p in self._decode(f, index).processes)
            except zlib.error:
                raise ValueError("a look that does not expand") from None
        return self.timeline.fill(cpu_of, stop)

    def timeline_series(self) -> tuple[float, ...]:
        return self.timeline.series()

    def look(self, index: int) -> HostWindow | None:
        """Look `index` as the table showed it (None if it does not decode): with the heats last
        written at or before it (a look whose sampler window had not closed yet wrote none)."""
        if self._last is not None and self._last[0] == index:
            return self._last[1]
        window = self._read(index)
        if window is not None and not window.heats_new:
            for before in range(index - 1, max(-1, index - HEATS_BACK - 1), -1):
                earlier = self._read(before)
                if earlier is not None and earlier.heats_new:
                    window = window._replace(heats=earlier.heats)
                    break
        self._last = (index, window)
        return window

    def summed(self, first: int, last: int) -> tuple[list[PythonProcess], float, dict[int, Heat]]:
        """Looks first..last as one: each process (a pid and its command line) with its CPU share
        over their time, its other figures as its last look saw them; the looks' heats summed
        per pid. Returns the processes (busiest first), the seconds, the heats."""
        cpu: dict[tuple[int, str], float] = {}  # CPU seconds
        latest: dict[tuple[int, str], PythonProcess] = {}
        heats: dict[int, list[Heat]] = {}
        seconds = 0.0
        for index in range(first, last + 1):
            window = self._read(index)  # (each sampler window's heats once: where they were written)
            if window is None:
                continue
            seconds += window.seconds
            for p in window.processes:
                cpu[(p.pid, p.command)] = cpu.get((p.pid, p.command), 0.0) + p.cpu_pct / 100 * window.seconds
                latest[(p.pid, p.command)] = p
            for pid, heat in window.heats:
                heats.setdefault(pid, []).append(heat)
        share = 100 / seconds if seconds > 0 else 0.0
        processes = [PythonProcess(p.pid, p.user, p.command, cpu[k] * share, p.version, p.threads, p.rss,
                                   p.pid_inside, p.problem, p.parent) for k, p in latest.items()]
        processes.sort(key=lambda p: (-p.cpu_pct, p.pid))
        return processes, seconds, {pid: merge_heats(found) for pid, found in heats.items()}

