"""Recovery: finish every apply that did not, at start-up and before every command.

For each journal left in `.artifacts/mining/journal/` (core.apply.journal), under the workspace lock:

- a journal kitsoki-miner did not write (unsigned, changed, not a regular file, not a journal) is
  moved aside as `<name>.refused` and reported; nothing it says is acted on;
- a journal that may be genuine but cannot be verified here (signed with another key: the key was
  rotated or lost, or another user's or another HOME's command got here first; signed by an older
  version; signed for another folder) is left where it is and reported on every command (see
  `core.apply.resolve`): its accept's files are shown with their hashes and a person chooses
  restore or keep. The gate process it names is ended if it is still a gate running in this
  workspace (same boot, same start time, its working folder inside the workspace);
- a journal whose accept already has its verdict (the trace holds a `mining.proposal_decided`
  whose `call_id` is the journal's accept) is spent: replayed or left over, it restores nothing
  and is moved aside as `<name>.spent`;
- a gate the killed accept left running is ended (after checking it is the same process group);
- `applying` / `reverting`: every file that still holds the apply's bytes is restored, stray temp
  files and the delta's empty folders are removed. A file changed since (an edit after the crash)
  is kept, and the journal becomes `unresolved`: its change may still be in that file, so a
  person settles it;
- `kept` / `reverted`: the tree was settled; if the caller records verdicts and none was recorded
  for this accept, `mining.proposal_decided` is written now (so a verdict is recorded exactly
  once, whatever moment the accept was killed at);
- `unresolved`: left for a person (core.apply.resolve);
- then the journal is deleted. A file that could not be restored keeps its journal for next time.

One report dict per journal, also appended to the trace as `mining.recovered`.
"""

from __future__ import annotations

import logging
import os
from contextlib import suppress
from pathlib import Path

import orjson

from core import statefs
from core.apply.journal import (
    MAX_JOURNAL_BYTES,
    CorruptJournal,
    Journal,
    KeptFile,
    RefusedJournal,
    delete_journal,
    fault_reason,
    is_safe_relpath,
    journal_dir,
    pending_journals,
    read_journal,
    restore,
    set_phase,
)
from core.apply.processes import end_group
from core.authn import unsigned_body
from core.ids import is_recipe_id
from core.locks import workspace_lock

log = logging.getLogger("core.apply.journal")

TRACE_REL = ".artifacts/mining/trace.jsonl"


