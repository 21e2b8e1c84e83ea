"""Where each version's threads block to take the GIL (layouts.gil_waits): pure, from the
layout tables and made-up statics; test_unwinder_targets.py checks it on live targets."""

from __future__ import annotations

import pytest

from pytop.process import layouts
from pytop.process.layouts.generated import LAYOUTS


@pytest.mark.parametrize("version", [v for v in sorted(LAYOUTS) if v >= (3, 7)])
def test_from_37_the_gils_locks_follow_its_count_of_hand_overs(version: tuple[int, int]) -> None:
    table = LAYOUTS[version]
    waits = layouts.gil_waits(version, table, machine="x86_64")
    prefix = "rt" if table["rt_gil_switches"] >= 0 else "is"
    assert waits[f"{prefix}_gil_waits"] == table[f"{prefix}_gil_switches"] + 8
    assert waits["gil_waits_size"] == 2 * (48 + 40)  # two condition variables, two mutexes
    assert waits["rt_gil_lock"] == -1


def test_36_spans_its_four_statics_and_27_points_at_its_lock() -> None:
    statics = {"switch_mutex": 1000, "switch_cond": 1064, "gil_mutex": 1128, "gil_cond": 1192}
    waits = layouts.gil_waits((3, 6), LAYOUTS[(3, 6)], statics, machine="x86_64")
    assert (waits["rt_gil_waits"], waits["gil_waits_size"]) == (1000, 1192 + 48 - 1000)
    waits = layouts.gil_waits((2, 7), LAYOUTS[(2, 7)], {"interpreter_lock": 24}, machine="aarch64")
    assert (waits["rt_gil_lock"], waits["gil_waits_size"], waits["rt_gil_waits"]) == (24, 32, -1)


def test_unknown_where_the_builds_names_or_the_machines_sizes_are_missing() -> None:
    assert layouts.gil_waits((3, 6), LAYOUTS[(3, 6)], {"gil_cond": 8}, machine="x86_64")["gil_waits_size"] == 0
    assert layouts.gil_waits((2, 7), LAYOUTS[(2, 7)], {}, machine="x86_64")["gil_waits_size"] == 0
    assert layouts.gil_waits((3, 12), LAYOUTS[(3, 12)], machine="riscv64")["gil_waits_size"] == 0
