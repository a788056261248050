"""The learnings store: a JSONL file that can no longer lose a record, whatever crashes.

Interoperates with session-orchestrator's files (reference/evolve-store.md §3): the store
`learnings.jsonl`, its append-only archive `learnings-archive.jsonl` beside it, `.bak-<ISO>`
snapshots (newest 3 kept) and the lock `<store>.lock`.

`write_generation` is the only way a record leaves or changes. Under the store lock it reads the
records on disk, lets the caller compute the next generation from them (so an append made by
someone else before the lock was taken is seen, never overwritten), then:

  1. prune: expires_at < now -> `expired`; else confidence <= 0 -> `pruned`;
  2. consolidate: same type + same non-empty trimmed subject -> highest confidence wins (ties: the
     first), each loser `superseded` with `_superseded_by`; null/empty subjects never collapse;
  3. caller drops: every record on disk that is missing from the next generation (a multiset:
     surplus duplicate copies count) is archived with the caller's reason (default `pruned`);
  4. validate the KEEP batch (strict for new records, tolerant for stored ones) and the archive
     batch (closed reason enum, required pointers): a bad record raises before any disk write;
  5. append the archive batch (fsync);
  6. snapshot the store to `<store>.bak-<ISO>` and rotate to the newest 3;
  7. write a temp file beside the store (`.<store>.tmp-<pid>-<random>`, fsync) and rename it over the store.

A crash between 5 and 7 leaves a record in both the store and the archive (harmless), never in
neither. Lines that do not parse as a JSON object are kept verbatim at the end of every rewrite.

The store, its archive, backups and lock are opened through core.statefs: only regular files, never
through a link, never blocking. A FIFO, a folder or a device where one of them should be is
refused by name (StoreError) before anything is written: appending the archive batch to a pipe
and then dropping those records from the store would lose them.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from core import statefs
from core.locks import LockTimeout, acquire

from core.learnings.schema import (
    LearningValidationError,
    clamp,
    derive_expires_at,
    iso,
    normalize,
    now_utc,
    parse_time,
    validate_learning,
    validate_stored,
    CONFIRM_STEP,
    CONTRADICT_STEP,
)

ORCHESTRATOR_STORE = ".orchestrator/metrics/learnings.jsonl"
"""session-orchestrator's store: used when it exists in the workspace (interop)."""
OWN_STORE = ".artifacts/learnings/learnings.jsonl"
"""Ours otherwise (beside `.artifacts/mining/`)."""
ARCHIVE_NAME = "learnings-archive.jsonl"
ARCHIVE_REASONS = ("expired", "pruned", "superseded", "merged")
POINTER = {"superseded": "_superseded_by", "merged": "_merged_into"}
BACKUPS_KEPT = 3
LOCK_TIMEOUT_S = 10.0
MAX_STORE_BYTES = 1 << 30

Fault = Callable[[str], None]
"""A test hook called after each write step: validated, archive-half, archived, backup, tmp, renamed."""
DropReason = str | Callable[[dict], "str | tuple[str, str]"]


class LearningsLockError(RuntimeError):
    """The store lock was held by someone else for longer than the timeout; nothing was written."""


class StoreError(OSError):
    """The store could not be read or written (I/O, or a special file where it should be); nothing
    was lost. `str()` names the file."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else super().__str__()


class WriteResult(BaseModel):
    """What a write did (or, on a dry run, would do). Field names are the anchor's JSON keys."""

    scanned: int = 0
    kept: int = 0
    archived: int = 0
    byReason: dict[str, int] = {}
    dryRun: bool = False
    archivePath: str = ""
    malformed: int = 0


@dataclass
class StoreContent:
    records: list[dict] = field(default_factory=list)
    """Parsed, dialect-normalized records in file order."""
    malformed: list[bytes] = field(default_factory=list)
    """Lines that are not a JSON object, verbatim (without their newline)."""
    generation: str = "sha256:" + hashlib.sha256(b"").hexdigest()
    exists: bool = False
    raw: bytes = b""
    """The bytes read (what a backup keeps)."""


# --- paths ------------------------------------------------------------------------------------


def default_store_path(workspace: Path) -> Path:
    """session-orchestrator's store when the workspace has one, else ours."""
    theirs = Path(workspace) / ORCHESTRATOR_STORE
    return theirs if theirs.exists() else Path(workspace) / OWN_STORE


def archive_path(store: Path) -> Path:
    return Path(store).with_name(ARCHIVE_NAME)


