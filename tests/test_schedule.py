"""The sampling schedule's properties on a simulated clock (schedule_check.c): one sample per
slot at most, so the rate never goes above the one asked; slots that pass while the sampler
cannot run are skipped, never made up in a burst; a lowered rate takes effect at the next slot.
Pure logic: no waiting, nothing a busy machine can change."""

from __future__ import annotations

from pathlib import Path

import pytest

import helpers


@pytest.mark.process  # the C schedule compiled and run
def test_schedule_properties(tmp_path: Path) -> None:
    result = helpers.run_c_check(tmp_path, "schedule_check.c", ["schedule.c"],
                                 ["-O1", "-Wall", "-Wextra", "-Werror", "-fsanitize=undefined",
                                  "-fno-sanitize-recover=all"])
    assert result.returncode == 0, result.stderr
    assert "all properties hold" in result.stdout
