"""Bad input to the command line: one clear line on stderr, a non-zero exit, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import helpers

pytestmark = pytest.mark.process  # pytop run as its users run it


def assert_clean_failure(result: subprocess.CompletedProcess[str], code: int, *phrases: str) -> None:
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("pytop: ")
    for phrase in phrases:
        assert phrase in result.stderr


def unused_pid() -> int:
    pid = 4_000_000
    while os.path.exists(f"/proc/{pid}"):
        pid -= 1
    return pid


def test_no_such_process() -> None:
    pid = unused_pid()
    assert_clean_failure(helpers.run_pytop("--dump", str(pid)), 1, f"no process with pid {pid}")


@pytest.mark.parametrize("bad", ["abc", "-5", "0", "12x"])
def test_pid_that_is_not_a_number(bad: str) -> None:
    result = helpers.run_pytop("--dump", f"--pid={bad}")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "not a process id" in result.stderr


def test_not_a_python_process() -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        result = helpers.run_pytop("--dump", str(sleeper.pid))
    finally:
        sleeper.kill()
        sleeper.wait()
    assert_clean_failure(result, 1, "does not look like a Python process")


def old_python(name: str) -> str | None:
    exe = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions" / name / "bin" / "python"
    return str(exe) if exe.exists() else None


@pytest.mark.parametrize("name", ["2.7.18", "3.6.15"])
def test_unsupported_version(name: str, tmp_path: Path) -> None:
    """An older CPython that cannot be read is named as such, not 'not a Python process': 2.7
    and 3.6 have no _PyRuntime, and their interpreter list and GIL are static variables found by
    their .symtab symbols; the same build with its libpython stripped of .symtab is refused,
    named, and said to be stripped. (2.7, 3.6 and 3.7 are read: see the targets' tests.)"""
    exe = old_python(name)
    if exe is None:
        pytest.skip(f"no Python {name} installed")
    library = next((Path(exe).parent.parent / "lib").glob(f"libpython{name[:3]}*.so.1.0"))
    stripped = tmp_path / library.name
    subprocess.run(["strip", "--strip-all", "-o", str(stripped), str(library)], check=True)
    target = subprocess.Popen([exe, "-u", "-c", "import time; print('ready'); time.sleep(60)"],
                              stdout=subprocess.PIPE, env={**helpers.target_env(), "LD_LIBRARY_PATH": str(tmp_path)})
    try:
        assert target.stdout is not None and target.stdout.readline()
        with open(f"/proc/{target.pid}/maps") as maps:
            assert str(stripped) in maps.read()
        result = helpers.run_pytop("--dump", str(target.pid))
    finally:
        target.kill()
        target.wait()
    assert_clean_failure(result, 1, f"Python {name[:3]}", "stripped of its symbol table")
    assert "does not look like a Python process" not in result.stderr


def test_permission_denied_explains_what_to_do() -> None:
    """A target owned by another user, read by root without CAP_SYS_PTRACE."""
    if os.geteuid() != 0:
        pytest.skip("needs root to start a target as another user")
    target = subprocess.Popen(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sleep", "60"])
    try:
        result = subprocess.run(
            ["setpriv", "--bounding-set=-all", "--inh-caps=-all", *helpers.PYTOP, "--dump", str(target.pid)],
            capture_output=True, text=True, timeout=60)
    finally:
        target.kill()
        target.wait()
    assert_clean_failure(result, 1, "permission denied", "CAP_SYS_PTRACE")


def test_json_requires_dump() -> None:
    assert_clean_failure(helpers.run_pytop("--json", "1"), 2, "--json goes with --dump")


def test_an_output_dir_that_cannot_be_written() -> None:
    assert_clean_failure(helpers.run_pytop("--batch", "--output-dir", "/nonexistent/dir", "1"), 2,
                         "--output-dir: /nonexistent/dir is not a directory pytop can write to")
    assert_clean_failure(helpers.run_pytop("--batch", "--child-output", "/tmp/x.log", "1"), 2,
                         "--child-output goes with -- COMMAND or --demo")


def test_a_target_that_has_exited() -> None:
    """Exited but not yet reaped (a zombie): said plainly, not 'not a Python process'."""
    target = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with open(f"/proc/{target.pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            time.sleep(0.01)
        result = helpers.run_pytop("--dump", str(target.pid))
    finally:
        target.wait()
    assert_clean_failure(result, 1, f"process {target.pid} has exited")


@pytest.mark.parametrize("bad", ["0", "-3", "fast", "100001"])
def test_rate_out_of_range(bad: str) -> None:
    result = helpers.run_pytop("--batch", f"--rate={bad}", "1")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "--rate" in result.stderr or "samples per second" in result.stderr, result.stderr


def test_a_core_that_is_a_named_pipe_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "core.fifo"
    os.mkfifo(fifo)
    assert_clean_failure(helpers.run_pytop("--dump", "--core", str(fifo), timeout=60), 1, "not a regular file")


def test_a_sysroot_that_is_not_there(tmp_path: Path) -> None:
    core = tmp_path / "core"
    core.write_bytes(b"\x7fELF")
    assert_clean_failure(helpers.run_pytop("--dump", "--core", str(core), "--sysroot", str(tmp_path / "nowhere")),
                         2, "--sysroot", "is not a directory")


def test_the_live_view_without_a_terminal_or_stdin() -> None:
    closed = subprocess.run([*helpers.PYTOP, "1"], capture_output=True, stdin=subprocess.DEVNULL, text=True,
                            timeout=60)
    assert_clean_failure(closed, 2, "needs a terminal")
    no_stdin = subprocess.run(["sh", "-c", f"exec {' '.join(helpers.PYTOP)} 1 <&-"], capture_output=True, text=True,
                              timeout=60)
    assert_clean_failure(no_stdin, 2, "needs a terminal")


def test_a_terminal_that_cannot_draw_the_view() -> None:
    """TERM=dumb with a real terminal (script(1) gives it one): a clear refusal, not escapes."""
    result = subprocess.run(["script", "-qec", f"{' '.join(helpers.PYTOP)} 1", "/dev/null"], capture_output=True,
                            text=True, timeout=60, env={**os.environ, "TERM": "dumb"})
    assert result.returncode == 2, result.stdout
    assert "TERM=dumb" in result.stdout and "\x1b[" not in result.stdout


def test_stats_file_goes_with_sampling() -> None:
    assert_clean_failure(helpers.run_pytop("--dump", "--stats-file", "/tmp/stats.json", "1"), 2,
                         "--stats-file goes with the live view or --batch")


@pytest.mark.parametrize("duration", ["inf", "1e30"])
def test_a_batch_until_the_program_ends(duration: str) -> None:
    """The program ends once pytop samples it, not after a time: on a busy machine pytop's
    start-up once took longer than the program's 1.5 s of life, and found it gone."""
    target = subprocess.Popen([sys.executable, "-c", "import sys; print('ready', flush=True); sys.stdin.readline()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert target.stdout is not None and target.stdout.readline()
        with subprocess.Popen([*helpers.PYTOP, "--batch", "--duration", duration, str(target.pid)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as pytop:
            helpers.sampling_started(pytop.pid, timeout=120)
            assert target.stdin is not None
            target.stdin.close()  # the program ends
            stdout, stderr = pytop.communicate(timeout=120)
    finally:
        target.kill()
        target.wait()
    assert pytop.returncode == 0, stderr
    assert "Traceback" not in stderr and "exited during the run" in stdout


def test_a_report_that_cannot_be_written() -> None:
    with subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)"],
                          stdout=subprocess.PIPE) as target:
        try:
            assert target.stdout is not None and target.stdout.readline()
            full = subprocess.run([*helpers.PYTOP, "--dump", str(target.pid)], stdout=open("/dev/full", "w"),
                                  stderr=subprocess.PIPE, text=True, timeout=60)
            closed = subprocess.run(["sh", "-c", f"exec {' '.join(helpers.PYTOP)} --dump {target.pid} >&-"],
                                    capture_output=True, text=True, timeout=60)
        finally:
            target.kill()
    assert full.returncode == 1 and "Traceback" not in full.stderr
    assert "cannot write the report: No space left on device" in full.stderr
    assert_clean_failure(closed, 2, "standard output is closed")


def test_a_core_cut_in_its_headers_is_said_to_be_truncated(tmp_path: Path) -> None:
    elf = Path("/bin/sh").read_bytes()
    for size in (40, 100):
        cut = tmp_path / f"core.{size}"
        cut.write_bytes(elf[:size])
        assert_clean_failure(helpers.run_pytop("--dump", "--core", str(cut)), 1, "is truncated")


def test_native_cannot_go_without_stopping_the_target() -> None:
    assert_clean_failure(helpers.run_pytop("--native", "--nonblocking", "--batch", "1"), 2,
                         "--native stops the target's threads")
