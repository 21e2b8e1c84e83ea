"""Where a report goes: stdout, or --output FILE (and --stats-file's figures), with a failure
said in one line."""

from __future__ import annotations

import json
import sys

from . import errors, files


def write_report(data: bytes) -> None:
    """The report on stdout; a stdout that cannot take it is said in one line (a pipe whose reader
    left is the caller's to take quietly)."""
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise errors.PytopError(f"cannot write the report: {exc.strerror or exc}") from None


def deliver(report: bytes, output: str | None) -> None:
    """A batch report to --output FILE, or to stdout."""
    if output:
        try:
            files.write_file(output, report)
        except OSError as exc:
            raise errors.UsageError(f"cannot write {output}: {exc.strerror}") from None
        errors.say(f"pytop: wrote {output}")
    else:
        write_report(report)


def write_statistics(path: str, statistics: dict[str, float]) -> None:
    try:
        files.write_file(path, json.dumps(statistics, indent=1).encode())
    except OSError as exc:
        raise errors.PytopError(f"cannot write {path}: {exc.strerror}") from None
