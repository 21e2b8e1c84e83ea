"""Shared by the target scripts: what the target itself knows about its stacks, as JSON.

A target prints one JSON line on stdout once it is in the state a test wants to observe (the
readiness handshake), then blocks. Frames are listed innermost first, as pytop lists them. The
line lists the TIDs of the threads that then go to sleep ("sleepers"): the test waits until the
kernel shows each of them in its sleep syscall, so no thread is still on its way there.

The targets the reading tests start run under 2.7 too: no f-strings or Python-3-only syntax in
them, and what 2.7 lacks is filled in here (get_ident, daemon threads, a monotonic clock).
"""

import json
import sys
import threading
import time

get_ident = getattr(threading, "get_ident", None) or threading._get_ident  # 2.7: threading._get_ident
monotonic = getattr(time, "monotonic", time.time)  # 2.7 has no monotonic clock


def daemon_thread(target, name=None, args=()):
    """A started daemon thread (2.7's Thread takes no daemon=)."""
    thread = threading.Thread(target=target, name=name, args=args)
    thread.daemon = True
    thread.start()
    return thread


def frames_of(frame):
    out = []
    while frame is not None:
        code = frame.f_code
        out.append({
            "function": getattr(code, "co_qualname", code.co_name),
            "filename": code.co_filename,
            "line": frame.f_lineno,
        })
        frame = frame.f_back
    return out


def gettid():
    """The kernel's TID before threading.get_native_id (3.8): the gettid system call."""
    import ctypes
    return ctypes.CDLL(None, use_errno=True).syscall(186)  # SYS_gettid on x86-64


def thread_info(frame=None):
    info = {"thread_id": get_ident(), "name": threading.current_thread().name}
    info["native_id"] = threading.get_native_id() if hasattr(threading, "get_native_id") else gettid()
    if frame is not None:
        info["frames"] = frames_of(frame)
    return info


def own_command():
    """The command that started this interpreter, up to the script (a python run through
    ld-linux is started the same way again)."""
    try:
        with open("/proc/self/cmdline", "rb") as f:
            parts = [p.decode() for p in f.read().split(b"\0") if p]
        return parts[:parts.index(sys.argv[0])]
    except (OSError, ValueError):
        return [sys.executable]  # in a chroot without /proc


def ready(document):
    sys.stdout.write(json.dumps(document) + "\n")
    sys.stdout.flush()


class Collector:
    """Gathers one entry per named thread and reports once all `expected` have arrived. Every
    thread but the `busy` ones goes to sleep right after its add().

    A busy thread that reported itself would be caught inside the report (a core dumped then
    shows it in `ready`, not in its loop): the first thread that is not busy waits in its add()
    for the others and reports once every busy thread is back in its own code. (If all are
    busy, the last to arrive reports at once.)"""

    def __init__(self, expected, extra=None, busy=()):
        self.expected = set(expected)
        self.busy = set(busy)
        self.entries = {}
        self.frames = {}
        self.extra = extra or {}
        self.lock = threading.Lock()
        self.reporter = None

    def add(self, key, frame):
        with self.lock:
            self.entries[key] = thread_info(frame)
            self.frames[key] = frame
            complete = set(self.entries) == self.expected
            if self.reporter is None and key not in self.busy:
                self.reporter = key
            waits = self.reporter == key
            if complete and self.reporter is None:
                self._report()
        while waits:
            with self.lock:
                if set(self.entries) == self.expected and all(self._back_home(name) for name in self.busy):
                    self._report()
                    return
            time.sleep(0.001)

    def _back_home(self, name):
        """Whether busy thread `name` runs in its frame or below it, not in this module's code."""
        current = sys._current_frames().get(self.entries[name]["thread_id"])
        while current is not None and current is not self.frames[name]:
            if current.f_globals is globals():  # in add(), ready(), ...
                return False
            current = current.f_back
        return current is not None

    def _report(self):
        names = {t.ident: t.name for t in threading.enumerate()}
        for info in self.entries.values():
            info["name"] = names.get(info["thread_id"], info["name"])
        sleepers = [info.get("native_id") for name, info in self.entries.items() if name not in self.busy]
        ready(dict(self.extra, threads=self.entries, version=list(sys.version_info[:3]), sleepers=sleepers))
