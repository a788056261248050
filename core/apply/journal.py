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

Each journal belongs to one accept: `accept_id` is random per apply and is written as the
`call_id` of that accept's `mining.proposal_decided`, and the signature binds it to this workspace
(core.authn). So a journal is single-use: one whose accept already has its verdict (a copy put back
after the accept was kept) is spent and never restores anything, and one copied from another
workspace does not verify here.

`unresolved`: the accept could not be settled by the tool alone (a file the person edited while
it ran, or after a crash, could not be restored without losing that edit). The journal stays, every
command says so, and a person chooses restore or keep (core.apply.resolve), which records the verdict.

The journal is signed (core.authn) because recovery acts on it: a planted one is never obeyed.
Every write to a target is conditional on what is there, checked at the last moment: the new
bytes go to a temp file beside it; whatever is at the target is moved aside in one step and
checked there to be exactly what was expected (its inode and its bytes: the pre-edit file for an
apply, the apply's own file for a revert); the temp file takes the target's name only while nothing
is there (RENAME_NOREPLACE, or a hard link), so a save that lands meanwhile is kept; and the file
moved aside is checked again, so a save written into it in place is put back. If anything is not
what was expected, the person's version is kept at the target and named (`ChangedUnderUs`). What
stays open: a save whose open() came before the move and whose write() comes after the last
check lands in the file moved aside, after it was removed (editors open and write in one go, so the
two are microseconds apart; closing it needs a write lease, F_SETLEASE, whose break is a SIGIO to
the whole process, which a library running in a language server's worker thread cannot own). An atomic exchange
(renameat2 RENAME_EXCHANGE) closes nothing more and is not used: editors' file watchers read it as
the file created and then deleted, drop the event, and keep showing the old text. The price: a
process killed in the instant between the move and the placing leaves the file under its swap name
until the next command's recovery puts it back (a save meanwhile creates it again, and is kept). Restoring is therefore
conditional on the bytes too: a file is put back only while it still holds exactly what the apply
wrote (`sha256_after`); a file someone changed since (an edit typed while the gate ran, or after a
crash) is kept and named. Restoring is idempotent, so a crash during a
revert or a recovery is mended by the next recovery. Every file operation goes through directory
descriptors opened with O_NOFOLLOW from the workspace root: a symlink planted in the tree makes
that file be left (and named), never a write outside the workspace.
"""

from __future__ import annotations

import base64
import errno
import logging
import os
import secrets
import stat
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from core import statefs
from core.apply.checked_writes import (
    ChangedUnderUs,
    Seen,
    keep_aside,
    open_dir,
    open_root,
    peek,
    put_back,
    remove_checked,
    sha256_hex,
    swap_name,
    take_back,
    tmp_name,
    write_checked,
)
from core.apply.processes import GateProcess
from core.authn import NotAuthentic, seal, unseal
from core.safeio import FAULTS, os_problem
from core.ids import BadRecipeId, require_recipe_id

log = logging.getLogger(__name__)

JOURNAL_DIR = ".artifacts/mining/journal"
JOURNAL_PURPOSE = "apply journal"
MAX_JOURNAL_BYTES = 512 << 20
"""A journal holds the pre-edit bytes of every file it touches (base64)."""
_FORBIDDEN_TOP = frozenset({".artifacts"})

Phase = Literal["applying", "reverting", "kept", "reverted", "unresolved"]


def journal_dir(workspace: Path) -> Path:
    return Path(workspace) / JOURNAL_DIR


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


class JournalFile(BaseModel, defer_build=True):
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


class KeptFile(BaseModel, defer_build=True):
    path: str
    why: str


class Journal(BaseModel, defer_build=True):
    version: Literal[3] = 3
    recipe_id: str
    accept_id: str = Field(pattern=r"^[0-9a-f]{16}$")
    """Random per apply; the `call_id` of its verdict in the trace: a journal whose accept has a
    verdict is spent."""
    workspace: str = ""
    """The workspace's resolved root when the apply began (for people; the signature binds it)."""
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
    """Phase reverted or unresolved: why."""
    kept: list[KeptFile] = []
    """Phase unresolved: files left as someone changed them instead of being restored, and why."""
    gate_summary: str | None = None
    """What the gate said, when it ran (kept for the person resolving an unresolved accept)."""

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
            records_verdict: bool = False, workspace: Path | None = None) -> Journal:
        now = time.time_ns()
        return cls(recipe_id=recipe_id, accept_id=secrets.token_hex(8), started_at=now / 1e9, started_at_ns=now,
                   pid=os.getpid(), files=files, created_dirs=created_dirs, records_verdict=records_verdict,
                   workspace=str(workspace) if workspace is not None else "")

    @property
    def call_id(self) -> str:
        """The trace `call_id` of this accept's verdict."""
        return f"accept-{self.accept_id}"


class CorruptJournal(ValueError):
    """A signed journal that does not validate: it is moved aside, never guessed at."""


class RefusedJournal(ValueError):
    """A journal that does not verify. `kind`: unsafe (not a regular file), unsigned, changed (both
    moved aside: not ours), or other-key / older / other-workspace (possibly a genuine accept of this
    person's, signed with a key or for a folder we cannot check now: left for a person to resolve)."""

    def __init__(self, message: str, *, kind: str) -> None:
        self.kind = kind
        super().__init__(message)

    @property
    def needs_person(self) -> bool:
        return self.kind in ("other-key", "older", "other-workspace")


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


def write_journal(workspace: Path, journal: Journal, *, durable: bool = True) -> Path:
    """Write the journal, signed, atomically and durably (replacing this recipe's journal, if any).
    On failure the tmp file is removed; a previous journal of the recipe is left intact.
    `durable=False`: the new journal's bytes are on disk before it takes the name, but the name may
    still point at the previous journal after a crash (statefs.replace_in's `sync_dir`); only for a
    rewrite whose previous journal recovery treats the same way."""
    rel = journal_rel(journal.recipe_id)
    data = seal(journal.model_dump(mode="json"), purpose=JOURNAL_PURPOSE, rel=rel, workspace=workspace)
    path = Path(workspace) / rel
    statefs.write_atomic(path, data, mode=0o600, what="the apply journal", sync_dir=durable)
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
        raise RefusedJournal(str(exc), kind=exc.kind) from None
    try:
        journal = Journal.model_validate(body)
    except (ValidationError, BadRecipeId) as exc:
        raise CorruptJournal(f"{path}: {exc}") from None
    if f"{journal.recipe_id}.json" != path.name:
        raise CorruptJournal(f"{path}: it is the journal of {journal.recipe_id}, under another name")
    return journal


def delete_journal(path: Path, *, durable: bool = True) -> None:
    """Remove a journal. `durable=False` for one that is settled and whose verdict is recorded: if a
    crash brings it back, recovery finds the verdict (its `call_id`) and only removes it again."""
    dir_fd, name = statefs.dir_of(path)
    try:
        with suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dir_fd)
        if durable:
            os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


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


