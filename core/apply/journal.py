"""The apply journal: the pre-edit state of every file an apply touches, on disk before the tree is.

Why a journal and not an in-memory snapshot: keep-or-revert must hold even when the process is
SIGKILLed between two writes. The journal `.artifacts/mining/journal/<recipe_id>.json` is written
atomically (tmp + fsync + rename + fsync dir) before the first byte of the tree changes and is
deleted only once the apply is settled and its verdict recorded. So a journal on disk means "an
apply did not finish": recovery (core.apply.recovery, run at start-up) finishes it.

Its phase says how far it got: `applying` / `reverting` (the tree may be half way: restore it),
`kept` (green and settled: only the verdict may be missing) and `reverted` (restored: only the
verdict may be missing). A subprocess gate's leader is recorded before the gate may run, so
recovery can end a gate the killed accept left running.

The journal is signed (core.authn) because recovery acts on it: a planted one is never obeyed.
Restoring a file is conditional on its bytes: a file is put back only while it still holds
exactly what the apply wrote (`sha256_after`); a file someone changed since (an edit typed while
the gate ran, or after a crash) is kept and named. Restoring is idempotent, so a crash during a
revert or a recovery is mended by the next recovery. Every file operation goes through directory
descriptors opened with O_NOFOLLOW from the workspace root: a symlink planted in the tree makes
that file be left (and named), never a write outside the workspace.
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

from pydantic import BaseModel, ValidationError, field_validator, model_validator

from core import statefs
from core.apply.processes import GateProcess
from core.authn import NotAuthentic, seal, unseal
from core.ids import BadRecipeId, require_recipe_id

log = logging.getLogger(__name__)

JOURNAL_DIR = ".artifacts/mining/journal"
JOURNAL_PURPOSE = "apply journal"
TMP_SUFFIX = ".kitsoki-miner.tmp"
MAX_JOURNAL_BYTES = 512 << 20
"""A journal holds the pre-edit bytes of every file it touches (base64)."""
_NAME_MAX = 255
_FORBIDDEN_TOP = frozenset({".artifacts"})

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

Phase = Literal["applying", "reverting", "kept", "reverted"]


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
    """A workspace-relative POSIX path that cannot leave the workspace by its spelling, and names
    nothing under `.git/` (anywhere) or `.artifacts/`."""
    if not isinstance(path, str) or not path or "\0" in path or "\\" in path:
        return False
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or pure.as_posix() != path or path == ".":
        return False
    return ".git" not in pure.parts and pure.parts[0] not in _FORBIDDEN_TOP


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
    """What the apply writes: a file is restored only while it still holds exactly these bytes."""

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
        if self.mode is not None and not 0 <= self.mode <= 0o7777:
            raise ValueError(f"{self.path}: mode {self.mode!r} is not a permission mode")
        if len(self.sha256_after) != 64 or any(c not in "0123456789abcdef" for c in self.sha256_after):
            raise ValueError(f"{self.path}: sha256_after is not a sha256 hex digest")
        return self

    def before(self) -> bytes | None:
        return base64.b64decode(self.before_b64) if self.before_b64 is not None else None


class Journal(BaseModel):
    version: Literal[2] = 2
    recipe_id: str
    phase: Phase = "applying"
    started_at: float
    started_at_ns: int
    """When the apply took the lock: a verdict recorded after this instant is this apply's."""
    pid: int
    files: list[JournalFile]
    created_dirs: list[str] = []
    """Directories the delta creates, shallowest first; removed (deepest first) when empty."""
    records_verdict: bool = False
    """The caller records a verdict (`mining.proposal_decided`): recovery finishes it if it is missing."""
    gate_process: GateProcess | None = None
    """A subprocess gate's leader, recorded before the gate may run."""
    gate_processes: list[GateProcess] = []
    """Further leaders when the gate runs several processes at once (one per app), each recorded
    before it may run."""
    failure: str | None = None
    """Phase reverted: why."""
    kept_edits: list[str] = []
    """Phase reverted: files left as someone changed them instead of being restored."""

    @field_validator("recipe_id")
    @classmethod
    def _recipe_id(cls, value: str) -> str:
        return require_recipe_id(value)

    @field_validator("created_dirs")
    @classmethod
    def _confined_dirs(cls, dirs: list[str]) -> list[str]:
        for d in dirs:
            if not is_safe_relpath(d):
                raise ValueError(f"unsafe directory {d!r}")
        return dirs

    @classmethod
    def new(cls, recipe_id: str, files: list[JournalFile], created_dirs: list[str], *,
            records_verdict: bool = False) -> Journal:
        now = time.time_ns()
        return cls(recipe_id=recipe_id, started_at=now / 1e9, started_at_ns=now, pid=os.getpid(), files=files,
                   created_dirs=created_dirs, records_verdict=records_verdict)


