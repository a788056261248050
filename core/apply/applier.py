"""apply_delta: the only place an accepted proposal becomes a change to the user's files.

The promise is keep-or-revert, total: lock → refuse what is unsafe or stale (nothing written) →
journal the pre-edit state → write each file atomically → reload → gate → keep on green, else
restore every byte. Any exception after the journal is on disk, KeyboardInterrupt included,
reverts before it propagates; a SIGKILL leaves the journal for `recover` on the next start. A
clean revert is an ordinary outcome (`reverted=True`); only a revert that itself fails raises
(RevertFailed, naming the files it left).

Refusals come before any write and leave nothing behind, so a refused accept can be retried
after the person saves, reloads or re-drafts.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import stat
import threading
from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel

from core.apply.gates import Gate, GateResult, recording_spawns
from core.apply.journal import (
    TMP_SUFFIX,
    Journal,
    JournalFile,
    RevertFailed,
    delete_journal,
    journal_path,
    mark_reverting,
    open_dir,
    open_root,
    pending_journals,
    read_file,
    restore,
    set_phase,
    sha256_hex,
    write_atomic,
    write_journal,
)
from core.apply.processes import identify
from core.ids import BadRecipeId, require_recipe_id
from core.locks import workspace_lock

log = logging.getLogger(__name__)

RefusalReason = Literal["stale", "unsaved", "symlink", "outside", "invalid"]

HOOK_POINTS = ("locked", "journal_written", "tmp:<relpath>", "wrote:<relpath>", "before_reload",
               "before_gate", "after_gate", "settled", "before_journal_delete")
"""Where `hook` is called, in order (`<relpath>` once per file, in sorted path order). During a
revert `restore:<relpath>` is called before each file is restored. `settled` comes once the
journal says the tree is settled (kept, or reverted), before the verdict is recorded."""

_SHA256 = re.compile(r"[0-9a-f]{64}")
_OWN_STATE = ".artifacts"


class ApplyRefused(ValueError):
    """The delta was not applied and nothing was written. `reason` says which rule refused it."""

    def __init__(self, reason: RefusalReason, path: str, message: str) -> None:
        self.reason = reason
        self.path = path
        self.message = message
        super().__init__(message)


class ApplyOutcome(BaseModel):
    recipe_id: str
    flows_green: bool
    reverted: bool
    failure: str | None
    gate: GateResult | None
    written: list[str]
    """Files the apply wrote, relative; on a revert these have been restored to their pre-edit state
    (except those in `kept_edits`)."""
    kept_edits: list[str] = []
    """On a revert: files someone changed while the gate ran, kept as they are instead of restored."""


# ── planning: every refusal happens here, before anything is written ──────────────────────────


@dataclass
class _Target:
    rel: str
    parts: tuple[str, ...]


def _normalize(raw: object) -> _Target:
    if not isinstance(raw, str) or not raw or "\0" in raw or "\\" in raw:
        raise ApplyRefused("invalid", str(raw), f"{raw!r} is not a workspace-relative POSIX path")
    pure = PurePosixPath(raw)
    if pure.is_absolute() or ".." in pure.parts:
        raise ApplyRefused("outside", raw, f"{raw} is outside the workspace; proposals may only "
                                           "change files inside it")
    rel = pure.as_posix()
    if rel == ".":
        raise ApplyRefused("invalid", raw, f"{raw!r} names the workspace itself, not a file")
    if pure.parts[0] == _OWN_STATE or pure.name.endswith(TMP_SUFFIX):
        raise ApplyRefused("invalid", raw, f"{raw} is under .artifacts/ (kitsoki's and kitsoki-miner's own "
                                           "state), not a project file")
    if ".git" in pure.parts:
        raise ApplyRefused("invalid", raw, f"{raw} is under .git/; a proposal never changes the repository's "
                                           "own files")
    return _Target(rel, pure.parts)


def _walk(workspace: Path, target: _Target) -> tuple[os.stat_result | None, list[str]]:
    """lstat each component: refuse symlinks and non-directories on the way; return the file's
    stat (None if absent) and the directories that would have to be created."""
    here = workspace
    for i, part in enumerate(target.parts):
        here = here / part
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            return None, ["/".join(target.parts[:j + 1]) for j in range(i, len(target.parts) - 1)]
        shown = "/".join(target.parts[:i + 1])
        if stat.S_ISLNK(st.st_mode):
            what = "is a symbolic link" if i == len(target.parts) - 1 else f"is under {shown}, a symbolic link"
            raise ApplyRefused("symlink", target.rel, f"{target.rel} {what}; refusing to write through it")
        if i < len(target.parts) - 1 and not stat.S_ISDIR(st.st_mode):
            raise ApplyRefused("invalid", target.rel, f"{target.rel}: {shown} is not a directory")
        if i == len(target.parts) - 1:
            if not stat.S_ISREG(st.st_mode):
                raise ApplyRefused("invalid", target.rel, f"{target.rel} exists and is not a regular file")
            if not os.path.realpath(here).startswith(str(workspace) + os.sep):
                raise ApplyRefused("outside", target.rel, f"{target.rel} resolves outside the workspace")
            return st, []
    raise AssertionError("unreachable")  # pragma: no cover


def _unsaved_set(workspace: Path, unsaved: Iterable[str]) -> set[str]:
    out = set()
    for raw in unsaved:
        path = Path(raw)
        if path.is_absolute():
            try:
                path = path.resolve().relative_to(workspace)
            except (ValueError, OSError):
                continue
        out.add(PurePosixPath(path.as_posix()).as_posix())
    return out


def _plan(workspace: Path, changes: Mapping[str, bytes], expected: Mapping[str, str | None],
          unsaved: Iterable[str]) -> tuple[list[JournalFile], list[str], dict[str, tuple[_Target, bytes]]]:
    if not changes:
        raise ApplyRefused("invalid", "", "the proposal changes no file")
    # Files the proposal was drafted against but does not change are checked for staleness too.
    checked: dict[str, tuple[_Target, str | None]] = {}
    for raw, want in expected.items():
        target = _normalize(raw)
        checked[target.rel] = (target, want)
    touched: dict[str, tuple[_Target, bytes]] = {}
    for raw, data in changes.items():
        target = _normalize(raw)
        if not isinstance(data, (bytes, bytearray)):
            raise ApplyRefused("invalid", target.rel, f"{target.rel}: new content must be bytes")
        if target.rel in touched:
            raise ApplyRefused("invalid", target.rel, f"{target.rel} is listed twice")
        if target.rel not in checked:
            raise ApplyRefused("invalid", target.rel, f"{target.rel} has no expected hash: the proposal "
                                                      "must say what it was drafted against")
        touched[target.rel] = (target, bytes(data))
    for rel in touched:
        if any(other.startswith(rel + "/") for other in touched):
            raise ApplyRefused("invalid", rel, f"{rel} is both a file and a directory in the proposal")

    pending = pending_journals(workspace)
    if pending:
        raise ApplyRefused("invalid", "", f"a previous apply ({pending[0].stem}) was interrupted and its "
                                          f"journal {pending[0].name} is still there; run recovery first")

    stats: dict[str, tuple[os.stat_result | None, list[str]]] = {}
    for rel in sorted(checked):
        stats[rel] = _walk(workspace, checked[rel][0])
    unsaved_rel = _unsaved_set(workspace, unsaved)
    for rel in sorted(touched):
        if rel in unsaved_rel:
            raise ApplyRefused("unsaved", rel, f"{rel} has unsaved edits in the editor; save or discard them first")

    files: list[JournalFile] = []
    created: set[str] = set()
    for rel in sorted(checked):
        st, new_dirs = stats[rel]
        want = checked[rel][1]
        current = _read_current(workspace, rel) if st is not None else None
        stale = f"{rel} changed since the proposal was drafted"
        if want is None:
            if current is not None:
                raise ApplyRefused("stale", rel, f"{stale} (it did not exist then)")
        else:
            if not isinstance(want, str) or not _SHA256.fullmatch(want.lower()):
                raise ApplyRefused("invalid", rel, f"{rel}: expected hash {want!r} is not a sha256 hex digest")
            if current is None:
                raise ApplyRefused("stale", rel, f"{stale} (it no longer exists)")
            if sha256_hex(current[0]) != want.lower():
                raise ApplyRefused("stale", rel, stale)
        if rel in touched:
            created.update(new_dirs)
            files.append(JournalFile(
                path=rel, existed=current is not None,
                mode=current[1] if current else None,
                before_b64=base64.b64encode(current[0]).decode("ascii") if current else None,
                sha256_after=sha256_hex(touched[rel][1]),
            ))
    created_dirs = sorted(created, key=lambda d: (d.count("/"), d))
    return files, created_dirs, touched


def _read_current(workspace: Path, rel: str) -> tuple[bytes, int] | None:
    parts = PurePosixPath(rel).parts
    root = open_root(workspace)
    try:
        dir_fd = open_dir(root, parts[:-1])
    finally:
        os.close(root)
    try:
        return read_file(dir_fd, parts[-1])
    finally:
        os.close(dir_fd)


# ── applying ──────────────────────────────────────────────────────────────────────────────────


def _no_hook(_: str) -> None:
    return None


def _write_delta(workspace: Path, touched: Mapping[str, tuple[_Target, bytes]], journal: Journal,
                 written: list[str], hook: Callable[[str], None]) -> None:
    modes = {f.path: f.mode for f in journal.files}
    root = open_root(workspace)
    try:
        for rel in sorted(touched):
            target, data = touched[rel]
            dir_fd = open_dir(root, target.parts[:-1], create=True)
            try:
                write_atomic(dir_fd, target.parts[-1], data, modes[rel],
                             before_replace=lambda: hook(f"tmp:{rel}"))
            finally:
                os.close(dir_fd)
            written.append(rel)
            hook(f"wrote:{rel}")
    finally:
        os.close(root)


def _run_gate(gate: Gate, workspace: Path) -> GateResult:
    """Gates promise never to raise; a caller-supplied one might anyway, and is then red."""
    try:
        result = gate(workspace)
        if isinstance(result, GateResult):
            return result
        raise TypeError(f"the gate returned {type(result).__name__}, not a GateResult")
    except Exception as exc:  # noqa: BLE001 - fail closed
        return GateResult(green=False, gate="unknown", summary=f"gate crashed: {_reason(exc)}")


def _reason(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _revert(workspace: Path, journal: Journal, journal_file: Path, reload: Callable[[Path], object],
            failure: str, hook: Callable[[str], None]) -> tuple[str, Journal, list[str]]:
    """Restore from the journal and reload; (the failure text, annotated; the journal, now phase
    `reverted`; the files kept because someone changed them meanwhile). The caller records the
    verdict and then deletes the journal."""
    journal = mark_reverting(workspace, journal)
    result = restore(workspace, journal, hook)
    if result.left:
        raise RevertFailed(result.left, result.errors, journal_file, failure)
    kept = [k["path"] for k in result.kept]
    if result.kept:
        failure += f"; {result.kept_text()}"
    try:
        journal = set_phase(workspace, journal, "reverted", failure=failure[:2000], kept_edits=kept)
    except Exception:  # noqa: BLE001 - still "reverting" on disk: recovery restores (a no-op) again
        log.warning("could not mark the journal of %s as reverted", journal.recipe_id, exc_info=True)
    try:
        reload(workspace)
    except Exception as exc:  # noqa: BLE001 - the bytes are back; mention it, do not fail on it
        failure += f"; reload after the revert failed too: {_reason(exc)}"
    return failure, journal, kept


def _settle(journal_file: Path, on_outcome: Callable[[ApplyOutcome], None] | None, outcome: ApplyOutcome,
            hook: Callable[[str], None], *, delete: bool = True) -> ApplyOutcome:
    """The tree is settled and the journal says so: record the verdict, then let the journal go.
    If recording raises, the journal stays and recovery records the verdict."""
    hook("settled")
    if on_outcome is not None:
        on_outcome(outcome)
    hook("before_journal_delete")
    if delete:
        try:
            delete_journal(journal_file)
        except OSError as exc:  # settled and recorded: a leftover journal only makes recovery a no-op
            log.warning("the journal %s could not be deleted (%s); recovery will remove it", journal_file, exc)
    return outcome


def apply_delta(
    workspace: Path,
    recipe_id: str,
    changes: Mapping[str, bytes],
    expected: Mapping[str, str | None],
    *,
    gate: Gate,
    reload: Callable[[Path], object],
    unsaved: Iterable[str] = (),
    lock_timeout: float = 0.0,
    hook: Callable[[str], None] | None = None,
    on_outcome: Callable[[ApplyOutcome], None] | None = None,
) -> ApplyOutcome:
    """Apply `changes` (relative path → full new bytes) and keep them only if `gate` is green.

    Every path in `expected` (sha256 hex when drafted, None = did not exist) is checked for
    staleness, including ones the delta does not change; every changed path must be in it.

    Raises WorkspaceBusy (lock held elsewhere), ApplyRefused (nothing written), RevertFailed
    (a revert could not finish; journal kept). Everything else is an ApplyOutcome.
    `on_outcome` records the verdict: it runs with the lock still held (so recording cannot
    interleave with a proposer staging) and after the journal says the tree is settled (so a kill
    before it is recorded leaves recovery to record it, exactly once).
    """
    workspace = Path(workspace).resolve(strict=True)
    try:
        require_recipe_id(recipe_id)
    except BadRecipeId as exc:
        raise ApplyRefused("invalid", "", str(exc)) from None
    hook = hook or _no_hook
    with workspace_lock(workspace, lock_timeout):
        hook("locked")
        files, created_dirs, touched = _plan(workspace, changes, expected, unsaved)
        journal = Journal.new(recipe_id, files, created_dirs, records_verdict=on_outcome is not None)
        try:
            journal_file = write_journal(workspace, journal)
        except BaseException:
            with suppress(OSError):  # undo a half-made journal; the tree is untouched
                delete_journal(journal_path(workspace, recipe_id))
            raise
        written: list[str] = []
        result: GateResult | None = None

        recording = threading.Lock()  # a gate may start its processes from several threads

        def record_gate(pid: int) -> None:  # the gate waits until its leader is in the journal
            nonlocal journal
            with recording:
                if journal.gate_process is None:
                    journal = set_phase(workspace, journal, journal.phase, gate_process=identify(pid))
                else:
                    journal = set_phase(workspace, journal, journal.phase,
                                        gate_processes=[*journal.gate_processes, identify(pid)])

        try:
            hook("journal_written")
            _write_delta(workspace, touched, journal, written, hook)
            hook("before_reload")
            try:
                reload(workspace)
                failure = None
            except Exception as exc:  # noqa: BLE001 - the caller's loader; red, not a crash
                failure = f"reload failed: {_reason(exc)}"
            if failure is None:
                hook("before_gate")
                with recording_spawns(record_gate):
                    result = _run_gate(gate, workspace)
                hook("after_gate")
                if result.green:
                    journal = set_phase(workspace, journal, "kept")
                    kept = ApplyOutcome(recipe_id=recipe_id, flows_green=True, reverted=False, failure=None,
                                        gate=result, written=written)
                else:  # held: nothing judged the change (no flow exercises it); it is not kept either
                    failure = result.summary if result.held else f"{result.gate} gate red: {result.summary}"
        except BaseException as exc:
            failure, journal, left = _revert(workspace, journal, journal_file, reload,
                                             f"apply interrupted: {_reason(exc)}", hook)
            if not isinstance(exc, Exception):
                delete_journal(journal_file)  # interrupted by the person: no verdict to record
                raise
            return _settle(journal_file, on_outcome, ApplyOutcome(
                recipe_id=recipe_id, flows_green=False, reverted=True, failure=failure, gate=result,
                written=written, kept_edits=left), hook)
        if result is not None and result.green:
            return _settle(journal_file, on_outcome, kept, hook)
        failure, journal, left = _revert(workspace, journal, journal_file, reload, failure, hook)
        return _settle(journal_file, on_outcome, ApplyOutcome(
            recipe_id=recipe_id, flows_green=False, reverted=True, failure=failure, gate=result, written=written,
            kept_edits=left), hook)