def restore(workspace: Path, journal: Journal, hook: Callable[[str], None] | None = None,
            written: Mapping[str, Seen] | None = None) -> Restored:
    """Put back every journaled file that still holds the apply's bytes; never raises for one file
    (it is named in `left`). Files changed since the apply wrote them are named in `kept`.
    `written` (path -> what the apply wrote, with its inode) makes the check exact in-process;
    recovery after a crash checks the bytes alone.

    `hook("restore:<path>")` is called before each file (a test seam: raising there makes that
    file fail to restore)."""
    out = Restored()
    written = written or {}
    root = open_root(workspace)
    try:
        for entry in journal.files:
            try:
                if hook is not None:
                    hook(f"restore:{entry.path}")
                _restore_one(root, entry, out, written.get(entry.path))
            except Exception as exc:  # noqa: BLE001 - named in `left`, the journal is kept
                out.left.append(entry.path)
                out.errors.append(f"{entry.path}: {fault_reason(exc)}")
        remove_empty_dirs(root, journal.created_dirs, out)
    finally:
        os.close(root)
    return out


def remove_empty_dirs(root: int, dirs: list[str], out: Restored) -> None:
    """The folders an apply created, deepest first, each only if it is empty (named in `removed`)."""
    for directory in sorted((d for d in dirs if is_safe_relpath(d)), key=lambda d: d.count("/"), reverse=True):
        _remove_dir_if_empty(root, directory, out)


