"""Tests in parallel (pytest-xdist workers), and the tests that need the machine to themselves.

Most tests hold pytop to the kernel's counts and to the target's own clocks, which a busy machine
must not break: they run beside each other. A few claim a machine that nothing else loads (their
ids say `idle-machine`, `idle-...`): they take the run's room alone, waiting until the tests
running beside them end; no test starts beside them meanwhile.

The room is a readers-writer lock over two files (flock): every test passes a turnstile on its
way in, and a test that needs the room alone holds the turnstile while it waits, so tests that
keep arriving cannot keep it out. Without workers (`-n 0`) nothing is locked."""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import helpers

ALONE = "alone"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{ALONE}: needs the machine to itself (idle): no test runs beside it")
    config.addinivalue_line("markers", "load_by_turn: on an idle or a saturated machine by interpreter, "
                                       "as helpers.saturated_by_turn says")


def wants_an_idle_machine(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    if params.get("saturated") is False or params.get("load") is False:
        return True
    interp = params.get("interp")
    return item.get_closest_marker("load_by_turn") is not None and isinstance(interp, str) \
        and not helpers.saturated_by_turn(interp)


@pytest.hookimpl(tryfirst=True)  # before conftest.py's, which puts them last
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if wants_an_idle_machine(item):
            item.add_marker(ALONE)


def _room() -> Path | None:
    """The run's lock files' folder, one per run of the whole suite; None without workers."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run or not os.environ.get("PYTEST_XDIST_WORKER"):
        return None
    folder = Path(tempfile.gettempdir()) / f"pytop-tests-{run}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


@pytest.hookimpl(hookwrapper=True, tryfirst=True)  # outermost: the wait is not the test's own time
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    room = _room()
    if room is None:
        yield
        return
    alone = item.get_closest_marker(ALONE) is not None
    with open(room / "turnstile", "a") as turnstile, open(room / "room", "a") as inside:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(inside, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            if not alone:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(inside, fcntl.LOCK_UN)
            if alone:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
