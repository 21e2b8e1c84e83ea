"""A thread's Python frames and its native (C) frames as one stack (`--dump --native`).

The native stack holds a call of the interpreter's eval loop where Python code runs: each such
call runs a run of Python frames, from one the eval loop was called for (an "entry" frame, which
the unwinder marks) inward through the Python functions it called without leaving the loop
(before 3.11, one frame per call). Walking the native frames innermost first, each eval-loop
frame gives way to the next run of Python frames; the other native frames stay where they are.
"""

from __future__ import annotations

from collections.abc import Sequence

from .records import Frame

# The eval loop's C function: 3.6 and later; 2.7 (and the public wrapper of 3.6-3.10, called
# before the loop itself: where both are on a stack, only the loop stands for Python frames).
EVAL_LOOP = "_PyEval_EvalFrameDefault"
EVAL_LOOP_27 = "PyEval_EvalFrameEx"


def runs_of(python: Sequence[Frame], entries: Sequence[bool]) -> list[list[Frame]]:
    """Python frames (innermost first) cut into what each call of the eval loop runs."""
    runs: list[list[Frame]] = [[]]
    for frame, entry in zip(python, entries):
        runs[-1].append(frame)
        if entry:
            runs.append([])
    return [run for run in runs if run]


# Stands before Python frames no eval-loop frame could place (a native stack without symbols:
# a stripped build whose debug symbols are not installed).
UNPLACED = Frame("(Python frames below: the native stack names no eval loop to place them at)", "", -1,
                 True, "no symbols")


def mixed(python: Sequence[Frame], entries: Sequence[bool], native: Sequence[Frame]) -> tuple[Frame, ...]:
    """One stack, innermost first. Python frames the native stack has no eval-loop frame for
    (it was cut short, or its symbols are missing) go outermost, in their order, after a frame
    that says so."""
    loop = EVAL_LOOP if any(f.function == EVAL_LOOP for f in native) else EVAL_LOOP_27
    runs = runs_of(python, entries)
    out: list[Frame] = []
    for frame in native:
        if frame.function == loop and runs:
            out += runs.pop(0)
        else:
            out.append(frame)
    if runs and native:
        out.append(UNPLACED)
    for run in runs:
        out += run
    return tuple(out)
