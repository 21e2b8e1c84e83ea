"""The CPU budget's account on a simulated clock (budget_check.c): kept over a run from its
first tenth of a second whatever a sample costs, a costly first drawing paid back within the
run, a cheap sampler never held, a costly screen leaving sampling a quarter of the budget, a
one-off paid back up to what the account may owe and the rate recovered, the rate between its
floor and the one asked. Pure logic: no
waiting, nothing a busy machine can change."""

from __future__ import annotations

from pathlib import Path

import pytest

import helpers


@pytest.mark.process  # the C account compiled and run
def test_budget_properties(tmp_path: Path) -> None:
    result = helpers.run_c_check(tmp_path, "budget_check.c", ["budget.c"],
                                 ["-O1", "-Wall", "-Wextra", "-Werror", "-fsanitize=undefined",
                                  "-fno-sanitize-recover=all"])
    assert result.returncode == 0, result.stderr
    assert "all properties hold" in result.stdout
