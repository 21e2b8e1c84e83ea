"""Bad input to the command line: one clear line on stderr, a non-zero exit, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import helpers


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


def old_python() -> str | None:
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for name in ("3.7.16", "3.6.15", "2.7.18"):
        exe = versions / name / "bin" / "python"
        if exe.exists():
            return str(exe)
    return None


@pytest.mark.skipif(old_python() is None, reason="no Python older than 3.8 installed")
def test_unsupported_version() -> None:
    exe = old_python()
    assert exe is not None
    target = subprocess.Popen([exe, "-c", "import time; print('ready'); time.sleep(60)"],
                              stdout=subprocess.PIPE)
    try:
        assert target.stdout is not None and target.stdout.readline()
        result = helpers.run_pytop("--dump", str(target.pid))
    finally:
        target.kill()
        target.wait()
    assert_clean_failure(result, 1, "is not supported", "3.8 to 3.15")


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
