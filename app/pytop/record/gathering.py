"""A window's drains as a recording keeps them: the time of drains in a row gathered into the
last of them. Pure.

The sampler drains the engine a few times a window (five at a 1 s refresh, every 0.2-0.4 s);
each drain names again, with its share of the time, the functions, lines and (thread, stack)
pairs the drains before it named. A replay takes a window's drains in one after another and
builds the window's figures only once the last is in, so what matters is the sum: the weights
and function and line rows of drains in a row are summed into the last drain of the row, by
key, in the order each key first came (the order the live figures met them). A run of drains
ends before a drain that retires functions or evicts stacks (their ids may come back for new
ones, and what the drain forgets must be forgotten between the time before it and its own).
Everything else of each drain (its threads, processes, names, stacks, schedule figures) stays
where it was.

On a thread-per-request server this halves a recording and the work of replaying it: a window's
function rows were four times what the window held. The figures a replay shows are the same to
the nanosecond (tests/test_record_replay.py holds every window against the live view's). The
one place the order could show: a table past 20,000 functions folds its least-timed rows when a
drain takes it past the bound, here at the run's end rather than at the drain inside it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from ..core.records import Drain, FunctionFigures, Weight


def gathered(drains: Sequence[Drain]) -> tuple[Drain, ...]:
    out: list[Drain] = []
    run: list[Drain] = []
    for d in drains:
        if run and (d.retired or d.evicted):
            out.extend(_gather(run))
            run = []
        run.append(d)
    out.extend(_gather(run))
    return tuple(out)


def _gather(run: list[Drain]) -> list[Drain]:
    if len(run) < 2:
        return run
    emptied = [replace(d, weights=(), function_rows=(), line_rows=()) for d in run[:-1]]
    last = replace(run[-1], weights=_weights(d.weights for d in run),
                   function_rows=_rows(d.function_rows for d in run), line_rows=_rows(d.line_rows for d in run))
    return [*emptied, last]


def _weights(parts: Iterable[tuple[Weight, ...]]) -> tuple[Weight, ...]:
    sums: dict[tuple[int, int], list[int]] = {}
    for weights in parts:
        for w in weights:
            into = sums.get((w.stack, w.thread))
            if into is None:
                sums[(w.stack, w.thread)] = [w.samples, w.running, w.cpu_ns, w.wall_ns, w.gil_ns]
            else:
                into[0] += w.samples
                into[1] += w.running
                into[2] += w.cpu_ns
                into[3] += w.wall_ns
                into[4] += w.gil_ns
    return tuple(Weight(stack, thread, *figures) for (stack, thread), figures in sums.items())


def _rows(parts: Iterable[tuple[FunctionFigures, ...]]) -> tuple[FunctionFigures, ...]:
    sums: dict[tuple[int, int], list[int]] = {}
    for rows in parts:
        for r in rows:
            into = sums.get((r.function, r.line))
            if into is None:
                sums[(r.function, r.line)] = list(r.figures)
            else:
                for i, v in enumerate(r.figures):
                    into[i] += v
    return tuple(FunctionFigures(function, line, tuple(figures)) for (function, line), figures in sums.items())
