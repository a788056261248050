"""The workspace lock: one kitsoki-miner process at a time applies or stages in a workspace.

Why a file lock and not a thread lock: the language server, `kitsoki-miner accept` in a terminal
and a second editor window are separate processes that may all act on one workspace. An apply
that interleaved with another apply (or with staging) could journal the other's half-written
bytes as "pre-edit" state and then "restore" them. So the whole apply, from the staleness check
to deleting the journal, runs under one exclusive OS lock (flock on POSIX via filelock).

A fresh FileLock object is made per call and filelock locks are per open file, so the lock is
also exclusive between two threads (or two lock objects) of one process, and never reentrant: a
nested `workspace_lock` on the same workspace in the same thread fails fast with WorkspaceBusy
(with the default timeout 0) instead of pretending to hold the lock twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

LOCK_NAME = ".artifacts/mining/workspace.lock"

_POLL_SECONDS = 0.01
"""filelock's default poll is 50 ms; applies are short, so a waiter should notice sooner."""


class WorkspaceBusy(RuntimeError):
    """Another process (or thread) holds the workspace lock; nothing was done."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = Path(workspace)
        super().__init__(
            f"another kitsoki-miner process is applying or staging in {self.workspace}; "
            "try again when it finishes"
        )


def lock_path(workspace: Path) -> Path:
    return Path(workspace) / LOCK_NAME


@contextmanager
def workspace_lock(workspace: Path, timeout: float = 0.0) -> Iterator[None]:
    """Hold the workspace's exclusive lock for the `with` block.

    `timeout` is how long to wait in seconds: 0 tries once, a negative value waits forever.
    Raises WorkspaceBusy when the lock is still held by someone else after `timeout`.
    """
    path = lock_path(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(path, poll_interval=_POLL_SECONDS)
    try:
        lock.acquire(timeout=timeout)
    except Timeout:
        raise WorkspaceBusy(workspace) from None
    try:
        yield
    finally:
        lock.release()
