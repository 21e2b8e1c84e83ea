"""The view's time axis: the target's CPU over each window of a recording, as its live view
showed it for that window (the kernel's count over the window's seconds), for the header's
timeline with the cursor and the range on it.

A replay learns the points of the windows it decodes anyway; the rest are read while the view
waits (a window's load alone: a tenth of decoding it), coarsely first (every 64th window, then
every 32nd, ...), so that an hour's shape shows in a fraction of the time its every window
takes. Pure but for the reads it is handed."""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Callable, Iterator

UNKNOWN = -1.0  # a window not read yet
GAP = -2.0  # nothing to show there: a frame that did not decode, or a window too short to say its CPU
MAX_POINTS = 1024  # a snapshot carries at most these: a day's windows are averaged down to them
FIRST_STRIDE = 64  # the coarsest pass reads every 64th window


class Timeline:
    def __init__(self, windows: int = 0):
        self.cpu = array("d", [UNKNOWN]) * windows
        self._order = self._passes()
        self._changed = True  # since the last series()
        self._series: tuple[float, ...] = ()
        self._count_unknown()

    def __len__(self) -> int:
        return len(self.cpu)

    def grow(self, windows: int) -> None:
        """A recording still being written: its new windows, unknown (a rotated one is a new
        recording, with a timeline of its own)."""
        if windows > len(self.cpu):
            self.cpu.extend([UNKNOWN] * (windows - len(self.cpu)))
            self._order = self._passes()
            self._changed = True
            self._count_unknown()

    def _count_unknown(self) -> None:
        self._unknown = self.cpu.count(UNKNOWN)
        self._coarse_unknown = self.cpu[::-1][::FIRST_STRIDE].count(UNKNOWN)

    def learn(self, index: int, cpu_pct: float | None) -> None:
        """Window `index`'s CPU (None: too short a window to say, as its live view said none:
        left out of its point's mean, not taken for an idle target)."""
        self._set(index, GAP if cpu_pct is None else max(0.0, cpu_pct))

    def gap(self, index: int) -> None:
        self._set(index, GAP)

    def _set(self, index: int, value: float) -> None:
        if 0 <= index < len(self.cpu) and self.cpu[index] == UNKNOWN:
            self.cpu[index] = value
            self._changed = True
            self._unknown -= 1
            self._coarse_unknown -= (len(self.cpu) - 1 - index) % FIRST_STRIDE == 0

    @property
    def complete(self) -> bool:
        return not self._unknown

    @property
    def shaped(self) -> bool:
        """Is the coarsest pass read (every FIRST_STRIDE-th window from the last: the whole
        recording's shape)?"""
        return not self._coarse_unknown

    def fill(self, read: Callable[[int], float | None], stop: Callable[[], bool]) -> bool:
        """Read unknown windows' points (read(index) -> its CPU %; raises ValueError for a frame
        that does not decode: a gap) until `stop` says so. Returns whether any is left."""
        for index in self._order:
            if stop():
                self._order = itertools.chain((index,), self._order)  # (where the next fill starts)
                return True
            if self.cpu[index] != UNKNOWN:
                continue
            try:
                self.learn(index, read(index))
            except ValueError:
                self.gap(index)
        return False

    def series(self) -> tuple[float, ...]:
        """At most MAX_POINTS points, each the mean of the known windows it stands for (UNKNOWN
        where none is known yet, GAP where all are gaps), oldest first; kept while nothing
        changed (the same tuple for each snapshot, not a new one)."""
        if not self._changed:
            return self._series
        count = len(self.cpu)
        points = min(count, MAX_POINTS)
        edges = [i * count // points for i in range(points + 1)] if points else [0]
        out = []
        for a, b in zip(edges, edges[1:]):
            part = self.cpu[a:b]
            known = [v for v in part if v >= 0]
            out.append(sum(known) / len(known) if known else (UNKNOWN if UNKNOWN in part else GAP))
        self._series, self._changed = tuple(out), False
        return self._series

    def _passes(self) -> Iterator[int]:
        """Window indexes coarse to fine: every FIRST_STRIDE-th, then those halfway between, ...;
        the latest first within a pass (the view opens at the end)."""
        count = len(self.cpu)
        stride = FIRST_STRIDE
        yield from range(count - 1, -1, -stride)
        while stride > 1:
            half = stride // 2
            yield from range(count - 1 - half, -1, -stride)
            stride = half
