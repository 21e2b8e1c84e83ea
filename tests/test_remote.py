"""What a sample keeps of the memory it reads (remote_check.c): thousands of ranges in one sample,
each found again by a view inside it without another read, with the bytes read; fresh readings
between them forgotten at their end. Pure C, no process; built with AddressSanitizer and
UndefinedBehaviorSanitizer."""

from __future__ import annotations

from pathlib import Path

import pytest

import helpers

SOURCES = ["remote.c", "image.c", "status.c"]


@pytest.mark.process  # the C check compiled and run
def test_kept_ranges_are_found_again(tmp_path: Path) -> None:
    result = helpers.run_c_check(tmp_path, "remote_check.c", SOURCES,
                                 helpers.SANITIZED_CHECK_FLAGS,
                                 env={"ASAN_OPTIONS": "detect_leaks=1"}, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "all properties hold" in result.stdout
