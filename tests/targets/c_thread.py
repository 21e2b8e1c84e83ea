"""Target: a thread that runs no Python (made with pthread_create, as a C library makes its
workers) spinning in libc's pthread_spin_lock on a lock nobody releases, beside a Python thread
asleep. For --native: the spinner's time lands on pthread_spin_lock, not on one row for every
thread without Python. Reports its TID once it spins."""

import ctypes
import os
import sys
import time

from report import ready

libc = ctypes.CDLL(None)
lock = ctypes.c_int()
assert libc.pthread_spin_init(ctypes.byref(lock), 0) == 0 and libc.pthread_spin_lock(ctypes.byref(lock)) == 0  # held
thread = ctypes.c_ulong()
start = ctypes.cast(libc.pthread_spin_lock, ctypes.c_void_p)
assert libc.pthread_create(ctypes.byref(thread), None, start, ctypes.byref(lock)) == 0
tids = set(os.listdir("/proc/self/task")) - {str(os.getpid())}
while not tids:
    time.sleep(0.01)
    tids = set(os.listdir("/proc/self/task")) - {str(os.getpid())}
ready({"spinner": int(tids.pop()), "version": list(sys.version_info[:3])})
while True:
    time.sleep(1e6)
