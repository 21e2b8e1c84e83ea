"""The command line fuzzed with hypothesis: any mix of pytop's options and odd values is either
accepted or refused with one line and status 2 (argparse's or pytop's usage error), never a
traceback. Parsing and checking only: nothing is attached to or started."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytop import cli, errors

TOKENS = [
    "--batch", "--dump", "--json", "--duration", "--rate", "--pid", "-p", "--core", "--sysroot", "--executable",
    "--format", "--output", "--cpu-budget", "--realtime", "--no-priority", "--blocking", "--nonblocking", "--mode",
    "-i", "-g", "--idle", "--gil", "--delay", "--sort", "--stats-file", "--child-output", "--output-dir", "--demo",
    "-s", "--subprocesses", "--async", "--by-line", "--full-filenames", "--", "-r", "--all",
    "inf", "-inf", "nan", "1e30", "1e-300", "-1", "0", "1", "42", "100000", "100001", "abc", "", " ", "é", "\x00",
    "pprof", "collapsed", "json", "text", "cpu", "wall", "gil", "own", "total", "/", "/dev/full", "/nonexistent",
    "python", "-c",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(TOKENS) | st.text(max_size=6), max_size=8))
def test_any_command_line_is_accepted_or_refused_cleanly(argv: list[str]) -> None:
    own, command = cli.split_command(argv)
    try:
        args = cli.build_parser().parse_args(own)
        cli.check_arguments(args, command)
    except SystemExit as exc:
        assert exc.code == 2, argv
    except errors.UsageError:
        pass


@pytest.mark.parametrize("argv", [["--duration", "nan", "--batch", "1"], ["--rate", "nan", "1"],
                                  ["--cpu-budget", "nan", "1"], ["--delay", "inf", "1"]])
def test_values_that_are_not_numbers_to_sample_by(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "pytop: error:" in err
