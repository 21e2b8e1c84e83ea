"""A recording's writer thread and the bounded queue before it: whoever makes the windows (the
sampler's thread, the host table's looks) hands each over and goes on at once; the writer's
thread encodes and appends it as one frame. A disk slower than the windows come leaves the queue
full: then the oldest window waiting gives way (`overflow`, which a recorder may make keep what
later windows need of it), counted and said. A write that fails (a full disk) loses that window
the same way; the next ones are tried, and what was written stays readable (a frame cut short
is passed over by the reader).

Every so often (KEY_SECONDS, or an eighth of the recording's bound in bytes) the writer's thread
appends a key frame (`key`: what a reader starting there needs), so that a reader can begin at
any of them; and when the file passes its bound (--record-max-size) its oldest part goes, up to
a key frame (rotation: the file keeps the most recent part, 5/8 to 3/4 of the bound, and says
what went). Neither is ever done on the thread that makes the windows.

A recorder says what a window's payload is (`encode`), what a key frame holds (`key`) and what
a lost window leaves behind (`overflow`, `lost`); the thread, the queue, the counts, the keys,
rotation and closing are here."""

from __future__ import annotations

import collections
import threading
from typing import Generic, TypeVar

from .. import errors
from ..core.model import RecordStatus
from . import container
from .bounds import KEEP_SHARE, KEY_BYTES, KEY_SECONDS, KEY_SHARE, KEY_WEIGHT
from .payloads import rotation_note

CLOSE_SECONDS = 5.0  # how long the end of a run waits for the windows still queued

Item = TypeVar("Item")


