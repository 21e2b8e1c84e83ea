"""Run inside a sanitizer build of pytop's native code (see test_sanitizers.py).

`memory PIDS` (frozen targets: each runs while it is sampled): fuzz the decoders, sample each
target until it has been sampled SAMPLES times (names included), the first PYTOP_NATIVE_PIDS of
them again with native frames (--native), then run the engine over all of them, all running (see
run_engine); a memory error or undefined behaviour aborts the process with a report. `threads
PIDS`: the engine only, under ThreadSanitizer: its thread, processes added while it runs, drains
from two threads, stop.
`fuzz-core SECONDS PROGRESS CORE[=SYSROOT]...`: the whole unwinder on mutated images of each core
(core_fuzz.py), SECONDS each; PROGRESS gets the iteration about to run."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Iterator

import pytop._native
from pytop import errors
from pytop.native import Engine, EngineConfig, SampleError, Unwinder, decode_line, decode_text
from pytop.process.attach import attach, attach_core

SAMPLES = 150


def fuzz_decoders(rng: random.Random) -> None:
    for _ in range(20000):
        table = rng.randbytes(rng.randrange(0, 300))
        for fmt in (1, 2, 3):
            decode_line(fmt, table, rng.randrange(-10, 10000), rng.randrange(-4, 4000))
        kind = rng.choice((1, 2, 4))
        data = rng.randbytes(rng.randrange(0, 200))
        decode_text(kind, data, rng.randrange(0, 100), capacity=rng.randrange(1, 300))


def sample(pid: int) -> int:
    target = attach(pid)
    target.unwinder.set_tasks(True)  # asyncio tasks as pseudo-frames where the version has them
    taken = 0
    try:
        while taken < SAMPLES:
            try:
                result = target.unwinder.sample()
            except SampleError:
                continue
            except errors.TargetExited:
                break
            for thread in result.threads:
                for code_id, _ in thread.frames():
                    target.unwinder.code(code_id)
                target.unwinder.thread_name(thread.thread_id)
            taken += 1
    finally:
        target.close()
    return taken


def sample_native(pid: int) -> int:
    """Samples with native frames merged in (--native: threads stopped, libdw unwinding)."""
    target = attach(pid)
    taken = 0
    try:
        target.unwinder.set_blocking(True)
        target.unwinder.set_native(True)
        while taken < SAMPLES // 3:
            try:
                result = target.unwinder.sample()
            except SampleError:
                continue
            for thread in result.threads:
                for code_id, _ in thread.frames():
                    target.unwinder.code(code_id)
            taken += 1
        target.unwinder.set_blocking(False)
    finally:
        target.close()
    return taken


@contextlib.contextmanager
def running(pid: int) -> Iterator[None]:
    """A frozen target let run, and frozen again afterwards."""
    os.kill(pid, signal.SIGCONT)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGSTOP)


def with_tasks(unwinder: Unwinder) -> Unwinder:
    unwinder.set_tasks(True)  # as the sampler does
    return unwinder


def run_engine(pids: list[int], seconds: float) -> str:
    """The engine on every target: the first added before it starts, the others while it runs,
    drained meanwhile from this thread and another one, its stacks summed from a third, stopped
    while it works. Its stack tree has a small bound, so that old stacks are evicted (and code
    objects recycled) all along. Says what was drained."""
    engine = Engine(EngineConfig(rate=2000, realtime=False, period=0.05, max_stack_nodes=32))
    engine.add(with_tasks(attach(pids[0]).unwinder))
    engine.start()
    drained, evicted, retired = [0], [0], [0]
    leaves: list[int] = []
    done = threading.Event()

    def drain() -> int:
        d = engine.drain()
        evicted[0] += len(d.evicted)
        retired[0] += len(d.retired)
        leaves[:] = [w.stack for w in d.weights][:64] + leaves[:64]
        return len(d.weights)

    def drain_elsewhere() -> None:
        while not done.is_set():
            drained[0] += drain()
            engine.pending_ticks()  # the count a test waits on, read while the engine ticks

    def sum_elsewhere() -> None:
        while not done.is_set():  # leaves of earlier drains too: some are evicted by now
            engine.aggregate([(leaf, 1, 1000, 1000, 0) for leaf in list(leaves)], tables=True, nodes=True)
            time.sleep(0.002)

    others = [threading.Thread(target=drain_elsewhere), threading.Thread(target=sum_elsewhere)]
    for other in others:
        other.start()
    for pid in pids[1:]:
        try:
            engine.add(with_tasks(attach(pid).unwinder))
        except errors.PytopError:
            continue  # exited meanwhile
        drained[0] += drain()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        drained[0] += drain()
        time.sleep(0.01)
    done.set()
    for other in others:
        other.join()
    assert engine.stop(30), "the engine's thread did not end"
    drained[0] += drain()
    engine.close()
    return f"{drained[0]} weights, {evicted[0]} nodes evicted, {retired[0]} functions retired"


def fuzz_cores(seconds: float, progress_path: str, specs: list[str]) -> None:
    from core_fuzz import Fuzzer

    progress = os.open(progress_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for seed, spec in enumerate(specs, start=1):
        path, _, sysroot = spec.partition("=")
        target = attach_core(path, sysroot=sysroot or None)
        try:
            stats = Fuzzer(target, seed).run(seconds, progress)
        finally:
            target.close()
        print(f"core {path}: {stats.iterations} iterations, {stats.samples_ok} samples read, "
              f"{stats.frames} frames, {stats.names} names, slowest {stats.slowest * 1000:.1f} ms of CPU, "
              f"aimed at {stats.aimed_at} bytes; outcomes {dict(stats.outcomes.most_common(6))}", flush=True)


def main() -> int:
    mode = sys.argv[1]
    # The sanitized build, not an installed one, and the sanitizer's runtime really loaded.
    assert pytop._native.__file__.startswith(os.environ["PYTHONPATH"]), pytop._native.__file__
    with open("/proc/self/maps") as maps:
        assert ("libtsan" if mode == "threads" else "libasan") in maps.read()
    if mode == "fuzz-core":
        fuzz_cores(float(sys.argv[2]), sys.argv[3], sys.argv[4:])
        return 0
    pids = [int(pid) for pid in sys.argv[2:]]
    if mode == "memory":  # the targets come frozen: each runs while it is sampled
        fuzz_decoders(random.Random(20261122))
        for pid in pids:
            with running(pid):
                print(f"pid {pid}: {sample(pid)} samples", flush=True)
        for pid in pids[:int(os.environ.get("PYTOP_NATIVE_PIDS", "0"))]:
            with running(pid):
                print(f"pid {pid}: {sample_native(pid)} native samples", flush=True)
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    print(f"engine: {run_engine(pids, 3.0)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
