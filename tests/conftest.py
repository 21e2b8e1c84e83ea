"""Test set-up: which target interpreters exist (provisioned once per run, when a test first
needs one) and how tests get one. Every test that takes `interp` runs once per interpreter in
helpers.EXPECTED; in CI a missing interpreter fails its tests instead of skipping them.

Lanes: a test that reads a real target process is marked `target` (any test taking `interp` or
`some_interp` is marked so here), so that `pytest -m "not target"` runs the pure tests alone, in
seconds, without provisioning anything."""

from __future__ import annotations

from typing import Any

import pytest

import helpers

_provisioned: tuple[dict[str, dict[str, Any]], str] | None = None
TARGET_FIXTURES = {"interp", "some_interp", "target_interp"}


def interpreters() -> tuple[dict[str, dict[str, Any]], str]:
    global _provisioned
    if _provisioned is None:
        _provisioned = helpers.provision()
    return _provisioned


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "target: reads a real target process (needs the provisioned interpreters)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # By name only: provisioning waits until a test that runs needs an interpreter.
    expected = helpers.EXPECTED
    if metafunc.module.__name__ in helpers.MODULES_OF_FIGURES:
        expected = [name for name in expected if name not in helpers.READING_ONLY]
    for fixture, names in (("interp", expected), ("some_interp", helpers.SOME)):
        if fixture in metafunc.fixturenames:
            metafunc.parametrize(fixture, names, ids=names, indirect=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if TARGET_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.target)


def available(name: str) -> dict[str, Any]:
    found, complaints = interpreters()
    if name not in found:
        message = f"interpreter {name} is not available: {complaints or 'not installed'}"
        if helpers.IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return found[name]


@pytest.fixture
def interp(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Each supported interpreter and launch style in turn."""
    return available(request.param)


@pytest.fixture
def some_interp(request: pytest.FixtureRequest) -> dict[str, Any]:
    """One interpreter per frame layout, for tests above the unwinder (sampler, UI, CLI)."""
    return available(request.param)