class CorruptJournal(ValueError):
    """A signed journal that does not validate: it is moved aside, never guessed at."""


class RefusedJournal(ValueError):
    """A journal that is not ours (unsigned, forged, another key) or not a regular file: moved aside."""

    def __init__(self, message: str, *, kind: str, other_key: bool = False) -> None:
        self.kind = kind
        self.other_key = other_key
        super().__init__(message)


def journal_rel(recipe_id: str) -> str:
    return f"{JOURNAL_DIR}/{require_recipe_id(recipe_id, 'apply journal')}.json"


def journal_path(workspace: Path, recipe_id: str) -> Path:
    return Path(workspace) / journal_rel(recipe_id)


def pending_journals(workspace: Path) -> list[Path]:
    """Journals of applies that did not finish (not the ones moved aside). Raises UnsafeFile when
    the journal folder is a link or not a folder."""
    jd = journal_dir(workspace)
    try:
        fd = statefs.open_dir(jd)
    except FileNotFoundError:
        return []
    try:
        names = os.listdir(fd)
    finally:
        os.close(fd)
    return [jd / n for n in sorted(names) if n.endswith(".json") and not n.startswith(".")]


def write_journal(workspace: Path, journal: Journal) -> Path:
    """Write the journal, signed, atomically and durably (replacing this recipe's journal, if any).
    On failure the tmp file is removed; a previous journal of the recipe is left intact."""
    rel = journal_rel(journal.recipe_id)
    data = seal(journal.model_dump(mode="json"), purpose=JOURNAL_PURPOSE, rel=rel, workspace=workspace)
    path = Path(workspace) / rel
    statefs.write_atomic(path, data, mode=0o600, what="the apply journal")
    return path


def read_journal(workspace: Path, path: Path) -> Journal:
    """A journal kitsoki-miner wrote, or RefusedJournal / CorruptJournal saying why it is not used."""
    try:
        data = statefs.read_bytes(path, MAX_JOURNAL_BYTES, what="the apply journal")
    except statefs.UnsafeFile as exc:
        raise RefusedJournal(str(exc), kind="unsafe") from None
    rel = f"{JOURNAL_DIR}/{path.name}"
    try:
        body = unseal(data, purpose=JOURNAL_PURPOSE, rel=rel, path=path, what="the apply journal",
                      workspace=workspace)
    except NotAuthentic as exc:
        raise RefusedJournal(str(exc), kind="forged", other_key=exc.other_key) from None
    try:
        journal = Journal.model_validate(body)
    except (ValidationError, BadRecipeId) as exc:
        raise CorruptJournal(f"{path}: {exc}") from None
    if f"{journal.recipe_id}.json" != path.name:
        raise CorruptJournal(f"{path}: it is the journal of {journal.recipe_id}, under another name")
    return journal


def delete_journal(path: Path) -> None:
    dir_fd, name = statefs.dir_of(path)
    try:
        with suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dir_fd)
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


# ── descriptor-relative file operations ───────────────────────────────────────────────────────


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
    """Replace `name` in `dir_fd` with `data` via the temp file tmp_name(name) (a leftover of a crash
    removed first): written, fsynced, chmodded to `mode` (None = a new file, 0644 less the umask),
    renamed over, the folder fsynced (core.statefs.replace_in)."""
    tmp = tmp_name(name)
    with suppress(FileNotFoundError):
        os.unlink(tmp, dir_fd=dir_fd)
    statefs.replace_in(dir_fd, name, data, tmp=tmp, create_mode=0o644 if mode is None else 0o600, exact_mode=mode,
                       before_replace=before_replace)


