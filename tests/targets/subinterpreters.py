"""Target: two subinterpreters, each with its own GIL (CPython 3.12+), each running a thread
that spins (worker1) and one that sleeps (nested_func under worker2), beside the main
interpreter's threads. As CPython's test_external_inspection's subinterpreter tests: every
interpreter's threads, with their frames and their own GIL holders. Reports once all four
subinterpreter threads have said they are in place (through a pipe: file descriptors are the
process's, shared by every interpreter)."""

import os
import sys
import threading

from report import ready, thread_info

try:
    from concurrent import interpreters  # 3.14+

    def run(code):
        interpreters.create().exec(code)
except ImportError:
    try:
        import _interpreters as low_level  # 3.13
    except ImportError:
        import _xxsubinterpreters as low_level  # 3.12

    def run(code):
        low_level.run_string(low_level.create(), code)

CODE = """
import os, threading, time

def worker1():
    os.write({fd}, b"s")
    x = 0
    while True:
        x += 1

def nested_func():
    os.write({fd}, b"n")
    time.sleep(1e6)

def worker2():
    nested_func()

threading.Thread(target=worker1).start()  # subinterpreters refuse daemon threads
worker2()
"""

read_end, write_end = os.pipe()
for _ in range(2):
    threading.Thread(target=run, args=(CODE.format(fd=write_end),), daemon=True).start()
arrived = b""
while len(arrived) < 4:
    arrived += os.read(read_end, 4 - len(arrived))
ready({"main": thread_info(), "version": list(sys.version_info[:3])})
threading.Event().wait()
