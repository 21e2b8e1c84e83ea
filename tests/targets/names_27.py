# -*- coding: utf-8 -*-
"""Target for 2.7 only: thread names are str, that is bytes, in whatever encoding the program
used: UTF-8, Latin-1, and a long one that the reader cuts (inside a UTF-8 character)."""

import sys
import time

from report import daemon_thread, ready

NAMES = {"utf-8": "caf\xc3\xa9", "latin-1": "\xe9t\xe9", "long": "x" + "\xc3\xa9" * 300}
threads = dict((key, daemon_thread(time.sleep, name, (1e6,))) for key, name in NAMES.items())
ready({"threads": dict((key, {"thread_id": thread.ident}) for key, thread in threads.items())})
sys.stdout.flush()
time.sleep(1e6)
