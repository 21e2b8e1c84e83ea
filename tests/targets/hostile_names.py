"""Target: a program whose names attack its viewer's terminal and reports. A thread, a function
(its name and qualified name) and a file name carry escape sequences (OSC 2 sets a terminal's
title, OSC 52 its clipboard, ESC[2J clears it), a newline that would forge a line of collapsed
stacks, and a bidirectional override; so does argv[1:], as the test passes it. The function
runs in the thread, busy."""

import sys
import threading
import types

from report import daemon_thread, ready

EVIL = "\x1b]2;pwned\x07\x1b]52;c;cHduZWQ=\x07\x1b[2J\u202e"
FORGED = "\nforged;frame 999999"


def spin():
    while True:
        sum(range(1000))


code = spin.__code__.replace(co_name="spin" + EVIL + FORGED, co_filename="evil" + EVIL + FORGED + ".py")
if hasattr(code, "co_qualname"):
    code = code.replace(co_qualname="spin" + EVIL + FORGED)
evil_spin = types.FunctionType(code, globals())
thread = daemon_thread(evil_spin, name="worker" + EVIL + FORGED)
ready({"thread": thread.name, "version": list(sys.version_info[:3])})
threading.Event().wait()
