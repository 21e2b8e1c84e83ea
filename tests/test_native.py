"""--dump --native on real targets: each thread's C frames between its Python ones, read by
elfutils' libdw while pytop holds the threads stopped (PyStack and py-spy dump --native show
the same), and the threads going on afterwards."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import cores
import helpers
import kernel
from conftest import available
from pytop.native import libdw

pytestmark = pytest.mark.target  # real target processes, from the provisioned interpreters

WITH_SYMBOLS = ["pyenv-2.7", "pyenv-3.6", "pyenv-3.8", "pyenv-3.10", "pyenv-3.11", "pyenv-3.12", "pyenv-3.13"]
SLEEP_CALLS = {"clock_nanosleep", "__select", "select", "__clock_nanosleep"}


def dump(interp: dict[str, Any]) -> tuple[helpers.RunningTarget, dict[int, list[dict[str, Any]]], str]:
    if libdw.why_unavailable():
        pytest.skip(libdw.why_unavailable())
    with helpers.running(interp, "stacks.py") as t:
        result = helpers.run_pytop("--dump", "--native", "--json", str(t.pid))
        text = helpers.run_pytop("--dump", "--native", str(t.pid))
        states = {int(task.name): (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
                  for task in Path(f"/proc/{t.pid}/task").iterdir()}
    assert result.returncode == 0 and text.returncode == 0, result.stderr + text.stderr
    assert "t" not in states.values(), states  # no thread left stopped
    threads = {thread["thread_id"]: thread["frames"] for thread in json.loads(result.stdout)["threads"]}
    return t, threads, text.stdout


@pytest.mark.parametrize("name", ["pyenv-3.8", "pyenv-3.12"])
def test_a_read_of_the_stacks_now_stops_when_its_panel_has_gone(name: str) -> None:
    """The d panel's read (C frames and locals of every thread) asks between two threads whether
    the panel is still there: once it is not, the read ends there (a read of 2,000 threads took
    ~10 s, and quitting pytop waited for it) and no thread is left stopped."""
    from pytop import errors
    from pytop.process.stacks import stacks_now

    if libdw.why_unavailable():
        pytest.skip(libdw.why_unavailable())
    with helpers.running(available(name), "stacks.py") as t:
        asked = []

        def gone_after_two() -> bool:
            asked.append(True)
            return len(asked) > 2

        with pytest.raises(errors.ReadStopped):
            stacks_now(t.pid, gone_after_two)
        states = {int(task.name): (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
                  for task in Path(f"/proc/{t.pid}/task").iterdir()}
        assert len(asked) == 3 and "t" not in states.values(), states
        stacks, note = stacks_now(t.pid, lambda: False)  # (and a read to its end still reads every thread)
        assert note is None and len(stacks.threads) >= len(t.info["threads"]), stacks


@pytest.mark.parametrize("name", WITH_SYMBOLS)
def test_native_frames_between_python_frames(name: str) -> None:
    t, threads, text = dump(available(name))
    sleeper = threads[t.info["threads"]["sleeper"]["thread_id"]]
    names = [f["function"] for f in sleeper]
    python = [f["function"] for f in sleeper if not f.get("native")]
    expected = [f["function"] for f in t.info["threads"]["sleeper"]["frames"]]
    assert python == expected, names  # every Python frame, in order
    assert names[0] in SLEEP_CALLS and "time_sleep" in names[:4], names  # the C of the sleep, innermost
    sleeping = names.index(expected[0])
    assert all(f.get("native") for f in sleeper[:sleeping]) and names.index("time_sleep") < sleeping
    between = sleeper[sleeping + 1:names.index(expected[-1])]
    assert any(f.get("native") for f in between), names  # C where a Python call went through C (Thread.run)
    assert not any(f["function"] in ("_PyEval_EvalFrameDefault", "PyEval_EvalFrameEx") for f in sleeper), names
    assert sleeper[0]["library"].startswith("libc"), sleeper[0]
    assert "    time_sleep [" in text


def test_a_stripped_build_that_exports_its_eval_loop() -> None:
    """Debian's python3.11: stripped, but its eval loop is in .dynsym: Python frames are placed,
    the static functions around them are addresses."""
    t, threads, text = dump(available("debian-3.11"))
    sleeper = threads[t.info["threads"]["sleeper"]["thread_id"]]
    expected = [f["function"] for f in t.info["threads"]["sleeper"]["frames"]]
    assert [f["function"] for f in sleeper if not f.get("native")] == expected
    first = next(i for i, f in enumerate(sleeper) if not f.get("native"))
    assert first > 1 and sleeper[first + 1].get("native"), sleeper  # C frames around the first Python one
    assert "names no eval loop" not in text


@pytest.mark.parametrize("name", ["sid-3.14-loader", "sid-3.15-loader"])
def test_a_build_without_symbols_says_where_it_cannot_place_python_frames(name: str) -> None:
    t, threads, text = dump(available(name))
    sleeper = threads[t.info["threads"]["sleeper"]["thread_id"]]
    python = [f["function"] for f in sleeper if not f.get("native")]
    assert python == [f["function"] for f in t.info["threads"]["sleeper"]["frames"]]
    assert sleeper[0]["native"], sleeper[0]
    assert "names no eval loop to place them at" in text


@pytest.mark.parametrize("name", ["pyenv-2.7", "pyenv-3.12"])
def test_native_frames_from_a_core_file(name: str, tmp_path: Path) -> None:
    """--dump --native --core: the C frames the core file holds, between the Python ones, the
    sleeper's in its sleep as in the running process (the thread that took SIGABRT is elsewhere)."""
    if libdw.why_unavailable():
        pytest.skip(libdw.why_unavailable())
    interp = available(name)
    with helpers.running(interp, "stacks.py", cwd=str(tmp_path)) as t:
        core = cores.kernel_core(t, interp, tmp_path)
    result = helpers.run_pytop("--dump", "--native", "--json", "--core", str(core))
    assert result.returncode == 0, result.stderr
    threads = {thread["thread_id"]: thread["frames"] for thread in json.loads(result.stdout)["threads"]}
    sleeper = threads[t.info["threads"]["sleeper"]["thread_id"]]
    names = [f["function"] for f in sleeper]
    assert [f["function"] for f in sleeper if not f.get("native")] == [
        f["function"] for f in t.info["threads"]["sleeper"]["frames"]], names
    assert names[0] in SLEEP_CALLS and "time_sleep" in names[:4], names


