"""The layouts of the figures the tables keep: a tally of time per (thread, stack), and a
function's row. The engine hands over time in three kinds at once: `cpu` (the kernel's count of
the thread's CPU time), `wall` (time between samples), `gil` (wall time while holding the GIL).
Keeping all three lets the view switch mode without losing history."""

from __future__ import annotations

from array import array
from collections.abc import Iterable

from .model import Mode

# A tally: [samples, running samples, cpu ns, wall ns, gil ns]
SAMPLES, RUNNING, CPU, WALL, GIL = range(5)
MODE_INDEX: dict[Mode, int] = {"cpu": CPU, "wall": WALL, "gil": GIL}


def new_tally() -> list[int]:
    return [0, 0, 0, 0, 0]


def add_into(into: list[int], more: Iterable[int]) -> None:
    for i, value in enumerate(more):
        into[i] += value


# A function's figures: [own samples, own cpu, own wall, own gil, total samples, total cpu,
# total wall, total gil, own samples / cpu / wall / gil when tasks are hidden]
OWN, TOTAL, HIDDEN = 0, 4, 8


def new_row(figures: Iterable[int] = (0,) * 12) -> array[int]:
    """A row's 12 figures as machine integers: ~160 bytes, where a list of Python ints took ~450
    (a program that keeps making functions of new names grew a session's tables by that much
    per name, for an hour)."""
    return array("q", figures)


def mode_column(mode: Mode) -> int:
    """Which of a function's time figures a mode shows (offset from OWN, TOTAL or HIDDEN): a
    row's figures are a tally's without its running samples."""
    return MODE_INDEX[mode] - RUNNING
