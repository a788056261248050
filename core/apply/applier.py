"""apply_delta: the only place an accepted proposal becomes a change to the user's files.

The promise is keep-or-revert, total: lock → the caller's last check that the proposal is still
open (one verdict per proposal) → refuse what is unsafe or stale (nothing written) → journal the
pre-edit state → write each file atomically → reload → gate → keep on green, else restore every
byte. Any exception after the journal is on disk, KeyboardInterrupt included, reverts before it
propagates; a SIGKILL leaves the journal for `recover` on the next start. A clean revert is an
ordinary outcome (`reverted=True`); only a revert that itself fails raises (RevertFailed, naming
the files it left).

A person may be editing the very files an accept writes. Each write and each restore checks, at
the instant it happens, that the file is exactly what was checked before (its bytes and its inode;
core.apply.checked_writes.write_checked). An edit that lands before the delta is written stops the accept
(ApplyRefused "edited": the edit kept, whatever was already written undone). An edit that lands
after (while the gate runs, say) is never reverted away: the accept then ends `unresolved`, with
its journal kept, no verdict recorded and every command saying so until a person chooses restore
or keep (core.apply.resolve).

Refusals come before any write and leave nothing behind, so a refused accept can be retried
after the person saves, reloads or re-drafts. A file-system fault (disk full, read-only, permission
denied) before the first write is a refusal naming the file ("fault"); after it, the apply reverts.
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

from core.apply.gates import Gate, GateResult, recording_spawns, tree_after_edit
from core.apply.checked_writes import (
    SWAP_SUFFIX,
    TMP_SUFFIX,
    ChangedUnderUs,
    Seen,
    open_dir,
    open_root,
    read_file,
    sha256_hex,
    write_checked,
)
from core.apply.journal import (
    FAULTS,
    fault_reason,
    Journal,
    JournalFile,
    KeptFile,
    RevertFailed,
    delete_journal,
    journal_path,
    journal_rel,
    mark_reverting,
    pending_journals,
    restore,
    set_phase,
    write_journal,
)
from core.apply.processes import identify
from core.ids import BadRecipeId, require_recipe_id
from core.locks import workspace_lock
from core.safeio import UnsafeFile

log = logging.getLogger(__name__)

RefusalReason = Literal["stale", "unsaved", "symlink", "outside", "invalid", "edited", "fault", "decided",
                        "unresolved"]

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
    """Unresolved: files someone changed while the accept ran, kept as they are instead of restored."""
    unresolved: bool = False
    """Neither kept nor reverted: a file the person edited meanwhile could not be restored without
    losing the edit. No verdict is recorded; the journal stays until a person resolves it."""
    accept_id: str = ""
    """The apply's id (its journal's; the `call_id` of its verdict)."""
    unrecorded: str | None = None
    """Settled, but the verdict could not be recorded yet (why); the journal stays and the next
    command's recovery records it."""

    @property
    def call_id(self) -> str:
        """The `call_id` an `on_outcome` gives the verdict it records: what makes the journal spent."""
        return f"accept-{self.accept_id}"


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
    if pure.parts[0] == _OWN_STATE or pure.name.endswith((TMP_SUFFIX, SWAP_SUFFIX)):
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
          unsaved: Iterable[str]) -> tuple[list[JournalFile], list[str], dict[str, tuple[_Target, bytes]],
                                            dict[str, Seen]]:
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
        raise ApplyRefused("unresolved", "", f"an earlier accept ({pending[0].stem}) is not settled: its journal "
                                             f"{pending[0].relative_to(workspace)} is still there. "
                                             f"`kitsoki-miner resolve` says what it left and how to settle it")

    stats: dict[str, tuple[os.stat_result | None, list[str]]] = {}
    for rel in sorted(checked):
        stats[rel] = _walk(workspace, checked[rel][0])
    unsaved_rel = _unsaved_set(workspace, unsaved)
    for rel in sorted(touched):
        if rel in unsaved_rel:
            raise ApplyRefused("unsaved", rel, f"{rel} has unsaved edits in the editor; save or discard them first")

    files: list[JournalFile] = []
    created: set[str] = set()
    seen: dict[str, Seen] = {}
    for rel in sorted(checked):
        st, new_dirs = stats[rel]
        want = checked[rel][1]
        try:
            current = _read_current(workspace, rel) if st is not None else None
        except OSError as exc:
            raise ApplyRefused("fault", rel, f"nothing was changed: {rel} cannot be read ({fault_reason(exc)})") \
                from None
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
            seen[rel] = Seen(sha256_hex(current[0]), current[2]) if current else Seen(None)
            created.update(new_dirs)
            files.append(JournalFile(
                path=rel, existed=current is not None,
                mode=current[1] if current else None,
                before_b64=base64.b64encode(current[0]).decode("ascii") if current else None,
                sha256_after=sha256_hex(touched[rel][1]),
            ))
    created_dirs = sorted(created, key=lambda d: (d.count("/"), d))
    return files, created_dirs, touched, seen


