"""Accepts the tool cannot settle alone, shown to a person and settled by their choice.

Two kinds of journal stay in `.artifacts/mining/journal/` after recovery has run:

- `unresolved` (ours, verified): a file the person edited while the accept ran (or after it was
  killed) could not be restored without losing that edit, so the proposal's change may still be in
  the tree under it. No verdict was recorded.
- not verifiable here (signed with another key: the key was rotated or lost, or another user's or
  another HOME's command got there first; by an older version; for another folder). Recovery does
  not act on what it says, and the change it made may still be in the tree, never gated.

Leaving either silent would leave the tree half-decided, so `unsettled` lists them for every
command and the status, with each file's before / after / now hashes and what a restore would
change, and `resolve_accept` settles one by the person's choice:

- `keep`: the tree stays as it is; the verdict is recorded as kept (kitsoki's shape has no "kept
  without a gate": `mining.accept_resolved` says it was a person's keep, not a green gate);
- `restore`: each file goes back to its pre-accept bytes. For our own journal, a file holding
  something else (the person's own edit) is restored too, because the person asked, but its current
  bytes are first copied to `.artifacts/mining/resolved/<recipe_id>-<accept id>/`: nothing is lost.
  What an unverifiable journal says is acted on only for files that hold exactly the bytes it says
  its accept wrote (the rest are left and named): it may be planted. The verdict is recorded as
  reverted.

Either way the verdict carries the accept's id as its `call_id` (so the journal is spent), a
`mining.accept_resolved` event says what was chosen and done, and the journal is deleted (an
unverifiable one is moved aside as `<name>.resolved`, kept for reference).
"""

from __future__ import annotations

import difflib
import logging
import os
import re
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ValidationError

from core import statefs
from core.apply.checked_writes import (
    ChangedUnderUs,
    Seen,
    open_dir,
    open_root,
    remove_checked,
    sha256_hex,
    write_checked,
)
from core.apply.journal import (
    MAX_JOURNAL_BYTES,
    Journal,
    JournalFile,
    CorruptJournal,
    RefusedJournal,
    Restored,
    delete_journal,
    pending_journals,
    read_journal,
    remove_empty_dirs,
)
from core.apply.processes import GateProcess, end_group
from core.authn import unsigned_body
from core.locks import workspace_lock
from core.safeio import read_regular

log = logging.getLogger(__name__)

Choice = Literal["restore", "keep"]
RESOLVED = "mining.accept_resolved"
RESOLVED_DIR = ".artifacts/mining/resolved"
MAX_TARGET_BYTES = 64 << 20
_ACCEPT_ID = re.compile(r"[0-9a-f]{16}")


class UnsettledFile(BaseModel, defer_build=True):
    path: str
    before_sha256: str | None
    """The bytes before the accept (None: the accept created the file)."""
    after_sha256: str
    """The bytes the accept wrote."""
    now_sha256: str | None
    """What is there now (None: absent; "unreadable" for a link or special file)."""
    now_is: Literal["before", "after", "other", "absent"]


class Unsettled(BaseModel, defer_build=True):
    recipe_id: str
    journal: str
    """Workspace-relative path of its journal."""
    verified: bool
    """True: our own signed journal; False: what it says could not be checked (shown, never acted on alone)."""
    why: str
    accept_id: str | None = None
    started_at: float | None = None
    files: list[UnsettledFile] = []
    restore_diff: str = ""
    """What `restore` would change, as a unified diff from now to the pre-accept bytes."""
    gate: str | None = None

    def summary(self) -> str:
        """One paragraph for every command's output."""
        files = "; ".join(f"{f.path} (before {_short(f.before_sha256)}, accept wrote {_short(f.after_sha256)}, "
                          f"now {f.now_is})" for f in self.files) or "no file could be read from it"
        return (f"an accept of {self.recipe_id} is not settled: {self.why}. Files: {files}. "
                f"`kitsoki-miner resolve {self.recipe_id}` shows what a restore would change; "
                f"`kitsoki-miner resolve {self.recipe_id} --restore` puts the pre-accept bytes back, "
                f"`--keep` keeps the tree as it is (either is recorded as the verdict)")


def _short(sha: str | None) -> str:
    return sha[:12] if sha else "absent"


class ResolveRefused(ValueError):
    """Nothing was done; the message says why."""


class Resolution(BaseModel, defer_build=True):
    recipe_id: str
    choice: Choice
    restored: list[str] = []
    removed: list[str] = []
    saved: dict[str, str] = {}
    """path -> where its bytes were copied before a restore replaced a person's version."""
    kept: list[str] = []
    """restore: files left as they are (they changed again while resolving)."""
    gate: str | None = None


