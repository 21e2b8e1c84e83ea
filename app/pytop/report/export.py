"""Writing what was sampled since the last reset: collapsed stacks and speedscope JSON. Pure.

Collapsed stacks (flamegraph.pl, speedscope, inferno): one line per distinct stack, frames from
the outermost to the innermost separated by ';', then the number of samples. Frames read
"function (file:line)". The counts add up to the thread samples the table counted.

Speedscope: a "sampled" profile per thread, stacks as indices into shared frames, each weighted
by the seconds it stood for (https://www.speedscope.app/file-format-schema.json).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from .. import __version__
from ..core.aggregate import StackCounts
from ..core.records import FRAME

Frame = tuple[str, str, int]  # function, filename, line
NameOf = Callable[[int, int], tuple[str, str]]  # (pid, code id) -> (function, filename)


def frames_of(pid: int, stack: bytes, name_of: NameOf) -> list[Frame]:
    """Outermost first."""
    return [(*name_of(pid, code_id), line) for code_id, line in reversed(list(FRAME.iter_unpack(stack)))]


def frame_label(frame: Frame) -> str:
    function, filename, line = frame
    # ';' separates frames and the last ' ' the count: keep them out of names.
    return f"{function} ({filename}:{line})".replace(";", ":")


def collapsed(counts: StackCounts, name_of: NameOf) -> Iterator[str]:
    """With several processes, each stack starts with a "process PID" frame."""
    merged: dict[str, int] = {}
    several = len({thread[0] for thread, _ in counts.counts}) > 1
    for (thread, stack), (count, _) in counts.counts.items():
        if stack:
            line = ";".join(frame_label(f) for f in frames_of(thread[0], stack, name_of))
            if several:
                line = f"process {thread[0]};{line}"
            merged[line] = merged.get(line, 0) + count
    for line in sorted(merged):
        yield f"{line} {merged[line]}"


def speedscope(counts: StackCounts, name_of: NameOf, thread_label: Callable[[tuple[int, ...]], str],
               title: str) -> dict[str, Any]:
    frame_index: dict[Frame, int] = {}
    frames: list[dict[str, Any]] = []
    per_thread: dict[tuple[int, ...], tuple[list[list[int]], list[float]]] = {}
    for (thread, stack), (_, seconds) in counts.counts.items():
        if not stack:
            continue
        indices = []
        for frame in frames_of(thread[0], stack, name_of):
            index = frame_index.get(frame)
            if index is None:
                index = frame_index[frame] = len(frames)
                frames.append({"name": frame[0], "file": frame[1], "line": frame[2]})
            indices.append(index)
        samples, weights = per_thread.setdefault(thread, ([], []))
        samples.append(indices)
        weights.append(seconds)
    profiles = [
        {"type": "sampled", "name": thread_label(thread), "unit": "seconds", "startValue": 0,
         "endValue": sum(weights), "samples": samples, "weights": weights}
        for thread, (samples, weights) in sorted(per_thread.items(), key=lambda item: thread_label(item[0]))
    ]
    return {
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": {"frames": frames},
        "profiles": profiles,
        "name": title,
        "activeProfileIndex": 0,
        "exporter": f"pytop {__version__}",
    }


def write_files(stem: str, counts: StackCounts, name_of: NameOf, labels: dict[tuple[int, ...], str],
                title: str) -> tuple[str, str]:
    """`stem`.collapsed.txt and `stem`.speedscope.json; raises OSError."""
    collapsed_path, speedscope_path = f"{stem}.collapsed.txt", f"{stem}.speedscope.json"
    with open(collapsed_path, "w") as f:
        f.writelines(line + "\n" for line in collapsed(counts, name_of))
    document = speedscope(counts, name_of, lambda thread: labels.get(thread, str(thread)), title)
    with open(speedscope_path, "w") as f:
        json.dump(document, f)
    return collapsed_path, speedscope_path
