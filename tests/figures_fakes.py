"""Building figures by hand for the pure tests: code names, stacks and weights as the engine
would drain them, without a process."""

from __future__ import annotations

from pytop.core.aggregate import Counts, StackBook
from pytop.core.records import FRAME, STACK_FRAMES, Code, Stack, Weight

PROCESS, PID = 0, 42


def book_with(names: dict[int, tuple[str, str]]) -> StackBook:
    book = StackBook()
    book.pids[PROCESS] = PID
    book.learn([Code(PROCESS, code, name, name, filename, 1) for code, (name, filename) in names.items()], [])
    return book


def frames(*pairs: tuple[int, int]) -> bytes:
    """Frames innermost first, as (code id, line)."""
    return b"".join(FRAME.pack(code, line) for code, line in pairs)


class Stacks:
    """Hands out stack ids for frame sequences, teaching them to a book."""

    def __init__(self, book: StackBook):
        self.book = book
        self.ids: dict[tuple[bytes, int], int] = {}

    def __call__(self, *pairs: tuple[int, int], kind: int = STACK_FRAMES) -> int:
        data = frames(*pairs)
        stack = self.ids.get((data, kind))
        if stack is None:
            stack = self.ids[(data, kind)] = len(self.ids) + 1
            self.book.learn([], [Stack(stack, PROCESS, kind, data)])
        return stack


def weight(stack: int, thread: int, cpu: float = 0.0, wall: float = 0.0, gil: float = 0.0, samples: int = 1,
           running: int = 0) -> Weight:
    """Times in seconds."""
    return Weight(stack, thread, samples, running, int(cpu * 1e9), int(wall * 1e9), int(gil * 1e9))


def counts(*weights: Weight) -> Counts:
    c = Counts()
    c.add_weights(weights)
    return c
