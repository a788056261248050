"""Taking a verdict back: undo a kept accept, notice one an editor undid, restore a rejection.

A kept accept remembers what it replaced (`remember_kept`, called by core.proposals.decide when the
gate keeps a change): `.artifacts/mining/kept/<recipe_id>/record.json`, signed like a journal, names
every file with the sha256 of the bytes before and after the accept and the lines it added; the
bytes before are kept beside it (`before/<path>`), checked against the signed hash when used.

- `undo_accept` puts those bytes back through the apply journal (core.apply.journal: a signed
  journal in phase `reverting`, `restore`, then the journal is deleted), so a crash half-way is
  finished by the same recovery as an interrupted accept. It refuses, writing nothing, when a file
  no longer holds exactly what the accept wrote (an undo never loses an edit made since).
- `notice_dropped` is the same verdict reached by hand: a saved file that holds its bytes from
  before the accept again, or none of the lines the accept added, is that accept being undone.
- `restore_rejected` takes a rejection back.

Each is recorded as our own trace event (`mining.proposal_undone`, `mining.proposal_restored`:
by whom, how, which files) followed by kitsoki's `mining.proposal_raised` again, so the proposal is
pending once more for kitsoki's own readers as for ours (a raise after a decision opens it again),
and the editors offer it again. `decided` lists what can be taken back.
"""

from __future__ import annotations

import base64
import difflib
import logging
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Literal

import orjson
from pydantic import BaseModel, Field, ValidationError

from core import statefs
from core.apply.journal import (
    Journal,
    JournalFile,
    RevertFailed,
    delete_journal,
    mark_reverting,
    pending_journals,
    restore,
    write_journal,
)
from core.authn import KeyUnavailable, NotAuthentic, seal, unseal
from core.ids import is_recipe_id, require_recipe_id
from core.locks import workspace_lock
from core.trace import trace_path
from core.proposals.inbox import MAX_TARGET_BYTES, history
from core.proposals.model import Proposal
from core.proposals.staging import MINING_DIR, StagedStateError, read_proposal, sha256
from core.safeio import read_regular
from core.trace import PROPOSAL_DECIDED, PROPOSAL_RAISED, Trace

log = logging.getLogger(__name__)

UNDONE = "mining.proposal_undone"
RESTORED = "mining.proposal_restored"
KEPT_DIR = MINING_DIR / "kept"
RECORD_FILE = "record.json"
RECORD_PURPOSE = "kept accept"
MAX_RECORD_BYTES = 16 << 20
LOCK_TIMEOUT = 30.0

How = Literal["undo", "saved", "restore"]


class KeptFile(BaseModel):
    path: str
    before_sha256: str | None
    """None: the accept created the file (an undo removes it)."""
    after_sha256: str
    mode: int | None = None
    """Permission bits before the accept (None when it created the file)."""
    added: list[str] = Field(default_factory=list)
    """The non-blank lines the accept added, stripped: a file holding none of them dropped it."""


class KeptRecord(BaseModel):
    recipe_id: str
    title: str
    files: list[KeptFile]


class Reversal(BaseModel):
    """A verdict taken back: the proposal is pending again."""

    recipe_id: str
    action: Literal["undo", "restore"]
    how: How
    """undo: a person asked for it; saved: a saved file no longer holds the change; restore."""
    title: str = ""
    files: list[str] = Field(default_factory=list)
    restored: list[str] = Field(default_factory=list)
    """undo: files whose bytes from before the accept were written back (or removed, if it made them)."""


class Decided(BaseModel):
    """A proposal a person decided and can take back."""

    recipe_id: str
    title: str
    kind: str
    state: Literal["accepted", "rejected"]
    decided_at: str
    """The trace timestamp of the verdict (RFC3339)."""
    files: list[str] = Field(default_factory=list)
    can: Literal["undo", "restore"] | None = None
    """What can be done now; None with `why_not` when nothing can."""
    why_not: str | None = None