def _read(workspace: Path, path: Path) -> tuple[Journal | None, dict | None, str | None]:
    """(verified journal, unverified body, why unverified)."""
    try:
        return read_journal(workspace, path), None, None
    except RefusedJournal as exc:
        if not exc.needs_person:
            return None, None, str(exc)
        try:
            body = unsigned_body(statefs.read_bytes(path, MAX_JOURNAL_BYTES, what="the apply journal"))
        except OSError:
            body = None
        return None, body or {}, str(exc)
    except CorruptJournal as exc:
        return None, None, str(exc)


def _claimed_files(body: dict) -> list[JournalFile]:
    out = []
    for raw in body.get("files") or []:
        try:
            out.append(JournalFile.model_validate(raw))
        except (ValidationError, ValueError, TypeError):
            continue  # an unsafe or damaged entry is never shown as something to restore
    return out


def _now(workspace: Path, rel: str) -> bytes | None | str:
    try:
        return read_regular(workspace / rel, MAX_TARGET_BYTES, what=rel, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return "unreadable"


def _file_view(workspace: Path, entry: JournalFile) -> tuple[UnsettledFile, str]:
    before = entry.before()
    now = _now(workspace, entry.path)
    now_sha = sha256_hex(now) if isinstance(now, bytes) else now
    if now is None:
        state = "absent"
    elif isinstance(now, bytes) and before is not None and now == before:
        state = "before"
    elif now_sha == entry.sha256_after:
        state = "after"
    else:
        state = "other"
    diff = ""
    if state in ("after", "other") and isinstance(now, bytes):
        old = now.decode("utf-8", "replace").splitlines(keepends=True)
        new = before.decode("utf-8", "replace").splitlines(keepends=True) if before is not None else []
        diff = "".join(difflib.unified_diff(old, new, fromfile=f"now/{entry.path}",
                                            tofile=f"restored/{entry.path}" if before is not None else "/dev/null"))
    return UnsettledFile(path=entry.path, before_sha256=sha256_hex(before) if before is not None else None,
                         after_sha256=entry.sha256_after, now_sha256=now_sha, now_is=state), diff


def _view(workspace: Path, path: Path) -> Unsettled | None:
    journal, body, why = _read(workspace, path)
    rel = path.relative_to(workspace).as_posix()
    if journal is not None:
        if journal.phase == "unresolved":
            what = journal.failure or "a file was edited while the accept ran"
        else:
            what = (f"it was interrupted (phase {journal.phase}) and recovery could not finish it here (a file or "
                    "folder could not be written: read-only, full or not permitted); it is retried on every command")
        files, accept_id, started = journal.files, journal.accept_id, journal.started_at
        gate = journal.gate_summary
    elif body is not None:
        what = why or "its journal cannot be verified"
        files = _claimed_files(body)
        accept_id = body.get("accept_id") if isinstance(body.get("accept_id"), str) else None
        started = body.get("started_at") if isinstance(body.get("started_at"), (int, float)) else None
        gate = None
    else:
        return None  # not a journal a person could settle here (recovery moves such files aside)
    views = [_file_view(workspace, entry) for entry in files]
    return Unsettled(recipe_id=path.stem, journal=rel, verified=journal is not None, why=what, accept_id=accept_id,
                     started_at=started, files=[v for v, _ in views], restore_diff="".join(d for _, d in views),
                     gate=gate)


def unsettled(workspace: Path) -> list[Unsettled]:
    """Every accept left for a person (module docstring). Reads only; run it after recovery."""
    workspace = Path(workspace).resolve()
    try:
        journals = pending_journals(workspace)
    except OSError:
        return []
    out = []
    for path in journals:
        try:
            view = _view(workspace, path)
        except OSError as exc:
            log.warning("could not read %s: %s", path, exc)
            continue
        if view is not None:
            out.append(view)
    return out


def _find(workspace: Path, recipe_id: str) -> Path:
    journals = pending_journals(workspace)
    exact = [p for p in journals if p.stem == recipe_id]
    matches = exact or [p for p in journals if len(recipe_id) >= 4 and p.stem.startswith(recipe_id)]
    if len(matches) != 1:
        waiting = ", ".join(p.stem for p in journals) or "none"
        raise ResolveRefused(f"no unsettled accept {recipe_id} in {workspace} (unsettled: {waiting})")
    return matches[0]


def _save_copy(workspace: Path, folder: str, rel: str, data: bytes) -> str:
    target = f"{RESOLVED_DIR}/{folder}/{rel}"
    statefs.write_atomic(workspace / target, data, what="a copy kept by resolve")
    return target


def _restore_file(workspace: Path, root: int, entry: JournalFile, folder: str, out: Resolution,
                  verified: bool) -> None:
    parts = PurePosixPath(entry.path).parts
    before = entry.before()
    now = _now(workspace, entry.path)
    if isinstance(now, str):
        out.kept.append(entry.path)  # a link or special file now: never written through
        return
    if now is None and before is None or now is not None and before is not None and now == before:
        return  # already as it was
    ours = now is not None and sha256_hex(now) == entry.sha256_after
    if not ours and not verified:
        # What an unverifiable journal says is only acted on where the tree holds exactly the bytes it
        # says its accept wrote; anything else may be a person's work or a planted journal's target.
        out.kept.append(entry.path)
        return
    if now is not None and not ours:
        out.saved[entry.path] = _save_copy(workspace, folder, entry.path, now)
    expect = Seen(sha256_hex(now) if now is not None else None)
    dir_fd = open_dir(root, parts[:-1], create=before is not None)
    try:
        if before is None:
            remove_checked(dir_fd, parts[-1], expect)
            out.removed.append(entry.path)
        else:
            write_checked(dir_fd, parts[-1], before, entry.mode, expect)
            out.restored.append(entry.path)
    except ChangedUnderUs:
        out.kept.append(entry.path)
    finally:
        os.close(dir_fd)


def resolve_accept(workspace: Path, recipe_id: str, choice: Choice, *, trace=None,
                   lock_timeout: float = 30.0) -> Resolution:
    """Settle one unsettled accept by the person's choice (module docstring)."""
    from core.trace import trace_path
    from core.trace import Trace

    if choice not in ("restore", "keep"):
        raise ResolveRefused(f'"{choice}" is not a choice (restore or keep)')
    workspace = Path(workspace).resolve()
    trace = trace if trace is not None else Trace(trace_path(workspace))
    with workspace_lock(workspace, lock_timeout):
        path = _find(workspace, recipe_id)
        journal, body, why = _read(workspace, path)
        if journal is None and body is None:
            raise ResolveRefused(f"{path}: {why}; it is not a journal kitsoki-miner can settle (recovery moves it "
                                 "aside on the next command)")
        if journal is not None and journal.phase not in ("unresolved", "applying", "reverting"):
            raise ResolveRefused(f"the accept of {path.stem} is settled ({journal.phase}); the next command's "
                                 "recovery records it")
        files = journal.files if journal is not None else _claimed_files(body)
        accept_id = journal.accept_id if journal is not None else body.get("accept_id")
        accept_id = accept_id if isinstance(accept_id, str) and _ACCEPT_ID.fullmatch(accept_id) else None
        out = Resolution(recipe_id=path.stem, choice=choice)
        leaders = []
        if journal is not None:
            leaders = [p for p in [journal.gate_process, *journal.gate_processes] if p is not None]
        else:
            for raw in [body.get("gate_process"), *(body.get("gate_processes") or [])]:
                try:
                    leaders.append(GateProcess.model_validate(raw))
                except (ValidationError, ValueError, TypeError):
                    continue
        if leaders:
            within = None if journal is not None else workspace
            out.gate = "; ".join(end_group(leader, within=within) for leader in leaders)
        if choice == "restore":
            folder = f"{path.stem}-{accept_id or 'unverified'}"
            root = open_root(workspace)
            try:
                for entry in files:
                    _restore_file(workspace, root, entry, folder, out, journal is not None)
                dirs = journal.created_dirs if journal is not None else body.get("created_dirs")
                emptied = Restored()
                remove_empty_dirs(root, [d for d in dirs or [] if isinstance(d, str)], emptied)
                out.removed.extend(emptied.removed)
            finally:
                os.close(root)
        trace.proposal_decided(recipe_id=path.stem, verdict="accept", by="human", flows_green=choice == "keep",
                               reverted=choice == "restore",
                               call_id=f"accept-{accept_id}" if accept_id else None)
        trace.append(RESOLVED, {"recipe_id": path.stem, "accept_id": accept_id, "choice": choice,
                                "verified": journal is not None, "restored": out.restored, "removed": out.removed,
                                "saved": out.saved, "kept": out.kept, "gate": out.gate})
        if journal is not None:
            delete_journal(path)
        else:
            from core.apply.recovery import move_aside

            move_aside(path, "resolved")
    return out
