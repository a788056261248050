"""The apply journal: the pre-edit state of every file an apply touches, on disk before the tree is.

Why a journal and not an in-memory snapshot: keep-or-revert must hold even when the process is
SIGKILLed between two writes. The journal `.artifacts/mining/journal/<recipe_id>.json` is written
atomically (tmp + fsync + rename + fsync dir) before the first byte of the tree changes and is
deleted only once the apply is settled (kept green, or fully reverted). So a journal on disk means
"an apply did not finish": `recover` (run at start-up) puts every journaled file back to its
pre-edit bytes and mode, or its absence, and removes the directories the apply created.

Restoring is idempotent (a file already in its pre-edit state is not rewritten), so a crash during
a revert or during a recovery is mended by the next recovery. Every file operation goes through
directory descriptors opened with O_NOFOLLOW from the workspace root: a symlink planted in the tree
after the journal was written makes that file fail to restore (and be named), never a write
outside the workspace.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import logging
import os
import stat
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

import orjson
from pydantic import BaseModel, ValidationError, field_validator, model_validator

from core.locks import workspace_lock

log = logging.getLogger(__name__)

JOURNAL_DIR = ".artifacts/mining/journal"
TMP_SUFFIX = ".kitsoki-miner.tmp"
_NAME_MAX = 255

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def journal_dir(workspace: Path) -> Path:
    return Path(workspace) / JOURNAL_DIR


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tmp_name(name: str) -> str:
    """The temp file a write of `name` goes through, beside it. Deterministic, so recovery can
    find a stray one from the journal alone; hashed when the plain form would be too long."""
    plain = f".{name}{TMP_SUFFIX}"
    if len(os.fsencode(plain)) <= _NAME_MAX:
        return plain
    return f".{sha256_hex(os.fsencode(name))[:32]}{TMP_SUFFIX}"


def is_safe_relpath(path: str) -> bool:
    """A workspace-relative POSIX path that cannot leave the workspace by its spelling."""
    if not path or "\0" in path or "\\" in path:
        return False
    pure = PurePosixPath(path)
    return not pure.is_absolute() and ".." not in pure.parts and pure.as_posix() == path and path != "."


# ── the journal record ────────────────────────────────────────────────────────────────────────


class JournalFile(BaseModel):
    path: str
    """Workspace-relative POSIX path."""
    existed: bool
    mode: int | None = None
    """Permission bits (stat.S_IMODE) before the edit; None when the file did not exist."""
    before_b64: str | None = None
    """The pre-edit bytes, base64; None when the file did not exist."""
    sha256_after: str

    @field_validator("path")
    @classmethod
    def _confined(cls, path: str) -> str:
        if not is_safe_relpath(path):
            raise ValueError(f"unsafe path {path!r}")
        return path

    @model_validator(mode="after")
    def _consistent(self) -> JournalFile:
        if self.existed and (self.mode is None or self.before_b64 is None):
            raise ValueError(f"{self.path}: an existing file needs its mode and bytes")
        if self.before_b64 is not None:
            base64.b64decode(self.before_b64, validate=True)
        return self

    def before(self) -> bytes | None:
        return base64.b64decode(self.before_b64) if self.before_b64 is not None else None


class Journal(BaseModel):
    version: Literal[1] = 1
    recipe_id: str
    phase: Literal["applying", "reverting"] = "applying"
    """"applying" from before the first write until the apply settles; "reverting" once a revert
    has begun (informational: recovery restores the same way in both phases)."""
    started_at: float
    pid: int
    files: list[JournalFile]
    created_dirs: list[str] = []
    """Directories the delta creates, shallowest first; removed (deepest first) when empty."""

    @field_validator("created_dirs")
    @classmethod
    def _confined_dirs(cls, dirs: list[str]) -> list[str]:
        for d in dirs:
            if not is_safe_relpath(d):
                raise ValueError(f"unsafe directory {d!r}")
        return dirs

    @classmethod
    def new(cls, recipe_id: str, files: list[JournalFile], created_dirs: list[str]) -> Journal:
        return cls(recipe_id=recipe_id, started_at=time.time(), pid=os.getpid(), files=files,
                   created_dirs=created_dirs)


class CorruptJournal(ValueError):
    """A journal that does not parse or validate: it is moved aside, never guessed at."""


def journal_path(workspace: Path, recipe_id: str) -> Path:
    return journal_dir(workspace) / f"{recipe_id}.json"


def pending_journals(workspace: Path) -> list[Path]:
    """Journals of applies that did not finish (not the `.corrupt` ones moved aside)."""
    jd = journal_dir(workspace)
    try:
        names = os.listdir(jd)
    except FileNotFoundError:
        return []
    return [jd / n for n in sorted(names) if n.endswith(".json") and not n.startswith(".")]


def write_journal(workspace: Path, journal: Journal) -> Path:
    """Write the journal atomically and durably (replacing this recipe's journal, if any). On
    failure the tmp file is removed; a previous journal of the recipe is left intact."""
    jd = journal_dir(workspace)
    _makedirs_durable(jd)
    path = jd / f"{journal.recipe_id}.json"
    tmp = jd / f".{journal.recipe_id}.json.tmp"
    data = orjson.dumps(journal.model_dump())
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        fsync_dir(jd)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def read_journal(path: Path) -> Journal:
    try:
        return Journal.model_validate(orjson.loads(path.read_bytes()))
    except (orjson.JSONDecodeError, ValidationError) as exc:
        raise CorruptJournal(f"{path.name}: {exc}") from exc


def delete_journal(path: Path) -> None:
    with suppress(FileNotFoundError):
        os.unlink(path)
    fsync_dir(path.parent)


# ── descriptor-relative file operations ───────────────────────────────────────────────────────


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _makedirs_durable(path: Path) -> None:
    """mkdir -p, fsyncing each new directory's parent so the entry survives a power cut."""
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        with suppress(FileExistsError):
            os.mkdir(directory)
        fsync_dir(directory.parent)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def open_root(workspace: Path) -> int:
    return os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def open_dir(root_fd: int, parts: tuple[str, ...], *, create: bool = False) -> int:
    """A descriptor of the directory `parts` below root, never following a symlink (ELOOP).
    With `create`, missing directories are made (mode 0777 less the umask)."""
    fd = os.dup(root_fd)
    try:
        for part in parts:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                os.fsync(fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_file(dir_fd: int, name: str) -> tuple[bytes, int] | None:
    """(bytes, permission bits) of a regular file, None when absent; a symlink or special file
    raises (O_NOFOLLOW; O_NONBLOCK so a FIFO cannot hang us)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, f"{name} is not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), stat.S_IMODE(st.st_mode)
    finally:
        os.close(fd)


def write_atomic(dir_fd: int, name: str, data: bytes, mode: int | None,
                 before_replace: Callable[[], None] | None = None) -> None:
    """Replace `name` in `dir_fd` with `data` via a temp file beside it: write, fsync, chmod to
    `mode` (None = a new file, 0644 less the umask), rename over, fsync the directory."""
    tmp = tmp_name(name)
    with suppress(FileNotFoundError):
        os.unlink(tmp, dir_fd=dir_fd)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o644 if mode is None else 0o600, dir_fd=dir_fd)
    try:
        try:
            _write_all(fd, data)
            if mode is not None:
                os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        if before_replace is not None:
            before_replace()
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except Exception:
        with suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    os.fsync(dir_fd)


# ── restoring ─────────────────────────────────────────────────────────────────────────────────


class RevertFailed(RuntimeError):
    """A revert (or recovery) could not put every file back. The journal is kept, so the next
    `recover` retries; `left` names the files not restored."""

    def __init__(self, left: list[str], errors: list[str], journal: Path | None = None,
                 failure: str | None = None) -> None:
        self.left = list(left)
        self.errors = list(errors)
        self.journal = journal
        self.failure = failure
        where = f"; the journal is kept at {journal} and `recover` will retry" if journal else ""
        cause = f" after: {failure}" if failure else ""
        super().__init__(f"revert failed{cause}: could not restore {', '.join(self.left)} "
                         f"({'; '.join(self.errors)}){where}")


@dataclass
class Restored:
    restored: list[str] = field(default_factory=list)
    """Files whose pre-edit bytes or mode had to be written back."""
    removed: list[str] = field(default_factory=list)
    """Files the delta created, and then its directories, that were deleted."""
    left: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def restore(workspace: Path, journal: Journal, hook: Callable[[str], None] | None = None) -> Restored:
    """Put every journaled file back; never raises for one file (it is named in `left`).

    `hook("restore:<path>")` is called before each file (a test seam: raising there makes that
    file fail to restore)."""
    out = Restored()
    root = open_root(workspace)
    try:
        for entry in journal.files:
            try:
                if hook is not None:
                    hook(f"restore:{entry.path}")
                _restore_one(root, entry, out)
            except Exception as exc:  # noqa: BLE001 - named in `left`, the journal is kept
                out.left.append(entry.path)
                out.errors.append(f"{entry.path}: {exc}")
        for directory in sorted(journal.created_dirs, key=lambda d: d.count("/"), reverse=True):
            _remove_dir_if_empty(root, directory, out)
    finally:
        os.close(root)
    return out


def _restore_one(root: int, entry: JournalFile, out: Restored) -> None:
    parts = PurePosixPath(entry.path).parts
    parent, name = parts[:-1], parts[-1]
    before = entry.before()
    try:
        # A directory that existed before the apply is recreated if it has gone since.
        dir_fd = open_dir(root, parent, create=before is not None)
    except FileNotFoundError:
        return  # a new file whose parent never came to be: nothing to undo
    try:
        if before is not None:
            if read_file(dir_fd, name) != (before, entry.mode):
                write_atomic(dir_fd, name, before, entry.mode)
                out.restored.append(entry.path)
        else:
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                pass
            else:
                if stat.S_ISDIR(st.st_mode):
                    raise IsADirectoryError(errno.EISDIR, f"{entry.path} is now a directory")
                os.unlink(name, dir_fd=dir_fd)
                os.fsync(dir_fd)
                out.removed.append(entry.path)
        with suppress(FileNotFoundError):
            os.unlink(tmp_name(name), dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def _remove_dir_if_empty(root: int, directory: str, out: Restored) -> None:
    parts = PurePosixPath(directory).parts
    try:
        dir_fd = open_dir(root, parts[:-1])
    except OSError:
        return  # parent gone or replaced: nothing of ours to remove below it
    try:
        os.rmdir(parts[-1], dir_fd=dir_fd)
    except OSError:
        return  # absent, or someone put a file in it since: leave it
    else:
        os.fsync(dir_fd)
        out.removed.append(directory)
    finally:
        os.close(dir_fd)


def mark_reverting(workspace: Path, journal: Journal) -> None:
    """Best effort: record that a revert began (the old journal stays valid if this fails)."""
    try:
        write_journal(workspace, journal.model_copy(update={"phase": "reverting"}))
    except Exception:  # noqa: BLE001 - informational only
        log.warning("could not mark the journal of %s as reverting", journal.recipe_id, exc_info=True)


# ── recovery ──────────────────────────────────────────────────────────────────────────────────


def _move_aside(path: Path) -> Path:
    target = path.with_name(path.name + ".corrupt")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.corrupt.{n}")
        n += 1
    os.rename(path, target)
    fsync_dir(path.parent)
    return target


def recover(workspace: Path, trace=None, *, lock_timeout: float = 0.0) -> list[dict]:
    """Finish every apply that did not: restore journaled files, remove stray temp files and the
    delta's empty directories, delete the journal. One report dict per journal, also appended to
    `trace` (a core.trace.Trace) as `mining.recovered`.

    Takes the workspace lock (WorkspaceBusy while another process applies: its journal is live).
    A journal that does not parse is renamed `<name>.corrupt` and reported with `corrupt: true`.
    A file that cannot be restored is reported under `left` and its journal kept for next time.
    """
    workspace = Path(workspace).resolve()
    jd = journal_dir(workspace)
    if not jd.is_dir():
        return []  # no apply ever began here: do not create .artifacts just to look
    reports: list[dict] = []
    with workspace_lock(workspace, lock_timeout):
        for name in sorted(os.listdir(jd)):
            if name.startswith(".") and name.endswith(".json.tmp"):
                with suppress(FileNotFoundError):  # a journal never completed: the tree is untouched
                    os.unlink(jd / name)
        for path in pending_journals(workspace):
            reports.append(_recover_one(workspace, path))
    if trace is not None:
        for report in reports:
            try:
                trace.append("mining.recovered", report)
            except Exception:  # noqa: BLE001 - the restore happened; the record is returned anyway
                log.warning("could not record mining.recovered in %s", trace, exc_info=True)
    return reports


def _recover_one(workspace: Path, path: Path) -> dict:
    try:
        journal = read_journal(path)
    except CorruptJournal as exc:
        moved = _move_aside(path)
        log.error("corrupt apply journal moved aside to %s: %s", moved, exc)
        return {"recipe_id": path.stem, "corrupt": True, "moved_to": moved.relative_to(workspace).as_posix(),
                "error": str(exc)[:500], "restored": [], "removed": []}
    result = restore(workspace, journal)
    report = {"recipe_id": journal.recipe_id, "phase": journal.phase,
              "restored": result.restored, "removed": result.removed}
    if result.left:
        report["left"] = result.left
        report["errors"] = result.errors
        log.error("recovery of %s left %s: %s", journal.recipe_id, result.left, result.errors)
    else:
        delete_journal(path)
    return report
