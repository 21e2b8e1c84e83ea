"""--record with the host's table (`pytop --record FILE` without a PID, `--batch --all --record`):
each look at the host written as it is taken, and `pytop FILE` showing the looks again, in the
same table with the time keys, or (--batch) a range of them summed as `pytop --batch --all` over
that time would have printed it. The CPU a recording says a process used over a range is the
kernel's count for it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from textual.widgets import Static

import helpers
import kernel
from pytop.core.model import Heat, PythonProcess
from pytop.record import container
from pytop.record.codec import Damaged
from pytop.record.host_payloads import HostWindow, host_window_payload, learn_texts, read_host_window
from pytop.record.host_recorder import HostRecorder
from pytop.record.host_replay import HostReplay, open_host_recording, recording_kind
from pytop.ui.hosts import HostTable
from pytop.ui.picker import PickerApp

WEB = [PythonProcess(200 + i, "www", "gunicorn: worker [app]", 10.0 * i, "3.12", threads=3, rss=50 << 20, parent=199)
       for i in range(3)]
CRON = PythonProcess(300, "root", "python3 /etc/cron.daily/clean.py", 99.5, "3.11", threads=1, rss=9 << 20,
                     pid_inside=7, problem="another user's", parent=1)
HOT = Heat((("handle", "/srv/app.py", 0.6), ("log", "/srv/log.py", 0.1)), 0.8, 200, 150)


def window(processes: list[PythonProcess], seconds: float = 2.0, heats: dict[int, Heat] | None = None) -> HostWindow:
    return HostWindow(tuple(processes), tuple(sorted((heats or {}).items())), seconds)


# ---- the payload --------------------------------------------------------------------------

@pytest.mark.unit
def test_a_look_reads_back_as_it_was_and_each_text_is_written_once() -> None:
    texts: list[str | None] = []
    first, known = host_window_payload(window([*WEB, CRON], heats={201: HOT}), {})
    second, known_after = host_window_payload(window([*WEB, CRON], 1.5), known)
    for data in (first, second):
        learn_texts(data, texts)
    assert read_host_window(first, texts) == window([*WEB, CRON], heats={201: HOT})
    assert read_host_window(second, texts) == window([*WEB, CRON], 1.5)
    # The second look brings no text: its commands and users are the first's numbers.
    assert known_after == known and len(second) < len(first) - 60, (len(first), len(second))
    assert set(known) >= {"gunicorn: worker [app]", "www", "3.12", "another user's", "handle", "/srv/app.py"}


@pytest.mark.unit
def test_a_text_the_file_does_not_hold_is_damage() -> None:
    data, _ = host_window_payload(window(WEB), {})
    with pytest.raises(Damaged):
        read_host_window(data, [])  # (its texts never learned: the window that brought them was lost)
    forged, _ = host_window_payload(window([PythonProcess(0, "a", "b", 1.0)]), {})
    texts: list[str | None] = []
    learn_texts(forged, texts)
    with pytest.raises(Damaged):
        read_host_window(forged, texts)  # pid 0


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.integers(min_value=0, max_value=200))
@pytest.mark.unit
def test_any_bytes_are_a_look_or_damage(data: bytes, at: int) -> None:
    good, _ = host_window_payload(window([*WEB, CRON], heats={300: HOT}), {})
    for payload in (data, good[:at] + data + good[at + len(data):]):
        texts: list[str | None] = []
        try:
            learn_texts(payload, texts)
            read_host_window(payload, texts)
        except Damaged:
            pass


# ---- the file -----------------------------------------------------------------------------

def recorded(path: Path, looks: list[list[PythonProcess]], heats: dict[int, dict[int, Heat]] | None = None,
             **options: Any) -> HostRecorder:
    """A recording of these looks (heats[n]: what came before look n), closed."""
    recorder = HostRecorder(str(path), 2.0, 0.05, **options)
    for n, processes in enumerate(looks):
        if heats and n in heats:
            recorder.heats_came(heats[n])
        recorder.look(processes, 2.0)
    recorder.close()
    return recorder


@pytest.mark.unit
def test_a_look_without_new_heats_shows_the_last_ones_and_a_range_counts_each_once(tmp_path: Path) -> None:
    path = tmp_path / "host.pytop"
    recorded(path, [WEB, WEB, [*WEB, CRON]], heats={0: {201: HOT}, 2: {201: HOT, 300: Heat((), 0.0, 5, 0)}})
    assert recording_kind(str(path)) == "host"
    replay = HostReplay(open_host_recording(str(path)))
    looks = [replay.look(n) for n in range(len(replay))]
    assert [dict(w.heats).get(201) for w in looks if w] == [HOT, HOT, HOT]  # the second look had none new
    processes, seconds, heats = replay.summed(0, 2)
    by_pid = {p.pid: p for p in processes}
    assert seconds == 6.0 and by_pid[202].cpu_pct == pytest.approx(20.0)
    assert by_pid[300].cpu_pct == pytest.approx(99.5 / 3)
    assert heats[201] == Heat(((("handle", "/srv/app.py", 1.2), ("log", "/srv/log.py", 0.2))), 1.6, 400, 300)
    assert [p.pid for p in processes][:2] == [300, 202]  # busiest first


@pytest.mark.unit
def test_a_cut_or_damaged_recording_reads_what_is_whole(tmp_path: Path) -> None:
    path = tmp_path / "host.pytop"
    recorded(path, [WEB, [*WEB, CRON], WEB, [CRON]])
    frames = container.scan(str(path)).frames
    data = path.read_bytes()
    cut = tmp_path / "cut.pytop"
    cut.write_bytes(data[:frames[-1].offset + 40])  # the last look cut short
    shown = open_host_recording(str(cut))
    assert len(shown.windows) == 3 and shown.lost_bytes == 40 and "could not be read" in (shown.damage_note() or "")
    # A look damaged in its payload: the texts it brought (CRON's) are lost, so the looks that
    # name CRON cannot be read; the others still can.
    damaged = bytearray(data)
    damaged[frames[2].payload_offset + 3] ^= 0xFF
    (tmp_path / "damaged.pytop").write_bytes(bytes(damaged))
    recording = open_host_recording(str(tmp_path / "damaged.pytop"))
    replay = HostReplay(recording)
    readable = [replay.look(n) is not None for n in range(len(replay))]
    assert len(replay) == 3 and readable == [True, True, False] and recording.lost_bytes > 0


def test_a_slow_disk_never_holds_the_looks_and_later_looks_still_read(tmp_path: Path) -> None:
    """The disk stands still while looks keep coming: the oldest waiting give way (counted, and
    said in the next look written), and the looks written after still name their processes (a
    text is numbered only once it is written)."""
    path = tmp_path / "slow.pytop"
    disk = threading.Event()

    class StalledDisk(container.Writer):
        def __init__(self, path: str):
            super().__init__(path)
            self.stalled = threading.Event()

        def write(self, kind: int, payload: bytes, start: float, end: float) -> int:
            if kind != container.KEY:
                self.stalled.set()
                disk.wait(60)
            return super().write(kind, payload, start, end)

    writer = StalledDisk(str(path))
    recorder = HostRecorder(str(path), 2.0, 0.05, queue_looks=2, writer=writer)
    for n in range(8):
        recorder.look([PythonProcess(500 + n, "u", f"python job{n}.py", 1.0)], 2.0)
        assert n or writer.stalled.wait(30)  # the first look taken, the writer's thread stands in its write
    assert recorder.status().windows == 0  # every look handed over while no write could end
    disk.set()
    status = recorder.close()
    assert status.dropped == 5 and status.windows == 3, status
    replay = HostReplay(open_host_recording(str(path)))
    looks = [replay.look(n) for n in range(len(replay))]
    assert [w.processes[0].command for w in looks if w] == ["python job0.py", "python job6.py", "python job7.py"]
    assert [w.dropped for w in looks if w] == [0, 5, 0]


# ---- the command line, on real processes --------------------------------------------------

def frames_in(path: Path) -> int:
    try:
        return sum(f.kind == container.WINDOW for f in container.scan(str(path)).frames)
    except Exception:
        return 0


# Alone: the host sampler follows the 8 busiest Python processes of the host, and beside the
# other tests' busy targets this one was not among them (a clean-clone CI run: its row had the
# kernel's CPU right and no hottest function, as the host table would show a process it does
# not sample).
@pytest.mark.alone
@pytest.mark.process
def test_a_recorded_range_says_the_kernels_cpu(target_interp: dict[str, Any], tmp_path: Path) -> None:
    """`pytop --batch --all --record` while a frozen target runs for a moment only: the range
    of the recording over the whole run says the CPU the kernel counted for it in that moment
    (to its clock ticks), and names the function it spent it in."""
    path = tmp_path / "host.pytop"
    with helpers.running(target_interp, "hot_spinner.py", "render_thumbnails") as t:
        with kernel.frozen(t.pid):
            pytop = subprocess.Popen([*helpers.PYTOP, "--batch", "--all", "--duration", "inf", "--json", "--record",
                                      str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                helpers.wait_until(lambda: frames_in(path) >= 1, timeout=60)
                used = kernel.run_for(t.pid, 6.0).process  # (a look names it busy: it is sampled)
                looks = frames_in(path)
                helpers.wait_until(lambda: frames_in(path) >= looks + 2, timeout=60)  # a look after the stop
                pytop.send_signal(signal.SIGINT)
                out, err = pytop.communicate(timeout=120)
            finally:
                if pytop.poll() is None:
                    pytop.kill()
    assert pytop.returncode == 0 and "recorded" in err, err
    live = {row["pid"]: row for row in json.loads(out)["processes"]}
    shown = helpers.run_pytop("--batch", "--json", str(path))
    assert shown.returncode == 0, shown.stderr
    table = json.loads(shown.stdout)
    row = {r["pid"]: r for r in table["processes"]}[t.pid]
    tick = 1 / os.sysconf("SC_CLK_TCK")
    assert row["cpu_pct"] / 100 * table["duration"] == pytest.approx(used, abs=2 * tick + 0.01), (row, used)
    assert live[t.pid]["cpu_pct"] / 100 * json.loads(out)["duration"] == pytest.approx(used, abs=2 * tick + 0.01)
    hottest = row["hottest"] or []
    assert hottest and hottest[0]["function"] == "render_thumbnails", row


@pytest.mark.process
def test_a_host_recording_prints_as_a_table_only(tmp_path: Path) -> None:
    path = tmp_path / "host.pytop"
    recorded(path, [WEB, [*WEB, CRON]])
    text = helpers.run_pytop("--batch", "--to", "3", str(path))
    collapsed = helpers.run_pytop("--batch", "--format", "collapsed", "--output", str(tmp_path / "x"), str(path))
    dumped = helpers.run_pytop("--dump", "--record", str(tmp_path / "y.pytop"), "1")
    assert text.returncode == 0 and "gunicorn: worker [app]" in text.stdout and "clean.py" in text.stdout, text
    assert collapsed.returncode == 2 and "prints as text or json" in collapsed.stderr, collapsed.stderr
    assert dumped.returncode == 2 and "not with --dump" in dumped.stderr and "Traceback" not in dumped.stderr


# ---- the table ----------------------------------------------------------------------------

@pytest.mark.ui
async def test_the_time_keys_step_through_a_recorded_table(tmp_path: Path) -> None:
    path = tmp_path / "host.pytop"
    recorded(path, [WEB, [*WEB, CRON], [CRON]], heats={1: {300: HOT}})
    replay = HostReplay(open_host_recording(str(path)))
    app = PickerApp(replay=replay)
    seen = []
    async with app.run_test(size=(160, 20)) as pilot:
        for key in ("", "left_square_bracket", "less_than_sign", "right_curly_bracket", "left_square_bracket"):
            if key:
                await pilot.press(key)
            await pilot.pause()
            seen.append((app.at, sorted(app.pids)))
        for typed in ("0s", "1h", "soon"):  # g: the look at a time (the last past the end; not a time: none)
            await pilot.press("g", *typed, "enter")
            await pilot.pause()
            seen.append((app.at, sorted(app.pids)))
        await pilot.press("left_square_bracket", "right_square_bracket")
        app.query_one(HostTable).move_cursor(app.pids.index(300))
        await pilot.press("enter")
        await pilot.pause()
        intro = str(app.query_one("#intro", Static).render())
    assert seen == [(2, [300]), (1, [199, 300]), (0, [199]), (2, [300]), (1, [199, 300]),
                    (0, [199]), (2, [300]), (2, [300])], seen
    # The last look had no heats of its own: the ones written with the look before show.
    assert "300, hottest at this look: handle 75%, log 12%" in intro and "3 of 3" in intro, intro


@pytest.mark.ui
async def test_a_recorded_table_draws_its_time_axis_and_a_click_goes_to_a_look(tmp_path: Path) -> None:
    """Under the intro: each look's Python CPU (its processes' summed), the look shown reversed;
    a click on a bar shows that look."""
    from pytop.ui.axis_line import AxisLine

    path = tmp_path / "host.pytop"
    recorded(path, [WEB, [*WEB, CRON], [CRON]])
    replay = HostReplay(open_host_recording(str(path)))
    app = PickerApp(replay=replay)
    async with app.run_test(size=(100, 20)) as pilot:
        axis = app.query_one(AxisLine)
        for _ in range(200):
            await pilot.pause(0.02)
            if "CPU to" in str(axis.render()):
                break
        drawn = str(axis.render())
        assert replay.timeline_series() == pytest.approx((30.0, 129.5, 99.5))
        assert drawn.startswith("CPU to") and "129.5%" in drawn and axis.axis is not None and axis.axis.cursor == 2
        await pilot.click(AxisLine, offset=(drawn.index(": ") + 2 + 9 + 1, 0))  # the first bar, after the clock
        await pilot.pause()
        assert app.at == 0 and axis.axis.cursor == 0
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert app.at == 1 and axis.axis.cursor == 1
    replay.close()


@pytest.mark.process  # a Python to list
async def test_the_live_table_records_its_looks(tmp_path: Path) -> None:
    path = tmp_path / "host.pytop"
    python = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); "
                               "time.sleep(60)"], stdout=subprocess.PIPE)
    try:
        assert python.stdout is not None and python.stdout.readline()
        recorder = HostRecorder(str(path), 0.2, 0.05)
        app = PickerApp(refresh_seconds=0.2, recorder=recorder)
        async with app.run_test(size=(160, 20)) as pilot:
            for _ in range(600):  # (bounded: a table that never records fails here, it does not hang)
                if recorder.status().windows >= 3:
                    break
                await pilot.pause(0.1)
            assert recorder.status().windows >= 3, recorder.status()
            intro = str(app.query_one("#intro", Static).render())
        recorder.close()
    finally:
        python.kill()
        python.wait()
    assert "recorded" in intro and str(path) in intro, intro
    replay = HostReplay(open_host_recording(str(path)))
    looks = [replay.look(n) for n in range(len(replay))]
    assert len(looks) >= 3 and all(w is not None and python.pid in {p.pid for p in w.processes} for w in looks)
    assert all(w.seconds > 0 for w in looks if w)



@pytest.mark.process  # a Python to list
def test_looks_go_on_while_a_process_view_is_open(tmp_path: Path) -> None:
    """Opened from the recorded table, a process's view leaves the host's recording no gap: the
    looks go on, without stacks, and a replay shows no hottest function there (not the last
    ones sampled before the view opened)."""
    from pytop.hosting import looking_on

    path = tmp_path / "host.pytop"
    python = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE)
    try:
        assert python.stdout is not None and python.stdout.readline()
        recorder = HostRecorder(str(path), 2.0, 0.05)
        recorder.heats_came({python.pid: HOT})
        recorder.look([PythonProcess(python.pid, "root", "python", 1.0)], 2.0)  # as the table's last look
        with looking_on(recorder):
            helpers.wait_until(lambda: recorder.status().windows >= 3, timeout=60)
        recorder.close()
    finally:
        python.kill()
        python.wait()
    replay = HostReplay(open_host_recording(str(path)))
    looks = [replay.look(n) for n in range(len(replay))]
    assert looks[0] is not None and dict(looks[0].heats) == {python.pid: HOT}
    assert len(looks) >= 3 and all(w is not None and python.pid in {p.pid for p in w.processes} and not w.heats
                                   for w in looks[1:]), looks
