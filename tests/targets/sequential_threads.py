"""Target: one short-lived thread after another (0.3 s each), forever. glibc hands each new
thread the previous one's pthread structure, so they share a Python thread id."""

import sys
import threading
import time

from report import ready, thread_info


def nap():
    time.sleep(0.3)


ready({"threads": {"main": thread_info(sys._getframe())}})
i = 0
while True:
    worker = threading.Thread(target=nap, name=f"worker-{i}")
    worker.start()
    worker.join()
    i += 1
