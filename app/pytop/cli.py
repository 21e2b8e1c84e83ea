"""pytop's command line: arguments (their checks: arguments.py) and wiring; errors become one clear line.

    pytop [options] PID             watch a running process (also -p/--pid PID)
    pytop [options] -- CMD [ARGS]   start CMD, watch it, end it on exit
    pytop --demo                    watch the bundled demo workload
    pytop --dump [--json] PID       print every thread's stack once
    pytop --dump --core FILE        ... as a core file holds them
    pytop --batch [--duration S] [--json] PID   no screen: sample, then print the table
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import traceback
from collections.abc import Sequence

from . import __version__, errors
from .arguments import check_arguments
from .record.bounds import MIN_MAX_SIZE
from .report.compare import CHANGE_SORT_CHOICES
from .report.table import SORT_CHOICES
from .sampling.priority import DEFAULT_CPU_BUDGET


def parse_pid(text: str) -> int:
    try:
        pid = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a process id: {text!r}") from None
    if pid <= 0:
        raise argparse.ArgumentTypeError(f"not a process id: {text!r}")
    return pid


def pid_or_recording(text: str) -> int | str:
    """The positional argument: a process id, or a recording's path (pytop FILE)."""
    if text.isdigit():
        return parse_pid(text)
    if not (os.path.exists(text) or os.path.islink(text) or "/" in text or "." in text):
        raise argparse.ArgumentTypeError(f"not a process id, nor a recording: {text!r}")
    return text


def when(text: str) -> object:
    """--from, --to: a time in a recording (record/ranges.py)."""
    from .core.when import parse_when

    try:
        return parse_when(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0: {text!r}")
    return value


_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?)\s*(?:([kmg])(?:i?b)?|b)?\s*", re.IGNORECASE)
_UNIT_SHIFT = {None: 0, "k": 10, "m": 20, "g": 30}


def record_size(text: str) -> int:
    """--record-max-size: bytes, or with a unit (500k, 100M, 2G: multiples of 1024); 0: no
    bound."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (as 100M, 2G, or 0 for no bound)")
    size = int(float(match[1]) * (1 << _UNIT_SHIFT[match[2] and match[2].lower()]))
    if 0 < size < MIN_MAX_SIZE:
        raise argparse.ArgumentTypeError(f"at least {MIN_MAX_SIZE >> 10}k: {text!r} (0 for no bound)")
    return size


def push_interval(text: str) -> float:
    """--push-interval: from a second to an hour (a server keeps profiles per interval)."""
    value = positive(text)
    if not 1 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"from 1 to 3600 seconds: {text!r}")
    return value


MAX_RATE = 100000.0
MAX_BUDGET = 100.0 * (os.cpu_count() or 1)


def budget(text: str) -> float:
    """--cpu-budget: a percentage of one core, 0 for none."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= MAX_BUDGET:
        raise argparse.ArgumentTypeError(f"a percentage of one core from 0 to {MAX_BUDGET:g}: {text!r}")
    return value


FOREVER = 1e7  # seconds: a --duration this long (or inf) means until the program ends or Ctrl-C


def refresh_delay(text: str) -> float:
    """--delay: seconds between refreshes, up to an hour."""
    value = positive(text)
    if value > 3600:
        raise argparse.ArgumentTypeError(f"at most 3600 seconds: {text!r}")
    return value


def duration(text: str) -> float:
    """--duration: seconds, or inf (until the program ends, or Ctrl-C)."""
    value = positive(text)
    return value if value < FOREVER else float("inf")


