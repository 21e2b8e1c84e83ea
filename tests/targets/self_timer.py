"""Shared by the self-timing targets (self_timed.py, deep_random.py): each timed call logged
with its thread's CPU clock, the truth pytop's split among functions is held against.

enter() and leave(function, mark) around a call append (function, TID, CPU at its start, CPU at
its end, own) to LOG: CPU times are the calling thread's clock (CLOCK_THREAD_CPUTIME_ID, the
kernel's count for that thread, in seconds), own is the call's CPU less that of the timed calls
it made. On SIGUSR2 the main thread prints the log as one JSON line (install_dump()). Runs
under 2.7 too (its clock through ctypes).
"""

import collections
import functools
import signal
import threading
import time

from report import ready, thread_info

if hasattr(time, "clock_gettime"):
    # A C callable: reading the clock makes no Python frame of its own to be sampled in.
    thread_cpu = functools.partial(time.clock_gettime, time.CLOCK_THREAD_CPUTIME_ID)
else:  # 2.7
    import ctypes

    class _timespec(ctypes.Structure):
        _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]

    _clock_gettime = ctypes.CDLL("librt.so.1", use_errno=True).clock_gettime

    def _clock(which):
        ts = _timespec()
        _clock_gettime(which, ctypes.byref(ts))
        return ts.tv_sec + ts.tv_nsec * 1e-9

    def thread_cpu():
        return _clock(3)  # CLOCK_THREAD_CPUTIME_ID


LOG = collections.deque(maxlen=100000)  # ten times what a test's window makes
local = threading.local()
DONE = {}  # TID -> calls of its outermost timed function finished


def enter():
    """Start timing the caller: its thread's CPU time now, and room for its timed callees'."""
    stack = getattr(local, "children", None)
    if stack is None:
        stack = local.children = []
        local.tid = thread_info()["native_id"]
    stack.append(0.0)
    return thread_cpu()


def leave(function, start):
    end = thread_cpu()
    total = end - start
    children = local.children.pop()
    if local.children:
        local.children[-1] += total
    LOG.append((function, local.tid, start, end, total - children))
    if not local.children:
        DONE[local.tid] = DONE.get(local.tid, 0) + 1


def dump(*_):
    """The log, once every call under way has finished: the last calls of a test's window may
    still be running when it asks (the target was frozen in their middle)."""
    asked = dict(DONE)
    while any(DONE.get(tid, 0) <= count for tid, count in asked.items()):
        time.sleep(0.01)
    ready({"log": list(LOG)})



def install_dump():
    signal.signal(signal.SIGUSR2, dump)
