"""Which thread is which across samples, and how each has been doing. Pure: no target.

A thread is known by (pid, Python thread id, kernel TID), but the ids can be reused once a thread has
ended (glibc reuses pthread structures, so thread ids come back often). A key that was absent
from the previous sample and shows up again is therefore a new thread: its incarnation number
goes up, and it gets a row of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .model import ThreadKey, ThreadRow

MAX_FINISHED = 1000  # finished threads whose figures are kept


@dataclass
class ThreadStats:
    samples: int = 0
    active: int = 0
    gil: int = 0
    top_code: int = 0  # code id of the innermost frame in its latest sample (0: none)
    last_seen: int = 0  # number of the latest sample it was in


class ThreadTracker:
    def __init__(self) -> None:
        self.stats: dict[ThreadKey, ThreadStats] = {}
        self._incarnation: dict[tuple[int, int, int], int] = {}
        self._present: set[tuple[int, int, int]] = set()
        self._now: set[tuple[int, int, int]] = set()
        self.sample_no = 0

    def begin_sample(self) -> None:
        self.sample_no += 1
        self._now = set()

    def see(self, pid: int, thread_id: int, native_id: int, running: bool, gil: bool, stack: bytes) -> ThreadKey:
        ids = (pid, thread_id, native_id)
        self._now.add(ids)
        incarnation = self._incarnation.get(ids)
        if incarnation is None:
            incarnation = self._incarnation[ids] = 0
        elif ids not in self._present:  # gone in the previous sample: this is another thread
            incarnation = self._incarnation[ids] = incarnation + 1
        key = (pid, thread_id, native_id, incarnation)
        stats = self.stats.get(key)
        if stats is None:
            stats = self.stats[key] = ThreadStats()
        stats.samples += 1
        stats.active += running
        stats.gil += gil
        stats.top_code = int.from_bytes(stack[:4], "little") if stack else 0
        stats.last_seen = self.sample_no
        return key

    def end_sample(self) -> None:
        self._present = self._now
        if len(self.stats) > len(self._present) + MAX_FINISHED:
            finished = sorted((s.last_seen, k) for k, s in self.stats.items() if s.last_seen != self.sample_no)
            for _, key in finished[:len(finished) - MAX_FINISHED]:
                del self.stats[key]

    def reset(self) -> None:
        """Figures start again; which thread is which is kept."""
        self.stats = {}

    def rows(self, names: dict[tuple[int, int], str], function_of: Callable[[int, int], str]) -> tuple[ThreadRow, ...]:
        """names: by (pid, thread id); function_of: (pid, code id) -> function name."""
        rows = []
        for key, s in self.stats.items():
            pid, thread_id, native_id, _ = key
            alive = s.last_seen == self.sample_no
            rows.append(ThreadRow(
                key=key, pid=pid, thread_id=thread_id, native_id=native_id or None,
                name=names.get((pid, thread_id)) if alive else None, samples=s.samples,
                active_pct=100.0 * s.active / s.samples if s.samples else 0.0,
                gil_pct=100.0 * s.gil / s.samples if s.samples else 0.0,
                top_frame=function_of(pid, s.top_code) if s.top_code else None, alive=alive,
            ))
        return tuple(rows)
