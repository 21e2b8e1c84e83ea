"""Target: a parent that starts CHILDREN (argv[1], default 2) Python children, each busy in
child_work(); it reports once every child is running, then waits. Children are started with
the very command line that started the parent (so a python run through ld-linux starts its
children the same way)."""

import os
import subprocess
import sys
import time

from report import Collector, own_command


def child_work():
    parent = os.getppid()
    x = 0
    while True:
        x = (x + 1) % 1000
        if x == 0 and os.getppid() != parent:
            return  # the parent was killed (tests kill it with SIGKILL): do not outlive it


if sys.argv[1:2] == ["child"]:
    print("started", flush=True)
    child_work()
else:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    children = [subprocess.Popen([*own_command(), sys.argv[0], "child"], stdout=subprocess.PIPE)
                for _ in range(count)]
    for child in children:
        child.stdout.readline()
    collector = Collector(["main"], extra={"children": [child.pid for child in children]})
    collector.add("main", sys._getframe()) or time.sleep(1e6)