class ReversalRefused(ValueError):
    """Nothing was written or recorded; `reason` is a stable word, the message says what to do."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(message)


# -- what a kept accept replaced ----------------------------------------------------------------------


def kept_dir(workspace: Path, recipe_id: str) -> Path:
    return Path(workspace) / KEPT_DIR / require_recipe_id(recipe_id, "kept-accept folder")


def _record_rel(recipe_id: str) -> str:
    return f"{KEPT_DIR.as_posix()}/{recipe_id}/{RECORD_FILE}"


def _added_lines(before: bytes | None, after: bytes) -> list[str]:
    old = before.decode("utf-8", "replace").splitlines() if before is not None else []
    new = after.decode("utf-8", "replace").splitlines()
    added: list[str] = []
    for tag, _i1, _i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            added += [line.strip() for line in new[j1:j2] if line.strip()]
    return added


def remember_kept(workspace: Path, proposal: Proposal, before: Mapping[str, bytes | None],
                  after: Mapping[str, bytes], modes: Mapping[str, int | None] | None = None) -> bool:
    """Keep what a kept accept replaced, for `undo_accept`. `before` must be the bytes the accept
    was checked against (each is held to the proposal's `before_sha256`); False (logged) when one is
    not, or the record cannot be written: the accept stands, it just cannot be undone here."""
    workspace = Path(workspace)
    files = []
    for change in proposal.files:
        old, new = before.get(change.path), after.get(change.path)
        if new is None or (sha256(old) if old is not None else None) != change.before_sha256:
            log.warning("the accept of %s cannot be undone later: the bytes before %s were not read as "
                        "accepted", proposal.recipe_id, change.path)
            return False
        mode = (modes or {}).get(change.path)
        files.append(KeptFile(path=change.path, before_sha256=change.before_sha256, after_sha256=sha256(new),
                              mode=mode if old is not None else None, added=_added_lines(old, new)))
    record = KeptRecord(recipe_id=proposal.recipe_id, title=proposal.title, files=files)
    folder = kept_dir(workspace, proposal.recipe_id)
    try:
        statefs.remove_tree(folder)  # an older accept of the same proposal (undone since)
        for change in proposal.files:
            old = before[change.path]
            if old is not None:
                statefs.write_atomic(folder / "before" / change.path, old, what="the bytes before an accept")
        statefs.write_atomic(folder / RECORD_FILE, seal(record.model_dump(mode="json"), purpose=RECORD_PURPOSE,
                                                        rel=_record_rel(proposal.recipe_id), workspace=workspace),
                             what="the kept-accept record")
    except (OSError, KeyUnavailable, ValueError) as exc:
        log.warning("the accept of %s cannot be undone later: %s", proposal.recipe_id, exc)
        return False
    return True


def read_kept(workspace: Path, recipe_id: str) -> KeptRecord:
    """The signed record of a kept accept, or ReversalRefused saying why there is none to use."""
    path = kept_dir(workspace, recipe_id) / RECORD_FILE
    try:
        raw = statefs.read_bytes(path, MAX_RECORD_BYTES, what="the kept-accept record")
    except FileNotFoundError:
        raise ReversalRefused("no-record", f"there is no record of what the accept of {recipe_id} replaced "
                                           "(it was accepted before kitsoki-miner kept one); undo it by hand, "
                                           "e.g. with git") from None
    except OSError as exc:
        raise ReversalRefused("no-record", str(exc)) from None
    try:
        body = unseal(raw, purpose=RECORD_PURPOSE, rel=_record_rel(recipe_id), path=path,
                      what="the kept-accept record", workspace=workspace)
        record = KeptRecord.model_validate(body)
    except (NotAuthentic, KeyUnavailable, orjson.JSONDecodeError, ValidationError) as exc:
        raise ReversalRefused("no-record", f"{path}: {exc}") from None
    if record.recipe_id != recipe_id:
        raise ReversalRefused("no-record", f"{path} is the record of {record.recipe_id}, not of {recipe_id}")
    for kept in record.files:
        _safe_rel(kept.path)
    return record


def _safe_rel(rel: str) -> str:
    from core.apply.journal import is_safe_relpath

    if not is_safe_relpath(rel):
        raise ReversalRefused("no-record", f"the kept-accept record names {rel!r}, not a project file")
    return rel


def _before_bytes(workspace: Path, recipe_id: str, kept: KeptFile) -> bytes | None:
    if kept.before_sha256 is None:
        return None
    path = kept_dir(workspace, recipe_id) / "before" / kept.path
    try:
        data = statefs.read_bytes(path, MAX_TARGET_BYTES, what="the bytes before an accept")
    except OSError as exc:
        raise ReversalRefused("no-record", f"the bytes {kept.path} held before the accept are not there to "
                                           f"put back ({exc})") from None
    if sha256(data) != kept.before_sha256:
        raise ReversalRefused("no-record", f"{path} is not what {kept.path} held before the accept "
                                           "(it was changed since); nothing is put back")
    return data


def _live(workspace: Path, rel: str) -> tuple[bytes | None, int | None]:
    """(the file's bytes, its permission bits), (None, None) when absent; OSError for a link or a
    file that is not regular."""
    path = Path(workspace) / rel
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    if not stat.S_ISREG(info.st_mode):
        raise OSError(f"{rel} is not a regular file")
    return read_regular(path, MAX_TARGET_BYTES, what=rel, follow_symlinks=False), stat.S_IMODE(info.st_mode)


# -- recording ---------------------------------------------------------------------------------------------


def _reoffer(workspace: Path, trace: Trace, kind: str, payload: dict, proposal: Proposal | None) -> None:
    """Our event, then kitsoki's raise: the proposal is pending again for every reader of the trace."""
    trace.append(kind, payload)
    if proposal is not None:
        trace.proposal_raised(recipe_id=proposal.recipe_id, kind=proposal.kind, target=proposal.target,
                              priority=proposal.priority, rung=proposal.rung, draft_path=proposal.draft_path)


def _staged(workspace: Path, recipe_id: str) -> Proposal | None:
    try:
        return read_proposal(workspace, recipe_id)
    except StagedStateError as exc:
        log.info("%s has no usable stage to offer again: %s", recipe_id, exc)
        return None


def _require(workspace: Path, recipe_id: str, want: str, refusal: str) -> None:
    """Under the workspace lock: the proposal is still `want` (a verdict may have landed meanwhile)."""
    state = history(Trace(trace_path(workspace))).get(recipe_id)
    if state != want:
        raise ReversalRefused("state", f"{recipe_id} is not {refusal} (it is {state or 'unknown'})")


def _resolve(workspace: Path, recipe_id: str, state: str) -> str:
    """A full recipe id from an id or a unique prefix among the proposals in `state`."""
    states = history(Trace(trace_path(workspace)))
    if recipe_id in states:
        return recipe_id
    matches = [rid for rid, s in states.items() if s == state and len(recipe_id) >= 4 and rid.startswith(recipe_id)]
    if len(matches) == 1:
        return matches[0]
    raise ReversalRefused("unknown", f"no {state} proposal {recipe_id} in {workspace} "
                                     "(`kitsoki-miner decided` lists them)")


# -- undo an accept ---------------------------------------------------------------------------------------


def undo_accept(workspace: Path, recipe_id: str, *, lock_timeout: float = LOCK_TIMEOUT) -> Reversal:
    """Put back the bytes a kept accept replaced and record it; the proposal is offered again.
    Refused (nothing written) when a file changed since the accept wrote it."""
    workspace = Path(workspace).resolve()
    recipe_id = _resolve(workspace, recipe_id, "accepted")
    with workspace_lock(workspace, lock_timeout):
        _require(workspace, recipe_id, "accepted", "a kept accept; only a kept accept can be undone")
        record = read_kept(workspace, recipe_id)
        if pending_journals(workspace):
            raise ReversalRefused("journal", "an interrupted accept is still being recovered; try again once "
                                             "the server (or `kitsoki-miner proposals`) has recovered it")
        entries: list[JournalFile] = []
        for kept in record.files:
            try:
                live, mode = _live(workspace, kept.path)
            except OSError as exc:
                raise ReversalRefused("changed", f"{kept.path} cannot be put back: {exc}") from None
            live_sha = sha256(live) if live is not None else None
            if live_sha == kept.before_sha256:
                continue  # an editor's undo got there first
            if live_sha != kept.after_sha256:
                raise ReversalRefused("changed", f"{kept.path} changed since the accept wrote it; undoing would "
                                                 "lose those edits, so nothing was put back (edit it by hand)")
            before = _before_bytes(workspace, recipe_id, kept)
            entries.append(JournalFile(path=kept.path, existed=before is not None,
                                       mode=(kept.mode if kept.mode is not None else mode) if before is not None
                                       else None,
                                       before_b64=base64.b64encode(before).decode("ascii") if before is not None
                                       else None, sha256_after=kept.after_sha256))
        trace = Trace(trace_path(workspace))
        proposal = _staged(workspace, recipe_id)
        reversal = Reversal(recipe_id=recipe_id, action="undo", how="undo", title=record.title,
                            files=[k.path for k in record.files])
        if not entries:
            _reoffer(workspace, trace, UNDONE, _payload(reversal), proposal)
            return reversal
        journal = Journal.new(recipe_id, entries, [])
        journal_file = write_journal(workspace, journal)
        # Recorded before the bytes move: a kill from here on leaves the journal, and recovery puts
        # the rest back, so the record and the tree agree once the server starts again.
        journal = mark_reverting(workspace, journal)
        reversal.restored = [e.path for e in entries]
        _reoffer(workspace, trace, UNDONE, _payload(reversal), proposal)
        result = restore(workspace, journal)
        if result.left:
            raise RevertFailed(result.left, result.errors, journal_file, "undo of an accept")
        delete_journal(journal_file)
        statefs.remove_tree(kept_dir(workspace, recipe_id))
    return reversal


def _payload(reversal: Reversal) -> dict:
    return {"recipe_id": reversal.recipe_id, "by": "human", "how": reversal.how, "files": reversal.files,
            "restored": reversal.restored}


def _dropped(workspace: Path, kept: KeptFile) -> bool | None:
    """True: the live file no longer holds this file's part of the accept; False: it does; None:
    it cannot be told (unreadable)."""
    try:
        live, _ = _live(workspace, kept.path)
    except OSError:
        return None
    live_sha = sha256(live) if live is not None else None
    if live_sha == kept.after_sha256:
        return False
    if live_sha == kept.before_sha256:
        return True
    if live is None or not kept.added:
        return False  # deleted, or an accept that only removed lines: nothing to tell it by
    lines = {line.strip() for line in live.decode("utf-8", "replace").splitlines()}
    return not any(line in lines for line in kept.added)


def notice_dropped(workspace: Path, changed: Iterable[str], *, lock_timeout: float = LOCK_TIMEOUT) -> list[Reversal]:
    """Kept accepts that the changed files (workspace-relative) no longer hold: each is recorded as
    undone (how: saved) and offered again. A file that holds part of an accept is left alone."""
    workspace = Path(workspace).resolve()
    changed = {PurePosixPath(p).as_posix() for p in changed}
    if not changed:
        return []
    accepted = [rid for rid, state in history(Trace(trace_path(workspace))).items() if state == "accepted"]
    candidates: list[KeptRecord] = []
    for recipe_id in accepted:
        if not (kept_dir(workspace, recipe_id) / RECORD_FILE).is_file():
            continue
        try:
            record = read_kept(workspace, recipe_id)
        except ReversalRefused as exc:
            log.info("%s", exc)
            continue
        if changed & {k.path for k in record.files}:
            candidates.append(record)
    out: list[Reversal] = []
    if not candidates:
        return out
    with workspace_lock(workspace, lock_timeout):
        trace = Trace(trace_path(workspace))
        states = history(trace)
        for record in candidates:
            if states.get(record.recipe_id) != "accepted":
                continue
            verdicts = [_dropped(workspace, kept) for kept in record.files]
            if not verdicts or not all(v is True for v in verdicts):
                continue
            reversal = Reversal(recipe_id=record.recipe_id, action="undo", how="saved", title=record.title,
                                files=[k.path for k in record.files])
            _reoffer(workspace, trace, UNDONE, _payload(reversal), _staged(workspace, record.recipe_id))
            statefs.remove_tree(kept_dir(workspace, record.recipe_id))
            out.append(reversal)
    return out


# -- restore a rejection ----------------------------------------------------------------------------------


def restore_rejected(workspace: Path, recipe_id: str, *, lock_timeout: float = LOCK_TIMEOUT) -> Reversal:
    """Take a rejection back: the proposal is pending again (stale, and re-drafted, when its file
    changed since)."""
    workspace = Path(workspace).resolve()
    recipe_id = _resolve(workspace, recipe_id, "rejected")
    with workspace_lock(workspace, lock_timeout):
        _require(workspace, recipe_id, "rejected", "rejected; only a rejection can be restored")
        try:
            proposal = read_proposal(workspace, recipe_id)
        except StagedStateError as exc:
            raise ReversalRefused("staged", f"the staged proposal {recipe_id} cannot be offered again: {exc}") \
                from None
        reversal = Reversal(recipe_id=recipe_id, action="restore", how="restore", title=proposal.title,
                            files=[c.path for c in proposal.files])
        _reoffer(workspace, Trace(trace_path(workspace)), RESTORED,
                 {"recipe_id": recipe_id, "by": "human", "files": reversal.files}, proposal)
    return reversal


# -- what can be taken back ---------------------------------------------------------------------------------


def decided(workspace: Path, *, state: str | None = None) -> list[Decided]:
    """Accepted and rejected proposals, the latest verdict first, each saying whether it can be
    undone (accepted) or restored (rejected) now, and why not otherwise."""
    workspace = Path(workspace)
    trace = Trace(trace_path(workspace))
    states = history(trace)
    when: dict[str, str] = {}
    for event in trace.events(kinds=(PROPOSAL_DECIDED, PROPOSAL_RAISED)):
        recipe_id = event.payload.get("recipe_id")
        if is_recipe_id(recipe_id):
            when[recipe_id] = event.ts
    out: list[Decided] = []
    for recipe_id, where in states.items():
        if where not in ("accepted", "rejected") or (state is not None and where != state):
            continue
        proposal = _staged(workspace, recipe_id)
        item = Decided(recipe_id=recipe_id, title=proposal.title if proposal else recipe_id,
                       kind=proposal.kind if proposal else "", state=where, decided_at=when.get(recipe_id, ""),
                       files=[c.path for c in proposal.files] if proposal else [])
        if where == "rejected":
            item.can, item.why_not = ("restore", None) if proposal else (None, "its staged draft is gone")
        else:
            item.can, item.why_not = _undoable(workspace, recipe_id)
        out.append(item)
    out.sort(key=lambda d: d.decided_at, reverse=True)
    return out


def _undoable(workspace: Path, recipe_id: str) -> tuple[Literal["undo"] | None, str | None]:
    try:
        record = read_kept(workspace, recipe_id)
    except ReversalRefused as exc:
        return None, str(exc)
    for kept in record.files:
        try:
            live, _ = _live(workspace, kept.path)
        except OSError as exc:
            return None, str(exc)
        live_sha = sha256(live) if live is not None else None
        if live_sha not in (kept.after_sha256, kept.before_sha256):
            return None, f"{kept.path} changed since the accept wrote it (undo it by hand)"
    return "undo", None
