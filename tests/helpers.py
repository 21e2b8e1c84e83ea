"""Starting target interpreters for tests: provisioning, launch styles, readiness handshake."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGETS = Path(__file__).resolve().parent / "targets"
PROVISION = ROOT / "tools" / "provision_interpreters.py"
EXPECTED = [
    "pyenv-2.7",
    "pyenv-3.6", "pyenv-3.7", "pyenv-3.8", "pyenv-3.9", "pyenv-3.10", "pyenv-3.11", "pyenv-3.12", "pyenv-3.13",
    "debian-3.11",
    "sid-3.14-chroot", "sid-3.14-loader", "sid-3.15-chroot", "sid-3.15-loader",
    "sid-3.14-dbg", "sid-3.15-dbg",  # debug builds (Py_DEBUG), through the loader
]
# Setups whose frame model another setup already has (2.7, 3.6 and 3.7 read as 3.8 does, the debug
# builds as their release builds): they run the tests of reading (dump, names, GIL, cores, line
# tables), not those of the figures above the unwinder, which their twins run (MODULES_OF_FIGURES).
READING_ONLY = {"pyenv-2.7", "pyenv-3.6", "pyenv-3.7", "sid-3.14-dbg", "sid-3.15-dbg"}
# Setups of a version another setup has, found and started another way (Debian's static,
# stripped 3.11 beside pyenv's; 3.14 in a chroot beside through its loader, 3.15 the other way
# round): the figures above the unwinder are the same interpreter's, so the modules of figures
# run once per version; the reading tests, and the functions against their own clocks
# (test_function_truth), run on every setup.
LAUNCH_TWINS = {"debian-3.11", "sid-3.14-chroot", "sid-3.15-loader"}
MODULES_OF_FIGURES = {"test_truth", "test_true_stacks", "test_churn", "test_sampler"}
# One per frame model and launch style: object frames, interpreter frames, chroot + debug offsets.
SOME = ["pyenv-3.8", "pyenv-3.12", "sid-3.15-chroot"]


def saturated_by_turn(name: str) -> bool:
    """For tests run on an idle machine or a saturated one by interpreter, in turn."""
    return EXPECTED.index(name) % 2 == 1


IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
CHROOT_TARGET_DIR = "/tmp/pytop-test-targets"


def provision() -> tuple[dict[str, dict[str, Any]], str]:
    """Every interpreter the provisioning script could offer, by name, and its complaints."""
    proc = subprocess.run([sys.executable, str(PROVISION), "--json"], capture_output=True, text=True)
    try:
        found = {i["name"]: i for i in json.loads(proc.stdout or "[]")}
    except json.JSONDecodeError:
        found = {}
    return found, proc.stderr.strip()


def stage(interp: dict[str, Any], script: str) -> str:
    """The path under which the interpreter sees `script` (copied into a chroot if needed)."""
    if interp["launch"] != "chroot":
        return str(TARGETS / script)
    inside = Path(interp["root"]) / CHROOT_TARGET_DIR.lstrip("/")
    inside.mkdir(parents=True, exist_ok=True)
    for source in TARGETS.glob("*.py"):
        _copy_atomically(source, inside / source.name)
    return f"{CHROOT_TARGET_DIR}/{script}"


def _copy_atomically(source: Path, dest: Path) -> None:
    """A target starting in the chroot (this run's, or another run's on the same machine) must
    never import a file half written: unchanged files are left alone, changed ones replaced whole.
    (CI once saw `cannot import name 'Collector' from 'report'`.)"""
    data = source.read_bytes()
    try:
        if dest.read_bytes() == data:
            return
    except OSError:
        pass
    partial = dest.with_name(f".{dest.name}.{os.getpid()}")
    partial.write_bytes(data)
    os.replace(partial, dest)


def stage_file(interp: dict[str, Any], source: Path) -> str:
    """The path under which the interpreter sees the file `source` (copied into a chroot if needed)."""
    if interp["launch"] != "chroot":
        return str(source)
    inside = Path(interp["root"]) / CHROOT_TARGET_DIR.lstrip("/")
    inside.mkdir(parents=True, exist_ok=True)
    _copy_atomically(source, inside / source.name)
    return f"{CHROOT_TARGET_DIR}/{source.name}"


@dataclass
class RunningTarget:
    pid: int
    info: dict[str, Any]
    process: subprocess.Popen[str]
    script_path: str


def read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    buffer = b""
    fd = proc.stdout.fileno()
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            buffer += chunk
            if b"\n" in buffer:
                return buffer.split(b"\n", 1)[0].decode()
        elif proc.poll() is not None:
            break
    return ""


def target_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


# The syscalls time.sleep() ends up in: select (before 3.11), clock_nanosleep, nanosleep, pselect6.
SLEEP_SYSCALLS = {23, 35, 230, 270}


def wait_until_asleep(pid: int, tids: list[int], timeout: float = 20) -> None:
    """Until the kernel shows each thread inside its sleep syscall (not, say, waiting for the
    GIL on its way there): only then are the stacks the target reported the ones it has."""
    deadline = time.monotonic() + timeout
    pending = list(tids)
    while pending and time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/task/{pending[0]}/syscall") as f:
                number = f.read().split()[0]
        except OSError:
            number = ""
        if number.isdigit() and int(number) in SLEEP_SYSCALLS:
            pending.pop(0)
        else:
            time.sleep(0.005)
    if pending:
        raise RuntimeError(f"threads {pending} of {pid} did not fall asleep")


@contextlib.contextmanager
def running(interp: dict[str, Any], script: str, *args: str, timeout: float = 60,
            cwd: str = "/", wrapper: tuple[str, ...] = (), env: dict[str, str] | None = None
            ) -> Iterator[RunningTarget]:
    """Start `script` under `interp`, wait for its JSON readiness line, kill it afterwards. (A
    chroot's interpreter starts in the chroot's root whatever `cwd` says.) With a `wrapper`
    command (one that starts the interpreter as its only child and takes it down when it dies,
    such as `unshare --fork --kill-child`), the target is that child."""
    path = stage(interp, script)
    proc = subprocess.Popen([*wrapper, *interp["argv"], path, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**target_env(), **(env or {})}, cwd=cwd)
    try:
        line = read_line(proc, timeout)
        if not line:
            proc.kill()
            _, err = proc.communicate(timeout=10)
            raise RuntimeError(f"{script} on {interp['name']} never became ready: {err.decode()[-2000:]}")
        info = json.loads(line)
        pid = proc.pid
        if wrapper:
            pid = int(Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()[0])
        else:  # (a wrapped target's TIDs are its own namespace's, perhaps: it is not waited for)
            wait_until_asleep(pid, [tid for tid in info.get("sleepers", []) if tid])
        yield RunningTarget(pid, info, proc, path)  # type: ignore[arg-type]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()


PYTOP = [sys.executable, "-m", "pytop"]
SAMPLING_THREAD = "pytop-sampling"


def sampling_started(pid: int, timeout: float = 60) -> dict[str, int]:
    """{thread name: TID} of pytop process `pid`'s threads, once its sampling thread runs (it
    has attached to its target by then)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = {}
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                found[(task / "comm").read_text().strip()] = int(task.name)
            except OSError:
                continue
        if SAMPLING_THREAD in found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"no {SAMPLING_THREAD} thread in pytop {pid}")


