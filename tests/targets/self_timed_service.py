"""Target: pytop's demo workload (pytop/demo.py) with its functions timing themselves on their
own thread's CPU clock (self_timer.py), the truth the split among a service's functions is held
against: more threads want the GIL than there are cores, and request handlers nap now and then.

- three handlers: handle_request() -> parse_request() (json.loads), price_order() (Python),
  render_response() (json.dumps), and one request in ten query_database(), a 5 ms sleep: its
  CPU is the wake-up's and the GIL taken back, microseconds, however long the thread then
  waits for the GIL or a CPU
- reports: monthly_report(), a pure Python loop holding the GIL
- a producer hands out work and naps 50 ms (the demo's main thread); the main thread prints
  the log

Orders are larger than the demo's, so that a call lasts milliseconds of CPU (a clock read is a
system call where the kernel may preempt the thread: read too often, it becomes where threads
are found waiting). On SIGUSR2 the main thread prints the log as one JSON line. Runs under 2.7
too.
"""

import json
import random
import sys
import threading
import time

try:
    import queue
except ImportError:  # 2.7
    import Queue as queue

from report import daemon_thread, ready
from self_timer import LOG, enter, install_dump, leave

ITEMS = int(sys.argv[1]) if len(sys.argv) > 1 else 2000  # the demo's orders have 300
ORDERS = [{"id": i, "items": [{"sku": "SKU-%d" % j, "qty": j % 5 + 1, "price": 9.99 + j} for j in range(ITEMS)]}
          for i in range(50)]


def parse_request(payload):
    mark = enter()
    order = json.loads(payload)
    leave("parse_request", mark)
    return order


def price_order(order):
    mark = enter()
    total = 0.0
    for item in order["items"]:
        total += item["qty"] * item["price"]
    leave("price_order", mark)
    return total


def render_response(order, total):
    mark = enter()
    text = json.dumps({"order": order["id"], "total": round(total, 2), "items": order["items"]})
    leave("render_response", mark)
    return text


def query_database(seconds):
    time.sleep(seconds)


def handle_request(payload, chance):
    mark = enter()
    order = parse_request(payload)
    if chance < 0.1:
        # Timed from here: the clock reads are system calls, where the kernel preempts a thread
        # that used up its slice, and samples find threads where they were preempted. Read
        # inside the nap, they would put it in the nap's frames.
        nap = enter()
        query_database(0.005)
        leave("query_database", nap)
    render_response(order, price_order(order))
    leave("handle_request", mark)


def request_handler(jobs):
    chances = random.Random(1)
    while True:
        handle_request(jobs.get(), chances.random())


def monthly_report():
    mark = enter()
    found = 0
    for n in range(50000, 52000):
        for d in range(2, int(n ** 0.5) + 1):
            if n % d == 0:
                break
        else:
            found += 1
    leave("monthly_report", mark)
    return found


def report_worker():
    while True:
        monthly_report()
        time.sleep(0.05)


def producer(jobs, payloads):
    while True:
        for payload in payloads:
            jobs.put(payload)
        time.sleep(0.05)


install_dump()
jobs = queue.Queue(maxsize=100)
for i in range(3):
    daemon_thread(request_handler, name="handler-%d" % i, args=(jobs,))
daemon_thread(report_worker, name="reports")
daemon_thread(producer, name="producer", args=(jobs, [json.dumps(order) for order in ORDERS]))
while len(set(entry[1] for entry in list(LOG))) < 4:
    time.sleep(0.01)  # every thread at work
ready({"threads": [thread.name for thread in threading.enumerate()]})
# Short naps: the log is printed from a signal handler, which runs when the main thread wakes.
while True:
    time.sleep(0.05)
