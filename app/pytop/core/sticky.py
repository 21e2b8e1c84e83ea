"""When a warning shows: a share worth a banner from some size on, kept for a while after the
last window that reached it, so that the banner does not blink on and off. Pure: the caller
gives the clock."""

from __future__ import annotations


def skipped_share(ticks: int, skipped: int, slot_seconds: float, judged_from: float) -> float:
    """The share of a window's samples that a busy machine made the engine skip; 0 until the
    window covers `judged_from` seconds of the schedule, enough to tell."""
    if slot_seconds < judged_from or ticks + skipped == 0:
        return 0.0
    return skipped / (ticks + skipped)


class StickyShare:
    def __init__(self, shown_from: float, hold_seconds: float):
        self.shown_from = shown_from
        self.hold_seconds = hold_seconds
        self.shown = 0.0
        self.until = 0.0

    def update(self, share: float, now: float) -> float:
        """The share to show now, given this window's."""
        if share >= self.shown_from:
            self.shown, self.until = share, now + self.hold_seconds
        elif now >= self.until:
            self.shown = 0.0
        return self.shown
