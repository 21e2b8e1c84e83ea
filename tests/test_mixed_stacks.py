"""Python frames placed among native ones (--dump --native), without a process: the eval loop's
frames give way to the runs of Python frames each call of the loop ran."""

from __future__ import annotations

from pytop.core.mixed_stacks import UNPLACED, mixed, runs_of
from pytop.core.records import Frame


def py(name: str) -> Frame:
    return Frame(name, "app.py", 1)


def c(name: str) -> Frame:
    return Frame(name, "", -1, True, "libpython3.12.so")


def test_runs_end_at_entry_frames() -> None:
    frames = [py("inner"), py("middle"), py("outer"), py("main")]
    assert runs_of(frames, [True, False, True, True]) == [[py("inner")], [py("middle"), py("outer")], [py("main")]]


def test_each_eval_loop_frame_gives_way_to_its_run() -> None:
    python = [py("sleeping"), py("run"), py("_bootstrap")]
    native = [c("clock_nanosleep"), c("time_sleep"), c("_PyEval_EvalFrameDefault"), c("method_vectorcall"),
              c("_PyEval_EvalFrameDefault"), c("thread_run")]
    assert mixed(python, [True, False, True], native) == (
        c("clock_nanosleep"), c("time_sleep"), py("sleeping"), c("method_vectorcall"), py("run"),
        py("_bootstrap"), c("thread_run"))


def test_27_runs_a_frame_per_call_and_3x_wrappers_stay_native() -> None:
    assert mixed([py("f"), py("g")], [True, True], [c("PyEval_EvalFrameEx"), c("call"), c("PyEval_EvalFrameEx")]) \
        == (py("f"), c("call"), py("g"))
    # 3.6-3.10 call the loop through the public wrapper: the wrapper is a C frame of its own
    assert mixed([py("f")], [True], [c("_PyEval_EvalFrameDefault"), c("PyEval_EvalFrameEx")]) == (
        py("f"), c("PyEval_EvalFrameEx"))


def test_without_symbols_python_frames_go_last_and_say_so() -> None:
    assert mixed([py("f")], [True], [c("0x5d64b3"), c("0x545962")]) == (
        c("0x5d64b3"), c("0x545962"), UNPLACED, py("f"))
    assert mixed([py("f")], [True], []) == (py("f"),)  # no native stack at all: the Python one
