"""Target: starts COUNT (argv[1], default 200) threads at once, each computing a moment and
ending, waits for them, and again, for ever: threads that appear and end in the middle of
pytop's samples. Reports once the first burst has started."""

import sys

from report import daemon_thread, ready

COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 200


def work():
    sum(range(2000))


first = True
while True:
    threads = [daemon_thread(work) for _ in range(COUNT)]
    if first:
        ready({"count": COUNT})
        first = False
    for thread in threads:
        thread.join()
