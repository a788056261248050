"""The workdir lock: publishing references (a new run, a reuse, a plan) and deleting run under it.

An OS file lock (filelock) gives mutual exclusion; beside it an owner file names the holder while it
holds the lock. A holder that exits normally removes the owner file. A holder that crashed (killed)
leaves the owner file behind: the next caller gets the OS lock but finds the owner file and fails
visibly, naming the file, the old holder's pid and time. The lock is never stolen by guesswork: a
person removes the owner file after checking that process is gone.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import orjson
from filelock import FileLock, Timeout

from core import statefs
from core.runs.errors import LockBusy, LockLeft, Refused
from core.safeio import UnsafeFile
from core.runs.files import FILE_MODE, ensure_dir

LOCK_FILE = ".kitsoki-runs.lock"
OWNER_FILE = ".kitsoki-runs.lock.owner"


def _owner_text(path: Path) -> str:
    try:
        data = orjson.loads(path.read_bytes())
        return f"pid {data.get('pid')} on {data.get('host')} since {data.get('at')} ({data.get('operation')})"
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return "an unknown holder"


@contextmanager
def workdir_lock(workdir: Path, operation: str) -> Iterator[None]:
    workdir = Path(workdir)
    ensure_dir(workdir)
    owner = workdir / OWNER_FILE
    for path in (workdir / LOCK_FILE, owner):  # filelock opens with O_TRUNC: never through a planted link
        try:
            statefs.check_path(path, what="the workdir lock")
            if path.exists() and not path.is_file():
                raise UnsafeFile(path, "the workdir lock is not a regular file (remove it)")
        except UnsafeFile as exc:
            raise Refused(str(exc)) from None
    lock = FileLock(workdir / LOCK_FILE, mode=FILE_MODE, thread_local=False)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise LockBusy(f"the workdir {workdir} is locked by {_owner_text(owner)}; try again when it finishes",
                       workdir=str(workdir)) from None
    try:
        if owner.exists() or owner.is_symlink():
            raise LockLeft(
                f"the workdir lock of {workdir} was left by {_owner_text(owner)}, which did not release it "
                f"(crashed?). Check that process is gone, then remove {owner} by hand.",
                workdir=str(workdir), owner_file=str(owner))
        fd = os.open(owner, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        with os.fdopen(fd, "wb") as fh:
            fh.write(orjson.dumps({"pid": os.getpid(), "host": socket.gethostname(), "operation": operation,
                                   "at": datetime.now(timezone.utc).isoformat()}))
        try:
            yield
        finally:
            owner.unlink(missing_ok=True)
    finally:
        lock.release()