def test_inlined_functions_are_frames_of_their_own() -> None:
    """Where debug info says a function was inlined, it is a frame of its own, at its line,
    and the function it was inlined into is at the line of the call (as PyStack shows them)."""
    t, threads, _ = dump(available("pyenv-3.12"))
    sleeper = threads[t.info["threads"]["sleeper"]["thread_id"]]
    assert [f["function"] for f in sleeper[:3]] == ["clock_nanosleep", "pysleep (inlined)", "time_sleep"], sleeper[:3]
    assert sleeper[1]["filename"].endswith("timemodule.c") and sleeper[2]["filename"].endswith("timemodule.c")
    assert sleeper[1]["line"] != sleeper[2]["line"]  # pysleep's own line, and the line of its call


def pystack_frames(pid: int) -> dict[int, list[tuple[str, int, bool]]]:
    """PyStack's own view (`pystack remote --native`): per TID, (function, line, native)
    innermost first."""
    result = subprocess.run([str(Path(sys.executable).parent / "pystack"), "remote", "--native", str(pid)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    found: dict[int, list[tuple[str, int, bool]]] = {}
    frames: list[tuple[str, int, bool]] = []
    for line in result.stdout.splitlines():
        if line.startswith("Traceback for thread "):
            frames = found.setdefault(int(line.split()[3]), [])
        elif match := re.match(r'\s+\((C|Python)\) File ".*", line (\d+), in (\S+( \(inlined\))?)', line):
            frames.insert(0, (match.group(3).split("@")[0], int(match.group(2)), match.group(1) == "C"))
    return found


@pytest.mark.parametrize("name", ["pyenv-3.8", "pyenv-3.12"])
def test_native_stacks_agree_with_pystack(name: str) -> None:
    """Every frame PyStack shows of a sleeping thread, native and Python, at the same line and in
    the same order, is in pytop's stack (PyStack leaves out the interpreter's own calls between
    Python frames; pytop shows them)."""
    if libdw.why_unavailable():
        pytest.skip(libdw.why_unavailable())
    if not (Path(sys.executable).parent / "pystack").exists():
        pytest.skip("pystack is not installed (pip install pystack)")
    with helpers.running(available(name), "stacks.py") as t:
        theirs = pystack_frames(t.pid)
        result = helpers.run_pytop("--dump", "--native", "--json", str(t.pid))
    assert result.returncode == 0, result.stderr
    for thread in json.loads(result.stdout)["threads"]:
        if thread["name"] == "spinner":
            continue  # it runs: its innermost frames move between the two looks
        ours = [(f["function"] if f.get("native") else f["function"].rsplit(".", 1)[-1], max(f["line"], 0),
                 bool(f.get("native"))) for f in thread["frames"]]  # (PyStack names methods without their class)
        expected = theirs[thread["native_id"]]
        at = 0
        for frame in ours:  # theirs, a subsequence of ours
            if at < len(expected) and frame == expected[at]:
                at += 1
        assert at == len(expected), (thread["name"], expected[at:], ours)


@pytest.mark.parametrize("name", ["pyenv-2.7", "pyenv-3.8", "pyenv-3.12"])
def test_a_thread_in_c_library_code(name: str) -> None:
    """A thread compressing with zlib (the GIL let go): libz's frames and zlib's module under the
    Python frame that called it."""
    if libdw.why_unavailable():
        pytest.skip(libdw.why_unavailable())
    with helpers.running(available(name), "c_work.py") as t:
        result = helpers.run_pytop("--dump", "--native", "--json", str(t.pid))
    assert result.returncode == 0, result.stderr
    threads = {thread["thread_id"]: thread["frames"] for thread in json.loads(result.stdout)["threads"]}
    frames = threads[t.info["threads"]["compressor"]["thread_id"]]
    caller = next(i for i, f in enumerate(frames) if not f.get("native"))
    assert frames[caller]["function"] == "compressor", frames
    inner = frames[:caller]
    assert any(f["library"].startswith("libz") for f in inner), inner
    assert any("zlib" in f["library"] for f in inner), inner  # the zlib extension module, between


def _states(pid: int) -> dict[int, str]:
    return {int(task.name): (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
            for task in Path(f"/proc/{pid}/task").iterdir()}


@pytest.mark.parametrize("name", ["pyenv-2.7", "pyenv-3.8", "pyenv-3.12", "debian-3.11"])
def test_a_run_with_native_frames_puts_c_time_on_c_functions(name: str) -> None:
    """--batch --native: the time a thread spends in libz is libz's in the table (rows marked
    native, named by the library), and each stack holds the C frames between the Python ones,
    every eval-loop frame replaced by the Python frames it ran; the threads go on afterwards."""
    if libdw.why_unavailable():
        pytest.skip(libdw.why_unavailable())
    with helpers.running(available(name), "c_work.py") as t:
        base = ["--batch", "--native", "--rate", "100", "--duration", "2", str(t.pid)]
        table = helpers.run_pytop(*base, "--json")
        stacks = helpers.run_pytop(*base, "--format", "collapsed")
        states = _states(t.pid)
    assert table.returncode == 0 and stacks.returncode == 0, table.stderr + stacks.stderr
    assert "t" not in states.values(), states  # no thread left stopped
    rows = json.loads(table.stdout)["functions"]
    top = max(rows, key=lambda row: row["own_time"])
    assert top.get("native") and top["filename"].startswith("libz"), top  # the compressor's time is libz's
    named = {row["function"]: row for row in rows}
    assert named["compressor"]["total_time"] >= top["own_time"] and not named["compressor"].get("native")
    assert all(row.get("native") for row in rows if row["filename"].startswith("lib")), rows
    lines = [line.rsplit(" ", 1)[0].split(";") for line in stacks.stdout.splitlines()]
    into_libz = [frames for frames in lines if any(f.endswith("(libz.so.1)") or "(libz.so.1." in f for f in frames)]
    assert into_libz, stacks.stdout[:2000]
    for frames in into_libz:
        functions = [f.split(" (")[0] for f in frames]
        assert "compressor" in functions, functions
        calls = functions[functions.index("compressor") + 1:]
        assert len(calls) >= 2, functions  # C under the Python caller: zlib's module, then libz
        if name.startswith("pyenv"):  # (Debian's python3.11 has zlib built in, its functions unnamed)
            assert any("compress" in f for f in calls[:4]), functions  # zlib_compress
    every = [f.split(" (")[0] for frames in lines for f in frames]
    assert "_PyEval_EvalFrameDefault" not in every and "PyEval_EvalFrameEx" not in every


@pytest.mark.parametrize("name", ["sid-3.15-loader"])
def test_a_run_on_a_build_without_symbols_keeps_every_python_frame(name: str) -> None:
    """No eval loop to place the Python frames at: they go outermost, then a frame that says so,
    then the native frames (as --dump shows them)."""
    if libdw.why_unavailable():
        pytest.skip(libdw.why_unavailable())
    with helpers.running(available(name), "c_work.py") as t:
        stacks = helpers.run_pytop("--batch", "--native", "--rate", "100", "--duration", "2", "--format", "collapsed",
                                   str(t.pid))
    assert stacks.returncode == 0, stacks.stderr
    lines = [line.rsplit(" ", 1)[0].split(";") for line in stacks.stdout.splitlines()]
    busy = [frames for frames in lines if any(f.startswith("compressor (") for f in frames)]
    assert busy, stacks.stdout[:2000]
    in_libz = 0
    for frames in busy:
        marker = next(i for i, f in enumerate(frames) if f.startswith("(Python frames below"))
        assert frames.index(next(f for f in frames if f.startswith("compressor ("))) < marker, frames
        in_libz += any("(libz.so.1" in f for f in frames[marker + 1:])
    assert in_libz, busy[:3]  # (most in libz; some in libc: the buffers zlib's module allocates, copies)


@pytest.mark.parametrize("name", ["pyenv-3.8", "pyenv-3.12"])
def test_a_thread_without_python_is_shown_by_its_c_stack(name: str) -> None:
    """A worker a C library started (no thread state) spinning in libc: with --native its time
    is pthread_spin_lock's, under start_thread, not one "(thread without Python)" row."""
    if libdw.why_unavailable():
        pytest.skip(libdw.why_unavailable())
    with helpers.running(available(name), "c_thread.py") as t:
        table = helpers.run_pytop("--batch", "--native", "--rate", "100", "--duration", "2", "--json", str(t.pid))
        stacks = helpers.run_pytop("--batch", "--native", "--rate", "100", "--duration", "2", "--format",
                                   "collapsed", str(t.pid))
    assert table.returncode == 0 and stacks.returncode == 0, table.stderr + stacks.stderr
    document = json.loads(table.stdout)
    rows = {row["function"]: row for row in document["functions"]}
    spin = rows.get("pthread_spin_lock")
    assert spin and spin.get("native") and spin["filename"].startswith("libc"), sorted(rows)
    assert spin["own_time"] > 0.5 * document["cpu_time"], (spin, document["cpu_time"])
    assert rows.get("(thread without Python)", {}).get("own_time", 0) < 0.1 * spin["own_time"], sorted(rows)
    spinner = next(r for r in document["per_thread"] if r["native_id"] == t.info["spinner"])
    assert spinner["native"] and spinner["cpu_time"] > 0, spinner
    spinning = [line for line in stacks.stdout.splitlines() if "pthread_spin_lock (libc" in line]
    assert spinning and all("start_thread (libc" in line for line in spinning), stacks.stdout[:2000]


CHURN_ROUNDS = 20
# Samples a round: 200 threads' C stacks cost a sample ~0.3 s (libdw reads the target a word at a
# time through ptrace), so the bursts take 100 samples of 200 threads in all, the server 400.
CHURN_SAMPLES = {"server.py": 20, "thread_burst.py": 5}
# One process for the rounds, so that an abort (libdw asserts) fails the test, with its output.
CHURN_DRIVER = """
import sys, time
from pytop.run import info_of
from pytop.sampling.sampler import Sampler, Settings
from pytop.process.attach import attach
from pytop.process.stacks import read_stacks
pid, rounds, how, samples = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
native = 0
for _ in range(rounds):
    target = attach(pid)
    if how == "read":  # --dump --native --locals, the d panel
        stacks = read_stacks(target, "the target", with_locals=True, native=True)
        native += sum(1 for thread in stacks.threads for frame in thread.frames if frame.native)
        continue
    sampler = Sampler(target.unwinder, info_of(target), Settings(rate=200, native=True, cpu_budget=0, delay=3600))
    sampler.start(lambda snapshot: None)
    deadline = time.monotonic() + 60
    while sampler.samples_taken < samples and time.monotonic() < deadline:
        time.sleep(0.02)
    taken = sampler.samples_taken
    sampler.stop()
    # every round samples on: a thread that began to exit as it was seized once ended sampling
    # ("cannot attach with ptrace": its EPERM taken for the process's)
    assert taken >= samples, f"sampling stopped after {taken} samples: {sampler.final_snapshot().run.last_error}"
    native += sum(1 for row in sampler.final_snapshot().rows if row.native and row.own_count)
print(native)
"""


@pytest.mark.parametrize("how", ["sample", "read"])
@pytest.mark.parametrize("script", ["server.py", "thread_burst.py"])
def test_native_frames_under_thread_churn(script: str, how: str) -> None:
    """--native on threads that start and end all the time (a thread-per-request server with
    its client; 200 threads started at once, again and again), sampling and in one look (--dump
    --native --locals, the d panel): libdw is only asked for threads pytop holds stopped, and
    made anew after it failed to read one (elfutils asserts otherwise, and pytop aborted: 5 of
    5 runs on a Flask server, 3 of 3 on 200 threads at once)."""
    if libdw.why_unavailable():
        pytest.skip(libdw.why_unavailable())
    with helpers.running(available("pyenv-3.12"), script) as t:
        driver = subprocess.run([sys.executable, "-c", CHURN_DRIVER, str(t.pid), str(CHURN_ROUNDS), how,
                                 str(CHURN_SAMPLES[script])],
                                capture_output=True, text=True, timeout=900)
        states = kernel.task_states(t.pid)
    assert driver.returncode == 0, driver.stderr[-3000:]
    assert int(driver.stdout.split()[-1]) > 0  # C functions were read
    assert "t" not in states, states  # no thread left stopped
