"""Two spans of time compared, function by function: what grew, what shrank, what is new and
what went away. Pure: tested without processes.

Each side is a table of one range (of a recording, or of the live session) and the seconds
that range covers. Figures are compared per second of their own span, never by sample counts:
two runs sampled at different rates, or ranges of different lengths, compare as they ran.
Functions are matched by name and by where their file lives from its installation or project
on (core/modules.py), so two checkouts of the same code, or two virtual environments,
compare; a function whose file moved is matched by the longest run of trailing path parts
its two names share, when only one candidate shares the most. Rows of several processes (-s)
are one function here: the comparison is of the code, not of the pids."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .model import MODE_HELP, FunctionRow, Mode
from .modules import module_relative

CHANGE_SORTS = ("own_change", "total_change", "own", "total", "base_own", "base_total")


class CannotCompare(ValueError):
    """The two spans do not measure the same thing (another mode, rows of another kind)."""


@dataclass(frozen=True)
class Span:
    """One side of a comparison: a range's rows, the wall-clock seconds it covers, and what
    its times measure."""

    rows: tuple[FunctionRow, ...]
    seconds: float
    mode: Mode
    by_line: bool = False
    cwd: str | None = None  # the target's working directory: files below it are matched from there
    label: str = ""  # what the span is, for a report ("base.rec, 14:00:00 to 14:10:00")


Key = tuple[str, str, int]  # function, module-relative file, line (0 when by function)


@dataclass(frozen=True)
class Change:
    """One function (or line) on both sides, in seconds per second of its span (1.0: one core
    busy all the time, in cpu mode). A side that did not run it has 0 there."""

    function: str
    module: str  # its file, from its installation or project on
    line: int | None
    own: float  # the compared span's
    total: float
    base_own: float  # the baseline's
    base_total: float
    filename: str  # the full file name, from the compared span where it ran there
    native: bool = False
    in_base: bool = True
    in_now: bool = True

    @property
    def own_change(self) -> float:
        return self.own - self.base_own

    @property
    def total_change(self) -> float:
        return self.total - self.base_total

    @property
    def status(self) -> str:
        """"new" (not run in the baseline), "gone" (not run since), or ""."""
        return "new" if not self.in_base else "gone" if not self.in_now else ""


@dataclass(frozen=True)
class Comparison:
    base: Span
    now: Span
    changes: tuple[Change, ...]  # in no order: see ordered()

    @property
    def mode(self) -> Mode:
        return self.now.mode

    def added_up(self) -> tuple[float, float]:
        """Each side's own time per second, summed: the baseline's, the compared span's."""
        return (sum(c.base_own for c in self.changes), sum(c.own for c in self.changes))


@dataclass
class _Side:
    function: str
    module: str
    line: int | None
    filename: str
    native: bool
    own: float = 0.0
    total: float = 0.0


def _sides(span: Span) -> dict[Key, _Side]:
    """The span's rows by key, per second of its span, the rows of several processes summed."""
    if span.seconds <= 0:
        raise CannotCompare(f"{span.label or 'a span'} covers no time")
    found: dict[Key, _Side] = {}
    for row in span.rows:
        module = module_relative(row.filename, span.cwd) if not row.native else row.filename.rsplit("/", 1)[-1]
        key = (row.function, module, row.line or 0)
        side = found.get(key)
        if side is None:
            side = found[key] = _Side(row.function, module, row.line, row.filename, row.native)
        side.own += row.own_time / span.seconds
        side.total += row.total_time / span.seconds
    return found


def _parts(module: str) -> list[str]:
    return module.split("/")


def _shared_tail(a: str, b: str) -> int:
    """How many trailing path parts two file names share."""
    pa, pb = _parts(a), _parts(b)
    n = 0
    while n < min(len(pa), len(pb)) and pa[-1 - n] == pb[-1 - n]:
        n += 1
    return n


def _match_moved(base: dict[Key, _Side], now: dict[Key, _Side]) -> dict[Key, Key]:
    """Base keys left unmatched -> the unmatched compared key of the same function and line
    whose file shares the most trailing parts (its name at least) with it, when no other
    shares as many."""
    unmatched_now: dict[tuple[str, int, str], list[Key]] = {}
    for key in now.keys() - base.keys():
        unmatched_now.setdefault((key[0], key[2], key[1].rsplit("/", 1)[-1]), []).append(key)
    pairs: dict[Key, Key] = {}
    taken: set[Key] = set()
    for key in sorted(base.keys() - now.keys()):
        candidates = [k for k in unmatched_now.get((key[0], key[2], key[1].rsplit("/", 1)[-1]), []) if k not in taken]
        if not candidates:
            continue
        scored = sorted(((_shared_tail(key[1], k[1]), k) for k in candidates), reverse=True)
        if len(scored) > 1 and scored[0][0] == scored[1][0]:
            continue  # as alike as another: not told apart
        pairs[key] = scored[0][1]
        taken.add(scored[0][1])
    return pairs


def compare(base: Span, now: Span) -> Comparison:
    """`now` against `base`. Raises CannotCompare for spans that measure different things."""
    if base.mode != now.mode:
        raise CannotCompare(f"cannot compare {MODE_HELP[now.mode]} with {MODE_HELP[base.mode]}: "
                            f"both sides need the same --mode")
    if base.by_line != now.by_line:
        raise CannotCompare("cannot compare a table by line with one by function")
    before, after = _sides(base), _sides(now)
    moved = _match_moved(before, after)
    changes = []
    matched_now = set()
    for key, b in before.items():
        n = after.get(key) or (after.get(moved[key]) if key in moved else None)
        if n is not None:
            matched_now.add(key if key in after else moved[key])
            changes.append(Change(n.function, n.module, n.line, n.own, n.total, b.own, b.total, n.filename, n.native))
        else:
            changes.append(Change(b.function, b.module, b.line, 0.0, 0.0, b.own, b.total, b.filename, b.native,
                                  in_now=False))
    for key, n in after.items():
        if key not in matched_now:
            changes.append(Change(n.function, n.module, n.line, n.own, n.total, 0.0, 0.0, n.filename, n.native,
                                  in_base=False))
    return Comparison(base, now, tuple(changes))


def ordered(changes: Iterable[Change], sort: str = "own_change") -> list[Change]:
    """Biggest first: by growth for a change (what grew most on top, what shrank most at the
    bottom), by the figure itself otherwise; ties by name."""
    if sort not in CHANGE_SORTS:
        raise ValueError(f"cannot sort a comparison by {sort!r}")
    return sorted(changes, key=lambda c: (-getattr(c, sort), -abs(c.total_change), c.function, c.module,
                                          c.line or 0))
