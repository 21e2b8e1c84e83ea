"""Target: an asyncio task whose await chain changes all the time (CPython 3.14+).

    Task-1 main
    ├── hopper   (hop > climb > descend > asyncio.sleep(0), over and over: a resumption every
    │             few microseconds, so a reader often meets a chain in the middle of moving)
    └── waiter   (waits on an Event forever: a chain that never moves)

Prints one JSON line once both tasks have started (the readiness handshake)."""

import asyncio
import json
import sys


async def descend():
    await asyncio.sleep(0)


async def climb():
    await descend()


async def hop():
    while True:
        await climb()


async def wait_forever(event):
    await event.wait()


def report():
    sys.stdout.write(json.dumps({"tasks": ["hopper", "waiter"], "version": list(sys.version_info[:3])}) + "\n")
    sys.stdout.flush()


async def main():
    tasks = [asyncio.create_task(hop(), name="hopper"),
             asyncio.create_task(wait_forever(asyncio.Event()), name="waiter")]
    asyncio.get_running_loop().call_later(0.2, report)
    await asyncio.gather(*tasks)


asyncio.run(main())