def move_aside(path: Path, suffix: str) -> Path:
    dir_fd, name = statefs.dir_of(path)
    try:
        target = f"{name}.{suffix}"
        n = 1
        while True:
            try:
                os.stat(target, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                break
            target = f"{name}.{suffix}.{n}"
            n += 1
        os.rename(name, target, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return path.with_name(target)


def _claimed_paths(path: Path) -> list[str]:
    """For the message only: the paths a refused journal names (never acted on)."""
    try:
        body = orjson.loads(statefs.read_bytes(path, 1 << 20, what="the apply journal").rsplit(b',\n  "mac"', 1)[0]
                            + b"}")
    except (OSError, ValueError):
        return []
    files = body.get("files") if isinstance(body, dict) else None
    out = [f.get("path") for f in files if isinstance(f, dict)] if isinstance(files, list) else []
    return [p for p in out if isinstance(p, str) and is_safe_relpath(p)][:10]


def _refused(workspace: Path, path: Path, exc: Exception) -> dict:
    kind = exc.kind if isinstance(exc, RefusedJournal) else "corrupt"
    claimed = _claimed_paths(path) if kind != "unsafe" else []
    if isinstance(exc, RefusedJournal) and exc.needs_person:
        report = {"journal": path.name, "recipe_id": path.stem if is_recipe_id(path.stem) else None,
                  "refused": kind, "needs_person": True, "error": str(exc)[:500], "restored": [], "removed": [],
                  "advice": "it was left where it is and nothing in it was acted on: `kitsoki-miner resolve` shows "
                            "the files it names and settles the accept (restore or keep)"}
        gate = _end_unverified_gate(workspace, path)
        if gate:
            report["gate"] = gate
        log.error("apply journal not verifiable: %s", exc)
        return report
    try:
        moved = move_aside(path, "refused")
        where = moved.relative_to(workspace).as_posix()
    except OSError as err:
        moved, where = None, None
        log.error("could not move the refused journal %s aside: %s", path, err)
    advice = ("recovery restored nothing from it. If an accept of yours was interrupted, check "
              + (", ".join(claimed) if claimed else "the files it names")
              + " with `git status` / `git diff` and put back what you need by hand; "
              + (f"the journal is kept at {where} (its pre-edit bytes are base64 in it)" if where
                 else f"remove {path} by hand once you have looked at it"))
    report = {"journal": path.name, "recipe_id": path.stem if is_recipe_id(path.stem) else None,
              "refused": kind, "corrupt": True, "error": str(exc)[:500], "advice": advice,
              "restored": [], "removed": []}
    if where:
        report["moved_to"] = where
    log.error("apply journal refused: %s; %s", exc, advice)
    return report


def _end_unverified_gate(workspace: Path, path: Path) -> str | None:
    """The gate an unverifiable journal names, ended only if it is still a gate of this workspace."""
    from core.apply.processes import GateProcess

    try:
        body = unsigned_body(statefs.read_bytes(path, MAX_JOURNAL_BYTES, what="the apply journal")) or {}
    except OSError:
        return None
    leaders = [body.get("gate_process"), *(body.get("gate_processes") or [])]
    out = []
    for raw in leaders:
        if not isinstance(raw, dict):
            continue
        try:
            leader = GateProcess.model_validate(raw)
        except ValueError:
            continue
        out.append(end_group(leader, within=workspace))
    return "; ".join(out) or None


def decision_event(trace, journal: Journal):
    """The `mining.proposal_decided` recorded for this journal's accept, or None."""
    from core.trace import PROPOSAL_DECIDED

    for event in trace.events(kinds=PROPOSAL_DECIDED):
        if event.call_id == journal.call_id and event.payload.get("recipe_id") == journal.recipe_id:
            return event
    return None


def _trace(workspace: Path, trace):
    from core.trace import Trace

    return trace if trace is not None else Trace(Path(workspace) / TRACE_REL)


def _finish_verdict(workspace: Path, trace, journal: Journal, report: dict) -> None:
    """Record the verdict a settled journal stands for, unless the accept recorded it already."""
    trace = _trace(workspace, trace)
    if decision_event(trace, journal) is not None:
        return
    kept = journal.phase == "kept"
    trace.proposal_decided(recipe_id=journal.recipe_id, verdict="accept", by="human", flows_green=kept,
                           reverted=not kept, call_id=journal.call_id)
    report["verdict_recorded"] = "kept" if kept else "reverted"


def recover(workspace: Path, trace=None, *, lock_timeout: float = 0.0) -> list[dict]:
    """Finish every apply that did not (module docstring). Takes the workspace lock (WorkspaceBusy
    while another process applies: its journal is live). Raises UnsafeFile when the journal folder
    (or `.artifacts` on the way) is a link or not a folder."""
    workspace = Path(workspace).resolve()
    jd = journal_dir(workspace)
    try:
        os.close(statefs.open_dir(jd))
    except FileNotFoundError:
        return []  # no apply ever began here: do not create .artifacts just to look
    reports: list[dict] = []
    with workspace_lock(workspace, lock_timeout):
        fd = statefs.open_dir(jd)
        try:
            for name in sorted(os.listdir(fd)):
                if name.startswith(".") and ".json.tmp" in name:
                    with suppress(FileNotFoundError):  # a journal never completed: the tree is untouched
                        os.unlink(name, dir_fd=fd)
        finally:
            os.close(fd)
        for path in pending_journals(workspace):
            reports.append(_recover_one(workspace, path, trace))
    if trace is not None:
        for report in reports:
            try:
                trace.append("mining.recovered", report)
            except Exception as exc:  # noqa: BLE001 - the restore happened; the record is returned anyway
                log.warning("could not record mining.recovered in %s: %s", trace.path, fault_reason(exc))
    return reports


def _recover_one(workspace: Path, path: Path, trace) -> dict:
    try:
        journal = read_journal(workspace, path)
    except (RefusedJournal, CorruptJournal) as exc:
        return _refused(workspace, path, exc)
    report: dict = {"recipe_id": journal.recipe_id, "phase": journal.phase, "accept_id": journal.accept_id,
                    "restored": [], "removed": []}
    leaders = ([journal.gate_process] if journal.gate_process is not None else []) + list(journal.gate_processes)
    if leaders:
        report["gate"] = "; ".join(end_group(leader) for leader in leaders)
    decided = decision_event(_trace(workspace, trace), journal)
    if decided is not None and journal.phase not in ("kept", "reverted"):
        # Its accept has a verdict, so the tree moved on from this journal: a copy put back (or left
        # over) must never restore the pre-accept bytes over a kept change.
        report["spent"] = (f"its accept was already decided (turn {decided.turn}, {decided.ts}); nothing was "
                           "restored from it")
        try:
            report["moved_to"] = move_aside(path, "spent").relative_to(workspace).as_posix()
        except OSError as err:
            report["errors"] = [f"could not move it aside: {err}"]
        log.error("apply journal %s is spent: %s", path, report["spent"])
        return report
    if journal.phase == "unresolved":
        report["unresolved"] = [k.model_dump() for k in journal.kept]
        return report  # a person settles it (core.apply.resolve)
    if journal.phase in ("applying", "reverting"):  # `reverted`: restored before the phase was written
        result = restore(workspace, journal)
        report["restored"], report["removed"] = result.restored, result.removed
        if result.kept:
            report["kept"] = result.kept
        if result.left:
            report["left"] = result.left
            report["errors"] = result.errors
            log.error("recovery of %s left %s: %s", journal.recipe_id, result.left, result.errors)
            return report
        if result.kept:  # the change may live on under the person's edit: theirs to settle
            failure = "the accept was interrupted; " + result.kept_text()
            report["unresolved"] = result.kept
            try:
                set_phase(workspace, journal, "unresolved", failure=failure[:4000],
                          kept=[KeptFile(**k) for k in result.kept])
            except OSError as exc:  # still `applying` on disk: the next recovery finds the same edit
                report["errors"] = [f"the journal could not be marked unresolved: {fault_reason(exc)}"]
            return report
    if journal.phase in ("kept", "reverted") and journal.records_verdict:
        try:
            _finish_verdict(workspace, trace, journal, report)
        except Exception as exc:  # noqa: BLE001 - keep the journal: the next recovery records it
            report["left"] = []
            report["errors"] = [f"the verdict could not be recorded yet: {fault_reason(exc)}"]
            log.error("recovery of %s could not record its verdict: %s", journal.recipe_id, exc)
            return report
    delete_journal(path)
    return report
