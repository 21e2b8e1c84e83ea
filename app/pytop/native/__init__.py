"""The one place that talks to the native core (cffi): everything else sees Python objects.

Two things live on the other side. An `Unwinder` (unwinder.py) reads one process: `pytop --dump`,
attach-time checks and benchmarks call it directly. An `Engine` (engine.py) runs unwinders on a
native thread of its own and hands over, at each `drain()`, what is new. status.py turns status
codes into errors; stateless.py holds the calls that need no handle.
"""

from .engine import Engine, EngineConfig
from .stateless import decode_line, decode_text, read_memory, terminal_guarded
from .status import Closed, SampleError
from .unwinder import (
    OS_STATE_EXACT,
    OS_STATE_FAST,
    OS_STATE_OFF,
    UNKNOWN,
    CodeInfo,
    ImageRegion,
    Sample,
    ThreadSample,
    Unwinder,
    process_image,
)

__all__ = ["OS_STATE_EXACT", "OS_STATE_FAST", "OS_STATE_OFF", "UNKNOWN", "Closed", "CodeInfo", "Engine",
           "EngineConfig", "ImageRegion", "Sample", "SampleError", "ThreadSample", "Unwinder", "decode_line",
           "decode_text", "process_image", "read_memory", "terminal_guarded"]
