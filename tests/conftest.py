"""Test set-up: which target interpreters exist (provisioned once per run, when a test first
needs one) and how tests get one. Every test that takes `interp` runs once per interpreter in
helpers.EXPECTED; in CI a missing interpreter fails its tests instead of skipping them.

Lanes, by marker:
- `target`: reads a real target process (any test taking `interp` or `some_interp` is marked so
  here; a module whose tests call available() marks itself). `pytest -m "not target"` runs the
  tests of pytop alone and provisions nothing: a test of that lane that asks for an
  interpreter fails, saying it lacks the marker.
- `process` (starts a program: pytop's command line, a compiler, ruff) and `ui` (drives the app
  with its pilot) are the rest of that lane.
- `unit`: everything else, marked here: pure logic, no process (`pytest -m unit`, seconds). A
  unit test that starts a process fails, saying it lacks the marker.
A whole run takes the lane without targets first, and a failure there ends the run before the
target lane (minutes) starts. It runs in workers beside each other; the tests that need the
machine alone wait for it (machine_share.py)."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

import helpers

pytest_plugins = ["machine_share"]  # workers beside each other, and the tests that need the machine alone
_provisioned: tuple[dict[str, dict[str, Any]], str] | None = None
TARGET_FIXTURES = {"interp", "some_interp", "target_interp"}


def interpreters() -> tuple[dict[str, dict[str, Any]], str]:
    global _provisioned
    if _provisioning_refused:
        raise RuntimeError("a test without the `target` marker asked for an interpreter: mark it `target` "
                           "(the lane without target processes provisions nothing)")
    if _provisioned is None:
        _provisioned = helpers.provision()
    return _provisioned


_provisioning_refused = False  # while a test without the `target` marker runs


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "target: reads a real target process (needs the provisioned interpreters)")
    config.addinivalue_line("markers", "process: starts a program (pytop's command line, a compiler, a linter)")
    config.addinivalue_line("markers", "ui: drives pytop's app with Textual's pilot")
    config.addinivalue_line("markers", "unit: pure logic, no process (given to every test without the others)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # By name only: provisioning waits until a test that runs needs an interpreter.
    expected = helpers.EXPECTED
    if metafunc.module.__name__ in helpers.MODULES_OF_FIGURES:
        expected = [name for name in expected if name not in helpers.READING_ONLY | helpers.LAUNCH_TWINS]
    for fixture, names in (("interp", expected), ("some_interp", helpers.SOME)):
        if fixture not in metafunc.fixturenames:
            continue
        if "saturated" in metafunc.fixturenames:
            # On an idle machine and on a saturated one: the setups of one frame model each (SOME)
            # in both, every other in one of them in turn (what differs between versions is how
            # they are read, which both exercise alike).
            pairs = [(name, load) for name in names
                     for load in ((False, True) if name in helpers.SOME else (helpers.saturated_by_turn(name),))]
            metafunc.parametrize((fixture, "saturated"), pairs, indirect=[fixture],
                                 ids=[f"{'saturated' if load else 'idle-machine'}-{name}" for name, load in pairs])
        else:
            metafunc.parametrize(fixture, names, ids=names, indirect=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if TARGET_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.target)
        if not any(item.get_closest_marker(name) for name in ("target", "process", "ui")):
            item.add_marker(pytest.mark.unit)
    # The lane without targets first, in its modules' order: a failure there ends the run early.
    # The tests that need the machine alone last: together they keep the other workers waiting
    # once, instead of at each of them. (The modules that build pytop's native code again keep
    # one worker each, from the start: their tests share the build, xdist_group.)
    items.sort(key=lambda item: (item.get_closest_marker("target") is not None,
                                 item.get_closest_marker("alone") is not None))


class _NoProcessInAUnitTest(subprocess.Popen):  # type: ignore[type-arg]
    def __init__(self, args: Any, *rest: Any, **options: Any) -> None:
        raise RuntimeError(f"a `unit` test started {args!r}: mark it `process` (the unit lane starts no program)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    global _provisioning_refused
    _provisioning_refused = item.get_closest_marker("target") is None
    unit = item.get_closest_marker("unit") is not None
    popen = subprocess.Popen
    if unit:
        subprocess.Popen = _NoProcessInAUnitTest  # type: ignore[misc]
    try:
        yield
    finally:
        _provisioning_refused = False
        subprocess.Popen = popen  # type: ignore[misc]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A failure in the lane without targets stops the run before the target lane."""
    if report.failed and "target" not in report.keywords and _session is not None:
        _session.shouldstop = "a test of the lane without target processes failed: the target lane is not run"


_session: pytest.Session | None = None


def pytest_sessionstart(session: pytest.Session) -> None:
    global _session
    _session = session


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


@pytest.fixture(scope="module")
def target_interp() -> dict[str, Any]:
    """One interpreter, for what does not depend on the target's version."""
    return available("pyenv-3.12")