def fault_reason(exc: BaseException) -> str:
    return os_problem(exc) if isinstance(exc, OSError) and exc.errno in FAULTS else str(exc)


def _keep(out: Restored, path: str, why: str) -> None:
    out.kept.append({"path": path, "why": why})
    log.warning("not restoring %s: %s", path, why)


def _clear_tmp(dir_fd: int, name: str, entry: JournalFile, before: bytes | None) -> str | None:
    """What a crash left beside `name`: the temp file (only ever our own bytes) is removed; the swap
    file, when `name` is missing (a crash between moving it aside and putting the new file in), goes
    back to `name`; otherwise it is removed when it holds the apply's bytes or the pre-edit ones, and
    anything else there is a person's version caught mid-swap, which goes back to `name` (when that
    holds the apply's bytes) or aside. Returns why the file is the person's, if it is."""
    with suppress(FileNotFoundError):
        os.unlink(tmp_name(name), dir_fd=dir_fd)
    swap = swap_name(name)
    info, data = peek(dir_fd, swap)
    if info is None or data is None:  # nothing, or not a file of ours (a link, a folder): never followed
        return None
    now_info, now = peek(dir_fd, name)
    ours = sha256_hex(data) == entry.sha256_after or (before is not None and data == before)
    if now_info is None:
        put_back(dir_fd, swap, name)
        os.fsync(dir_fd)
        return None if ours else ("a version saved while the accept ran was put back in place (the accept was "
                                  "interrupted mid-write)")
    if ours:
        os.unlink(swap, dir_fd=dir_fd)
        return None
    if now is not None and sha256_hex(now) == entry.sha256_after:
        # the apply's bytes at `name`, the person's beside it: theirs back in place
        moved = take_back(dir_fd, name, lambda _info, got: got is not None and sha256_hex(got) == entry.sha256_after)
        put_back(dir_fd, swap, name)
        os.fsync(dir_fd)
        return "a version saved while the accept ran was put back in place (the accept was interrupted mid-write)" + moved
    return f"a version saved while the accept ran was kept at {keep_aside(dir_fd, swap, name)}"


def _restore_one(root: int, entry: JournalFile, out: Restored, written: Seen | None) -> None:
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
        caught = _clear_tmp(dir_fd, name, entry, before)
        if caught is not None:
            _keep(out, entry.path, caught)
            return
        info, data = peek(dir_fd, name)
        if info is not None and data is None:
            what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a regular file"
            _keep(out, entry.path, f"it is now {what}, not the file the accept wrote")
            return
        if info is None:
            if before is not None:
                _keep(out, entry.path, "it was deleted after the accept wrote it")
            return
        if before is not None and data == before:
            return  # already as it was (never written, or restored by an earlier run)
        if sha256_hex(data) != entry.sha256_after:
            _keep(out, entry.path, "it was changed after the accept wrote it (its bytes are neither the "
                                   "accept's nor the original's)")
            return
        expect = written if written is not None and written.sha256 == entry.sha256_after \
            else Seen(entry.sha256_after)
        try:
            if before is not None:
                write_checked(dir_fd, name, before, entry.mode, expect)
                out.restored.append(entry.path)
            else:
                remove_checked(dir_fd, name, expect)
                out.removed.append(entry.path)
        except ChangedUnderUs as exc:
            _keep(out, entry.path, exc.why)
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
    restores the same way from `applying`). For the same reason the rewrite is not made durable on
    its own (one fsync of the journal folder less): after a crash the journal says `applying` or
    `reverting`, each whole, and recovery restores from either; the next durable step of a revert
    (the phase `reverted`, or the undo's removal of the journal) fsyncs the folder."""
    try:
        changed = journal.model_copy(update={"phase": "reverting"})
        write_journal(workspace, changed, durable=False)
        return changed
    except Exception as exc:  # noqa: BLE001 - informational only
        log.warning("could not mark the journal of %s as reverting: %s", journal.recipe_id, fault_reason(exc))
        return journal
