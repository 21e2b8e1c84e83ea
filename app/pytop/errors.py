"""Errors pytop reports to its user: each carries a message fit to print as is.

The command line prints `pytop: <message>` and exits non-zero for any PytopError; anything else
escaping is a bug in pytop.
"""

from __future__ import annotations

import os
import sys


def say(line: str) -> None:
    """One line on stderr, if there is a stderr that takes it (it may be closed, or full)."""
    if sys.stderr is not None:
        try:
            print(line, file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass


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


class Interrupted(PytopError):
    """A signal asked pytop to end (SIGTERM, SIGHUP): it ends, and what it started with it."""

    def __init__(self, signum: int):
        import signal

        super().__init__(f"ended by {signal.Signals(signum).name}")
        self.exit_code = 128 + signum


class ReadStopped(Exception):
    """A read its asker no longer wants, stopped between two of its steps (the d panel closed):
    nothing to tell the user, so not a PytopError."""


class AttachFailed(PytopError):
    """The process is Python, but its runtime could not be found or read."""


def _ptrace_scope() -> int | None:
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _owner(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


CAP_SYS_PTRACE = 19


def _has_ptrace_capability() -> bool | None:
    """Whether this process has CAP_SYS_PTRACE in effect (None: cannot tell)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> CAP_SYS_PTRACE & 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


def permission_advice(pid: int) -> str:
    """What to do about a refused read, for the situation at hand."""
    owner, scope = _owner(pid), _ptrace_scope()
    if scope == 3:
        return ("kernel.yama.ptrace_scope is 3, which forbids reading any other process until the machine "
                "restarts with a lower setting")
    if _has_ptrace_capability():
        return ("the kernel refused although pytop has CAP_SYS_PTRACE: the process may have made itself "
                "undumpable (prctl PR_SET_DUMPABLE, as setuid programs and some init processes do), run in a "
                "user namespace that is not below pytop's (run pytop in the host's namespaces), or be "
                "guarded by a security module (SELinux, AppArmor)")
    if os.geteuid() == 0:
        return ("pytop runs as root but without CAP_SYS_PTRACE; in a container, start it with "
                "--cap-add SYS_PTRACE (docker) or the SYS_PTRACE capability (Kubernetes)")
    if owner is not None and owner != os.geteuid():
        return (f"the process belongs to another user (uid {owner}); run pytop as that user "
                "or with sudo")
    if scope is not None and scope > 0:
        return (f"kernel.yama.ptrace_scope is {scope}, which only lets debuggers read their own "
                "children; run pytop with sudo, or allow it with "
                "'echo 0 | sudo tee /proc/sys/kernel/yama/ptrace_scope'")
    return "run pytop with sudo or give it CAP_SYS_PTRACE"


def refusal_expected(pid: int, denied: bool) -> str | None:
    """Why the kernel will refuse pytop's reads of process `pid`, foreseen without trying
    (`denied`: its /proc files were refused already); None if it will not."""
    scope, capable = _ptrace_scope(), _has_ptrace_capability()
    if denied or scope == 3 or (scope is not None and scope > 0 and not capable):
        return f"cannot read it: {permission_advice(pid)}"
    return None


def permission_denied(pid: int, what: str) -> PermissionDenied:
    return PermissionDenied(f"permission denied {what} process {pid}: {permission_advice(pid)}")
