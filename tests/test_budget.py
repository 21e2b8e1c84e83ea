"""The CPU budget's account on a simulated clock (budget_check.c): kept over a run from its
first tenth of a second whatever a sample costs, a costly first drawing paid back within the
run, a cheap sampler never held, a costly screen leaving sampling a quarter of the budget, a
one-off paid back up to what the account may owe and the rate recovered, the rate between its
floor and the one asked. Pure logic: no
waiting, nothing a busy machine can change."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import helpers


@pytest.mark.process  # the C account compiled and run
def test_budget_properties(tmp_path: Path) -> None:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    native = helpers.ROOT / "native"
    binary = tmp_path / "budget_check"
    subprocess.run([compiler, "-std=gnu11", "-O1", "-Wall", "-Wextra", "-Werror", "-fsanitize=undefined",
                    "-fno-sanitize-recover=all", f"-I{native}", "-o", str(binary),
                    str(helpers.ROOT / "tests" / "budget_check.c"), str(native / "budget.c")], check=True)
    result = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "all properties hold" in result.stdout
