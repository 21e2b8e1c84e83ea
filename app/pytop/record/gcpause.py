"""The cyclic collector held off while a reader builds a large state that holds no cycles: the
hundreds of thousands of objects it makes would start collections of the whole heap, a replay's
checkpoints and tables included (half of an hour's checkpoint restore, 20 ms of 40; an eighth of
two ranges compared by difference)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_collection() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
