"""Fuzzing the whole unwinder on core images of real targets: runtime, interpreters, thread
states, frames, code objects, line tables, strings and thread names, read from a copy of a core
whose bytes are mutated where the unwinder reads them. Run inside a sanitizer build
(sanitized_driver.py's `fuzz-core` mode; tools/fuzz_cores.py for long runs): a read outside
bounds or undefined behaviour aborts with the sanitizer's report, a hang is an iteration that
never ends (the caller's timeout) or a slow one (reported).

Mutations are aimed at the memory a clean sample read (the image's read log): 8-byte words
replaced by pointers into other read memory (cycles, aliasing), by the word's own address, by
sizes at type bounds, by zero or by random bits, or bytes flipped. Each iteration's mutations
come from Random(seed, iteration) and are undone afterwards; the iteration about to run is
written to `progress` first, so a crash names the one to replay.
"""

from __future__ import annotations

import bisect
import os
import random
import struct
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pytop.native import SampleError, Unwinder
from pytop.process.attach import Target
from pytop.process.core import Region

SPECIAL = (0, 1, 0xFF, 0x7FFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000,
           0xFFFFFFFFFFFFFFFF, 1 << 47, (1 << 47) - 8, 4096, 1 << 24)
REOPEN_EVERY = 64  # iterations per unwinder: its caches see mutated memory too, then start afresh


@dataclass
class FuzzStats:
    iterations: int = 0
    samples_ok: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    frames: int = 0
    names: int = 0
    slowest: float = 0.0  # the CPU of the dearest iteration, seconds
    aimed_at: int = 0  # bytes of read memory mutations could land in


class MutableImage:
    """The target's memory with the core's own bytes copied where they can be changed."""

    def __init__(self, target: Target):
        assert target.core is not None
        core = target.core
        self.data = bytearray(core.core_bytes)
        self.regions = [Region(r.address, r.size, self.data, r.offset) if r.buffer is core.core_bytes else r
                        for r in core.regions]
        self._starts = [r.address for r in self.regions]

    def offset_of(self, address: int, length: int) -> int | None:
        """Where `length` bytes at `address` are in the mutable copy, None if not there."""
        i = bisect.bisect_right(self._starts, address) - 1
        if i < 0:
            return None
        region = self.regions[i]
        if region.buffer is not self.data or address + length > region.end:
            return None
        return region.offset + (address - region.address)


def _resolve(unwinder: Unwinder, stats: FuzzStats) -> None:
    sample = unwinder.sample()
    stats.samples_ok += 1
    for thread in sample.threads:
        for code_id, _line in thread.frames():
            unwinder.code(code_id)
            stats.frames += 1
        if unwinder.thread_name(thread.thread_id) is not None:
            stats.names += 1


class Fuzzer:
    def __init__(self, target: Target, seed: int):
        self.target = target
        self.seed = seed
        self.image = MutableImage(target)
        clean = self._open()
        try:
            _resolve(clean, FuzzStats())
            reads = set(clean.image_reads())
        finally:
            clean.close()
        self.aims = sorted((a, n) for a, n in reads if self.image.offset_of(a, n) is not None)
        self.read_addresses = [a for a, _ in self.aims]
        if not self.aims:
            raise RuntimeError("a clean sample read nothing of the core's own memory")

    def _open(self) -> Unwinder:
        t = self.target
        unwinder = Unwinder.on_image(t.pid, self.image.regions, t.layout, t.runtime.runtime_address)
        unwinder.set_tasks(True)  # asyncio tasks (3.14+) are part of the walk
        return unwinder

    def _word(self, rng: random.Random, at: int, old: int) -> int:
        kind = rng.randrange(7)
        if kind == 0:
            return rng.choice(SPECIAL)
        if kind == 1:  # a pointer into other memory the unwinder reads: cycles, aliasing
            return rng.choice(self.read_addresses) + rng.choice((0, 8, 16, -8, rng.randrange(-64, 64)))
        if kind == 2:
            return at  # points to itself
        if kind == 3:
            return rng.getrandbits(64)
        if kind == 4:
            return rng.randrange(-1000, 1000) & 0xFFFFFFFFFFFFFFFF
        if kind == 5:  # a near neighbour of what was there (a count off by a few, a pointer askew)
            return old + rng.randrange(-16, 17)
        return rng.getrandbits(rng.choice((8, 16, 32)))

    def _mutate(self, rng: random.Random) -> list[tuple[int, bytes]]:
        undo = []
        data = self.image.data
        for _ in range(rng.choice((1, 1, 2, 3, 5, 8))):
            address, length = rng.choice(self.aims)
            offset = self.image.offset_of(address, length)
            assert offset is not None
            if length >= 8 and rng.random() < 0.8:
                start = offset + (rng.randrange(length - 7) & ~7 if length > 8 else 0)
                old = bytes(data[start:start + 8])
                word = self._word(rng, address + (start - offset), struct.unpack("<Q", old)[0])
                data[start:start + 8] = struct.pack("<Q", word & 0xFFFFFFFFFFFFFFFF)
            else:
                start = offset + rng.randrange(length)
                old = bytes(data[start:start + 1])
                data[start] ^= 1 << rng.randrange(8) if rng.random() < 0.5 else rng.randrange(1, 256)
            undo.append((start, old))
        return undo

    def run(self, seconds: float, progress: Any = None, stats: FuzzStats | None = None) -> FuzzStats:
        stats = stats or FuzzStats()
        stats.aimed_at = sum(n for _, n in self.aims)
        end = time.monotonic() + seconds
        unwinder: Unwinder | None = None
        try:
            while time.monotonic() < end:
                i = stats.iterations
                if progress is not None:
                    os.write(progress, f"{self.seed} {i}\n".encode())
                if unwinder is None or i % REOPEN_EVERY == 0:
                    if unwinder is not None:
                        unwinder.close()
                    unwinder = self._open()
                rng = random.Random(self.seed * 1_000_003 + i)
                undo = self._mutate(rng)
                began = time.thread_time()  # its own CPU: a busy machine's stalls are not the unwinder's
                try:
                    _resolve(unwinder, stats)
                    stats.outcomes["ok"] += 1
                except SampleError as exc:
                    stats.outcomes[f"failed: {exc}"[:60]] += 1
                stats.slowest = max(stats.slowest, time.thread_time() - began)
                for start, old in reversed(undo):
                    self.image.data[start:start + len(old)] = old
                stats.iterations += 1
        finally:
            if unwinder is not None:
                unwinder.close()
        return stats
