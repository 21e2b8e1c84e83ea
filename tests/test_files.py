"""Files pytop writes as root, in directories others can write to, and files others name that it
reads: a planted link is never followed, a FIFO never waited on, what is made is 0600."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

import helpers
from pytop import errors, files
from pytop.process.launch import Child
from pytop.process.procmaps import Mapping, open_mapped_file


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    """A file of root's, and a link to it where pytop will write."""
    victim = tmp_path / "victim"
    victim.write_text("root's own\n")
    victim.chmod(0o600)
    link = tmp_path / "pytop-4242.collapsed.txt"
    link.symlink_to(victim)
    return victim, link


def test_a_planted_link_is_refused(planted: tuple[Path, Path]) -> None:
    victim, link = planted
    for new in (False, True):
        with pytest.raises(errors.UsageError, match="is a symbolic link" if not new else "symbolic link|File exists"):
            files.write_file(str(link), b"overwritten", new=new)
    assert victim.read_text() == "root's own\n"


def test_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(errors.UsageError, match="not a regular file"):
        files.write_file(str(fifo), b"x")
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # with a reader, the open would succeed
    try:
        with pytest.raises(errors.UsageError, match="not a regular file"):
            files.write_file(str(fifo), b"x")
    finally:
        os.close(reader)
    with pytest.raises(OSError, match="not a regular file"):
        files.open_regular(str(fifo))


def test_new_files_are_the_owners_alone_and_never_replace_one(tmp_path: Path) -> None:
    path = tmp_path / "export.txt"
    files.write_file(str(path), b"one", new=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_bytes() == b"one"
    with pytest.raises(errors.UsageError, match="File exists"):
        files.write_file(str(path), b"two", new=True)
    files.write_file(str(path), b"2")  # a name the user gave: replaced, emptied first
    assert path.read_bytes() == b"2"


def test_a_mapped_file_that_became_a_fifo_is_not_opened(tmp_path: Path) -> None:
    """A target that deleted its executable and made a FIFO of the same name: without
    CAP_SYS_ADMIN (a container's --cap-add SYS_PTRACE) map_files cannot be read, and the FIFO
    was the candidate pytop opened, and waited on for ever."""
    fifo = tmp_path / "program"
    os.mkfifo(fifo)
    with pytest.raises(FileNotFoundError):
        open_mapped_file(os.getpid(), Mapping(0x1000, 0x2000, "r-xp", 0, 12345, str(fifo)))


@pytest.mark.process  # pytop run with such paths
def test_command_line_files_refuse_links_and_fifos(planted: tuple[Path, Path], tmp_path: Path) -> None:
    """--output and --stats-file: a clear refusal, status 2, nothing written; --child-output
    (the live view's log of the program it starts): refused before the program starts."""
    victim, link = planted
    fifo = tmp_path / "stats"
    os.mkfifo(fifo)
    program = ["--", sys.executable, "-c", "import time; time.sleep(0.5)"]
    for options, said in ((["--output", str(link)], "is a symbolic link"),
                          (["--stats-file", str(fifo)], "not a regular file")):
        result = helpers.run_pytop("--batch", "--duration", "0.3", *options, *program, timeout=60)
        assert result.returncode == 2 and said in result.stderr and "Traceback" not in result.stderr, result.stderr
    with pytest.raises(errors.UsageError, match="is a symbolic link"):
        Child([sys.executable, "-c", "pass"], quiet=True, log=str(link))
    assert victim.read_text() == "root's own\n"
