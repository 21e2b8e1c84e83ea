"""Errors pytop reports to its user: each carries a message fit to print as is.

The command line prints `pytop: <message>` and exits non-zero for any PytopError; anything else
escaping is a bug in pytop.
"""

from __future__ import annotations


class PytopError(Exception):
    """A failure the user can act on; str(error) is the whole explanation."""

    exit_code = 1


class UsageError(PytopError):
    exit_code = 2


class NoSuchProcess(PytopError):
    pass


class PermissionDenied(PytopError):
    pass


class NotPython(PytopError):
    pass


class UnsupportedVersion(PytopError):
    pass


class TargetExited(PytopError):
    pass


class AttachFailed(PytopError):
    """The process is Python, but its runtime could not be found or read."""


PERMISSION_ADVICE = (
    "run pytop as root (sudo), give it CAP_SYS_PTRACE (sudo setcap cap_sys_ptrace+ep $(which python3)), "
    "or allow tracing of your own processes with "
    "'echo 0 | sudo tee /proc/sys/kernel/yama/ptrace_scope'; in a container, start it with "
    "--cap-add SYS_PTRACE"
)


def permission_denied(pid: int, what: str) -> PermissionDenied:
    return PermissionDenied(f"permission denied {what} process {pid}: {PERMISSION_ADVICE}")