def _read_current(workspace: Path, rel: str) -> tuple[bytes, int, tuple[int, int]] | None:
    """(bytes, permission bits, inode) of a target, None when absent."""
    parts = PurePosixPath(rel).parts
    root = open_root(workspace)
    try:
        dir_fd = open_dir(root, parts[:-1])
    finally:
        os.close(root)
    try:
        found = read_file(dir_fd, parts[-1])
        if found is None:
            return None
        info = os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False)
        return found[0], found[1], (info.st_dev, info.st_ino)
    finally:
        os.close(dir_fd)


# ── applying ──────────────────────────────────────────────────────────────────────────────────


def _no_hook(_: str) -> None:
    return None


class _Stopped(Exception):
    """A target was not what the plan checked at the instant of its write: the person's edit."""

    def __init__(self, rel: str, why: str) -> None:
        self.rel = rel
        self.why = why
        super().__init__(f"{rel}: {why}")


def _write_delta(workspace: Path, touched: Mapping[str, tuple[_Target, bytes]], journal: Journal,
                 seen: Mapping[str, Seen], written: dict[str, Seen], hook: Callable[[str], None]) -> None:
    """Write each file, checked against the plan at the instant of the swap. `written` gets what
    each write left (with its inode) before the next begins; a file whose write failed half way is
    in it too, by its bytes alone, so a revert looks at it."""
    modes = {f.path: f.mode for f in journal.files}
    root = open_root(workspace)
    try:
        for rel in sorted(touched):
            target, data = touched[rel]
            dir_fd = open_dir(root, target.parts[:-1], create=True)
            try:
                written[rel] = write_checked(dir_fd, target.parts[-1], data, modes[rel], seen[rel],
                                             before_replace=lambda: hook(f"tmp:{rel}"))
            except ChangedUnderUs as exc:
                raise _Stopped(rel, exc.why) from None
            except BaseException:
                written[rel] = Seen(sha256_hex(data))  # it may have landed: the revert checks its bytes
                raise
            finally:
                os.close(dir_fd)
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
    if isinstance(exc, OSError) and exc.errno in FAULTS:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{FAULTS[exc.errno]}{where} ({exc.strerror})"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _revert(workspace: Path, journal: Journal, journal_file: Path, reload: Callable[[Path], object],
            failure: str, hook: Callable[[str], None], written: Mapping[str, Seen],
            gate: GateResult | None = None) -> tuple[str, Journal, list[str]]:
    """Restore what this apply wrote (`written`) and reload; (the failure text, annotated; the
    journal, now phase `reverted`, or `unresolved` when a file someone changed meanwhile was kept;
    the files kept). The caller records the verdict (not for `unresolved`) and deletes the journal."""
    journal = mark_reverting(workspace, journal)
    mine = journal.model_copy(update={"files": [f for f in journal.files if f.path in written]})
    result = restore(workspace, mine, hook, written)
    if result.left:
        raise RevertFailed(result.left, result.errors, journal_file, failure)
    kept = [k["path"] for k in result.kept]
    if result.kept:
        failure += f"; {result.kept_text()}"
        unresolved = journal.model_copy(update={
            "phase": "unresolved", "failure": failure[:4000], "kept": [KeptFile(**k) for k in result.kept],
            "gate_summary": gate.summary[:2000] if gate is not None else None})
        try:
            write_journal(workspace, unresolved)
        except Exception as exc:  # noqa: BLE001 - still applying/reverting on disk: recovery finds the same edit
            log.warning("could not mark the journal of %s as unresolved: %s", journal.recipe_id, fault_reason(exc))
        return failure, unresolved, kept  # the tree holds the person's edit over the change: theirs to settle
    try:
        journal = set_phase(workspace, journal, "reverted", failure=failure[:2000])
    except Exception as exc:  # noqa: BLE001 - still "reverting" on disk: recovery restores (a no-op) again
        log.warning("could not mark the journal of %s as reverted: %s", journal.recipe_id, fault_reason(exc))
    try:
        reload(workspace)
    except Exception as exc:  # noqa: BLE001 - the bytes are back; mention it, do not fail on it
        failure += f"; reload after the revert failed too: {_reason(exc)}"
    return failure, journal, kept


