"""Target: Python children that multiprocessing starts without exec (argv[1]: its start method,
fork or forkserver; forkserver's workers are grandchildren, children of its server), beside a
child that exits at once and one left unreaped (a zombie). Two workers busy in child_work();
reports their pids once both run."""

import multiprocessing
import os
import subprocess
import sys
import time

from report import ready


def child_work(parent, started):
    started.release()
    x = 0
    while True:
        x = (x + 1) % 1000
        if x == 0 and os.getppid() != parent and not os.path.exists(f"/proc/{parent}"):
            return  # the parent was killed: do not outlive it


if __name__ == "__main__":
    context = multiprocessing.get_context(sys.argv[1])
    subprocess.run([sys.executable, "-c", "pass"], check=False)  # exits at once
    started = context.Semaphore(0)
    workers = [context.Process(target=child_work, args=(os.getpid(), started), daemon=True) for _ in range(2)]
    for worker in workers:
        worker.start()
    for _ in workers:
        started.acquire()
    zombie = context.Process(target=time.sleep, args=(0,))  # started last: no later start() reaps it
    zombie.start()
    time.sleep(0.2)
    ready({"workers": [w.pid for w in workers], "zombie": zombie.pid, "version": list(sys.version_info[:3])})
    time.sleep(1e6)
