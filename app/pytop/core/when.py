"""A time in a recording, as a person gives one: relative to its start ("90", "90s", "1m30s",
"2m", "1h") or on the wall clock ("14:05", "14:05:30", local time). Read by --from and --to
(record/ranges.py) and by the view's go-to prompt (the g key). Pure: tested without files."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

_RELATIVE = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?$")
_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}(?:\.\d+)?))?$")


@dataclass(frozen=True)
class When:
    seconds: float  # after the recording's start, or of the day (local time) with `clock`
    clock: bool = False
    text: str = ""

    def at(self, start: float) -> float:
        """Wall-clock seconds, for a recording that started at `start`: a time of day is the
        first such moment from the day the recording started on (its next day if earlier)."""
        if not self.clock:
            return start + self.seconds
        day = time.localtime(start)
        midnight = time.mktime((day.tm_year, day.tm_mon, day.tm_mday, 0, 0, 0, 0, 0, -1))
        moment = midnight + self.seconds
        return moment if moment >= start - 1 else moment + 86400


def parse_when(text: str) -> When:
    """Raises ValueError saying what is expected."""
    spoken = text.strip()
    clock = _CLOCK.match(spoken)
    if clock:
        hours, minutes, secs = int(clock[1]), int(clock[2]), float(clock[3] or 0)
        if hours > 23 or minutes > 59 or secs >= 60:
            raise ValueError(f"not a time of day: {text!r}")
        return When(hours * 3600 + minutes * 60 + secs, True, spoken)
    relative = _RELATIVE.match(spoken)
    if spoken and relative and any(relative.groups()):
        h, m, sec = (float(g) if g else 0.0 for g in relative.groups())
        return When(h * 3600 + m * 60 + sec, False, spoken)
    raise ValueError(f"not a time: {text!r} (seconds from the start, as 90, 1m30s or 1h; or a time of day, "
                     "as 14:05 or 14:05:30)")
