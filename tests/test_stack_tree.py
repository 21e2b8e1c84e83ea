"""The engine's stack tree, functions and sums on stacks made by hand (stacks_check.c): shared
outer frames, recursion counted once, lines, asyncio task frames hidden, eviction of old stacks
and reuse of their ids, a thread's path cache, a 50,000-frame stack. Pure C, no process; built
with AddressSanitizer and UndefinedBehaviorSanitizer."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import helpers

SOURCES = ["functions.c", "stacks.c", "aggregate.c"]


@pytest.mark.process  # the C tree compiled and run
def test_stack_tree_properties(tmp_path: Path) -> None:
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler")
    native = helpers.ROOT / "native"
    binary = tmp_path / "stacks_check"
    subprocess.run([compiler, "-std=gnu11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter",
                    "-Wno-unused-function", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                    f"-I{native}", "-o", str(binary), str(helpers.ROOT / "tests" / "stacks_check.c"),
                    *(str(native / name) for name in SOURCES)], check=True)
    result = subprocess.run([str(binary)], capture_output=True, text=True, timeout=120,
                            env={"ASAN_OPTIONS": "detect_leaks=1"})
    assert result.returncode == 0, result.stderr
    assert "all properties hold" in result.stdout