def rate(text: str) -> float:
    value = positive(text)
    if value > MAX_RATE:
        raise argparse.ArgumentTypeError(f"at most {MAX_RATE:,.0f} samples per second: {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pytop",
        usage="pytop [options] PID | pytop [options] -- COMMAND [ARGS...] | pytop --demo",
        description="A live, top-style view of where a running Python process spends its time. "
                    "pytop reads the process's memory and never stops it or writes to it.",
    )
    parser.add_argument("pid", nargs="?", type=pid_or_recording,
                        help="process id of a running Python program, or a recording to show again (--record)")
    parser.add_argument("-p", "--pid", dest="pid_option", type=parse_pid, metavar="PID",
                        help="process id (same as the positional PID)")
    parser.add_argument("--demo", action="store_true", help="start and watch pytop's demo workload")
    parser.add_argument("--all", action="store_true",
                        help="every Python process on the host: with --batch, a table of them (CPU over "
                             "--duration, threads, memory); alone, the table to pick one from (as with no PID)")
    sampling = parser.add_argument_group("sampling")
    sampling.add_argument("-r", "--rate", type=rate, default=1000.0, metavar="HZ",
                          help="samples per second (default 1000, up to 100000)")
    sampling.add_argument("--mode", choices=("cpu", "wall", "gil"),
                          help="what the times measure: cpu (default: time on a CPU, as the kernel counts "
                               "it), wall (every thread's wall-clock time, sleeping or not) or gil (the "
                               "GIL holder's wall-clock time); the m key switches it live")
    sampling.add_argument("-i", "--idle", action="store_true", help="the same as --mode wall")
    sampling.add_argument("-g", "--gil", action="store_true", help="the same as --mode gil")
    sampling.add_argument("-s", "--subprocesses", action="store_true",
                          help="also watch the target's Python child processes as they start and stop "
                               "(with --dump: dump each of its Python descendants too)")
    sampling.add_argument("--cpu-budget", type=budget, default=100 * DEFAULT_CPU_BUDGET, metavar="PERCENT",
                          help=f"the most of one core pytop may use from its first sample on, sampling and "
                               f"screen together (default {100 * DEFAULT_CPU_BUDGET:g}); pytop sets its rate to "
                               "what fits, from what a sample costs, and says so in the header; 0: no budget")
    sampling.add_argument("--realtime", action="store_true",
                          help="give the sampling thread a real-time priority and the screen a higher one (root "
                               "or CAP_SYS_NICE), so samples come on time even when every core is busy. It "
                               "costs the target: on a saturated host each sample takes a CPU from it at once "
                               "(a web app served half its requests). By default pytop runs at normal priority "
                               "and gives way, skipping samples it cannot take on time")
    sampling.add_argument("--no-priority", action="store_true", help=argparse.SUPPRESS)  # the default now
    sampling.add_argument("--async", dest="tasks", action="store_true",
                          help="asyncio (CPython 3.14+): show the task each sample ran, as 'task NAME' between "
                               "the event loop's frames and the task's coroutines (the A key toggles it); with "
                               "--dump: also print every task, its state and what it awaits")
    sampling.add_argument("--native", action="store_true",
                          help="the C frames between the Python ones, in the table, tree, exports and --dump "
                               "(elfutils' libdw reads them; the target's threads are stopped while both are "
                               "read, as with --blocking: use a lower --rate, 100/s is plenty)")
    sampling.add_argument("--locals", action="store_true",
                          help="with --dump: each Python frame's arguments and local variables, with short "
                               "reprs pytop makes from the target's memory (it runs no code in the target)")
    sampling.add_argument("--blocking", action="store_true",
                          help="stop every thread of the target (ptrace) while its stacks are read, for "
                               "exact stacks. It costs: each sample pauses the target for about 10-20 us "
                               "per thread, pytop spends more CPU, and it needs permission to ptrace. By "
                               "default pytop never stops the target")
    sampling.add_argument("--nonblocking", action="store_true",
                          help="accepted for py-spy habits: pytop never stops the target")
    view = parser.add_argument_group("view")
    view.add_argument("--delay", type=refresh_delay, default=1.0, metavar="SECONDS",
                      help="seconds between screen refreshes (default 1)")
    view.add_argument("--sort", choices=sorted(SORT_CHOICES | CHANGE_SORT_CHOICES),
                      help="initial sort column: own (%%Own), total (%%Total), owntime (default) or "
                           "totaltime, or the key 1-4; with --diff also change (of own time, the default "
                           "there) or totalchange")
    view.add_argument("--by-line", action="store_true", help="start with one row per line, not per function")
    view.add_argument("--full-filenames", action="store_true", help="show full file paths")
    view.add_argument("--output-dir", metavar="DIR",
                      help="where the e key writes its exports (default: the current directory)")
    view.add_argument("--child-output", metavar="FILE",
                      help="with -- COMMAND or --demo: where the program's output goes while the screen is "
                           "up (default: a temporary log, named when pytop ends, removed if empty)")
    view.add_argument("--stats-file", metavar="FILE",
                      help="on exit, write sampling statistics (samples, late, errors, rate) as JSON")
    once = parser.add_argument_group("without a screen")
    once.add_argument("--dump", action="store_true", help="print every thread's stack once and exit")
    once.add_argument("--core", metavar="FILE",
                      help="with --dump: read the stacks from a core file (gcore's or the kernel's) instead of "
                           "a running process")
    once.add_argument("--executable", metavar="PATH",
                      help="with --core: the program the core came from, when it is no longer at the path the "
                           "core records")
    once.add_argument("--sysroot", metavar="DIR",
                      help="with --core: the root the process saw (a chroot's or a container's), under which "
                           "pytop finds the files the core names")
    once.add_argument("--batch", action="store_true", help="sample for --duration seconds, print the table")
    once.add_argument("--duration", type=duration, default=10.0, metavar="SECONDS",
                      help="with --batch: how long to sample (default 10; inf: until the program ends, or "
                           "Ctrl-C)")
    once.add_argument("--json", action="store_true", help="with --dump or --batch: print JSON")
    once.add_argument("--format", choices=("text", "json", "collapsed", "speedscope", "pprof"),
                      help="with --batch: the report's format (default text; collapsed stacks, speedscope "
                           "JSON and pprof (gzipped profile.proto) hold every stack sampled)")
    once.add_argument("--output", metavar="FILE", help="with --batch: write the report to FILE")
    recording = parser.add_argument_group("recording")
    recording.add_argument("--record", metavar="FILE",
                           help="write the session to FILE as it is sampled (live or --batch), to show again "
                                "later with pytop FILE: the same view, keys and exports, any range of it; "
                                "without a PID (or with --all), the host's table, look by look")
    recording.add_argument("--record-max-size", type=record_size, metavar="SIZE",
                           help="with --record: the file's bound (default 100M; as 500M or 2G; 0: none); past "
                                "it the oldest part goes, so that the file keeps the most recent 5/8 to 3/4 "
                                "of it, and a replay says from when on it holds the session. Without --record, "
                                "the bound of the live view's memory of its past (below)")
    recording.add_argument("--no-history", dest="history", action="store_false",
                           help="the live view keeps no past: without --record it remembers its session in a "
                                "private temporary file (0600, in a 0700 folder of $TMPDIR, within "
                                "--record-max-size, removed when pytop ends), so that the time keys ([ ] { } < >) "
                                "step back into it")
    recording.add_argument("--from", dest="time_from", type=when, metavar="TIME",
                           help="with a recording: from this time (seconds from its start, as 90 or 1m30s; or a "
                                "time of day, as 14:05:30)")
    recording.add_argument("--to", dest="time_to", type=when, metavar="TIME",
                           help="with a recording: up to this time (as --from)")
    recording.add_argument("--diff", nargs=2, metavar=("BASE", "NEW"),
                           help="compare two recordings, or ranges of them (FILE:FROM-TO, as a.rec:1m-2m or "
                                "a.rec:14:05-14:10): each function's time per second in NEW against BASE, new "
                                "and gone ones marked; with --batch as text, --json, or --format collapsed (a "
                                "differential file, for flamegraph.pl)")
    recording.add_argument("--baseline", metavar="FILE[:FROM-TO]",
                           help="the live view (or pytop FILE) shows each function's change per second against "
                                "this recording, or range of it, from the start (B in the view marks one)")
    push = parser.add_argument_group("sending profiles on")
    push.add_argument("--push", metavar="URL",
                      help="send each process's profile every 10 s, as pprof, to this Grafana Pyroscope server "
                           "(its /ingest API); credentials from PYTOP_PUSH_TOKEN, or PYTOP_PUSH_USER and "
                           "PYTOP_PUSH_PASSWORD; PYTOP_PUSH_TENANT for a multi-tenant server")
    push.add_argument("--push-name", metavar="NAME",
                      help="with --push: the service's name (default: each process's program)")
    push.add_argument("--push-label", action="append", default=[], metavar="KEY=VALUE",
                      help="with --push: a label on every profile (env=prod; again for more)")
    push.add_argument("--push-interval", type=push_interval, metavar="SECONDS",
                      help="with --push: seconds of samples in each profile sent (default: 10)")
    parser.add_argument("--version", action="version", version=f"pytop {__version__}")
    parser.set_defaults(back=False)  # set by the host's table for the live views it opens
    return parser


