"""Starting a command for pytop to watch (`pytop -- python app.py`, `pytop --demo`), and
attaching once its Python runtime is up."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import tempfile
import time

from .. import errors, files
from .attach import Target, attach

STARTUP_TIMEOUT = 15.0
PR_SET_PDEATHSIG = 1


def _end_with_parent() -> None:
    """In the child, before the program starts: SIGTERM when pytop dies, however it dies."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class Child:
    """A command pytop started; ended (politely, then not) when pytop is done with it."""

    def __init__(self, argv: list[str], quiet: bool, log: str | None = None):
        """quiet: its output would scribble over the live view, so it goes to `log`, or to a
        temporary log file; otherwise it goes to pytop's stderr (pytop's stdout carries the
        report)."""
        self.argv = argv
        self.log_path: str | None = None
        self.temporary_log = False
        if quiet and log:
            fd = files.open_fd(log)  # 0600, never through a link, never a FIFO
            self.log_path = log
        elif quiet:
            fd, self.log_path = tempfile.mkstemp(prefix="pytop-child-", suffix=".log")
            self.temporary_log = True
        else:
            fd = os.dup(sys.stderr.fileno())
        try:
            # A session of its own: at the end, the whole group goes (a program's children too).
            # And it is told to end if pytop itself dies (SIGKILL), not left behind.
            self.process = subprocess.Popen(argv, stdout=fd, stderr=fd, stdin=subprocess.DEVNULL,
                                            start_new_session=True, preexec_fn=_end_with_parent)
        except OSError as exc:
            raise errors.UsageError(f"cannot start {argv[0]}: {exc.strerror}") from None
        finally:
            os.close(fd)

    @property
    def pid(self) -> int:
        return self.process.pid

    def status(self, wait: float = 0.0) -> int | None:
        """Its exit status once it has ended by itself (-N: killed by signal N), else None.
        `wait`: how long to give a process that is ending (its memory gone, not yet reaped)."""
        try:
            return self.process.wait(wait) if wait else self.process.poll()
        except subprocess.TimeoutExpired:
            return None

    def finish_log(self) -> str | None:
        """Once it has ended: the file that holds its output, None if there is none to keep
        (an empty temporary log is removed)."""
        if self.log_path and self.temporary_log:
            try:
                if os.path.getsize(self.log_path) == 0:
                    os.unlink(self.log_path)
                    return None
            except OSError:
                return None
        return self.log_path

    def end(self) -> None:
        """End it and everything it started (its process group), politely, then not. The group
        may outlive the program itself (children it left), so it is asked either way."""
        self._signal_group(signal.SIGTERM)
        try:
            self.process.wait(2)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + 2
        while self._group_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        self._signal_group(signal.SIGKILL)
        try:
            self.process.wait(2)
        except subprocess.TimeoutExpired:
            pass

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _group_alive(self) -> bool:
        try:
            os.killpg(self.process.pid, 0)
            return True
        except (ProcessLookupError, PermissionError):
            return False


def attach_when_ready(child: Child, timeout: float = STARTUP_TIMEOUT, not_python_after: float | None = None
                      ) -> Target | None:
    """Attach as soon as the child's Python runtime can be read. not_python_after: seconds after
    which a child that still does not look like Python is taken not to be (None is returned)."""
    start = time.monotonic()
    deadline = start + timeout
    last: errors.PytopError | None = None
    while time.monotonic() < deadline:
        if not_python_after is not None and isinstance(last, errors.NotPython) and \
                time.monotonic() - start >= not_python_after and not _named_python(child.pid):
            return None
        if child.process.poll() is not None:
            raise errors.TargetExited(
                f"{child.argv[0]} exited (status {child.process.returncode}) before pytop could attach")
        try:
            target = attach(child.pid)
        except (errors.NotPython, errors.AttachFailed, errors.NoSuchProcess) as exc:
            last = exc  # not loaded or not initialised yet
            time.sleep(0.05)
            continue
        if _interpreter_ready(target):
            return target
        target.close()
        time.sleep(0.05)
    raise last or errors.AttachFailed(f"{child.argv[0]} did not start Python within {timeout:.0f} s")


def _named_python(pid: int) -> bool:
    """Whether the program's executable is named like an interpreter (python3.12, pypy...): one
    still loading on a busy host is not taken for a program that is not Python."""
    try:
        name = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return False
    return "python" in name or "pypy" in name


def _interpreter_ready(target: Target) -> bool:
    from ..native import SampleError

    try:
        return bool(target.unwinder.sample().threads)
    except SampleError:
        return False


def demo_command() -> list[str]:
    return [sys.executable, "-m", "pytop.demo"]
