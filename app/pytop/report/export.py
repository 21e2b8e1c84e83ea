"""Writing what was sampled since the last reset: collapsed stacks and speedscope JSON. Pure.

Collapsed stacks (flamegraph.pl, speedscope, inferno): one line per distinct stack, frames from
the outermost to the innermost separated by ';', then the stack's time in the chosen mode, in
microseconds, so a flame graph's widths are the table's times. Frames read
"function (file:line)", or "function (library)" for a native one (--native).

Speedscope: a "sampled" profile per thread, stacks as indices into shared frames, each weighted
by the seconds it stood for (https://www.speedscope.app/file-format-schema.json).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from .. import __version__, errors, files
from ..core.counts import Counts
from ..core.model import Mode
from ..core.profile import Profile
from ..core.stack_book import StackBook
from ..core.tally import MODE_INDEX
from ..core.visible import visible

Frame = tuple[str, str, int]  # function, filename, line


def frames_of(book: StackBook, stack: int) -> list[Frame]:
    """Outermost first."""
    info = book.info(stack)
    return list(reversed(info.frames)) if info else []


def frame_label(frame: Frame) -> str:
    """A frame of collapsed stacks. ';' separates frames, a line ends a stack and its last ' '
    starts the count: names hold no newline (core/visible.py made them visible as they came
    in), and a ';' is written as the escape visible() uses, \x3b. (A native function's "file"
    is its library, and it has no line: "deflate (libz.so.1)".)"""
    function, filename, line = frame
    label = (f"{function} ({filename}:{line})" if line else f"{function} ({filename})") if filename else function
    return visible(label).replace(";", "\\x3b")


def collapsed(counts: Counts, book: StackBook, mode: Mode, processes: bool = False) -> Iterator[str]:
    """With several processes, or `processes` (a run that followed children: -s), each stack
    starts with a "process PID" frame, as py-spy's do."""
    index = MODE_INDEX[mode]
    merged: dict[str, int] = {}
    pids = {info.pid for (_, stack) in counts.stacks if (info := book.info(stack))}
    for (_, stack), tally in counts.stacks.items():
        micros = tally[index] // 1000
        info = book.info(stack)
        if not micros or info is None:
            continue
        line = ";".join(frame_label(f) for f in frames_of(book, stack))
        if processes or len(pids) > 1:
            line = f"process {info.pid};{line}"
        merged[line] = merged.get(line, 0) + micros
    for line in sorted(merged):
        yield f"{line} {merged[line]}"


def speedscope(counts: Counts, book: StackBook, mode: Mode, thread_label: Callable[[int], str],
               title: str) -> dict[str, Any]:
    index = MODE_INDEX[mode]
    frame_index: dict[Frame, int] = {}
    frames: list[dict[str, Any]] = []
    per_thread: dict[int, tuple[list[list[int]], list[float]]] = {}
    for (thread, stack), tally in counts.stacks.items():
        seconds = tally[index] / 1e9
        if not seconds:
            continue
        indices = []
        for frame in frames_of(book, stack):
            at = frame_index.get(frame)
            if at is None:
                at = frame_index[frame] = len(frames)
                frames.append({"name": frame[0], "file": frame[1], "line": frame[2]})
            indices.append(at)
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
        "name": f"{title} ({mode} time)",
        "activeProfileIndex": 0,
        "exporter": f"pytop {__version__}",
    }


def write_files(stem: str, profile: Profile, mode: Mode) -> tuple[str, str]:
    """`stem`.collapsed.txt and `stem`.speedscope.json, new files (names pytop chose: created
    where nothing is, never through a link planted in their place); raises errors.UsageError."""
    collapsed_path, speedscope_path = f"{stem}.collapsed.txt", f"{stem}.speedscope.json"
    lines = "".join(line + "\n" for line in collapsed(profile.counts, profile.book, mode, profile.subprocesses))
    files.write_file(collapsed_path, lines.encode(), new=True)
    labels = profile.thread_labels()
    document = speedscope(profile.counts, profile.book, mode, lambda thread: labels.get(thread, f"thread {thread}"),
                          profile.title)
    files.write_file(speedscope_path, json.dumps(document).encode(), new=True)
    return collapsed_path, speedscope_path


def stamp() -> str:
    """The time to the millisecond, for the names of files the `e` key writes."""
    now = time.time()
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(now)) + f"-{int(now * 1000) % 1000:03d}"


def write_stamped(directory: str, profile: Profile, mode: Mode) -> tuple[str, ...]:
    """The live view's export (the `e` key): write_files under a name of the target's pid and
    the time to the millisecond, in `directory`. Returns the files written, or one line that
    says why none was."""
    stem = os.path.join(directory, f"pytop-{profile.pid}-{stamp()}")
    try:
        return write_files(stem, profile, mode)
    except errors.PytopError as exc:
        return (f"export failed: {exc}",)
