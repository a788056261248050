"""The workspace lock: one kitsoki-miner process at a time applies or stages in a workspace.

Why a file lock and not a thread lock: the language server, `kitsoki-miner accept` in a terminal
and a second editor window are separate processes that may all act on one workspace. An apply
that interleaved with another apply (or with staging) could journal the other's half-written
bytes as "pre-edit" state and then "restore" them. So the whole apply, from the staleness check
to deleting the journal, runs under one exclusive OS lock (flock on POSIX).

Why flock by hand and not filelock: the lock file lives in `.artifacts/`, where anything can be
planted. filelock opens the path with O_CREAT|O_TRUNC and follows a link, so a `workspace.lock`
linked to a file outside the workspace would be truncated. `file_lock` opens it through
core.statefs (no link on the way, never truncated, a FIFO or a folder refused by name) and takes
flock on that descriptor.

Each `file_lock` opens its own descriptor and flock locks belong to the open file description,
so the lock is also exclusive between two threads (or two lock holders) of one process, and never
reentrant: a nested `workspace_lock` on the same workspace in the same thread fails fast with
WorkspaceBusy (with the default timeout 0) instead of pretending to hold the lock twice.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core import statefs

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".artifacts/mining/workspace.lock"

_POLL_SECONDS = 0.01
"""Applies are short, so a waiter should notice a release soon."""


class WorkspaceBusy(RuntimeError):
    """Another process (or thread) holds the workspace lock; nothing was done."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = Path(workspace)
        super().__init__(
            f"another kitsoki-miner process is applying or staging in {self.workspace}; "
            "try again when it finishes"
        )


class LockTimeout(TimeoutError):
    """The lock file stayed locked by someone else for the whole timeout."""


def lock_path(workspace: Path) -> Path:
    return Path(workspace) / LOCK_NAME


def acquire(path: Path | str, timeout: float = 0.0, *, what: str = "lock file") -> int:
    """The descriptor holding an exclusive flock on `path` (created if absent); close it to release.

    `timeout` in seconds: 0 tries once, a negative value waits forever. Raises LockTimeout when
    still held elsewhere, UnsafeFile when `path` is a link, a folder, a FIFO or a device."""
    try:
        fd = statefs.open_file(path, os.O_RDWR | os.O_CREAT, 0o644, what=what, create_dirs=True)
    except OSError as exc:
        # A read-only workspace (or one we may not write) can still be locked through an existing
        # lock file opened for reading: flock needs no write access, and whoever holds the lock
        # then finds out, by name, what it cannot write.
        if exc.errno not in (errno.EROFS, errno.EACCES, errno.ENOSPC, errno.EDQUOT):
            raise
        try:
            fd = statefs.open_file(path, os.O_RDONLY, what=what)
        except FileNotFoundError:
            raise exc from None
    try:
        if fcntl is not None:
            deadline = None if timeout < 0 else time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise LockTimeout(errno.EAGAIN, f"{path} is locked by another process") from None
                    time.sleep(_POLL_SECONDS)
                except OSError as exc:
                    if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP):
                        break  # a filesystem without flock: nothing more we can do
                    raise
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def file_lock(path: Path | str, timeout: float = 0.0, *, what: str = "lock file") -> Iterator[None]:
    """Hold `acquire(path, timeout)` for the `with` block."""
    fd = acquire(path, timeout, what=what)
    try:
        yield
    finally:
        os.close(fd)  # releases the flock


@contextmanager
def workspace_lock(workspace: Path, timeout: float = 0.0) -> Iterator[None]:
    """Hold the workspace's exclusive lock for the `with` block.

    `timeout` is how long to wait in seconds: 0 tries once, a negative value waits forever.
    Raises WorkspaceBusy when the lock is still held by someone else after `timeout`, and
    UnsafeFile (naming it) when `.artifacts`, `.artifacts/mining` or the lock file is a link or
    not what it should be.
    """
    try:
        fd = acquire(lock_path(workspace), timeout, what="the workspace lock")
    except LockTimeout:
        raise WorkspaceBusy(workspace) from None
    try:
        yield
    finally:
        os.close(fd)
