"""Reading files we do not trust: only regular files, never blocking, never without a size cap.

Everything under a workspace can be planted (a FIFO where `.kitsoki.yaml` should be, a link to
`/dev/zero`, a folder named `recipes.json`, a symlink loop). Every read of a workspace or state
file goes through `read_regular`, which opens with O_NONBLOCK (a FIFO cannot hang the open),
checks the opened descriptor is a regular file (not the path, so a swap after a stat cannot
fool it) and reads at most `max_bytes + 1` bytes. Problems raise `UnsafeFile`, an OSError whose
message names the file and says what was wrong, so callers that already report OSErrors keep
working and the person reading the message knows which file to look at.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["UnsafeFile", "read_regular", "is_regular_file", "FAULTS", "os_problem"]

FAULTS = {errno.ENOSPC: "disk full", errno.EDQUOT: "disk quota exceeded", errno.EROFS: "read-only file system",
          errno.EACCES: "permission denied", errno.EPERM: "operation not permitted", errno.EIO: "I/O error"}
"""The file-system faults a person can act on, by the words they know them by."""


def os_problem(exc: OSError) -> str:
    """An OSError's cause for a message: "disk full (No space left on device)" for the faults a
    person can act on, the system's words otherwise."""
    word = FAULTS.get(exc.errno or 0)
    text = exc.strerror or str(exc)
    return f"{word} ({text})" if word else text

_BASE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


class UnsafeFile(OSError):
    """A file that is not a readable regular file within its size cap. `str()` names it."""

    def __init__(self, path: Path | str, problem: str, code: int = errno.EINVAL) -> None:
        super().__init__(code, problem, str(path))
        self.path = str(path)
        self.problem = problem

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def kind_of(mode: int, folder: str = "a directory") -> str:
    """What a file that is not a regular one is, for a message (`folder` is how a directory is called)."""
    if stat.S_ISDIR(mode):
        return folder
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_regular(path: Path | str, max_bytes: int, *, what: str = "file", follow_symlinks: bool = True,
                 dir_fd: int | None = None) -> bytes:
    """The bytes of `path`, a regular file of at most `max_bytes` bytes.

    Raises FileNotFoundError when it does not exist (callers often treat that as "empty") and
    UnsafeFile for everything else: a directory, FIFO, device or socket, a symlink when
    `follow_symlinks` is false, a symlink loop, a file over the cap, or any other OSError.
    `what` names the file's role in the messages ("the apply journal", "recipes.json").
    """
    flags = _BASE_FLAGS | (0 if follow_symlinks else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            problem = ("is a symbolic link; refusing to follow it" if not follow_symlinks
                       else "is a symbolic link loop")
            raise UnsafeFile(path, f"{what} {problem}", errno.ELOOP) from None
        if exc.errno == errno.EISDIR:
            raise UnsafeFile(path, f"{what} is a directory, not a file", errno.EISDIR) from None
        if exc.errno == errno.ENOTDIR:
            raise UnsafeFile(path, f"{what}: a parent of it is not a directory", errno.ENOTDIR) from None
        raise UnsafeFile(path, f"{what} cannot be read: {os_problem(exc)}", exc.errno or errno.EIO) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFile(path, f"{what} is {kind_of(info.st_mode)}; only a regular file is read")
        if info.st_size > max_bytes:
            raise UnsafeFile(path, f"{what} is {info.st_size} bytes, over the {max_bytes}-byte limit", errno.EFBIG)
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            try:
                chunk = os.read(fd, min(left, 1 << 20))
            except BlockingIOError:  # not possible on a regular file; never spin on one
                break
            except OSError as exc:
                raise UnsafeFile(path, f"{what} cannot be read: {os_problem(exc)}",
                                 exc.errno or errno.EIO) from None
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:  # it grew after the fstat
            raise UnsafeFile(path, f"{what} is over the {max_bytes}-byte limit", errno.EFBIG)
        return data
    finally:
        os.close(fd)


def is_regular_file(path: Path | str, *, follow_symlinks: bool = True) -> bool:
    """True when `path` is a regular file (a quick check before `read_regular` names a problem)."""
    try:
        mode = os.stat(path, follow_symlinks=follow_symlinks).st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode)
