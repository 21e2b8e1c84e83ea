"""Target: spends its CPU in a function named argv[1], beside a thread that naps; with argv[2] =
N, it first forks N children that do the same (a pool: one command line, a parent and its
workers). Reports once every process spins, with the children's pids."""

import os
import sys
import time

from report import daemon_thread, ready

NAME = sys.argv[1]
CHILDREN = int(sys.argv[2]) if len(sys.argv) > 2 else 0

namespace = {}
exec("def " + NAME + "():\n    x = 0\n    while True:\n        x = (x + 1) % 1000\n", namespace)
spin = namespace[NAME]


def nap(parent=None):
    while True:
        time.sleep(0.01)
        if parent is not None and os.getppid() != parent:
            os._exit(0)  # the parent was killed (tests kill it): a child does not outlive it


children = []
for _ in range(CHILDREN):
    pid = os.fork()
    if pid == 0:
        daemon_thread(nap, args=(os.getppid(),))
        spin()
    children.append(pid)
daemon_thread(nap)
ready({"children": children})
spin()
