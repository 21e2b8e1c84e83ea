"""What every native handle shares: the status codes' meaning, the checks that pytop.h and the
Python records agree, and the errors a status becomes."""

from __future__ import annotations

import errno

from .. import errors
from .._native import lib
from ..core import records
from ..core.records import STATUS_NAMES

STATUS_ERRNO = {lib.PYTOP_ERR_GONE: errno.ESRCH, lib.PYTOP_ERR_PERMISSION: errno.EPERM}

# The plain records mirror the header's constants: check they agree.
assert (records.STACK_FRAMES, records.STACK_EMPTY, records.STACK_NATIVE, records.STACK_UNSEEN,
        records.STACK_OVERFLOW, records.STACK_TORN, records.STACK_UNPLACED, records.STACK_INCOMPLETE,
        records.STACK_COARSE) == (
    lib.PYTOP_STACK_FRAMES, lib.PYTOP_STACK_EMPTY, lib.PYTOP_STACK_NATIVE, lib.PYTOP_STACK_UNSEEN,
    lib.PYTOP_STACK_OVERFLOW, lib.PYTOP_STACK_TORN, lib.PYTOP_STACK_UNPLACED,
    lib.PYTOP_STACK_INCOMPLETE, lib.PYTOP_STACK_COARSE), "pytop.h and core/records.py disagree"
assert (records.DRAIN_ALIVE, records.DRAIN_NAMED, records.DRAIN_NATIVE, records.DRAIN_GIL) == (
    lib.PYTOP_DRAIN_ALIVE, lib.PYTOP_DRAIN_NAMED, lib.PYTOP_DRAIN_NATIVE, lib.PYTOP_DRAIN_GIL)
assert STATUS_NAMES[lib.PYTOP_ERR_STATE] == "not now" and STATUS_NAMES[lib.PYTOP_ERR_GONE] == "process gone"


class Closed(RuntimeError):
    """A handle was used after it was closed or handed to an engine."""


class SampleError(Exception):
    """One sample failed without the target being gone (a transient read, a torn structure)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def status_error(pid: int, status: int, message: str) -> Exception:
    if status == lib.PYTOP_ERR_GONE:
        return errors.TargetExited(f"process {pid} has exited")
    if status == lib.PYTOP_ERR_PERMISSION:
        return errors.permission_denied(pid, "reading the memory of")
    return SampleError(status, message or STATUS_NAMES.get(status, "sample failed"))
