"""The tooling the project holds itself to: ruff, strict mypy on the package, and generated
struct offsets that match the headers they come from."""

from __future__ import annotations

import subprocess
import sys

import pytest

import helpers


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, cwd=helpers.ROOT, timeout=600)


@pytest.mark.process  # ruff over the tree
def test_ruff() -> None:
    result = run(sys.executable, "-m", "ruff", "check", "app", "tests", "tools", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.process  # mypy over the package
def test_mypy_strict() -> None:
    result = run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.target  # the headers of 3.14 and 3.15 come with their provisioned builds
def test_generated_layouts_match_the_headers() -> None:
    result = run(sys.executable, "tools/gen_layouts.py", "--check")
    assert result.returncode == 0, result.stdout + result.stderr
