"""A recording shown again in the live view (pytop FILE), driven with the pilot: the time keys
move the window shown and the header says which; R starts the range at the cursor; the keys of
a recording are a recording's only, and those of a running process are not offered for one."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from textual.binding import Binding

from pytop.core.model import RecordStatus
from pytop.core.snapshot import View
from pytop.record.recording import open_recording
from pytop.record.replay import Replay
from pytop.record.source import ReplaySource
from pytop.report import format as fmt
from pytop.ui.app import PytopApp
from pytop.ui.screen import MainScreen
from record_fakes import write_recording
from ui_fakes import FakeSource, shown, snapshot

SIZE = (120, 30)


async def test_the_time_keys_move_through_a_recording(tmp_path: Path) -> None:
    path = tmp_path / "five.pytop"
    write_recording(path, 5)
    source = ReplaySource(Replay(open_recording(str(path))), View())
    app = PytopApp(source, replay=True)
    async with app.run_test(size=SIZE) as pilot:
        await shown(app, pilot, "window 5 of 5")
        await pilot.press("left_square_bracket", "left_square_bracket")
        header = await shown(app, pilot, "window 3 of 5")
        assert "totals from the recording's start" in header
        assert "Samples: 30 in" in header  # windows 1 to 3, ten samples each
        await pilot.press("R")
        header = await shown(app, pilot, "(R: the range starts at the cursor)")
        assert "Samples: 10 in" in header
        await pilot.press("less_than_sign")
        await shown(app, pilot, "window 1 of 5")
        await pilot.press("greater_than_sign")
        header = await shown(app, pilot, "window 5 of 5")
        assert "Samples: 50 in" in header  # the range started before the cursor went back past it
        assert app.main.snapshot is not None and app.main.snapshot.rows[0].function == "Worker.spin"


async def test_a_live_view_offers_no_time_keys_and_a_recording_no_live_ones() -> None:
    source = FakeSource()
    app = PytopApp(source)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("left_square_bracket", "greater_than_sign")
        await pilot.pause()
        assert app.main.check_action("seek", (-1,)) is False
        assert app.main.check_action("stacks_now", ()) is True
    told = dict(MainScreen.key_help(replay=True))
    assert "the totals start at the cursor" in told["R"]
    keys = set(told)
    assert {"[", "]", "{", "}", "<", ">"} <= keys and "d" not in keys and "p" not in keys
    live = {key for key, _ in MainScreen.key_help(replay=False)}
    assert not {"[", "]", "<", ">"} & live and "d" in live
    bound = {b.key_display for b in MainScreen.BINDINGS if isinstance(b, Binding) and b.action.startswith("seek")}
    assert bound == {"[", "]", "{", "}", "<", ">"}


async def test_a_live_view_with_no_window_kept_yet_says_there_is_no_past() -> None:
    """Its memory of the session holds no window before the first refresh: a step back, a jump
    or a click says so instead of doing nothing; once a window is kept, the step goes to the
    source."""
    shot = snapshot()
    empty = replace(shot, run=replace(shot.run, record=RecordStatus("/tmp/pytop-session", 0, 0, private=True)))
    source = FakeSource(empty)
    app = PytopApp(source, replay=None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("left_square_bracket")
        await pilot.pause()
        assert source.seeks == []
        assert any("nothing to go back to yet" in str(n.message) for n in app._notifications)
        kept = replace(shot, run=replace(shot.run, record=RecordStatus("/tmp/pytop-session", 6000, 1, private=True)))
        assert source.publish is not None
        source.publish(kept)
        await pilot.pause()
        await pilot.press("left_square_bracket")
        await pilot.pause()
        assert [s.windows for s in source.seeks] == [-1]


async def test_a_recording_that_loses_windows_says_so_in_a_banner() -> None:
    shot = snapshot()
    failing = RecordStatus("/var/tmp/run.pytop", 5 << 20, 120, waiting=0, dropped=3, failing="No space left on device")
    app = PytopApp(FakeSource(replace(shot, run=replace(shot.run, record=failing))))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        banner = str(app.main.query_one("#record-banner").render())
        assert "3 windows lost" in banner and "No space left on device" in banner and "/var/tmp/run.pytop" in banner
        assert "recorded 5.0 MiB" in str(app.main.query_one("#header").render())


def test_windows_lost_to_a_disk_that_recovered_say_why_they_were_lost() -> None:
    # A later, smaller window fitted where a larger one failed: writing no longer fails, the
    # windows it lost are still said, with the cause.
    recovered = RecordStatus("/var/tmp/run.pytop", 5 << 20, 120, dropped=2, last_failure="File too large")
    said = fmt.record_summary(recovered)
    assert "2 windows lost" in said and "the last failure: File too large" in said and "fails now" not in said
    now = replace(recovered, failing="No space left on device", last_failure="No space left on device")
    assert "writing fails now: No space left on device" in fmt.record_summary(now)
