"""pytop's C code built with sanitizers and run against real targets. With AddressSanitizer and
UndefinedBehaviorSanitizer: the unwinder and the engine on every interpreter, the decoders on
fuzzed input, and the whole unwinder on mutated core images of real targets (core_fuzz.py); a
memory error, undefined behaviour or a hang fails the test with the report. With
ThreadSanitizer: the engine's thread against drains from two threads, processes added while
it runs, and stop; a data race fails the test with the report."""

from __future__ import annotations

import contextlib
import os
import runpy
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import cores
import helpers
import kernel
from conftest import interpreters

pytestmark = [pytest.mark.target,  # real target processes, from the provisioned interpreters
              pytest.mark.xdist_group("sanitizer-builds")]  # its tests share the sanitized builds: one worker

MEMORY = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g", "-O1"]
THREADS = ["-fsanitize=thread", "-fno-omit-frame-pointer", "-g", "-O1"]


def build_sanitized(where: Path, flags: list[str]) -> Path:
    """The package from app/pytop with its native module rebuilt under the sanitizers."""
    builder = runpy.run_path(str(helpers.ROOT / "native" / "build_ffi.py"))["make_builder"](
        absolute=True, cflags=flags, ldflags=[f for f in flags if f.startswith("-fsanitize")])
    built = Path(builder.compile(tmpdir=str(where / "build")))
    package = where / "pkg" / "pytop"
    shutil.copytree(helpers.ROOT / "app" / "pytop", package,
                    ignore=shutil.ignore_patterns("_native*", "__pycache__"))
    shutil.copy(built, package / built.name)
    return package.parent


def compiler_file(name: str) -> str:
    return subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True,
                          check=True).stdout.strip()


MEMORY_ENV = {"ASAN_OPTIONS": "detect_leaks=0:exitcode=99",
              "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1:exitcode=98"}
FUZZ_SECONDS_PER_CORE = 6.0  # the suite's budget; tools/fuzz_cores.py runs for longer


@pytest.fixture(scope="module")
def memory_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sanitized(tmp_path_factory.mktemp("asan"), MEMORY)


def test_native_code_under_asan_and_ubsan(tmp_path: Path, memory_build: Path) -> None:
    found, complaints = interpreters()
    missing = [name for name in helpers.EXPECTED if name not in found]
    if missing and helpers.IN_CI:
        pytest.fail(f"interpreters missing: {missing}: {complaints}")
    pythonpath = memory_build
    # first, those sampled with native frames too: C code, a deep recursion (3.10: ~5 C frames a
    # call, past the 1,024 native frames read), a build without symbols
    plan = [(name, script, args) for name, script, args in (
        ("pyenv-3.12", "c_work.py", ()), ("pyenv-3.10", "deep.py", ("300",)), ("sid-3.15-loader", "c_work.py", ()))
        if name in found]
    native = len(plan)
    plan += [(name, "stacks.py", ()) for name in found]
    plan += [(name, "deep.py", ("3000",)) for name in ("pyenv-3.10", "pyenv-3.12", "sid-3.14-loader") if name in found]
    # deep stacks read again as their threads take turns, one frame object passing between them
    plan += [(name, "deep_turns.py", ("1000", "3")) for name in ("pyenv-3.10", "pyenv-3.12") if name in found]
    plan += [(name, "async_tasks.py", ()) for name in ("sid-3.14-loader", "sid-3.15-chroot") if name in found]
    # code objects that die young: the engine recycles their cache entries and functions
    plan += [(name, "short_lived_code.py", ()) for name in ("pyenv-3.12", "sid-3.15-loader") if name in found]
    with contextlib.ExitStack() as stack:
        pids = [stack.enter_context(helpers.running(found[name], script, *args)).pid
                for name, script, args in plan]
        # Each runs while the driver samples it, and all of them while the engine runs; frozen
        # meanwhile (some thirty spinning targets at once took the machine for minutes).
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
            kernel.all_stopped(pid)
        env = dict(os.environ, PYTHONPATH=str(pythonpath), LD_PRELOAD=compiler_file("libasan.so"), **MEMORY_ENV,
                   PYTOP_NATIVE_PIDS=str(native))
        result = subprocess.run([sys.executable, str(helpers.ROOT / "tests" / "sanitized_driver.py"), "memory",
                                 *map(str, pids)], capture_output=True, text=True, env=env,
                                cwd=tmp_path, timeout=900)
    report = result.stdout + result.stderr
    assert "AddressSanitizer" not in report and "runtime error" not in report, report[-6000:]
    assert result.returncode == 0, report[-6000:]
    assert report.count(f"{150} samples") == len(pids), report
    assert report.count(f"{50} native samples") == native, report
    assert "engine: " in report and "engine: 0 weights" not in report, report[-3000:]
    assert " 0 nodes evicted" not in report and " 0 functions retired" not in report, report[-3000:]


