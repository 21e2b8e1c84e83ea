"""Target: an asyncio program with named tasks in a tree (CPython 3.14+ for pytop --async).

    Task-1 main
    ├── crunch        (CPU: spins in crunch_numbers, yielding to the loop now and then)
    ├── parent        (a TaskGroup of child-1 and child-2, which wait on an Event forever)
    │   ├── child-1
    │   └── child-2
    └── (unnamed)     (waits on the same Event)

Prints one JSON line once every task is waiting or spinning (the readiness handshake): the
task names, and the first line of the spinning loop."""

import asyncio
import json
import sys

forever = None


def crunch_numbers(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


async def crunch():
    while True:
        crunch_numbers(20000)
        await asyncio.sleep(0)


async def child():
    await forever.wait()


async def parent():
    async with asyncio.TaskGroup() as group:
        group.create_task(child(), name="child-1")
        group.create_task(child(), name="child-2")


LONG_NAME = "long-" + "n" * 250  # 255 characters: kept whole


def report():
    sys.stdout.write(json.dumps({"tasks": ["crunch", "parent", "child-1", "child-2", LONG_NAME],
                                 "version": list(sys.version_info[:3])}) + "\n")
    sys.stdout.flush()


async def main():
    global forever
    forever = asyncio.Event()
    tasks = [asyncio.create_task(crunch(), name="crunch"), asyncio.create_task(parent(), name="parent"),
             asyncio.create_task(child()), asyncio.create_task(child(), name=LONG_NAME)]
    asyncio.get_running_loop().call_later(0.3, report)  # by then main waits in gather, the rest wait or spin
    await asyncio.gather(*tasks)


asyncio.run(main())
