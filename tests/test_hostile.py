"""A target or a local user cannot reach the person running pytop (often root) through what pytop
shows: names and command lines with escape sequences (OSC 2 sets the terminal's title, OSC 52
its clipboard, ESC[2J clears it), a newline that would forge lines of collapsed stacks, Rich
markup in another user's command line. Every view, report and export shows them as text."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

import helpers
from pytop.core.visible import visible, visible_command
from pytop.ui.hosts import HostTable
from pytop.ui.picker import PickerApp
from test_tui_tmux import Terminal, start_pytop

EVIL = "\x1b]2;pwned\x07\x1b]52;c;cHduZWQ=\x07\x1b[2J\u202e"
SHOWN = "\\x1b]2;pwned\\x07\\x1b]52;c;cHduZWQ=\\x07\\x1b[2J\\u202e"
# Any character a terminal acts on, or that reorders text: none may reach an output.
ACTING = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_visible_text() -> None:
    assert visible("plain") == "plain"
    assert visible("a" + EVIL + "\nb") == "a" + SHOWN + "\\x0ab"
    assert visible_command("python -c 'import x\nx.run()'\tEND") == "python -c 'import x ⏎ x.run()' END"
    assert not ACTING.search(visible("".join(map(chr, range(0x3000)))))


def test_dumps_and_reports_show_names_as_text(some_interp: dict[str, Any]) -> None:
    with helpers.running(some_interp, "hostile_names.py", "--flag=" + EVIL) as t:
        dump = helpers.run_pytop("--dump", str(t.pid))
        dump_json = helpers.run_pytop("--dump", "--json", str(t.pid))
        report = helpers.run_pytop("--batch", "--duration", "1", str(t.pid))
        collapsed = helpers.run_pytop("--batch", "--duration", "1", "--format", "collapsed", str(t.pid))
        speedscope = helpers.run_pytop("--batch", "--duration", "1", "--format", "speedscope", str(t.pid))
    for result in (dump, dump_json, report, collapsed, speedscope):
        assert result.returncode == 0, result.stderr
        assert not ACTING.search(result.stdout + result.stderr), ACTING.findall(result.stdout)[:5]
    assert "spin" + SHOWN in dump.stdout and "worker" + SHOWN in dump.stdout  # the thread's name
    assert "--flag=" + SHOWN in dump.stdout.splitlines()[0]  # the command line
    threads = json.loads(dump_json.stdout)["threads"]
    assert any(thread["name"] == "worker" + SHOWN + "\\x0aforged;frame 999999" for thread in threads), threads
    assert "spin" + SHOWN in report.stdout
    # A newline in a name would begin a line of its own: each line is one stack, outermost first.
    for line in collapsed.stdout.splitlines():
        assert not line.startswith("forged") and re.fullmatch(r".+ \d+", line), line
    escaped = "spin" + SHOWN.replace(";", "\\x3b") + "\\x0aforged\\x3bframe 999999"
    assert any(escaped in line for line in collapsed.stdout.splitlines()), collapsed.stdout[:2000]


def test_the_live_view_keeps_the_terminal(some_interp: dict[str, Any]) -> None:
    """The terminal's title and its screen stay pytop's while the view shows the names."""
    term = Terminal()
    try:
        before = term.tmux("display-message", "-p", "#{pane_title}")
        with helpers.running(some_interp, "hostile_names.py", "--flag=" + EVIL) as t:
            start_pytop(term, t.pid)
            term.keys("t")  # the threads panel, with the thread's name
            screen = term.wait_for(lambda s: "worker\\x1b]2;pwned" in s and "spin\\x1b]2;pwned" in s,
                                   "the names, escaped, in the table and the threads panel")
            assert "Function (filename)" in screen  # nothing cleared it
            assert term.tmux("display-message", "-p", "#{pane_title}") == before
            term.keys("q")
    finally:
        term.close()


@pytest.mark.process  # another program's command line, in the picker
async def test_the_picker_shows_another_users_command_line_as_text() -> None:
    """A command line is any local user's: "[/]" once crashed root's picker (a markup error) and
    "[white on white]" hid text."""
    args = ["[/]", "[white on white]hidden[/]", "[link=http://x]y", EVIL]
    python = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)",
                               *args], stdout=subprocess.PIPE)
    try:
        assert python.stdout is not None and python.stdout.readline()
        app = PickerApp(refresh_seconds=60)
        async with app.run_test(size=(200, 30)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            table = app.query_one(HostTable)
            shown = table.cell(str(python.pid), "command")
    finally:
        python.kill()
        python.wait()
    assert "[/] [white on white]hidden[/] [link=http://x]y " + SHOWN in shown, shown
