"""Recovery: finish every apply that did not, at start-up and before every command.

For each journal left in `.artifacts/mining/journal/` (core.apply.journal), under the workspace lock:

- a journal kitsoki-miner did not write (unsigned, forged, signed with another key, not a regular
  file) is moved aside as `<name>.refused` and reported; nothing it says is acted on;
- a gate the killed accept left running is ended (after checking it is the same process group);
- `applying` / `reverting`: every file that still holds the apply's bytes is restored, a file
  changed since is kept and named, stray temp files and the delta's empty folders are removed;
- `kept` / `reverted`: the tree was settled; if the caller records verdicts and none was recorded
  after the apply began, `mining.proposal_decided` is written now (so a verdict is recorded exactly
  once, whatever moment the accept was killed at);
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
    CorruptJournal,
    Journal,
    RefusedJournal,
    delete_journal,
    is_safe_relpath,
    journal_dir,
    pending_journals,
    read_journal,
    restore,
)
from core.apply.processes import end_group
from core.authn import key_dir
from core.ids import is_recipe_id
from core.locks import workspace_lock

log = logging.getLogger("core.apply.journal")

TRACE_REL = ".artifacts/mining/trace.jsonl"


def _move_aside(path: Path, suffix: str) -> Path:
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
    try:
        moved = _move_aside(path, "refused")
        where = moved.relative_to(workspace).as_posix()
    except OSError as err:
        moved, where = None, None
        log.error("could not move the refused journal %s aside: %s", path, err)
    advice = ("recovery restored nothing from it. If an accept of yours was interrupted (for instance the key in "
              f"{key_dir()} was lost or replaced since), check "
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


def _decision_recorded(trace, journal: Journal) -> bool:
    from core.trace import PROPOSAL_DECIDED

    for event in trace.events(kinds=PROPOSAL_DECIDED):
        if event.payload.get("recipe_id") != journal.recipe_id or event.payload.get("verdict") != "accept":
            continue
        with suppress(ValueError):
            if event.ts_unix_ns() >= journal.started_at_ns:
                return True
    return False


def _finish_verdict(workspace: Path, trace, journal: Journal, report: dict) -> None:
    """Record the verdict a settled journal stands for, unless the accept recorded it already."""
    from core.trace import Trace

    trace = trace if trace is not None else Trace(Path(workspace) / TRACE_REL)
    if _decision_recorded(trace, journal):
        return
    kept = journal.phase == "kept"
    trace.proposal_decided(recipe_id=journal.recipe_id, verdict="accept", by="human", flows_green=kept,
                           reverted=not kept)
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
            except Exception:  # noqa: BLE001 - the restore happened; the record is returned anyway
                log.warning("could not record mining.recovered in %s", trace, exc_info=True)
    return reports


def _recover_one(workspace: Path, path: Path, trace) -> dict:
    try:
        journal = read_journal(workspace, path)
    except (RefusedJournal, CorruptJournal) as exc:
        return _refused(workspace, path, exc)
    report: dict = {"recipe_id": journal.recipe_id, "phase": journal.phase, "restored": [], "removed": []}
    leaders = ([journal.gate_process] if journal.gate_process is not None else []) + list(journal.gate_processes)
    if leaders:
        report["gate"] = "; ".join(end_group(leader) for leader in leaders)
    if journal.phase != "kept":
        result = restore(workspace, journal)
        report["restored"], report["removed"] = result.restored, result.removed
        if result.kept:
            report["kept"] = result.kept
        if result.left:
            report["left"] = result.left
            report["errors"] = result.errors
            log.error("recovery of %s left %s: %s", journal.recipe_id, result.left, result.errors)
            return report
    if journal.phase in ("kept", "reverted") and journal.records_verdict:
        try:
            _finish_verdict(workspace, trace, journal, report)
        except Exception as exc:  # noqa: BLE001 - keep the journal: the next recovery records it
            report["left"] = []
            report["errors"] = [f"the verdict could not be recorded yet: {exc}"]
            log.error("recovery of %s could not record its verdict: %s", journal.recipe_id, exc)
            return report
    delete_journal(path)
    return report
