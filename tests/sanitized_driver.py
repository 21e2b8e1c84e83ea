"""Run inside the AddressSanitizer/UBSan build of pytop's native code (see test_sanitizers.py):
fuzz the decoders, then sample each target pid given on the command line until it has been
sampled SAMPLES times or has exited. Any memory error aborts the process with a report."""

from __future__ import annotations

import os
import random
import sys

import pytop._native
from pytop import errors
from pytop.native import SampleError, decode_line, decode_text
from pytop.target.attach import attach

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
            taken += 1
    finally:
        target.close()
    return taken


def main() -> int:
    # The sanitized build, not an installed one, and the ASan runtime really loaded.
    assert pytop._native.__file__.startswith(os.environ["PYTHONPATH"]), pytop._native.__file__
    with open("/proc/self/maps") as maps:
        assert "libasan" in maps.read()
    fuzz_decoders(random.Random(20261122))
    for pid in map(int, sys.argv[1:]):
        print(f"pid {pid}: {sample(pid)} samples", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