def lock_path(store: Path) -> Path:
    return Path(str(store) + ".lock")


# --- lock -------------------------------------------------------------------------------------

_held = threading.local()


@contextmanager
def store_lock(store: Path, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """The exclusive store lock (`<store>.lock`, an OS lock: a dead holder releases it).
    Reentrant within one thread, so a write inside a locked block does not deadlock."""
    path = lock_path(store)
    key = os.path.abspath(path)
    depth: dict[str, int] = _held.__dict__.setdefault("depth", {})
    if depth.get(key):
        depth[key] += 1
        try:
            yield
        finally:
            depth[key] -= 1
        return
    _refuse_special(store)  # before the lock file is made beside it
    try:
        fd = acquire(path, timeout, what="the learnings store lock")
    except LockTimeout:
        raise LearningsLockError(f"the learnings store {store} is locked by another writer "
                                 f"({timeout:g}s); nothing was written") from None
    except OSError as exc:
        raise StoreError(f"{exc}; nothing was written") from None
    depth[key] = 1
    try:
        yield
    finally:
        depth[key] = 0
        os.close(fd)


def _refuse_special(store: Path) -> None:
    """StoreError naming the store when it exists and is not a regular file (a FIFO, a folder, a
    link): nothing, not even the lock file, is made beside it."""
    try:
        info = os.lstat(store)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"{store}: the learnings store cannot be checked: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "a folder" if stat.S_ISDIR(info.st_mode) \
            else "a named pipe (FIFO)" if stat.S_ISFIFO(info.st_mode) else "not a regular file"
        raise StoreError(f"{store}: the learnings store is {kind}; only a regular file is used "
                         "(nothing was read or written)")


# --- read -------------------------------------------------------------------------------------


def parse_lines(data: bytes) -> tuple[list[dict], list[bytes]]:
    records, malformed = [], []
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            malformed.append(line)
            continue
        if isinstance(value, dict):
            records.append(normalize(value))
        else:
            malformed.append(line)
    return records, malformed


def read_store(store: Path) -> StoreContent:
    """Every record (normalized) and every malformed line of the store; a missing store is empty."""
    try:
        data = statefs.read_bytes(store, MAX_STORE_BYTES, what="the learnings store")
    except FileNotFoundError:
        return StoreContent()
    except statefs.UnsafeFile as exc:
        raise StoreError(f"{exc}; nothing was read or written") from None
    except OSError as exc:
        raise StoreError(f"cannot read {store}: {exc.strerror or exc}") from None
    records, malformed = parse_lines(data)
    return StoreContent(records=records, malformed=malformed,
                        generation="sha256:" + hashlib.sha256(data).hexdigest(), exists=True, raw=data)


def read_archive(store: Path) -> list[dict]:
    try:
        data = statefs.read_bytes(archive_path(store), MAX_STORE_BYTES, what="the learnings archive")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StoreError(f"{exc}") from None
    return [r for r in parse_lines(data)[0]]


def live_records(store: Path, *, now: datetime | None = None) -> list[dict]:
    """The records a person would call live: not expired, confidence above 0."""
    now = now or now_utc()
    return [r for r in read_store(store).records if prune_reason(r, now) is None]


# --- identity ---------------------------------------------------------------------------------


def identity(record: dict) -> str:
    """`id` when it is a non-empty string, else a key-order-independent fingerprint."""
    rid = record.get("id")
    if isinstance(rid, str) and rid:
        return "id:" + rid
    return "fp:" + hashlib.sha256(orjson.dumps(record, option=orjson.OPT_SORT_KEYS)).hexdigest()


def prune_reason(record: dict, now: datetime) -> str | None:
    expires = parse_time(record.get("expires_at"))
    if expires is not None and expires < now:
        return "expired"
    conf = record.get("confidence")
    if isinstance(conf, (int, float)) and not isinstance(conf, bool) and conf <= 0:
        return "pruned"
    return None


# --- confidence -------------------------------------------------------------------------------


def confirmed(record: dict, now: datetime, *, session: str | None = None) -> dict:
    """+0.15 capped at 1.0; expires_at re-derived from the type's TTL from now (GH#10)."""
    rec = dict(record)
    conf = rec.get("confidence")
    rec["confidence"] = round(clamp((conf if isinstance(conf, (int, float)) else 0.5) + CONFIRM_STEP), 6)
    rec["expires_at"] = derive_expires_at(iso(now), str(rec.get("type", "")), now=now)
    rec["updated_at"] = iso(now)
    if session:
        sessions = [s for s in rec.get("evidence_sessions") or [] if isinstance(s, str)]
        if session not in sessions:
            rec["evidence_sessions"] = sessions + [session]
    return rec


def contradicted(record: dict, now: datetime) -> dict:
    """-0.2, clamped to 0; expires_at is not reset."""
    rec = dict(record)
    conf = rec.get("confidence")
    rec["confidence"] = round(clamp((conf if isinstance(conf, (int, float)) else 0.5) - CONTRADICT_STEP), 6)
    rec["updated_at"] = iso(now)
    return rec


# --- the write pipeline -----------------------------------------------------------------------


def _dumps(record: dict) -> bytes:
    try:
        return orjson.dumps(record)
    except TypeError as exc:
        raise LearningValidationError(f"learning {record.get('id')!r} does not serialize: {exc}") from None


def _tag(record: dict, reason: str, pointer: str | None, now: datetime) -> dict:
    if reason not in ARCHIVE_REASONS:
        raise LearningValidationError(f"unknown archive reason {reason!r} (one of {', '.join(ARCHIVE_REASONS)})")
    rec = dict(record)
    rec["_archived_at"] = iso(now)
    rec["_archive_reason"] = reason
    if reason in POINTER:
        if not isinstance(pointer, str) or not pointer:
            raise LearningValidationError(f"archive reason {reason} needs {POINTER[reason]} (a record id)")
        rec[POINTER[reason]] = pointer
    return rec


def _drop(reason: DropReason, record: dict) -> tuple[str, str | None]:
    value = reason(record) if callable(reason) else reason
    if isinstance(value, tuple):
        return value[0], value[1]
    return value, None


def plan_generation(disk: list[dict], nxt: list[dict], *, now: datetime, drop_reason: DropReason = "pruned",
                    prune: bool = True, consolidate: bool = True) -> tuple[list[dict], list[dict], int]:
    """(keep, archive batch, caller drops) for going from `disk` to `nxt`. Pure; raises on a bad batch."""
    archive: list[dict] = []
    survivors: list[dict] = []
    for rec in nxt:
        reason = prune_reason(rec, now) if prune else None
        if reason:
            archive.append(_tag(rec, reason, None, now))
        else:
            survivors.append(rec)
    keep = survivors
    if consolidate:
        groups: dict[tuple[str, str], list[int]] = {}
        for i, rec in enumerate(survivors):
            subject = rec.get("subject")
            if isinstance(subject, str) and subject.strip():
                groups.setdefault((str(rec.get("type")), subject.strip()), []).append(i)
        losers: dict[int, str] = {}
        for members in groups.values():
            if len(members) < 2:
                continue
            best = members[0]
            for i in members[1:]:
                if _conf(survivors[i]) > _conf(survivors[best]):
                    best = i
            winner = survivors[best].get("id")
            if not isinstance(winner, str) or not winner:
                continue  # nothing to point at: never collapse into a record without an id
            for i in members:
                if i != best:
                    losers[i] = winner
        keep = [rec for i, rec in enumerate(survivors) if i not in losers]
        archive += [_tag(survivors[i], "superseded", w, now) for i, w in sorted(losers.items())]
    remaining = Counter(identity(r) for r in nxt)
    dropped = 0
    for rec in disk:
        key = identity(rec)
        if remaining[key] > 0:
            remaining[key] -= 1
            continue
        reason, pointer = _drop(drop_reason, rec)
        archive.append(_tag(rec, reason, pointer, now))
        dropped += 1
    stored = {identity(r) for r in disk}
    for rec in keep:
        (validate_stored if identity(rec) in stored else validate_learning)(rec)
        _dumps(rec)
    for rec in archive:
        validate_stored(rec)
    return keep, archive, dropped


def _conf(record: dict) -> float:
    conf = record.get("confidence")
    return float(conf) if isinstance(conf, (int, float)) and not isinstance(conf, bool) else float("-inf")


def _append(path: Path, lines: list[bytes], fault: Fault | None, half: str | None = None) -> None:
    """Append whole lines, starting a new line first if the file ends in a torn line (#1489)."""
    data = b"".join(line + b"\n" for line in lines)
    try:
        fd = statefs.open_file(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644, what=path.name,
                               create_dirs=True)
    except statefs.UnsafeFile as exc:
        raise StoreError(f"{exc}; nothing was written") from None
    with os.fdopen(fd, "ab+") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell() > 0:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                data = b"\n" + data
        fh.seek(0, os.SEEK_END)
        if half and fault and len(data) > 1:
            fh.write(data[: len(data) // 2])
            fh.flush()
            os.fsync(fh.fileno())
            fault(half)
            data = data[len(data) // 2:]
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def backup_name(store: Path, now: datetime) -> Path:
    stamp = iso(now).replace(":", "-").replace(".", "-")
    return Path(f"{store}.bak-{stamp}")


def _backup(store: Path, data: bytes, now: datetime) -> None:
    statefs.write_atomic(backup_name(store, now), data, what="a learnings backup")
    try:
        siblings = sorted(p for p in store.parent.iterdir()
                          if p.name.startswith(store.name + ".bak") and ".tmp-" not in p.name)
        for old in siblings[:-BACKUPS_KEPT]:
            old.unlink(missing_ok=True)
    except OSError:
        pass  # rotation failures never fail a write


def backups(store: Path) -> list[Path]:
    store = Path(store)
    if not store.parent.is_dir():
        return []
    return sorted(p for p in store.parent.iterdir()
                  if p.name.startswith(store.name + ".bak") and ".tmp-" not in p.name)


def _rewrite(store: Path, keep: list[dict], malformed: list[bytes], now: datetime, fault: Fault | None) -> None:
    body = b"".join(_dumps(r) + b"\n" for r in keep) + b"".join(m + b"\n" for m in malformed)
    statefs.write_atomic(store, body, what="the learnings store",
                         before_replace=(lambda: fault("tmp")) if fault else None)


def write_generation(
    store: Path,
    transform: Callable[[list[dict]], list[dict]] | None = None,
    *,
    now: datetime | None = None,
    dry_run: bool = False,
    drop_reason: DropReason = "pruned",
    prune: bool = True,
    consolidate: bool = True,
    backup: bool = True,
    fault: Fault | None = None,
    lock_timeout: float = LOCK_TIMEOUT_S,
) -> WriteResult:
    """Go from the records on disk to `transform(records)` (default: the same records), through
    the pipeline in the module docstring, under the store lock. Returns the counts."""
    store = Path(store)
    now = now or now_utc()
    archive = archive_path(store)
    with store_lock(store, lock_timeout):
        content = read_store(store)
        disk = content.records
        nxt = list(transform([dict(r) for r in disk])) if transform else [dict(r) for r in disk]
        keep, batch, dropped = plan_generation(disk, nxt, now=now, drop_reason=drop_reason, prune=prune,
                                      consolidate=consolidate)
        by_reason: dict[str, int] = {}
        for rec in batch:
            by_reason[rec["_archive_reason"]] = by_reason.get(rec["_archive_reason"], 0) + 1
        result = WriteResult(scanned=len(nxt) + dropped, kept=len(keep), archived=len(batch), byReason=by_reason,
                             dryRun=dry_run, archivePath=str(archive), malformed=len(content.malformed))
        if fault:
            fault("validated")
        if dry_run:
            return result
        unchanged = not batch and [_dumps(r) for r in keep] == [_dumps(r) for r in disk]
        if unchanged:
            return result  # a no-op touches nothing
        if batch:
            _append(archive, [_dumps(r) for r in batch], fault, half="archive-half")
        if fault:
            fault("archived")
        if backup and content.exists:
            _backup(store, content.raw, now)
        if fault:
            fault("backup")
        _rewrite(store, keep, content.malformed, now, fault)
        if fault:
            fault("renamed")
        return result


def append_learning(store: Path, record: dict, *, now: datetime | None = None,
                    lock_timeout: float = LOCK_TIMEOUT_S) -> dict:
    """Append one new learning (stamping created_at, expires_at, schema_version), validated."""
    now = now or now_utc()
    rec = dict(record)
    rec.setdefault("created_at", iso(now))
    rec.setdefault("expires_at", derive_expires_at(rec["created_at"], str(rec.get("type", "")), now=now))
    rec.setdefault("schema_version", 1)
    validate_learning(rec)
    with store_lock(Path(store), lock_timeout):
        _append(Path(store), [_dumps(rec)], None)
    return rec


def store_summary(records: list[dict]) -> dict[str, Any]:
    by_type: dict[str, int] = {}
    for r in records:
        by_type[str(r.get("type"))] = by_type.get(str(r.get("type")), 0) + 1
    return {"records": len(records), "by_type": dict(sorted(by_type.items()))}