def sampled_for_a_while(pid: int, wakeups: int = 30, timeout: float = 60) -> None:
    """Once pytop `pid`'s sampling thread runs, until it has gone to sleep `wakeups` times more
    (the kernel's count of its voluntary switches: it sleeps between samples, so each is about
    one): its first read is start-up, whose time no function gets, and a loaded machine can delay
    the next for long. (Its count of runs also counts each preemption: on a busy machine a CI run
    saw 30 of them pass in start-up, and the run ended after 0.2 ms of the target's time.) A
    sleep is a sample only while the rate held is 50/s or more: a longer wait is slept in 20 ms
    slices (native/engine.c), and a CPU budget holding the rate down at start-up made 30 sleeps
    a sample or two (the launch test's report once had no spinning function): callers run pytop
    with --cpu-budget 0."""
    tid = sampling_started(pid, timeout)[SAMPLING_THREAD]
    status = Path(f"/proc/{pid}/task/{tid}/status")

    def sleeps() -> int:
        line = next(line for line in status.read_text().splitlines() if line.startswith("voluntary_ctxt_switches"))
        return int(line.split()[1])

    start = sleeps()
    wait_until(lambda: sleeps() >= start + wakeups, timeout,
               what=lambda: f"pytop's sampling thread slept {sleeps() - start} times")


def run_pytop(*args: str, timeout: float = 120, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """The installed pytop command line, as a user would run it."""
    return subprocess.run([*PYTOP, *args], capture_output=True, text=True, timeout=timeout, **kwargs)


@contextlib.contextmanager
def sampling(sampler: Any, publish: Any) -> Iterator[Any]:
    """A started sampler, stopped however the block ends: a failed assertion must not leave its
    threads sampling the next test's target."""
    sampler.start(publish)
    try:
        yield sampler
    finally:
        sampler.stop()


def wait_until(test: Callable[[], Any], timeout: float = 20, what: Callable[[], Any] = lambda: None) -> None:
    """Until `test()` is true; past `timeout`, fail saying `what()`."""
    deadline = time.monotonic() + timeout
    while not test():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what()}")
        time.sleep(0.02)


def wait_samples(sampler: Any, count: int, timeout: float = 60) -> None:
    """Until `sampler` has taken `count` samples (a slow machine takes longer, not fewer)."""
    deadline = time.monotonic() + timeout
    while sampler.samples_taken < count:
        if not sampler.running or time.monotonic() > deadline:
            raise AssertionError(f"{sampler.samples_taken} samples of {count} (running: {sampler.running})")
        time.sleep(0.01)



# A C check built with warnings as errors and AddressSanitizer/UndefinedBehaviorSanitizer.
SANITIZED_CHECK_FLAGS = ["-O1", "-g", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", "-Wno-unused-function",
                         "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]


def run_c_check(tmp_path: Path, check: str, sources: list[str], flags: list[str],
                env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Build tests/`check` with native/`sources` (and tests/check.h's CHECK) and run it: a C
    property check on pure logic. Skips without a C compiler."""
    import pytest  # (here: bench/ and tools/ import this module without pytest)

    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler")
    native = ROOT / "native"
    binary = tmp_path / Path(check).stem
    subprocess.run([compiler, "-std=gnu11", *flags, f"-I{native}", f"-I{ROOT / 'tests'}", "-o", str(binary),
                    str(ROOT / "tests" / check), *(str(native / name) for name in sources)], check=True)
    return subprocess.run([str(binary)], capture_output=True, text=True, timeout=timeout, env=env)
