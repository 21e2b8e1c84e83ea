"""Pictures of the screen from a deterministic source, compared with the committed SVGs
(tests/__snapshots__/). After a deliberate change: pytest tests/test_ui_snapshots.py
--snapshot-update, then look at the new pictures before committing them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from pytop.ui.app import PytopApp
from ui_fakes import FakeSource, snapshot

pytestmark = pytest.mark.ui  # the app driven by its pilot, drawn to images

SIZES = [(120, 30), (80, 24)]


@pytest.mark.parametrize("size", SIZES, ids=["120x30", "80x24"])
def test_main_screen(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(PytopApp(FakeSource()), terminal_size=size)


@pytest.mark.parametrize("size", SIZES, ids=["120x30", "80x24"])
def test_help_screen(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(PytopApp(FakeSource()), press=["question_mark"], terminal_size=size)


def test_by_line_sorted_by_total(snap_compare: Any) -> None:
    assert snap_compare(PytopApp(FakeSource()), press=["L", "2"], terminal_size=SIZES[0])


def test_banners(snap_compare: Any) -> None:
    source = FakeSource(snapshot(errors=60, samples=940, last_error="2 thread stacks changed while read",
                                 skipped_share=0.42, exited=True, exit_reason="process 4242 has exited"))
    assert snap_compare(PytopApp(source), terminal_size=SIZES[0])


def test_thread_panel_narrowed(snap_compare: Any) -> None:
    assert snap_compare(PytopApp(FakeSource()), press=["t", "down", "enter"], terminal_size=(120, 40))


def test_callers_panel(snap_compare: Any) -> None:
    assert snap_compare(PytopApp(FakeSource()), press=["1", "down", "enter"], terminal_size=(120, 40))


def test_filter_and_pause(snap_compare: Any) -> None:
    assert snap_compare(PytopApp(FakeSource()), press=["slash", *"web", "enter", "p"], terminal_size=SIZES[1])


@pytest.mark.parametrize("size", SIZES, ids=["120x30", "80x24"])
def test_call_tree(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(PytopApp(FakeSource()), press=["T"], terminal_size=size)


def test_trends(snap_compare: Any) -> None:
    source = FakeSource()

    async def rise(pilot: Any) -> None:
        await pilot.pause()  # the first snapshot is in
        rows = tuple(replace(row, own_pct=row.own_pct + 10 if row.function == "is_prime" else row.own_pct - 3)
                     for row in snapshot().rows)
        source.publish(snapshot(rows=rows, cpu_pct=40.0))  # type: ignore[misc]
        await pilot.pause()

    assert snap_compare(PytopApp(source), run_before=rise, press=["down"], terminal_size=SIZES[0])
