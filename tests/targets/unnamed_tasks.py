"""Target: an event loop serving "requests" as a server without task names does (uvicorn,
aiohttp): each in a task nobody named, running handle_request(), which computes a little and
awaits a little, forever."""

import asyncio
import sys

from report import ready, thread_info


async def handle_request(n):
    total = 0
    for i in range(20_000):
        total += i * n
    await asyncio.sleep(0.001)
    return total


async def serve():
    n = 0
    while True:
        n += 1
        await asyncio.gather(*(asyncio.ensure_future(handle_request(n + k)) for k in range(4)))


async def main():
    ready({"main": thread_info(sys._getframe())})
    await serve()


asyncio.run(main())
