"""Target: event loops in two interpreters (CPython 3.14+, for pytop --dump --async).

    main interpreter, main thread          subinterpreter, thread "sub-loop"
    Task-1 main                             Task-1 sub_main
    ├── main-a   (waits on an Event)        ├── sub-waiter   (waits on an Event)
    └── main-b   (waits on an Event)        └── sub-crunch   (computes, sleeping a little between)

The subinterpreter is created after the main one, so it heads the runtime's list of
interpreters. Its loop runs first and says so through a pipe (file descriptors are the
process's, shared by every interpreter); then the main loop starts. Prints one JSON line once
every task waits or computes (the readiness handshake): the task names by interpreter, and the
subinterpreter's id."""

import asyncio
import os
import sys
import threading
from concurrent import interpreters

from report import ready, thread_info

SUB_TASKS = ["sub-waiter", "sub-crunch"]
MAIN_TASKS = ["main-a", "main-b"]

SUB_CODE = """
import asyncio, os

async def wait_forever():
    await asyncio.Event().wait()

def crunch_numbers(n):
    total = 0
    for i in range(n):
        total += i * i
    return total

async def crunch():
    while True:
        crunch_numbers(20000)
        await asyncio.sleep(0.002)  # half a core, not a whole one

async def sub_main():
    tasks = [asyncio.create_task(wait_forever(), name="sub-waiter"), asyncio.create_task(crunch(), name="sub-crunch")]
    asyncio.get_running_loop().call_later(0.2, os.write, {fd}, b"1")  # by then they wait or compute
    await asyncio.gather(*tasks)

asyncio.run(sub_main())
"""


async def wait_forever(event):
    await event.wait()


async def main():
    event = asyncio.Event()
    tasks = [asyncio.create_task(wait_forever(event), name=name) for name in MAIN_TASKS]
    report = {"main": MAIN_TASKS, "sub": SUB_TASKS, "sub_interpreter": sub.id, "thread": thread_info(),
              "version": list(sys.version_info[:3])}
    asyncio.get_running_loop().call_later(0.3, ready, report)  # by then main waits in gather, the rest wait
    await asyncio.gather(*tasks)


read_end, write_end = os.pipe()
sub = interpreters.create()
threading.Thread(target=sub.exec, args=(SUB_CODE.format(fd=write_end),), name="sub-loop", daemon=True).start()
os.read(read_end, 1)  # the subinterpreter's task waits: its loop is up
asyncio.run(main())
