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

Every timed call is logged with its thread's CPU clock (self_timer.py); on SIGUSR2 the main
thread prints the log as one JSON line. Arguments: the names of the threads to run (all by
default). Runs under 2.7 too.
"""

import hashlib
import marshal
import operator
import sys
import threading
import time
import zlib

from report import daemon_thread, ready
from self_timer import LOG, enter, install_dump, leave

DATA = b"".join(str(i * 7919 % 10007).encode() for i in range(200000))  # the compressor's


def compress_block(data):
    mark = enter()
    zlib.compress(data, 6)
    leave("compress_block", mark)


def compressor():
    while True:
        compress_block(DATA)


def sign_payload(payload):
    mark = enter()
    hashlib.pbkdf2_hmac("sha256", payload, b"salt", 20000)
    leave("sign_payload", mark)


def signer():
    while True:
        sign_payload(b"payload")


def spin_python():
    mark = enter()
    total = 0
    for i in range(200000):
        total += i * i % 7
    leave("spin_python", mark)


def pyloop():
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
    while True:
        handle_request(10000)


def tick():
    mark = enter()
    sum(range(50))
    leave("tick", mark)


def napper():
    while True:
        time.sleep(0.002)
        tick()


install_dump()
WORKERS = (compressor, signer, pyloop, worker, napper)
chosen = [w for w in WORKERS if w.__name__ in sys.argv[1:]] or WORKERS
for run in chosen:
    daemon_thread(run, name=run.__name__)
    if run is worker:  # two request workers
        daemon_thread(run, name="worker-2")
while len(set(entry[1] for entry in list(LOG))) < len(chosen) + (worker in chosen):
    time.sleep(0.01)  # every thread at work
own_is_whole = {  # the function's callees are all C: its own time is all of its time
    "sign_payload": type(hashlib.pbkdf2_hmac) is type(len),  # 2.7 and early 3: Python, without OpenSSL's
}
ready({"threads": [thread.name for thread in threading.enumerate()], "version": list(sys.version_info[:3]),
       "own_is_whole": own_is_whole})
# Short naps: a signal the kernel gives another thread (one still waking from a SIGSTOP) runs
# its Python handler only when the main thread wakes.
while True:
    time.sleep(0.05)
