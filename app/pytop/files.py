"""Files pytop writes (exports, reports, statistics, a started program's output), and files
named by others that it reads (a core's mapped files, a target's executable). Any part but
core may import it (like errors).

pytop often runs as root, in directories other users can write to (/tmp). A link planted where
it is about to write would have root overwrite a file of the link's choosing; a FIFO would block
it for ever. So a file is opened without following a link (O_NOFOLLOW), without blocking
(O_NONBLOCK, until it is known to be a regular file), and created only where nothing is (O_EXCL)
when its name is pytop's own choosing; what is created is readable by its owner alone (0600).
A path that is a link, or not a regular file, is refused with a message that says so. A file
others named is read only if it is a regular file, and opened without blocking.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

from . import errors


def open_fd(path: str, *, new: bool = False, append: bool = False, read: bool = False) -> int:
    """A descriptor open for writing `path` (see the module's doc); `new`: it must not exist yet
    (names pytop chose itself); `append`: written at its end, else emptied; `read`: for reading
    too. Raises errors.UsageError saying why it cannot be."""
    flags = (os.O_RDWR if read else os.O_WRONLY) | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    flags |= os.O_EXCL if new else 0
    try:
        fd = os.open(path, flags | (os.O_APPEND if append else 0), 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise errors.UsageError(f"refusing to write {path}: it is a symbolic link") from None
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads
            raise errors.UsageError(f"refusing to write {path}: it is not a regular file") from None
        raise errors.UsageError(f"cannot write {path}: {exc.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise errors.UsageError(f"refusing to write {path}: it is not a regular file")
        if not append:
            os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_binary(path: str, *, new: bool = False) -> BinaryIO:
    """open_fd(), as a file object."""
    return os.fdopen(open_fd(path, new=new), "wb")


def write_file(path: str, data: bytes, *, new: bool = False) -> None:
    with open_binary(path, new=new) as f:
        f.write(data)


def open_regular(path: str) -> BinaryIO:
    """`path` open for reading if it is a regular file, found without blocking: a FIFO named by a
    core, a --sysroot tree, or a target that put one where its deleted executable was would
    block for ever. OSError (ENXIO-like, saying so) for anything else."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")
