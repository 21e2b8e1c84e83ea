"""The object readers of --dump --locals, the d panel and --dump --async on hostile memory, as
the unwinder is fuzzed (core_fuzz.py): random words that point back into the memory read, to
its ends, past 2**64 with an offset, at nothing; sizes at their types' bounds. Whatever they
read, they answer with text ("<unreadable at 0x...>"), never an exception: a torn pointer once
ended a live session (OverflowError from an address of 2**64 + 7) and 3 of 20 dumps of a
loaded server. Pure: no process, every supported version's layout."""

from __future__ import annotations

import bisect
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytop.process.asyncio_tasks import TaskReader
from pytop.process.frame_locals import FrameLocals
from pytop.process.layouts import LAYOUTS, layout_for

BASE = 0x7F0000000000
SIZE = 1 << 16
SPECIAL = (0, 1, 7, 0xFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF,
           0xFFFFFFFFFFFFFFF8, (1 << 47) - 8, 1 << 24)


class RandomMemory:
    """Readable memory: a few regions of random words, pointers into themselves among them. A
    word is drawn when first read (from the seed and its address), so an example costs what its
    reader touches, not the 24,576 words of its regions."""

    pid = 0

    def __init__(self, seed: int):
        self._seed = seed
        self._starts = [BASE + k * 4 * SIZE for k in range(3)]
        self._words: dict[int, bytes] = {}

    def describe(self) -> str:
        return "random memory"

    def _word(self, address: int) -> bytes:
        word = self._words.get(address)
        if word is None:
            rng = random.Random(self._seed * (1 << 64) + address)
            roll = rng.random()
            if roll < 0.45:  # a pointer into the memory, or to its last bytes
                target = rng.choice(self._starts) + rng.choice((rng.randrange(0, SIZE, 8), SIZE - 8, SIZE - 1))
            elif roll < 0.65:
                target = rng.choice(SPECIAL)
            elif roll < 0.85:
                target = rng.randrange(0, 64)  # small sizes, counts, flags
            else:
                target = rng.getrandbits(64)
            word = self._words[address] = target.to_bytes(8, "little")
        return word

    def read(self, address: int, length: int) -> bytes:
        if not 0 <= address < 1 << 64 or not 0 <= length < 1 << 64:
            raise OverflowError("int too big to convert")  # as the native read's arguments do
        i = bisect.bisect_right(self._starts, address) - 1
        if i < 0 or address + length > self._starts[i] + SIZE:
            raise OSError(14, "unmapped")
        first = address & ~7
        data = b"".join(self._word(at) for at in range(first, address + length, 8))
        return data[address - first:address - first + length]


def layout(version: tuple[int, int]) -> dict[str, int]:
    return layout_for(version, ".".join(map(str, version)), 0)


VERSIONS = sorted(LAYOUTS)


@pytest.mark.parametrize("version", VERSIONS, ids=[".".join(map(str, v)) for v in VERSIONS])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), offset=st.integers(0, SIZE // 8 - 1))
def test_locals_and_reprs_of_random_memory(version: tuple[int, int], seed: int, offset: int) -> None:
    memory = RandomMemory(seed)
    reader = FrameLocals(memory, layout(version))
    address = BASE + 8 * offset
    for obj in (address, address + 0xFFFFFFFFFFFFFFF0, 0xFFFFFFFFFFFFFFF8, 1):
        assert isinstance(reader.repr(obj), str)
    found = reader.locals_of(address)
    assert isinstance(found, tuple) and all(isinstance(v.value, str) for v in found)


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= (3, 14)], ids=lambda v: ".".join(map(str, v)))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), offset=st.integers(0, SIZE // 8 - 1))
def test_task_names_and_await_chains_of_random_memory(version: tuple[int, int], seed: int, offset: int) -> None:
    memory = RandomMemory(seed)
    reader = TaskReader(memory, layout(version), None)  # type: ignore[arg-type]
    address = BASE + 8 * offset
    for call in (reader.name, reader.awaited_by):
        try:
            call(address)
        except (OSError, ValueError) as exc:  # what its callers catch: the task is marked torn
            assert str(exc)
