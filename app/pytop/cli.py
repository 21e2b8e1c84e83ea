"""pytop's command line: arguments, pre-flight checks and wiring; errors become one clear line.

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
import sys
import traceback
from collections.abc import Sequence

from . import __version__, errors
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
    from .record.ranges import parse_when

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


def mode_of(args: argparse.Namespace) -> str:
    """--mode, or the py-spy-style flag that names one."""
    named = [m for m, given in (("wall", args.idle), ("gil", args.gil)) if given]
    if args.mode:
        named.append(args.mode)
    if len(set(named)) > 1:
        raise errors.UsageError(f"--idle, --gil and --mode ask for different modes: {', '.join(sorted(set(named)))}")
    return named[0] if named else "cpu"


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


def has_terminal() -> bool:
    return all(stream is not None and stream.isatty() for stream in (sys.stdin, sys.stdout))


def terminal_problem() -> str | None:
    """Why the live view cannot be drawn here, if it cannot."""
    if not has_terminal():
        return ("the live view needs a terminal on its input and output; without one, use --batch --duration "
                "SECONDS for a report, or --dump for the stacks")
    if os.environ.get("TERM", "") in ("dumb", "unknown"):
        return (f"this terminal (TERM={os.environ['TERM']}) cannot draw the live view; set TERM (e.g. "
                "TERM=xterm-256color), or use --batch --duration SECONDS, or --dump")
    return None


def check_arguments(args: argparse.Namespace, command: list[str]) -> None:
    args.recording = args.pid if isinstance(args.pid, str) else None
    if args.diff is not None:
        check_diff(args, command)
    elif args.sort in CHANGE_SORT_CHOICES and args.sort not in SORT_CHOICES:
        raise errors.UsageError(f"--sort {args.sort} goes with --diff")
    args.sort = args.sort or ("change" if args.diff is not None else "owntime")
    if args.baseline is not None:
        check_baseline(args)
        if not (args.pid or args.pid_option or command or args.demo):
            raise errors.UsageError("--baseline goes with the view of a process (a PID, a command after --, --demo) "
                                    "or of a recording (pytop FILE)")
    if args.recording is not None:
        args.pid = None
        check_replay(args, command)
    elif args.time_from is not None or args.time_to is not None:
        raise errors.UsageError("--from and --to go with a recording (pytop FILE)")
    pid = args.pid_option or args.pid
    sources = sum([pid is not None, bool(command), args.demo, bool(args.core), args.recording is not None,
                   args.diff is not None])
    if args.all:
        check_all(args, sources)
    elif sources == 0 and (args.dump or args.batch or not has_terminal()):
        raise errors.UsageError("which process? give a PID, a command after --, or --demo; or --all with --batch "
                                "for every Python process (see pytop --help)")
    if sources > 1:
        raise errors.UsageError("give only one of a PID, a command after --, --demo or --core")
    if args.json and not (args.dump or args.batch):
        raise errors.UsageError("--json goes with --dump or --batch")
    if args.realtime and args.no_priority:
        raise errors.UsageError("--realtime and --no-priority do not go together")
    if args.blocking and args.nonblocking:
        raise errors.UsageError("--blocking and --nonblocking do not go together")
    if (args.format or args.output) and not args.batch:
        raise errors.UsageError("--format and --output go with --batch")
    if args.json and args.format not in (None, "json"):
        raise errors.UsageError("--json and --format disagree")
    if args.format == "pprof" and not args.output and sys.stdout.isatty():
        raise errors.UsageError("--format pprof is binary: give --output FILE, or send it to a file or a pipe")
    if args.dump and args.batch:
        raise errors.UsageError("--dump and --batch do not go together")
    if args.child_output and not (command or args.demo):
        raise errors.UsageError("--child-output goes with -- COMMAND or --demo")
    if args.output_dir:  # the default, the current directory, is only checked when e is pressed
        args.output_dir = os.path.abspath(args.output_dir)
        if not os.path.isdir(args.output_dir) or not os.access(args.output_dir, os.W_OK):
            raise errors.UsageError(f"--output-dir: {args.output_dir} is not a directory pytop can write to")
    args.mode = mode_of(args)
    if args.core and not args.dump:
        raise errors.UsageError("--core goes with --dump (pytop --dump --core FILE)")
    if args.locals and not args.dump:
        raise errors.UsageError("--locals goes with --dump (pytop --dump --locals PID)")
    if args.native and args.nonblocking:
        raise errors.UsageError("--native stops the target's threads to read their C frames: not with --nonblocking")
    if (args.executable or args.sysroot) and not args.core:
        raise errors.UsageError("--executable and --sysroot go with --core")
    if args.core and args.blocking:
        raise errors.UsageError("--blocking is for a running process, not a core file")
    if args.dump and pid is None and not args.core:
        raise errors.UsageError("--dump needs the PID of a running process, or --core FILE")
    if not (args.dump or args.batch) and (problem := terminal_problem()):
        raise errors.UsageError(problem)
    if args.stats_file and args.dump:
        raise errors.UsageError("--stats-file goes with the live view or --batch (a dump takes one sample)")
    if (args.dump or args.batch) and not args.output and sys.stdout is None:
        raise errors.UsageError("standard output is closed: open it, or give --output FILE (with --batch)")
    check_push(args)
    if args.record is not None and (args.dump or args.core):
        raise errors.UsageError("--record records a run (a PID, a command after -- or --demo) or the host's table "
                                "(--all, or no PID): not with --dump")


def check_replay(args: argparse.Namespace, command: list[str]) -> None:
    """pytop [--batch] FILE: a recording shown again; what sampling options ask is not for it."""
    given = [option for option, value in (("a PID", args.pid_option), ("a command", command), ("--demo", args.demo),
                                           ("--core", args.core), ("--dump", args.dump), ("--all", args.all),
                                           ("--record", args.record), ("--push", args.push),
                                           ("--subprocesses", args.subprocesses)) if value]
    if given:
        raise errors.UsageError(f"{args.recording} is a recording to show again: not with {given[0]}")


def check_baseline(args: argparse.Namespace) -> None:
    """--baseline FILE[:FROM-TO]: for a view on a terminal, of a process or a recording."""
    given = [option for option, value in (("--batch", args.batch), ("--dump", args.dump), ("--diff", args.diff),
                                           ("--all", args.all)) if value]
    if given:
        hint = " (--diff BASE NEW compares two recordings)" if given[0] == "--batch" else ""
        raise errors.UsageError(f"--baseline goes with the live view: not with {given[0]}{hint}")


def check_diff(args: argparse.Namespace, command: list[str]) -> None:
    """pytop --diff BASE NEW: two recordings compared; nothing is sampled."""
    given = [option for option, value in (("a PID or a recording", args.pid), ("-p", args.pid_option),
                                           ("a command", command), ("--demo", args.demo), ("--core", args.core),
                                           ("--dump", args.dump), ("--all", args.all), ("--record", args.record),
                                           ("--push", args.push), ("--from", args.time_from),
                                           ("--to", args.time_to)) if value]
    if given:
        hint = " (give a range as FILE:FROM-TO)" if given[0] in ("--from", "--to") else ""
        raise errors.UsageError(f"--diff compares two recordings: not with {given[0]}{hint}")
    if args.format not in (None, "text", "json", "collapsed"):
        raise errors.UsageError("--diff prints as text, json or collapsed (a differential file)")


def check_push(args: argparse.Namespace) -> None:
    """--push URL [--push-name NAME]: args.destination, checked (None without --push)."""
    args.destination = None
    if args.push is None:
        given = [option for option, value in (("--push-name", args.push_name), ("--push-label", args.push_label),
                                               ("--push-interval", args.push_interval)) if value]
        if given:
            raise errors.UsageError(f"{given[0]} goes with --push URL")
        return
    if args.dump:
        raise errors.UsageError("--push sends what a run samples: not with --dump (one read of the stacks)")
    if args.all and args.batch:
        raise errors.UsageError("--push sends what a run samples: give a PID (--all --batch only lists processes)")
    from .push.destination import EVERY_SECONDS, destination, plain_text_credentials

    args.destination = destination(args.push, args.push_name, args.push_interval or EVERY_SECONDS, args.push_label)
    if plain_text_credentials(args.destination):
        errors.say(f"pytop: warning: --push sends its credentials unencrypted to {args.destination.shown} "
                   "(http://, not https://)")


def check_all(args: argparse.Namespace, sources: int) -> None:
    """--all: the host's table, printed (--batch) or on screen."""
    if sources:
        raise errors.UsageError("--all is every Python process: give no PID, command, --demo or --core with it")
    if args.dump:
        raise errors.UsageError("--all goes with --batch (a table of the host's Python processes), or alone")
    if args.format not in (None, "text", "json"):
        raise errors.UsageError("--all prints a table of processes: --format text or json")
    if args.stats_file or args.subprocesses:
        raise errors.UsageError(f"{'--stats-file' if args.stats_file else '--subprocesses'} is for one process, "
                                "not with --all")


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
    from . import run

    if args.dump:
        return run.dump(args.pid_option or args.pid, args.json, args.blocking, args.core, args.executable,
                        args.sysroot, args.tasks, args.subprocesses, args.locals, args.native)
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