def _settle(journal_file: Path, on_outcome: Callable[[ApplyOutcome], None] | None, outcome: ApplyOutcome,
            hook: Callable[[str], None], *, delete: bool = True) -> ApplyOutcome:
    """The tree is settled and the journal says so: record the verdict, then let the journal go.
    If recording fails, the journal stays, recovery records the verdict, and the outcome says so."""
    hook("settled")
    if on_outcome is not None:
        try:
            on_outcome(outcome)
        except Exception as exc:  # noqa: BLE001 - the tree is settled; the journal finishes the record
            log.warning("the verdict of %s could not be recorded: %s", outcome.recipe_id, fault_reason(exc))
            return outcome.model_copy(update={"unrecorded": _reason(exc)})
    hook("before_journal_delete")
    if delete:
        try:  # settled (and recorded, if it records): a journal a crash brings back is only removed again
            delete_journal(journal_file, durable=False)
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
    still_open: Callable[[], None] | None = None,
) -> ApplyOutcome:
    """Apply `changes` (relative path → full new bytes) and keep them only if `gate` is green.

    Every path in `expected` (sha256 hex when drafted, None = did not exist) is checked for
    staleness, including ones the delta does not change; every changed path must be in it.

    Raises WorkspaceBusy (lock held elsewhere), ApplyRefused (nothing of the delta left in the tree:
    refused before writing, or stopped by the person's edit and undone), RevertFailed (a revert
    could not finish; journal kept). Everything else is an ApplyOutcome.
    What `reload` returns (the caller's load of the tree after the edit) is handed to the gate
    (core.apply.gates.tree_after_edit), so a gate that loads the workspace need not do it again.
    `still_open()` runs first under the lock and refuses (by raising) when the proposal was
    decided meanwhile: one verdict per proposal. `on_outcome` records the verdict: it runs with
    the lock still held (so recording cannot interleave with a proposer staging or another
    verdict) and after the journal says the tree is settled (so a kill before it is recorded
    leaves recovery to record it, exactly once). It is not called for an `unresolved` outcome.
    """
    workspace = Path(workspace).resolve(strict=True)
    try:
        require_recipe_id(recipe_id)
    except BadRecipeId as exc:
        raise ApplyRefused("invalid", "", str(exc)) from None
    hook = hook or _no_hook
    with workspace_lock(workspace, lock_timeout):
        hook("locked")
        if still_open is not None:
            still_open()
        try:
            files, created_dirs, touched, seen = _plan(workspace, changes, expected, unsaved)
        except UnsafeFile:
            raise
        except OSError as exc:  # a target that cannot be read (permission denied...): named, nothing written
            raise ApplyRefused("fault", exc.filename or "", f"nothing was changed: {_reason(exc)}") from None
        journal = Journal.new(recipe_id, files, created_dirs, records_verdict=on_outcome is not None,
                              workspace=workspace)
        try:
            journal_file = write_journal(workspace, journal)
        except BaseException as exc:
            with suppress(OSError):  # undo a half-made journal; the tree is untouched
                delete_journal(journal_path(workspace, recipe_id))
            if isinstance(exc, OSError):
                raise ApplyRefused("fault", journal_rel(recipe_id), f"nothing was changed: the apply journal could "
                                                                     f"not be written ({_reason(exc)})") from None
            raise
        written: dict[str, Seen] = {}
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

        def outcome(**fields) -> ApplyOutcome:
            return ApplyOutcome(recipe_id=recipe_id, accept_id=journal.accept_id, gate=result,
                                written=sorted(written), **fields)

        try:
            hook("journal_written")
            _write_delta(workspace, touched, journal, seen, written, hook)
            hook("before_reload")
            try:
                loaded = reload(workspace)
                failure = None
            except Exception as exc:  # noqa: BLE001 - the caller's loader; red, not a crash
                failure = f"reload failed: {_reason(exc)}"
            if failure is None:
                hook("before_gate")
                with recording_spawns(record_gate), tree_after_edit(workspace, loaded):
                    result = _run_gate(gate, workspace)
                hook("after_gate")
                if result.green:
                    journal = set_phase(workspace, journal, "kept")
                    kept = outcome(flows_green=True, reverted=False, failure=None)
                else:  # held: nothing judged the change (no flow exercises it); it is not kept either
                    failure = result.summary if result.held else f"{result.gate} gate red: {result.summary}"
        except _Stopped as stop:
            return _stop(workspace, journal, journal_file, reload, stop, hook, written)
        except BaseException as exc:
            failure, journal, left = _revert(workspace, journal, journal_file, reload,
                                             f"apply interrupted: {_reason(exc)}", hook, written, result)
            if journal.phase == "unresolved":
                if not isinstance(exc, Exception):
                    raise
                return outcome(flows_green=False, reverted=False, failure=failure, kept_edits=left, unresolved=True)
            if not isinstance(exc, Exception):
                delete_journal(journal_file)  # interrupted by the person: no verdict to record
                raise
            return _settle(journal_file, on_outcome, outcome(flows_green=False, reverted=True, failure=failure),
                           hook)
        if result is not None and result.green:
            return _settle(journal_file, on_outcome, kept, hook)
        failure, journal, left = _revert(workspace, journal, journal_file, reload, failure, hook, written, result)
        if journal.phase == "unresolved":
            return outcome(flows_green=False, reverted=False, failure=failure, kept_edits=left, unresolved=True)
        return _settle(journal_file, on_outcome, outcome(flows_green=False, reverted=True, failure=failure), hook)


def _stop(workspace: Path, journal: Journal, journal_file: Path, reload: Callable[[Path], object], stop: _Stopped,
          hook: Callable[[str], None], written: Mapping[str, Seen]) -> ApplyOutcome:
    """A target was edited before its write: undo what was written, keep the edit, refuse."""
    message = (f"{stop.rel}: {stop.why}. Your version is kept as it is and nothing of the proposal was applied"
               if not written else
               f"{stop.rel}: {stop.why}. Your version is kept as it is; the files already written "
               f"({', '.join(sorted(written))}) were put back, so nothing of the proposal was applied")
    failure, journal, left = _revert(workspace, journal, journal_file, reload, message, hook, written)
    if journal.phase == "unresolved":
        return ApplyOutcome(recipe_id=journal.recipe_id, accept_id=journal.accept_id, flows_green=False,
                            reverted=False, failure=failure, gate=None, written=sorted(written), kept_edits=left,
                            unresolved=True)
    delete_journal(journal_file)  # nothing of ours is left in the tree: no verdict, like any refusal
    raise ApplyRefused("edited", stop.rel, message)