# ── restoring ─────────────────────────────────────────────────────────────────────────────────


class RevertFailed(RuntimeError):
    """A revert (or recovery) could not put every file back. The journal is kept, so the next
    recovery retries; `left` names the files not restored."""

    def __init__(self, left: list[str], errors: list[str], journal: Path | None = None,
                 failure: str | None = None) -> None:
        self.left = list(left)
        self.errors = list(errors)
        self.journal = journal
        self.failure = failure
        where = f"; the journal is kept at {journal} and recovery will retry" if journal else ""
        cause = f" after: {failure}" if failure else ""
        super().__init__(f"revert failed{cause}: could not restore {', '.join(self.left)} "
                         f"({'; '.join(self.errors)}){where}")


@dataclass
class Restored:
    restored: list[str] = field(default_factory=list)
    """Files whose pre-edit bytes had to be written back."""
    removed: list[str] = field(default_factory=list)
    """Files the delta created, and then its directories, that were deleted."""
    kept: list[dict] = field(default_factory=list)
    """{"path", "why"}: files someone changed after the apply wrote them; left as they are."""
    left: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def kept_text(self) -> str:
        return "; ".join(f"{k['path']} was kept as it is: {k['why']}" for k in self.kept)


def restore(workspace: Path, journal: Journal, hook: Callable[[str], None] | None = None) -> Restored:
    """Put back every journaled file that still holds the apply's bytes; never raises for one file
    (it is named in `left`). Files changed since the apply wrote them are named in `kept`.

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


def _keep(out: Restored, path: str, why: str) -> None:
    out.kept.append({"path": path, "why": why})
    log.warning("not restoring %s: %s", path, why)


def _restore_one(root: int, entry: JournalFile, out: Restored) -> None:
    parts = PurePosixPath(entry.path).parts
    parent, name = parts[:-1], parts[-1]
    before = entry.before()
    try:
        dir_fd = open_dir(root, parent)
    except FileNotFoundError:
        if before is not None:  # the apply never removes a folder: someone did, after it
            _keep(out, entry.path, "its folder was removed after the accept wrote it")
        return
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            _keep(out, entry.path, "a folder on its path was replaced (by a link or a file) after the accept")
            return
        raise
    try:
        with suppress(FileNotFoundError):  # our own temp file, by its deterministic name
            os.unlink(tmp_name(name), dir_fd=dir_fd)
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is not None and not stat.S_ISREG(info.st_mode):
            what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a regular file"
            _keep(out, entry.path, f"it is now {what}, not the file the accept wrote")
            return
        current = read_file(dir_fd, name) if info is not None else None
        if current is None:
            if before is not None:
                _keep(out, entry.path, "it was deleted after the accept wrote it")
            return
        data = current[0]
        if before is not None and data == before:
            return  # already as it was (never written, or restored by an earlier run)
        if sha256_hex(data) != entry.sha256_after:
            _keep(out, entry.path, "it was changed after the accept wrote it (its bytes are neither the "
                                   "accept's nor the original's)")
            return
        if before is not None:
            write_atomic(dir_fd, name, before, entry.mode)
            out.restored.append(entry.path)
        else:
            os.unlink(name, dir_fd=dir_fd)
            os.fsync(dir_fd)
            out.removed.append(entry.path)
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


def set_phase(workspace: Path, journal: Journal, phase: Phase, **update) -> Journal:
    """Rewrite the journal with a new phase (raises if it cannot be written)."""
    changed = journal.model_copy(update={"phase": phase, **update})
    write_journal(workspace, changed)
    return changed


def mark_reverting(workspace: Path, journal: Journal) -> Journal:
    """Best effort: record that a revert began (the old journal stays valid if this fails: recovery
    restores the same way from `applying`)."""
    try:
        return set_phase(workspace, journal, "reverting")
    except Exception:  # noqa: BLE001 - informational only
        log.warning("could not mark the journal of %s as reverting", journal.recipe_id, exc_info=True)
        return journal
