"""Target: the task graphs of CPython's own tests of remote reading (test_external_inspection),
for pytop --dump --async (CPython 3.14+). argv[1] "eager": with asyncio's eager task factory.

    Task-1 main (TaskGroup)
    ├── c2_root      c2 > c3 > c4 > c5, waiting        awaited by Task-1, sub_main_1, sub_main_2
    ├── sub_main_1   c1, awaits c2_root
    ├── sub_main_2   c1, awaits c2_root
    ├── recursive    rec(3) > rec(2) > rec(1) > rec(0), waiting
    ├── agen         consumes an async generator that waits in gen_nested_call
    └── "t" * 300    waits (CPython keeps 255 characters of a task's name)
    thread "loop-thread": its own event loop, task "worker task" waiting

Prints one JSON line once every task waits (the readiness handshake)."""

import asyncio
import json
import sys
import threading

from report import thread_info

LONG_NAME = "t" * 300
forever = None


async def c5():
    await forever.wait()


async def c4():
    await c5()


async def c3():
    await c4()


async def c2():
    await c3()


async def c1(task):
    await task


async def rec(n):
    if n:
        await rec(n - 1)
    else:
        await forever.wait()


async def gen_nested_call():
    await forever.wait()


async def gen():
    for i in range(2):
        yield i
    await gen_nested_call()
    yield 2


async def agen():
    async for _ in gen():
        pass


def in_thread(ready_event, info):
    async def worker():
        info.update(thread_info())
        ready_event.set()
        await asyncio.Event().wait()

    async def thread_main():
        await asyncio.create_task(worker(), name="worker task")

    asyncio.run(thread_main())


def report(worker):
    sys.stdout.write(json.dumps({"worker": worker, "long_name": LONG_NAME,
                                 "version": list(sys.version_info[:3])}) + "\n")
    sys.stdout.flush()


async def main(worker):
    global forever
    forever = asyncio.Event()
    if sys.argv[1:] == ["eager"]:
        asyncio.get_running_loop().set_task_factory(asyncio.eager_task_factory)
    asyncio.get_running_loop().call_later(0.3, report, worker)  # by then every task waits
    async with asyncio.TaskGroup() as group:
        root = group.create_task(c2(), name="c2_root")
        group.create_task(c1(root), name="sub_main_1")
        group.create_task(c1(root), name="sub_main_2")
        group.create_task(rec(3), name="recursive")
        group.create_task(agen(), name="agen")
        group.create_task(forever.wait(), name=LONG_NAME)


worker_ready, worker_info = threading.Event(), {}
threading.Thread(target=in_thread, args=(worker_ready, worker_info), name="loop-thread", daemon=True).start()
worker_ready.wait()
asyncio.run(main(worker_info))