def test_whole_unwinder_fuzzed_on_core_images(tmp_path: Path, memory_build: Path) -> None:
    """One object-frame, one interpreter-frame and one debug-offsets target (in a chroot), 2.7
    (its own strings and dicts), and an asyncio program, each dumped by the kernel; the driver
    mutates what the unwinder reads and samples again, for a fixed time per core."""
    found, _ = interpreters()
    specs = []
    plan = [(name, "stacks.py") for name in [*helpers.SOME, "pyenv-2.7"]] + [("sid-3.14-loader", "async_tasks.py")]
    for name, script in plan:
        if name not in found:
            continue
        interp = found[name]
        with helpers.running(interp, script, cwd=str(tmp_path)) as target:
            core = cores.kernel_core(target, interp, tmp_path)
        specs.append(f"{core}={interp['root']}" if interp["launch"] == "chroot" else str(core))
    progress = tmp_path / "progress"
    env = dict(os.environ, PYTHONPATH=str(memory_build), LD_PRELOAD=compiler_file("libasan.so"), **MEMORY_ENV)
    result = subprocess.run([sys.executable, str(helpers.ROOT / "tests" / "sanitized_driver.py"), "fuzz-core",
                             str(FUZZ_SECONDS_PER_CORE), str(progress), *specs],
                            capture_output=True, text=True, env=env, cwd=tmp_path,
                            timeout=120 + 10 * FUZZ_SECONDS_PER_CORE * len(specs))
    report = result.stdout + result.stderr
    last = progress.read_text().splitlines()[-1:] if progress.exists() else []
    assert "AddressSanitizer" not in report and "runtime error" not in report, (last, report[-6000:])
    assert result.returncode == 0, (last, report[-6000:])
    lines = [line for line in result.stdout.splitlines() if line.startswith("core ")]
    assert len(lines) == len(specs) == len(plan), report
    for line in lines:  # every core was really fuzzed, and its clean parts read
        iterations = int(line.split(": ", 1)[1].split()[0])
        assert iterations >= 200 and " 0 samples read" not in line, line
        slowest = float(line.split("slowest ")[1].split()[0])
        # By the iteration's own CPU: a loop the hostile image keeps going burns it; a busy
        # machine's stall (2.3 s of wall time with two busy loops beside the suite) does not.
        assert slowest < 2000, f"an iteration used {slowest} ms of CPU: {line}"


def test_engine_under_tsan(tmp_path: Path) -> None:
    found, _ = interpreters()
    names = [name for name in ("pyenv-3.8", "pyenv-3.12", "sid-3.15-loader") if name in found]
    pythonpath = build_sanitized(tmp_path, THREADS)
    with contextlib.ExitStack() as stack:
        pids = [stack.enter_context(helpers.running(found[name], "server.py")).pid for name in names]
        env = dict(os.environ, PYTHONPATH=str(pythonpath), LD_PRELOAD=compiler_file("libtsan.so"),
                   TSAN_OPTIONS="exitcode=66:report_signal_unsafe=0")
        result = subprocess.run([sys.executable, str(helpers.ROOT / "tests" / "sanitized_driver.py"), "threads",
                                 *map(str, pids)], capture_output=True, text=True, env=env,
                                cwd=tmp_path, timeout=600)
    report = result.stdout + result.stderr
    assert "ThreadSanitizer" not in report, report[-8000:]
    assert result.returncode == 0, report[-6000:]
    assert "engine: " in report and "engine: 0 weights" not in report, report[-3000:]
    assert " 0 nodes evicted" not in report, report[-3000:]
