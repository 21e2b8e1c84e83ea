"""Which of pytop's options go together, checked before anything starts: a wrong combination
is one clear line (errors.UsageError) and exit status 2, never a traceback or a half-started run.
cli.py parses; this says yes or why not, and fills in what follows from the choice (the mode,
the sort, the --push destination)."""

from __future__ import annotations

import argparse
import os
import sys

from . import errors
from .record.bounds import DEFAULT_MAX_SIZE
from .report.compare import CHANGE_SORT_CHOICES
from .report.table import SORT_CHOICES


def mode_of(args: argparse.Namespace) -> str:
    """--mode, or the py-spy-style flag that names one."""
    named = [m for m, given in (("wall", args.idle), ("gil", args.gil)) if given]
    if args.mode:
        named.append(args.mode)
    if len(set(named)) > 1:
        raise errors.UsageError(f"--idle, --gil and --mode ask for different modes: {', '.join(sorted(set(named)))}")
    return named[0] if named else "cpu"


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
    live = not (args.batch or args.dump or args.core or args.recording is not None or args.diff)
    if args.record_max_size is not None and args.record is None and not (live and args.history):
        raise errors.UsageError("--record-max-size goes with --record FILE, or the live view's memory of its past")
    if not args.history and not (live and args.record is None):
        raise errors.UsageError("--no-history is for a live view without --record (which keeps its past in the file)")
    if not (args.dump or args.batch) and (problem := terminal_problem()):
        raise errors.UsageError(problem)
    if args.stats_file and args.dump:
        raise errors.UsageError("--stats-file goes with the live view or --batch (a dump takes one sample)")
    if (args.dump or args.batch) and not args.output and sys.stdout is None:
        raise errors.UsageError("standard output is closed: open it, or give --output FILE (with --batch)")
    check_push(args)
    # (the bound in bytes, or None for none)
    args.record_max_size = DEFAULT_MAX_SIZE if args.record_max_size is None else args.record_max_size or None
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
