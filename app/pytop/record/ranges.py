"""--from and --to (and --diff's FILE:FROM-TO): the windows a range of times in a recording
covers (core/when.py reads a time as a person gives one). Pure: tested without files."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..core.when import When, parse_when


def window_range(spans: Sequence[tuple[float, float]], start: float, begin: When | None,
                 end: When | None) -> tuple[int, int]:
    """The first and last of the windows (their wall-clock spans, in order) whose middle lies in
    the range (one that ends a moment after the range starts is not in it), or the one window a
    short range lies within; raises ValueError when none is."""
    if not spans:
        raise ValueError("the recording holds no window")
    low = begin.at(start) if begin is not None else -float("inf")
    high = end.at(start) if end is not None else float("inf")
    if high < low:
        raise ValueError("--to comes before --from")
    if high == low:
        raise ValueError("the range --from to --to is empty (they are the same time)")
    chosen = [i for i, (a, b) in enumerate(spans) if low <= (a + b) / 2 <= high]
    chosen = chosen or [i for i, (a, b) in enumerate(spans) if a <= low < b or a < high <= b][:1]
    if not chosen:
        shown = time.strftime("%H:%M:%S", time.localtime(spans[0][0]))
        last = time.strftime("%H:%M:%S", time.localtime(spans[-1][1]))
        raise ValueError(f"the recording covers {shown} to {last}: nothing of it is in that range")
    return chosen[0], chosen[-1]


@dataclass(frozen=True)
class RecordedSpan:
    """A recording, or a range of one: `FILE`, or `FILE:FROM-TO` (either end may be left out)."""

    path: str
    begin: When | None = None
    end: When | None = None


def parse_span(text: str, exists: Callable[[str], bool]) -> RecordedSpan:
    """`FILE` when that file exists; else the first `FILE:` that exists, and the range after it
    ("1m-2m", "14:05-14:10", "90-", "-5m"). Raises ValueError saying what is expected."""
    if exists(text):
        return RecordedSpan(text)
    for at in (i for i, c in enumerate(text) if c == ":"):
        path, spoken = text[:at], text[at + 1:]
        if not path or not exists(path):
            continue
        if spoken.count("-") != 1:
            raise ValueError(f"{text!r}: a range is FROM-TO, as {path}:1m-2m or {path}:14:05-14:10")
        low, high = (part.strip() for part in spoken.split("-"))
        if not low and not high:
            return RecordedSpan(path)
        return RecordedSpan(path, parse_when(low) if low else None, parse_when(high) if high else None)
    raise ValueError(f"{text!r}: no such recording")
