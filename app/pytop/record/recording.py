"""A recording's frames found on disk: its run, its windows and key frames in order, where each
is in the file, and what could not be read; nothing decoded but the run (record/replay.py
builds figures from them, record/prefix.py function tables).

A recording is kept as its frames' stored bytes (compressed: its size on disk), and a window is
decoded when the figures need it."""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass

from .. import errors, files
from . import container
from .keys import RunRecord, read_key
from .payloads import Rotation, read_note


@dataclass(frozen=True)
class StoredWindow:
    start: float  # wall-clock seconds the window covers
    end: float
    frame: container.FrameInfo


@dataclass(frozen=True)
class StoredKey:
    index: int  # of the first window after it
    frame: container.FrameInfo


@dataclass(frozen=True)
class Recording:
    path: str
    run: RunRecord
    windows: tuple[StoredWindow, ...]
    lost_bytes: int  # damaged or cut short, passed over
    damaged: int  # whole frames whose payload did not decode (counted once read)
    keys: tuple[StoredKey, ...] = ()  # where a reader may start
    rotation: Rotation | None = None  # the oldest part went (--record-max-size)
    inode: tuple[int, int] = (0, 0)  # of the file read (a rotation puts a new one under the name)

    @property
    def start(self) -> float:
        return self.windows[0].start if self.windows else self.run.started

    @property
    def end(self) -> float:
        return self.windows[-1].end if self.windows else self.run.started

    def damage_note(self) -> str | None:
        if not self.lost_bytes:
            return None
        return (f"{self.path}: {self.lost_bytes:,} bytes could not be read (a write cut short, or damage); "
                "the rest is shown")


def open_recording(path: str) -> Recording:
    """The recording at `path`, scanned (nothing decoded yet but its key frames' runs). Raises
    errors.UsageError for a file that is not one, or one without its run (cut before its first
    frame was whole)."""
    found = container.scan(path)
    run = None
    rotation = None
    windows: list[StoredWindow] = []
    keys: list[StoredKey] = []
    try:
        f = files.open_regular(path)
    except OSError as exc:
        raise errors.UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    damaged = 0
    with f:
        stat = os.fstat(f.fileno())
        for frame in found.frames:
            if frame.kind == container.KEY:
                keys.append(StoredKey(len(windows), frame))
                if run is None:
                    try:
                        run = read_key(container.payload(f, frame))
                    except (ValueError, zlib.error):
                        damaged += 1
            elif frame.kind == container.WINDOW:
                windows.append(StoredWindow(frame.start, frame.end, frame))
            elif frame.kind == container.NOTE and not windows:
                try:
                    rotation = read_note(container.payload(f, frame)) or rotation
                except (ValueError, zlib.error):
                    damaged += 1
    if run is None:
        raise errors.UsageError(f"{path}: the recording has no readable start (its first frame is cut or damaged)")
    return Recording(path, run, tuple(windows), found.lost, damaged, tuple(keys), rotation,
                     (stat.st_dev, stat.st_ino))
