"""--record FILE with the host's table (`pytop --record FILE` without a PID, `pytop --batch --all
--record FILE`): each look at the host written as one window, the host's flight recorder.

Whoever looks (the table's scanning worker, --batch's loop) hands a look over and goes on at once:
the writer's thread encodes it, numbering the texts the file does not hold yet, and appends it.
A look lost to a slow or full disk costs nothing the next ones need (texts are numbered only as
they are written); the next window written says how many were lost."""

from __future__ import annotations

import collections
import socket
import threading
import time
from typing import cast

from ..core.model import Heat, PythonProcess
from ..core.pools import merge_heats
from . import container
from .bounds import DEFAULT_MAX_SIZE
from .host_payloads import HostKey, HostWindow, Texts, host_key_payload, host_window_payload
from .queued import QueuedWriter

QUEUE_LOOKS = 30


class HostRecorder(QueuedWriter[HostWindow]):
    def __init__(self, path: str, refresh: float, cpu_budget: float, queue_looks: int = QUEUE_LOOKS,
                 writer: container.Writer | None = None, max_size: int | None = DEFAULT_MAX_SIZE):
        """Opens (and locks) the file and writes its key frame; max_size: the file's bound (its
        oldest part goes past it; None: no bound). Raises errors.UsageError when it cannot: a
        link, not writable, being recorded by another pytop."""
        super().__init__(writer or container.Writer(path), queue_looks, "pytop-host-recorder", max_size)
        self._texts: Texts = {}
        self._lost_since = 0  # looks lost since the last window written
        self._last_end = time.time()
        self._heats: dict[int, list[Heat]] = {}  # published since the last look, by pid
        self._heats_came = False  # ... and whether any window closed (its heats may be none)
        self._heats_lock = threading.Lock()
        self._key = HostKey(self._last_end, refresh, cpu_budget, socket.gethostname())
        self._start(host_key_payload(self._key), self._last_end)

    def heats_came(self, heats: dict[int, Heat]) -> None:
        """A window of the host sampler closed (any thread): its heats go with the next look."""
        with self._heats_lock:
            self._heats_came = True
            for pid, heat in heats.items():
                self._heats.setdefault(pid, []).append(heat)

    def look(self, processes: list[PythonProcess], seconds: float, sampled: bool = True) -> None:
        """A look at the host (its CPU shares over `seconds`), with the heats that came since the
        look before (each written once; the table shows the last ones until new ones come); not
        `sampled`: no stacks are sampled now (a replay shows none, not the last ones). Any thread
        but the writer's; never waits for the disk."""
        end = time.time()
        start = max(self._last_end, end - seconds) if seconds > 0 else end
        with self._heats_lock:
            came, self._heats = self._heats, {}
            new, self._heats_came = self._heats_came or not sampled, False
        heats = tuple(sorted((pid, merge_heats(found)) for pid, found in came.items()))
        self.put(HostWindow(tuple(processes), heats, seconds, heats_new=new), start, end)
        self._last_end = end

    def overflow(self, queue: collections.deque[tuple[HostWindow, float, float]]) -> int:
        lost = super().overflow(queue)  # (under the queue's lock)
        self._lost_since += lost
        return lost

    def encode(self, item: HostWindow) -> tuple[bytes, object]:
        with self._lock:
            counted = self._lost_since
        payload, texts = host_window_payload(item._replace(dropped=item.dropped + counted), self._texts)
        return payload, (texts, counted)

    def written_as(self, state: object) -> None:
        texts, counted = cast("tuple[Texts, int]", state)
        self._texts = texts
        with self._lock:
            self._lost_since -= counted

    def key(self) -> bytes:
        return host_key_payload(self._key, self._texts)  # (every text so far: a reader may start here)

    def lost(self, item: HostWindow) -> None:
        with self._lock:
            self._lost_since += 1
