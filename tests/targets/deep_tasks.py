"""Target: asyncio structures deeper than any reader's bounds (CPython's
test_external_inspection TestFrameChainLimits): a coroutine awaiting itself 1,538 deep, and
16,385 tasks each awaiting the next. pytop must end cleanly, its bounds said, not hang.
Reports once the innermost of each waits."""

import asyncio
import sys

from report import ready

TASKS = 16385
DEPTH = 1538
waiting = []


async def nested(n, event):
    if n:
        return await nested(n - 1, event)
    waiting.append("nested")
    await event.wait()


async def link(n, event):
    if n:
        return await asyncio.create_task(link(n - 1, event), name=f"link-{n - 1}")
    waiting.append("link")
    await event.wait()


async def main():
    event = asyncio.Event()
    tasks = [asyncio.create_task(nested(DEPTH, event), name="nested"),
             asyncio.create_task(link(TASKS - 1, event), name=f"link-{TASKS - 1}")]
    while len(waiting) < 2:
        await asyncio.sleep(0.05)
    ready({"tasks": TASKS, "depth": DEPTH, "version": list(sys.version_info[:3])})
    await asyncio.gather(*tasks)


sys.setrecursionlimit(10000)
asyncio.run(main())
