"""Test set-up: which target interpreters exist (provisioned once per run) and how tests get
one. Every test that takes `interp` runs once per interpreter in helpers.EXPECTED; in CI a
missing interpreter fails its tests instead of skipping them."""

from __future__ import annotations

from typing import Any

import pytest

import helpers

_provisioned: tuple[dict[str, dict[str, Any]], str] | None = None


def interpreters() -> tuple[dict[str, dict[str, Any]], str]:
    global _provisioned
    if _provisioned is None:
        _provisioned = helpers.provision()
    return _provisioned


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    found, _ = interpreters()
    for fixture, names in (("interp", helpers.EXPECTED), ("some_interp", helpers.SOME)):
        if fixture in metafunc.fixturenames:
            params = [found.get(name, {"name": name, "missing": True}) for name in names]
            metafunc.parametrize(fixture, params, ids=names)


def _available(value: dict[str, Any]) -> dict[str, Any]:
    if value.get("missing"):
        _, complaints = interpreters()
        message = f"interpreter {value['name']} is not available: {complaints or 'not installed'}"
        if helpers.IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return value


@pytest.fixture
def interp(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Each supported interpreter and launch style in turn."""
    return _available(request.param)


@pytest.fixture
def some_interp(request: pytest.FixtureRequest) -> dict[str, Any]:
    """One interpreter per frame layout, for tests above the unwinder (sampler, UI, CLI)."""
    return _available(request.param)
