"""A comparison (core/compare.py) as text, as JSON, or as a differential collapsed file.

Text and JSON give each function's own and total time per second of each span, as a share of
one core (100% = one busy thread, like the table's %Own), and the change; "new" and "gone"
mark functions that ran on one side only.

The differential collapsed file is what flamegraph.pl --negate / difffolded.pl take: one line
per stack, "frames base now", both in microseconds per second of their span, so spans of
different lengths compare. Frames are "function (module)" with no line: the lines of two
checkouts differ, their functions do not."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from .. import errors, files
from ..core.compare import Change, Comparison, ordered
from ..core.model import MODE_HELP, Mode
from ..core.modules import module_relative
from ..core.profile import Profile
from ..core.tally import MODE_INDEX
from ..core.visible import visible, visible_command
from . import export
from . import format as fmt

# --sort with --diff -> the field a comparison sorts by (core.compare.CHANGE_SORTS)
CHANGE_SORT_CHOICES = {"change": "own_change", "totalchange": "total_change", "own": "own", "total": "total",
                       "owntime": "own", "totaltime": "total", "1": "own", "2": "total", "3": "own", "4": "total"}


def signed_percent(value: float) -> str:
    """A change of a share, in points of a core: +12.5%, -3.0%, 0.0%."""
    shown = fmt.percent(abs(value))
    return shown if shown == "0.0%" else ("+" if value > 0 else "-") + shown


def _where(c: Change, full: bool) -> str:
    """" (file)", " (file:line)", or nothing for a pseudo-function (no Python frame, ...)."""
    name = c.filename if full else c.module
    if not name:
        return ""
    return " (" + visible(f"{name}:{c.line}" if c.line is not None else name) + ")"


def as_text(comparison: Comparison, sort: str = "own_change", full_filenames: bool = False,
            limit: int | None = None) -> str:
    base, now = comparison.base, comparison.now
    base_sum, now_sum = comparison.added_up()
    lines = [
        f"pytop: {visible_command(now.label)}",
        f"  against the baseline {visible_command(base.label)}",
        f"Times per second of each span ({MODE_HELP[comparison.mode]}; 100% is one core): the baseline's table adds "
        f"up to {fmt.percent(100 * base_sum)}, the compared span's to {fmt.percent(100 * now_sum)}",
        "",
        f"{'%Own':>7} {'Base':>7} {'Change':>8} {'%Total':>7} {'Base':>7} {'Change':>8}  Function (filename)",
    ]
    for c in ordered(comparison.changes, sort)[:limit]:
        mark = f"  [{c.status}]" if c.status else ""
        lines.append(f"{fmt.percent(100 * c.own):>7} {fmt.percent(100 * c.base_own):>7} "
                     f"{signed_percent(100 * c.own_change):>8} {fmt.percent(100 * c.total):>7} "
                     f"{fmt.percent(100 * c.base_total):>7} {signed_percent(100 * c.total_change):>8}  "
                     f"{visible(c.function)}{_where(c, full_filenames)}{mark}")
    return "\n".join(lines) + "\n"


def _span_record(label: str, seconds: float) -> dict[str, Any]:
    return {"label": label, "seconds": round(seconds, 6)}


def as_json(comparison: Comparison, sort: str = "own_change") -> str:
    functions = []
    for c in ordered(comparison.changes, sort):
        entry: dict[str, Any] = {"function": c.function, "module": c.module, "filename": c.filename}
        if c.line is not None:
            entry["line"] = c.line
        if c.native:
            entry["native"] = True
        entry.update({"own_per_second": round(c.own, 6), "base_own_per_second": round(c.base_own, 6),
                      "own_change": round(c.own_change, 6), "total_per_second": round(c.total, 6),
                      "base_total_per_second": round(c.base_total, 6), "total_change": round(c.total_change, 6),
                      "status": c.status or "both"})
        functions.append(entry)
    document = {"mode": comparison.mode, "baseline": _span_record(comparison.base.label, comparison.base.seconds),
                "compared": _span_record(comparison.now.label, comparison.now.seconds), "functions": functions}
    return json.dumps(document, indent=1) + "\n"


def _micros_per_second(profile: Profile, seconds: float, mode: Mode, cwd: str | None) -> dict[str, float]:
    index = MODE_INDEX[mode]
    found: dict[str, float] = {}
    for (_, stack), tally in profile.counts.stacks.items():
        if not tally[index]:
            continue
        labels = [export.frame_label((function, module_relative(filename, cwd), 0))
                  for function, filename, _ in export.frames_of(profile.book, stack)]
        if not labels:
            continue
        line = ";".join(labels)
        found[line] = found.get(line, 0.0) + tally[index] / 1e3 / seconds
    return found


def diff_collapsed(comparison: Comparison, base: Profile, now: Profile) -> Iterator[str]:
    """Every stack of either side: "frames base now", in microseconds per second of its span."""
    before = _micros_per_second(base, comparison.base.seconds, comparison.mode, comparison.base.cwd)
    after = _micros_per_second(now, comparison.now.seconds, comparison.mode, comparison.now.cwd)
    for line in sorted(before.keys() | after.keys()):
        b, a = round(before.get(line, 0.0)), round(after.get(line, 0.0))
        if b or a:
            yield f"{line} {b} {a}"


def write_comparison(directory: str, comparison: Comparison, base: Profile | None = None,
                     now: Profile | None = None) -> tuple[str, ...]:
    """The comparison's `e` key: its text and JSON reports and (given both sides' stacks) its
    differential collapsed file, new files named by the time in `directory`. The files
    written, and one line that says why if some were not."""
    stem = os.path.join(directory, f"pytop-diff-{export.stamp()}")
    written = []
    reports = [(".txt", as_text(comparison)), (".json", as_json(comparison))]
    if base is not None and now is not None:
        reports.append((".collapsed.txt", "".join(line + "\n" for line in diff_collapsed(comparison, base, now))))
    try:
        for suffix, text in reports:
            files.write_file(stem + suffix, text.encode(), new=True)
            written.append(stem + suffix)
    except (OSError, errors.PytopError) as exc:
        return (*written, f"export failed: {exc}")
    return tuple(written)
