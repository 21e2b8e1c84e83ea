"""The sampling schedule's properties on a simulated clock (schedule_check.c): one sample per
slot at most, so the rate never goes above the one asked; slots that pass while the sampler
cannot run are skipped, never made up in a burst; a lowered rate takes effect at the next slot.
Pure logic: no waiting, nothing a busy machine can change."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import helpers


@pytest.mark.process  # the C schedule compiled and run
def test_schedule_properties(tmp_path: Path) -> None:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    native = helpers.ROOT / "native"
    binary = tmp_path / "schedule_check"
    subprocess.run([compiler, "-std=gnu11", "-O1", "-Wall", "-Wextra", "-Werror", "-fsanitize=undefined",
                    "-fno-sanitize-recover=all", f"-I{native}", "-o", str(binary),
                    str(helpers.ROOT / "tests" / "schedule_check.c"), str(native / "schedule.c")], check=True)
    result = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "all properties hold" in result.stdout
