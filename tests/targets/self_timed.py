"""Target: threads whose functions time themselves with their own thread's CPU clock, the truth
pytop's split among functions is held against (a thread's CPU must land on its own functions).

- compressor: compress_block() -> zlib.compress (C; from 3.x it lets the GIL go)
- signer: sign_payload() -> hashlib.pbkdf2_hmac (C, the GIL let go)
- pyloop: spin_python(), a pure Python loop
- two request workers: handle_request() -> wrapper() (a decorator's, doing nothing) ->
  query_orders() (Python) and encode_orders() (marshal, C with the GIL held)
- napper: sleeps 2 ms, then tick() (a few microseconds)

Calls last about 10 ms of CPU: reading a thread's CPU clock is a system call that may let the
kernel preempt the thread, and a clock read every millisecond made the line of the read where
the threads were preempted most (a thread's own clock read is also where a profiler finds it
waiting for a CPU).

Every timed call appends (function, wall start, wall end, total, own) to the log: wall times on
CLOCK_MONOTONIC, total the calling thread's CPU time over the call (CLOCK_THREAD_CPUTIME_ID, the
kernel's count for that thread), own the total less that of the timed calls it made. On SIGUSR2
the main thread prints the last minute's log as one JSON line. Arguments: `gated` (the work
starts on SIGUSR1), and the names of the threads to run (all by default). Runs under 2.7 too (its clocks through ctypes).
"""

import collections
import functools
import hashlib
import marshal
import operator
import signal
import sys
import threading
import time
import zlib

from report import daemon_thread, ready, thread_info

GATED = "gated" in sys.argv[1:]

if hasattr(time, "clock_gettime"):
    # C callables: reading a clock makes no Python frame of its own to be sampled in.
    thread_cpu = functools.partial(time.clock_gettime, time.CLOCK_THREAD_CPUTIME_ID)
    monotonic = functools.partial(time.clock_gettime, time.CLOCK_MONOTONIC)
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

    def monotonic():
        return _clock(1)  # CLOCK_MONOTONIC


LOG = collections.deque(maxlen=400000)
local = threading.local()
go = threading.Event()


def enter():
    """Start timing the caller: (wall, cpu), and room for its timed callees' totals."""
    stack = getattr(local, "children", None)
    if stack is None:
        stack = local.children = []
    stack.append(0.0)
    return monotonic(), thread_cpu()


def leave(function, mark):
    cpu = thread_cpu()
    wall = monotonic()
    total = cpu - mark[1]
    children = local.children.pop()
    if local.children:
        local.children[-1] += total
    LOG.append((function, mark[0], wall, total, total - children))


def compress_block(data):
    mark = enter()
    zlib.compress(data, 6)
    leave("compress_block", mark)


def compressor():
    data = b"".join(str(i * 7919 % 10007).encode() for i in range(200000))
    go.wait()
    while True:
        compress_block(data)


def sign_payload(payload):
    mark = enter()
    hashlib.pbkdf2_hmac("sha256", payload, b"salt", 20000)
    leave("sign_payload", mark)


def signer():
    go.wait()
    while True:
        sign_payload(b"payload")


def spin_python():
    mark = enter()
    total = 0
    for i in range(200000):
        total += i * i % 7
    leave("spin_python", mark)


def pyloop():
    go.wait()
    while True:
        spin_python()


def logged(function):
    def wrapper(*args):
        mark = enter()
        result = function(*args)
        leave("wrapper", mark)
        return result
    return wrapper


def query_orders(count):
    mark = enter()
    orders = []
    for i in range(count):
        orders.append({"id": i, "total": (i * 37) % 101, "items": [i % 3, i % 5]})
    orders.sort(key=operator.itemgetter("total"))
    leave("query_orders", mark)
    return orders


def encode_orders(orders):
    mark = enter()
    for _ in range(8):
        data = marshal.dumps(orders)
    leave("encode_orders", mark)
    return data


@logged
def handle_steps(count):
    return encode_orders(query_orders(count))


def handle_request(count):
    mark = enter()
    handle_steps(count)
    leave("handle_request", mark)


def worker():
    go.wait()
    while True:
        handle_request(10000)


def tick():
    mark = enter()
    sum(range(50))
    leave("tick", mark)


def napper():
    go.wait()
    while True:
        time.sleep(0.002)
        tick()


def dump(*_):
    """The last minute's calls (a test's window and then some)."""
    since = monotonic() - 60
    ready({"log": [entry for entry in list(LOG) if entry[2] >= since]})


signal.signal(signal.SIGUSR1, lambda *_: go.set())
signal.signal(signal.SIGUSR2, dump)
threads = {}
WORKERS = (compressor, signer, pyloop, worker, napper)
chosen = [w for w in WORKERS if w.__name__ in sys.argv[1:]] or WORKERS
for run in chosen:
    daemon_thread(run, name=run.__name__)
    if run is worker:  # two request workers
        daemon_thread(run, name="worker-2")
for thread in threading.enumerate():
    threads[thread.name] = {"thread_id": thread.ident}
threads["MainThread"] = thread_info()
ready({"threads": threads, "version": list(sys.version_info[:3])})
if not GATED:
    go.set()
# Short naps: a signal the kernel gives another thread (one still waking from a SIGSTOP) runs
# its Python handler only when the main thread wakes.
while True:
    time.sleep(0.05)
