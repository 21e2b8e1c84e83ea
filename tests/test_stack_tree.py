"""The engine's stack tree, functions and sums on stacks made by hand (stacks_check.c): shared
outer frames, recursion counted once, lines, asyncio task frames hidden, eviction of old stacks
and reuse of their ids, a thread's path cache, a 50,000-frame stack. Pure C, no process; built
with AddressSanitizer and UndefinedBehaviorSanitizer."""

from __future__ import annotations

from pathlib import Path

import pytest

import helpers

SOURCES = ["functions.c", "stacks.c", "aggregate.c"]


@pytest.mark.process  # the C tree compiled and run
def test_stack_tree_properties(tmp_path: Path) -> None:
    result = helpers.run_c_check(tmp_path, "stacks_check.c", SOURCES,
                                 helpers.SANITIZED_CHECK_FLAGS,
                                 env={"ASAN_OPTIONS": "detect_leaks=1"}, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "all properties hold" in result.stdout
