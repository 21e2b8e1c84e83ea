"""Target: busy in before_exec() once it is ready, until SIGUSR1; then it execs argv[1]:
`python` (this interpreter, started as it was, on this file again, busy in after_exec()) or
`sleep` (a program that is not Python)."""

import os
import signal
import sys

from report import own_command, ready, thread_info

told = []
signal.signal(signal.SIGUSR1, lambda *_: told.append(True))


def before_exec():
    while not told:
        pass


def after_exec():
    while True:
        pass


if sys.argv[1:2] == ["after"]:
    after_exec()
ready({"main": thread_info()})
before_exec()
if sys.argv[1] == "python":
    command = own_command()
    os.execv(command[0], [*command, sys.argv[0], "after"])
os.execv("/bin/sleep", ["sleep", "600"])
