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
    if "interp" in metafunc.fixturenames:
        found, _ = interpreters()
        params = [found.get(name, {"name": name, "missing": True}) for name in helpers.EXPECTED]
        metafunc.parametrize("interp", params, ids=helpers.EXPECTED)


@pytest.fixture
def interp(request: pytest.FixtureRequest) -> dict[str, Any]:
    value: dict[str, Any] = request.param
    if value.get("missing"):
        _, complaints = interpreters()
        message = f"interpreter {value['name']} is not available: {complaints or 'not installed'}"
        if helpers.IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return value
