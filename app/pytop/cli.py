"""pytop's command line: arguments, pre-flight checks and wiring; errors become one clear line."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from . import __version__, errors


def parse_pid(text: str) -> int:
    try:
        pid = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a process id: {text!r}") from None
    if pid <= 0:
        raise argparse.ArgumentTypeError(f"not a process id: {text!r}")
    return pid


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pytop",
        description="A live, top-style view of where a running Python process spends its time.",
    )
    parser.add_argument("pid", nargs="?", type=parse_pid, help="process id of a running Python program")
    parser.add_argument("-p", "--pid", dest="pid_option", type=parse_pid, metavar="PID",
                        help="process id (same as the positional PID)")
    parser.add_argument("--dump", action="store_true", help="print every thread's stack once and exit")
    parser.add_argument("--json", action="store_true", help="with --dump: print one JSON object")
    parser.add_argument("--version", action="version", version=f"pytop {__version__}")
    return parser


def run_dump(pid: int, as_json: bool) -> int:
    from . import dump
    from .attach import attach
    from .unwinder import SampleError

    target = attach(pid)
    try:
        for _ in range(5):  # a torn read is retried; a target that keeps tearing is reported
            try:
                sample = target.unwinder.sample()
                break
            except SampleError as exc:
                last = exc
        else:
            raise errors.AttachFailed(f"cannot read the stacks of process {pid}: {last}")
        text = dump.as_json(target, sample, {}) if as_json else dump.as_text(target, sample, {})
    finally:
        target.close()
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    pid = args.pid_option or args.pid
    try:
        if args.json and not args.dump:
            raise errors.UsageError("--json goes with --dump")
        if pid is None:
            raise errors.UsageError("which process? give a PID")
        if args.dump:
            return run_dump(pid, args.json)
        raise errors.UsageError("the live view is not built yet; use --dump")
    except errors.PytopError as exc:
        print(f"pytop: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