class QueuedWriter(Generic[Item]):
    def __init__(self, writer: container.Writer, queue_windows: int, thread_name: str,
                 max_size: int | None = None, private: bool = False, key_seconds: float = KEY_SECONDS):
        """max_size: the recording's bound in bytes (None: none); private: the live view's own
        memory of its session, not a recording asked for (said so in its status)."""
        self._writer = writer
        self.private = private
        # A key frame is due, and waits for a window that brings what only the window's maker
        # has (a run's totals: record/recorder.py); read by the maker's thread.
        self.key_wanted = False
        self.max_size = max_size
        self.key_seconds = key_seconds  # a key frame at least this often
        self.rotations = 0  # times the oldest part of the file went
        self.path = writer.path
        self._queue_windows = queue_windows
        self._queue: collections.deque[tuple[Item, float, float]] = collections.deque()
        self._lock = threading.Condition()
        self._closing = False
        self.written = 0  # windows written
        self._last_written = 0.0  # the end of the last window taken from the queue
        self.dropped = 0  # windows whose figures were lost (the disk could not keep up, or failed)
        self.failing: str | None = None  # why the last write failed, if it did
        self.last_failure: str | None = None  # ... kept once writes succeed again (what was lost, and why)
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)

    def _start(self, key: bytes, when: float) -> None:
        """The key frame written (errors.UsageError if it cannot be: nothing is recorded), and
        the writer's thread started."""
        try:
            self._writer.write(container.KEY, key, when, when)
        except OSError as exc:
            self._writer.close()
            raise errors.UsageError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        self._thread.start()

    # ---- what a recorder says ----------------------------------------------------------------

    def encode(self, item: Item) -> tuple[bytes, object]:
        """On the writer's thread: the window's payload, and what the recorder's own state
        becomes once it is written (`written`); raises to lose the window (`lost`)."""
        raise NotImplementedError

    def written_as(self, state: object) -> None:
        """The window's frame is on disk: its state is the recorder's now."""

    def lost(self, item: Item) -> None:
        """The window could not be written (on the writer's thread)."""

    def key(self) -> bytes:
        """On the writer's thread, after a window was written: a key frame's payload, with what a
        reader starting after the windows written so far needs."""
        raise NotImplementedError

    def key_now(self) -> bool:
        """A key frame is due: write it now (False: after a later window, which key_wanted asks
        the windows' maker for)."""
        return True

    def overflow(self, queue: collections.deque[tuple[Item, float, float]]) -> int:
        """The queue is full (under its lock): make room; returns how many windows' figures that
        lost. By default the oldest waiting goes."""
        queue.popleft()
        return 1

    # ---- whoever makes the windows -----------------------------------------------------------

    def put(self, item: Item, start: float, end: float) -> None:
        with self._lock:
            if len(self._queue) >= self._queue_windows:
                self.dropped += self.overflow(self._queue)
            self._queue.append((item, start, end))
            self._lock.notify()

    @property
    def keys(self) -> int:
        """Key frames the file holds now."""
        return len(self._writer.keys)

    def status(self) -> RecordStatus:
        with self._lock:
            waiting = len(self._queue)
        return RecordStatus(self.path, self._writer.size, self.written, waiting, self.dropped, self.failing,
                            self.last_failure, self.private)

    def close(self, timeout: float = CLOSE_SECONDS) -> RecordStatus:
        """After the last window: what is queued is written (for `timeout` at most), then the file
        is closed. Returns how the recording went."""
        with self._lock:
            self._closing = True
            self._lock.notify()
        if self._thread.is_alive():
            self._thread.join(timeout)
        with self._lock:
            unsent = len(self._queue)
            self._queue.clear()
        self.dropped += unsent
        if not self._thread.is_alive():
            if not unsent and self.key_at_close():
                try:  # (the writer's thread has ended: this one writes, at the last window's end)
                    self._writer.write(container.KEY, self.key(), self._last_written, self._last_written)
                except OSError as exc:  # a full disk: the recording reads as it was
                    self.failing = self.last_failure = exc.strerror or str(exc)
            self._writer.close()
        return self.status()

    def key_at_close(self) -> bool:
        """Once every window is written: whether a key frame ends the file (so that a reader
        opening it at its end reads its last window alone, not every window since the last key)."""
        return False

    # ---- the writer's thread -----------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closing:
                    self._lock.wait()
                if not self._queue:
                    return
                item, start, end = self._queue.popleft()
            self._last_written = end
            try:
                payload, state = self.encode(item)
                self._writer.write(container.WINDOW, payload, start, end)
            except Exception as exc:  # a full disk (OSError), or a bug: the recording goes on
                self.lost(item)
                self.failing = self.last_failure = (exc.strerror or str(exc)) if isinstance(exc, OSError) else \
                    f"a bug in pytop ({type(exc).__name__}: {exc})"
                self.dropped += 1
            else:
                self.written_as(state)
                self.written += 1
                self.failing = None
                try:
                    self._keep_bounds(end)
                except OSError as exc:  # a full disk: the file goes on as it was, rotation is tried again
                    self.failing = self.last_failure = exc.strerror or str(exc)

    def _keep_bounds(self, now: float) -> None:
        """A key frame when one is due; the oldest part of the file gone when it passed its bound."""
        w = self._writer
        last = w.keys[-1] if w.keys else (w.front, 0, now)
        since = w.size - last[0] - last[1]
        every = self.max_size // KEY_SHARE if self.max_size else KEY_BYTES
        due = since >= KEY_WEIGHT * last[1] and (since >= every or now - last[2] >= self.key_seconds)
        wrote = due and self.key_now()
        if wrote:
            w.write(container.KEY, self.key(), now, now)
        # (asked of the windows' maker only while a key is due: what it brings costs it to make)
        self.key_wanted = due and not wrote
        if self.max_size and w.size > self.max_size:
            keep = int(self.max_size * KEEP_SHARE)
            if not any(o > w.front and w.size - o <= keep for o, _, _ in w.keys):
                w.write(container.KEY, self.key(), now, now)  # (keys came too seldom: cut at one made now)
                self.key_wanted = False
            if w.cut(keep, rotation_note):
                self.rotations += 1
