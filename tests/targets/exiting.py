"""Target: busy in several threads for SECONDS (argv[1], default 0.5), or until SIGUSR1,
then exits with STATUS (argv[2], default 0; -N: killed by signal N)."""

import os
import signal
import sys
import threading

from report import monotonic, ready

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5
STATUS = int(sys.argv[2]) if len(sys.argv) > 2 else 0
deadline = monotonic() + SECONDS


def stop_now(signum, frame):
    global deadline
    deadline = 0


signal.signal(signal.SIGUSR1, stop_now)


def churn(depth):
    if depth:
        return churn(depth - 1)
    return sum(i * i for i in range(200))


def work():
    while monotonic() < deadline:
        churn(20)


threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads:
    t.start()
ready({"threads": {}})
for t in threads:
    while t.is_alive():  # 2.7 runs signal handlers only between the main thread's bytecodes:
        t.join(0.05)     # a join with no timeout would hold SIGUSR1's off until the end
if STATUS < 0:
    os.kill(os.getpid(), -STATUS)
sys.exit(STATUS)