def split_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """pytop's own arguments, and the command after `--` (if any)."""
    args = list(argv)
    if "--" in args:
        at = args.index("--")
        return args[:at], args[at + 1:]
    return args, []


# Exit statuses (the README has the table): what a script around pytop can tell apart.
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BUG, EXIT_PIPE, EXIT_INTERRUPTED = 0, 1, 2, 70, 128 + 13, 130


def main(argv: Sequence[str] | None = None) -> int:
    """The one way out: every failure becomes one line on stderr and an exit status."""
    try:
        return _main(argv)
    except SystemExit as exc:  # argparse: its own line is printed already
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    except errors.PytopError as exc:
        errors.say(f"pytop: {exc}")
        return exc.exit_code
    except BrokenPipeError:
        # The reader went away (pytop --dump | head): as a shell reports SIGPIPE, quietly.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        return EXIT_PIPE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug in pytop: one line here, the whole story in a file
        errors.say(f"pytop: an error in pytop itself ({type(exc).__name__}: {exc}); {bug_report(exc)}")
        return EXIT_BUG


def bug_report(exc: BaseException) -> str:
    """Where the traceback went, to say in the line."""
    import tempfile  # here: only a bug needs it

    try:
        fd, path = tempfile.mkstemp(prefix="pytop-error-", suffix=".txt")
        with os.fdopen(fd, "w") as f:
            f.write(f"pytop {__version__}, Python {sys.version.split()[0]}, argv {sys.argv!r}\n\n")
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=f)
        return f"the details are in {path}: please report it"
    except OSError:
        return "please report it"


def _main(argv: Sequence[str] | None) -> int:
    own, command = split_command(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(own)
    check_arguments(args, command)
    if args.dump:
        from . import dumping

        return dumping.dump(args.pid_option or args.pid, args.json, args.blocking, args.core, args.executable,
                            args.sysroot, args.tasks, args.subprocesses, args.locals, args.native)
    from . import run

    if args.diff is not None:
        from . import replaying

        return replaying.compare(args)
    args.baseline_span = None
    if args.baseline is not None:
        from . import replaying

        args.baseline_span = replaying.baseline(args)
    if args.recording is not None:
        from . import replaying

        return replaying.replay(args)
    if args.all and args.batch:
        from . import hosting

        return hosting.host_table(args)
    if not (args.pid_option or args.pid or command or args.demo):
        from . import hosting

        return hosting.host_views(args)
    return run.watch(args, command)



if __name__ == "__main__":
    sys.exit(main())
