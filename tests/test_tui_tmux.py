"""The real pytop in a real terminal (tmux) on a real target: keys change what is on screen,
and every way out (q, Ctrl-C, SIGTERM) leaves the terminal as it was (echo, canonical mode,
the main screen back)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

import helpers
from conftest import available
from pytop.record.recording import open_recording

pytestmark = [pytest.mark.skipif(shutil.which("tmux") is None and not helpers.IN_CI, reason="tmux not installed"),
              pytest.mark.target]  # real targets in a real terminal


class Terminal:
    """One tmux server per terminal (its own socket): when a shared server loses its last
    session it exits, and a test starting at that moment gets "server exited unexpectedly"."""

    def __init__(self, width: int = 120, height: int = 32):
        self.name = f"pytop-test-{uuid.uuid4().hex[:8]}"
        self.tmux("new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height),
                  "env PS1='$ ' TERM=xterm-256color bash --norc --noprofile")

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.name, *args], capture_output=True, text=True,
                              check=True).stdout

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys)

    def type(self, line: str) -> None:
        self.tmux("send-keys", "-t", self.name, "-l", line)
        self.keys("Enter")

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def wait_for(self, test: Callable[[str], bool], what: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.screen()
            if test(text):
                return text
            time.sleep(0.05)
        raise AssertionError(f"never saw {what}; the screen was:\n{self.screen()}")

    def wait_text(self, text: str, timeout: float = 30) -> str:
        return self.wait_for(lambda screen: text in screen, repr(text), timeout)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.name, "kill-server"], capture_output=True)

    def still_running(self) -> str:
        """The programs the terminal's shell still runs, each with its threads' stacks (by pystack)."""
        shell = psutil.Process(int(self.tmux("display-message", "-p", "-t", self.name, "#{pane_pid}")))
        said = []
        for child in shell.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                said.append(f"still running: {child.pid} {' '.join(child.cmdline())}")
                dump = subprocess.run([str(Path(sys.executable).with_name("pystack")), "remote", str(child.pid)],
                                      capture_output=True, text=True, timeout=30)
                said.append(dump.stdout or dump.stderr)
        return "\n".join(said) or "the shell runs nothing"


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    term = Terminal()
    try:
        yield term
    finally:
        term.close()


def samples_shown(screen: str) -> int:
    line = next(line for line in screen.splitlines() if "Samples: " in line)
    return int(line.split("Samples: ")[1].split()[0].replace(",", ""))


def wait_for_the_prompt(term: Terminal) -> None:
    """The shell's prompt again: the program before has ended (keys typed earlier would go to it,
    or be echoed before the shell reads them). If it never comes, what still runs in the
    terminal, and where (pystack's view of a pytop that does not end)."""
    try:
        term.wait_for(lambda s: s.rstrip().endswith("$"), "the shell prompt")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{term.still_running()}") from None


def assert_terminal_restored(term: Terminal, marker: str) -> None:
    """Back at the shell prompt, on the main screen, with echo and line editing on."""
    wait_for_the_prompt(term)
    # The output line reads "icanon echo RESULT <marker>"; the typed line has RES""ULT instead.
    term.type(f"stty -a | tr ' ;' '\\n\\n' | grep -xE -- '-?(echo|icanon)' | tr '\\n' ' '; echo RES\"\"ULT {marker}")
    screen = term.wait_text(f"RESULT {marker}")
    result = next(line for line in screen.splitlines() if line.endswith(f"RESULT {marker}"))
    assert result.split()[:2] == ["icanon", "echo"], result  # not "-icanon" / "-echo"
    assert "pytop" in screen  # the command line typed before is on the main screen again


def start_pytop(term: Terminal, pid: int, *options: str) -> None:
    term.type(" ".join([*helpers.PYTOP, *options, str(pid)]))
    term.wait_text("Function (filename)")


def test_keys_in_a_real_terminal(terminal: Terminal, some_interp: dict[str, Any]) -> None:
    with helpers.running(some_interp, "stacks.py") as t:
        start_pytop(terminal, t.pid)
        # One whole screen (a capture can catch one mid-redraw: the detail line names the
        # spinner too, and may be drawn before the header's lines).
        terminal.wait_for(lambda s: f"pid {t.pid}" in s and "GIL: " in s and "OwnTime▼" in s
                          and any(line.rstrip().endswith("spinning (stacks.py)") or "spinning (" in line
                                  for line in s.splitlines()), "the spinner's row, sorted by OwnTime, and the header")
        terminal.keys("2")
        terminal.wait_text("%Total▼")
        terminal.keys("L")
        terminal.wait_for(lambda s: "[by line]" in s and "stacks.py:" in s, "the by-line view")
        before = samples_shown(terminal.wait_for(lambda s: samples_shown(s) >= 500, "samples to reset"))
        terminal.keys("R")
        terminal.wait_for(lambda s: samples_shown(s) < before, "the counts reset")
        terminal.keys("?")
        terminal.wait_for(lambda s: "Keys" in s and "this help" in s, "the help")
        terminal.keys("Escape")
        terminal.wait_for(lambda s: "this help" not in s, "the help closed")
        terminal.keys("d")  # the stacks now, with arguments and locals
        terminal.wait_for(lambda s: "ing (" in s and "Arguments:" in s and "self: <Worker at 0x" in s
                          and (" [libc.so.6" in s or " [libpython" in s or "C frames not shown" in s),
                          "the threads' stacks with their arguments and C frames")
        terminal.keys("Escape")
        terminal.wait_for(lambda s: "Arguments:" not in s and "OwnTime" in s, "the stacks closed")
        terminal.keys("q")
        assert_terminal_restored(terminal, "after-q")


def test_ctrl_c_and_sigterm_restore_the_terminal(terminal: Terminal, some_interp: dict[str, Any]) -> None:
    with helpers.running(some_interp, "stacks.py") as t:
        start_pytop(terminal, t.pid)
        terminal.keys("C-c")
        assert_terminal_restored(terminal, "after-ctrl-c")
        start_pytop(terminal, t.pid)
        pytop = [p for p in psutil.process_iter(["cmdline"]) if (p.info["cmdline"] or [])[-2:] == ["pytop", str(t.pid)]]
        assert len(pytop) == 1
        os.kill(pytop[0].pid, signal.SIGTERM)
        assert_terminal_restored(terminal, "after-sigterm")


@pytest.mark.parametrize("sig", ["SIGABRT", "SIGSEGV"])
def test_a_fatal_signal_gives_the_terminal_back(terminal: Terminal, sig: str) -> None:
    """pytop dying in C code (a library's failed assertion: SIGABRT; a crash: SIGSEGV) leaves no
    alternate screen, no mouse reporting, no raw mode behind (it once left all three: typed
    commands were invisible until `reset`)."""
    with helpers.running(available("pyenv-3.12"), "stacks.py") as t:
        start_pytop(terminal, t.pid)
        assert terminal.tmux("display-message", "-p", "#{alternate_on} #{mouse_any_flag}").split() == ["1", "1"]
        pytop = [p for p in psutil.process_iter(["cmdline"]) if (p.info["cmdline"] or [])[-2:] == ["pytop", str(t.pid)]]
        assert len(pytop) == 1
        os.kill(pytop[0].pid, getattr(signal, sig))
        assert_terminal_restored(terminal, f"after-{sig}")
        assert terminal.tmux("display-message", "-p", "#{alternate_on} #{mouse_any_flag}").split() == ["0", "0"]


def test_target_exit_keeps_the_results(terminal: Terminal, some_interp: dict[str, Any]) -> None:
    with helpers.running(some_interp, "exiting.py", "600") as t:
        start_pytop(terminal, t.pid)
        terminal.wait_text("churn")
        os.kill(t.pid, signal.SIGUSR1)  # now exit
        screen = terminal.wait_text("has exited", timeout=30)
        assert "churn" in screen  # the last results stay
        time.sleep(1.5)
        assert "has exited" in terminal.screen() and "churn" in terminal.screen()
        # The final results can still be explored.
        terminal.keys("L")
        terminal.wait_for(lambda s: "[by line]" in s and "exiting.py:" in s and "has exited" in s, "lines after exit")
        terminal.keys("Enter")
        terminal.wait_for(lambda s: "Callers and callees of" in s and "has exited" in s, "callers after exit")
        terminal.keys("q")
        assert_terminal_restored(terminal, "after-exit")


def test_picking_a_process_when_none_is_given_and_coming_back(terminal: Terminal, some_interp: dict[str, Any],
                                                              tmp_path: Path) -> None:
    # stderr sent to a file, as a user keeping pytop's messages does: the host's table, the
    # view of the pick and the table again are drawn on the terminal all the same.
    log = tmp_path / "pytop.log"
    with helpers.running(some_interp, "stacks.py") as t:
        terminal.type(" ".join(helpers.PYTOP) + f" 2>{log}")
        terminal.wait_text("Which Python process?")
        terminal.wait_text(str(t.pid))
        terminal.keys("4")  # sorted by pid, narrowed to the target: kept when the table opens again
        terminal.wait_text("Sorted by PID")
        terminal.keys("/")
        terminal.wait_text("filter: text")
        terminal.type(f"^{t.pid} ")  # (the machine's other processes come and go: rows move)
        terminal.wait_for(lambda s: "1 of " in s and "match" in s, "the table narrowed to the target")
        terminal.keys("Enter")
        terminal.wait_for(lambda s: f"pid {t.pid}" in s and "Function (filename)" in s, "the live view of the pick")
        terminal.keys("b")
        terminal.wait_for(lambda s: "Which Python process?" in s and "Sorted by PID" in s and "1 of " in s
                          and str(t.pid) in s, "the host's table again, as it was")
        terminal.keys("Enter")  # the cursor is on the process it was on
        terminal.wait_for(lambda s: f"pid {t.pid}" in s and "Function (filename)" in s, "the same process again")
        terminal.keys("q")
        assert_terminal_restored(terminal, "after-picker")
    assert "\x1b[" not in log.read_text(errors="replace")  # (no screen drawn into the file)


def test_a_started_program_shows_its_exit_status_and_where_its_output_went(
        terminal: Terminal, some_interp: dict[str, Any]) -> None:
    script = helpers.stage(some_interp, "exiting.py")
    terminal.type(f"cd / && {' '.join(helpers.PYTOP)} -- {' '.join(some_interp['argv'])} {script} 600 3")
    # One screen with both (a capture can catch the screen mid-redraw).
    screen = terminal.wait_for(lambda s: "churn" in s and "[its output: /tmp/pytop-child-" in s, "the log's path")
    pid = re.search(r"pid (\d+)", screen)
    assert pid is not None
    os.kill(int(pid.group(1)), signal.SIGUSR1)  # now exit, with status 3
    screen = terminal.wait_text("exited with status 3")
    assert "churn" in screen
    terminal.keys("q")
    screen = terminal.wait_text("pytop: the program's output is in ")
    log = re.search(r"is in (/tmp/pytop-child-\S+\.log)", screen.replace("\n", ""))
    assert log is not None, screen
    try:
        assert '"threads"' in Path(log.group(1)).read_text()  # the target's readiness line, printed
    finally:
        Path(log.group(1)).unlink()


def test_a_vanished_terminal_ends_pytop_and_its_program(some_interp: dict[str, Any]) -> None:
    """The terminal's server killed (SIGHUP): Textual's shutdown could block for ever writing to
    it (1 time in 2), leaving pytop, and the program it started, running."""
    terminal = Terminal()
    try:
        script = helpers.stage(some_interp, "exiting.py")
        terminal.type(f"cd / && {' '.join(helpers.PYTOP)} -- {' '.join(some_interp['argv'])} {script} 600")
        screen = terminal.wait_text("churn")
        pid = re.search(r"pid (\d+)", screen)
        assert pid is not None
        program = psutil.Process(int(pid.group(1)))
        pytop = program.parent()
        assert pytop is not None and "pytop" in " ".join(pytop.cmdline()), pytop
    finally:
        terminal.close()
    gone, alive = psutil.wait_procs([program, pytop], timeout=15)
    assert not alive, [p.cmdline() for p in alive]


def test_native_frames_live(terminal: Terminal) -> None:
    """--native live: the compressor's time on libz's rows, the tree through zlib's C module, `d`
    saying why it shows no C frames of its own (the sampler holds the threads), and every thread
    running again after q."""
    from conftest import available
    from pytop.native import libdw

    if libdw.why_unavailable():
        pytest.skip(libdw.why_unavailable())
    with helpers.running(available("pyenv-3.12"), "c_work.py") as t:
        start_pytop(terminal, t.pid, "--native", "--rate", "100")
        terminal.wait_for(lambda s: "(libz.so" in s.split("Function (filename)")[1].splitlines()[1],
                          "a libz row on top")
        terminal.keys("T")
        terminal.wait_for(lambda s: "compressor (" in s and "zlib_compress (zlib." in s, "the tree through zlib")
        terminal.keys("d")
        terminal.wait_for(lambda s: "Arguments:" in s and "C frames not shown: pytop's sampling holds" in s,
                          "the stacks, saying why without C frames")
        terminal.keys("Escape")
        # back on the tree, which has no column headings (the key bar says "1-4 Sort", not "OwnTime")
        terminal.wait_for(lambda s: "Arguments:" not in s and "▾ compressor (" in s, "the stacks closed")
        terminal.keys("q")
        assert_terminal_restored(terminal, "after-q")
        states = {task.name: (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
                  for task in Path(f"/proc/{t.pid}/task").iterdir()}
        assert "t" not in states.values(), states


def test_record_live_then_replay_in_the_same_view(terminal: Terminal, some_interp: dict[str, Any],
                                                  tmp_path: Path) -> None:
    """--record in the live view, q, then pytop FILE: the same table, and the time keys move
    through the session's windows."""
    path = tmp_path / "session.pytop"
    with helpers.running(some_interp, "stacks.py") as t:
        start_pytop(terminal, t.pid, "--record", str(path))
        terminal.wait_for(lambda s: "recorded " in s and samples_shown(s) >= 300, "samples recorded")
        time.sleep(2)  # a few more windows
        terminal.keys("q")
        said = terminal.wait_text("pytop: recorded ")
        windows = int(re.search(r"pytop: recorded (\d+) windows", said)[1])  # type: ignore[index]
        assert windows >= 3
        wait_for_the_prompt(terminal)  # (CI once typed the next line while pytop was still ending)
    # What was sampled since the last refresh is the last window, and a key frame after it holds
    # the state it left: the replay opens there reading that window alone.
    recording = open_recording(str(path))
    assert len(recording.windows) == windows and recording.keys[-1].index == windows, [k.index for k in recording.keys]
    terminal.type(" ".join([*helpers.PYTOP, str(path)]))
    # (one whole screen: a capture can catch the header drawn before the table)
    terminal.wait_for(lambda s: f"window {windows} of {windows}" in s and "spinning (" in s
                      and "totals from the recording's start" in s, "the last window with the spinner's row")
    terminal.keys("[")
    terminal.wait_text(f"window {windows - 1} of {windows}")
    terminal.keys("<")
    terminal.wait_text(f"window 1 of {windows}")
    terminal.keys("q")
    assert_terminal_restored(terminal, "after-replay")


def test_a_live_view_without_record_steps_back_into_its_past(terminal: Terminal, some_interp: dict[str, Any]) -> None:
    """No --record: the live view remembers its session all the same (a private temporary
    recording), [ and < step back into it, > comes back to live; once pytop ends nothing of it
    is left in the temporary folder."""
    short = Path(tempfile.mkdtemp(prefix="ph"))  # (a short TMPDIR: the command line stays on one line)
    try:
        with helpers.running(some_interp, "stacks.py") as t:
            terminal.type(" ".join(["env", f"TMPDIR={short}", *helpers.PYTOP, str(t.pid)]))
            terminal.wait_for(lambda s: "Samples: " in s and samples_shown(s) >= 300 and "spinning (" in s, "samples")
            (folder,) = short.iterdir()
            assert folder.name.startswith("pytop-history-") and folder.stat().st_mode & 0o777 == 0o700
            assert (folder / "session.pytop").stat().st_mode & 0o777 == 0o600
            time.sleep(2)  # a few windows
            terminal.keys("[")
            screen = terminal.wait_for(lambda s: "The past (> back to live):" in s and "spinning (" in s, "the past")
            assert str(short) not in screen  # (a private memory is not said as a recording)
            terminal.keys("<")
            terminal.wait_text("window 1 of ")
            terminal.keys(">")
            terminal.wait_for(lambda s: "The past" not in s and "Samples: " in s, "live again")
            terminal.keys("q")
            assert_terminal_restored(terminal, "after-q")
        assert not list(short.iterdir())
    finally:
        shutil.rmtree(short, ignore_errors=True)


def test_a_live_view_against_a_recorded_baseline(terminal: Terminal, target_interp: dict[str, Any],
                                                 tmp_path: Path) -> None:
    """--baseline FILE: a run recorded with grown() taking half, then the live view of a run
    where it does four times the work: the table compares, grown on top, grown by its change;
    B gives the plain table back."""
    from test_compare import record_run

    base = tmp_path / "base.pytop"
    record_run(target_interp, tmp_path / "before", 1, base)
    script = tmp_path / "after" / "shifting_work.py"
    script.parent.mkdir()
    shutil.copy(helpers.TARGETS / "shifting_work.py", script)
    proc = subprocess.Popen([*target_interp["argv"], str(script), "4"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        assert helpers.read_line(proc, 60), "the target never became ready"
        terminal.type(" ".join([*helpers.PYTOP, "--baseline", str(base), str(proc.pid)]))
        def first_row(screen: str) -> str:
            lines = screen.splitlines()
            at = next((i for i, line in enumerate(lines) if "Change▼" in line), None)
            return lines[at + 1] if at is not None and at + 1 < len(lines) else ""

        terminal.wait_for(lambda s: "[against the baseline:" in s and re.match(
            r"^\s+\S+%\s+\S+%\s+\+\S+%.* grown \(", first_row(s)) is not None, "grown on top, grown by its change")
        terminal.keys("B")
        terminal.wait_for(lambda s: "OwnTime▼" in s and "[against the baseline:" not in s, "the plain table")
        terminal.keys("q")
        assert_terminal_restored(terminal, "after-baseline")
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_two_recordings_compared_on_a_terminal(terminal: Terminal, target_interp: dict[str, Any],
                                               tmp_path: Path) -> None:
    """pytop --diff BASE NEW as a user runs it: the comparison's table, grown on top; e writes
    the comparison where --output-dir says; q gives the terminal back."""
    from test_compare import record_runs

    base, now = tmp_path / "base.pytop", tmp_path / "now.pytop"
    record_runs(target_interp, [(tmp_path / "a", 1, base), (tmp_path / "b", 4, now)])
    out = tmp_path / "out"
    out.mkdir()
    terminal.type(" ".join([*helpers.PYTOP, "--output-dir", str(out), "--diff", str(base), str(now)]))
    terminal.wait_for(lambda s: "Baseline:" in s and "Change▼" in s and re.search(
        r"^\s+\S+%\s+\S+%\s+\+\S+%.* grown \(", s, re.M) is not None, "the comparison, grown by its change")
    terminal.keys("e")
    terminal.wait_text("pytop-diff-")
    assert sorted(path.suffix for path in out.iterdir()) == [".json", ".txt", ".txt"]
    terminal.keys("q")
    assert_terminal_restored(terminal, "after-diff")
