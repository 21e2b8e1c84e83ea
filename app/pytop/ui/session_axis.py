"""The live view's session so far as a time axis (the header's, as a recording's): the target's
CPU in each window as the view showed it, the range since the last reset marked and the present
at the cursor. A click on it goes into the session's past at that moment. Kept by the screen
from the snapshots it receives; past MAX_POINTS windows, neighbours are merged (a day at 1 s
refreshes stays a few thousand numbers)."""

from __future__ import annotations

from ..core.model import Snapshot
from .timeline import Axis

MAX_POINTS = 1024


class SessionAxis:
    def __init__(self) -> None:
        self.cpu: list[float] = []  # a point's mean CPU over its windows
        self.ends: list[float] = []  # wall-clock seconds at a point's last window's end
        self.weights: list[int] = []  # windows a point stands for
        self.start = 0.0
        self.window_number = 0

    def record(self, s: Snapshot, now: float) -> None:
        """A live snapshot's window (one shown again, as a view changed, adds nothing), at the
        wall-clock moment it closed (`now`, when it came, if it does not say: snapshots that
        waited for a busy screen came together, and stood for one moment)."""
        now = s.run.window_end or now
        if s.run.window_number and s.run.window_number == self.window_number:
            return
        self.window_number = s.run.window_number
        if s.cpu_pct is None:  # (a window too short to say: not an idle target)
            return
        if not self.ends:
            self.start = now - s.run.window_seconds
        self.cpu.append(s.cpu_pct or 0.0)
        self.ends.append(now)
        self.weights.append(1)
        if len(self.cpu) > MAX_POINTS:
            self._halve()

    def _halve(self) -> None:
        """Pairs merged (the newest alone if the count is odd): the axis stays as wide."""
        cpu, ends, weights = [], [], []
        for at in range(0, len(self.cpu), 2):
            pair = slice(at, at + 2)
            weight = sum(self.weights[pair])
            cpu.append(sum(c * w for c, w in zip(self.cpu[pair], self.weights[pair])) / weight)
            ends.append(self.ends[pair][-1])
            weights.append(weight)
        self.cpu, self.ends, self.weights = cpu, ends, weights

    def axis(self, since_reset: float) -> Axis | None:
        """The session with the present at the cursor and the range from the last reset
        (`since_reset` seconds before the present)."""
        if len(self.cpu) < 2:
            return None
        reset_at = self.ends[-1] - since_reset
        first = next((i for i, end in enumerate(self.ends) if end > reset_at + 1e-3), len(self.ends) - 1)
        return Axis(tuple(self.cpu), len(self.cpu), len(self.cpu) - 1, first, self.start, self.ends[-1],
                    ends=tuple(self.ends))
