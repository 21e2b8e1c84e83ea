"""What changed between refreshes: each row's rise or fall, and the last minute of a row's share,
of the target's CPU and of the sample rate as sparklines. Kept by the screen from the snapshots
it receives: the sampler knows nothing of it."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable

from ..core.model import RowKey, Snapshot

HISTORY_SECONDS = 60.0
BARS = "▁▂▃▄▅▆▇█"
MOVE_POINTS = 1.0  # a row rose or fell when its %Own moved by at least this many points
WIDTH = 20  # bars in a sparkline: a minute of 1 s refreshes is averaged into this many


def squeeze(values: list[float], width: int) -> list[float]:
    """At most `width` values: consecutive ones averaged, the latest kept last."""
    if len(values) <= width:
        return values
    edges = [round(i * len(values) / width) for i in range(width + 1)]
    return [sum(values[a:b]) / (b - a) for a, b in zip(edges, edges[1:])]


def sparkline(values: Iterable[float], top: float | None = None, width: int = WIDTH) -> str:
    """One bar per value (averaged down to `width` bars), scaled to `top` (the largest value if
    not given); empty if no values."""
    values = squeeze(list(values), width)
    if not values:
        return ""
    top = max(top or 0.0, max(values), 1e-12)
    return "".join(BARS[min(len(BARS) - 1, max(0, round(v / top * (len(BARS) - 1))))] for v in values)


class Trends:
    """The shares of the last minute of refreshes, per row, and the target's CPU and rate."""

    def __init__(self, seconds: float = HISTORY_SECONDS):
        self.seconds = seconds
        self.times: deque[float] = deque()
        self.cpu: deque[float] = deque()
        self.rate: deque[float] = deque()
        self.shares: dict[RowKey, deque[tuple[float, float]]] = {}
        self.previous: dict[RowKey, float] = {}
        self.latest: dict[RowKey, float] = {}
        self.window_number = 0

    def record(self, s: Snapshot, now: float | None = None) -> None:
        """A refresh's figures; a snapshot of a window recorded before (a new view of it) adds
        nothing."""
        if s.run.window_number and s.run.window_number == self.window_number:
            return
        self.window_number = s.run.window_number
        now = time.monotonic() if now is None else now
        self.times.append(now)
        self.cpu.append(s.cpu_pct or 0.0)
        self.rate.append(s.rate)
        self.previous, self.latest = self.latest, {row.key: row.own_pct for row in s.rows}
        for key, share in self.latest.items():
            self.shares.setdefault(key, deque()).append((now, share))
        horizon = now - self.seconds
        while self.times and self.times[0] < horizon:
            self.times.popleft()
            self.cpu.popleft()
            self.rate.popleft()
        for key in list(self.shares):
            history = self.shares[key]
            while history and history[0][0] < horizon:
                history.popleft()
            if not history:
                del self.shares[key]

    def move(self, key: RowKey) -> int:
        """+1 if the row's %Own rose since the refresh before, -1 if it fell, 0 if neither (or new)."""
        if key not in self.previous or key not in self.latest:
            return 0
        change = self.latest[key] - self.previous[key]
        return 0 if abs(change) < MOVE_POINTS else (1 if change > 0 else -1)

    def share_line(self, key: RowKey) -> str:
        """A row's %Own over the last minute, 0 where it was not in the table."""
        seen = dict(self.shares.get(key, ()))
        return sparkline(seen.get(t, 0.0) for t in self.times)

    def cpu_line(self) -> str:
        return sparkline(self.cpu, top=100.0)

    def rate_line(self, asked: float) -> str:
        return sparkline(self.rate, top=asked)
