"""Run status, only ever what the files on disk support; finishing; canceling; listing.

- `plan-ready` needs every snippet and packet as recorded; a damaged plan makes the run `failed`.
- A plan-ready run with a valid analysis on disk is `analyzing`.
- `complete` needs every `analyze/Txxxx/analysis.md` and `summary.md`, with the digests recorded at
  finish; a file changed after finish takes the run back to `analyzing`.
- A missing task blocks `complete`; a partial finish must be asked for and labelled in summary.md.
"""

from __future__ import annotations

import re
from pathlib import Path

from core.runs import store
from core.runs.bounds import bounded
from core.runs.errors import Refused, RunError
from core.runs.files import contained, sha256_file
from core.runs.lock import workdir_lock
from core.runs.model import ACTIVE, Finish, FinishResult, ResultEntry, RunList, RunRecord, RunStatus, TaskState
from core.runs.prepare import verify_plan

SUMMARY = "summary.md"
MAX_OUTPUT_BYTES = 16 * 1024 * 1024


def check_output(wd: Path, rel: str) -> tuple[str, str, str | None, int]:
    """(state, detail, sha256, bytes) of a worker's output file: done | pending | partial."""
    try:
        path = contained(wd, rel)
    except RunError as exc:
        return "partial", str(exc), None, 0
    if not path.exists():
        strays = sorted(p.name for p in path.parent.glob(path.name + "?*")) if path.parent.is_dir() else []
        if strays:
            return "partial", f"only unfinished files: {', '.join(strays)}", None, 0
        return "pending", "", None, 0
    if not path.is_file():
        return "partial", f"{rel} is not a regular file", None, 0
    digest, size = sha256_file(path)
    if size == 0:
        return "partial", f"{rel} is empty", digest, size
    if size > MAX_OUTPUT_BYTES:
        return "partial", f"{rel} is {size} bytes, over {MAX_OUTPUT_BYTES}", digest, size
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return "partial", f"{rel} is not UTF-8", digest, size
    if text.lstrip().startswith("INCOMPLETE:"):
        return "partial", f"{rel} says it is incomplete", digest, size
    return "done", "", digest, size


def task_states(wd: Path, record: RunRecord, *, record_new: bool = False) -> list[TaskState]:
    """Each task's output as found; with `record_new`, valid new outputs get their digest recorded.
    A recorded output whose bytes changed is a conflict: preserved and reported, never overwritten."""
    states = []
    for t in record.plan.tasks if record.plan else []:
        state, detail, digest, size = check_output(wd, t.output)
        known = record.results.get(t.id)
        if state == "done":
            if known is not None and known.sha256 != digest:
                state, detail = "conflict", f"{t.output} changed since it was recorded (sha256 {known.sha256[:12]}…)"
            elif known is None and record_new:
                record.results[t.id] = ResultEntry(sha256=digest, bytes=size, recorded_at=store.now())
        elif known is not None and state in ("pending", "partial"):
            state, detail = "conflict", f"{t.output} was recorded (sha256 {known.sha256[:12]}…) and is now {state}"
        states.append(TaskState(id=t.id, state=state, detail=detail))
    return states


def _finish_drift(wd: Path, run_dir: Path, record: RunRecord) -> list[str]:
    drift = []
    f = record.finish
    for tid, digest in f.analyses.items():
        t = next(t for t in record.plan.tasks if t.id == tid)
        state, _, now, _ = check_output(wd, t.output)
        if now != digest:
            drift.append(f"{t.output} changed after finish")
    summary = run_dir / SUMMARY
    if not summary.is_file() or sha256_file(summary)[0] != f.summary_sha256:
        drift.append(f"{SUMMARY} changed or is gone after finish")
    return drift


def reconcile(wd: Path, run_dir: Path, record: RunRecord) -> tuple[list[TaskState], list[str], bool]:
    """The status the files support: (task states, notes, changed)."""
    notes: list[str] = []
    changed = False
    if record.status == "preparing" and record.phase not in (None, "coverage", "confirmed"):
        notes.append(f"preparation stopped or is running in phase {record.phase}; `prepare` again restarts it")
    if record.status in ("plan-ready", "analyzing", "complete"):
        problems = verify_plan(wd, record)
        if problems:
            record.status = "failed"
            store.event(record, "failed", "plan damaged: " + "; ".join(problems), error=True)
            return task_states(wd, record), problems, True
    states = task_states(wd, record)
    if record.status == "plan-ready" and any(s.state != "pending" for s in states):
        record.status = "analyzing"
        store.event(record, "analyzing", "worker outputs found")
        changed = True
    if record.status == "complete" and record.finish is not None:
        drift = _finish_drift(wd, run_dir, record)
        if drift:
            record.status, record.finish = "analyzing", None
            store.event(record, "reopened", "; ".join(drift), error=True)
            notes += drift
            changed = True
    return states, notes, changed


def _status(wd: Path, run_dir: Path, record: RunRecord, states=None, notes=()) -> RunStatus:
    states = states if states is not None else task_states(wd, record)
    return RunStatus(run_id=record.run_id, run_dir=str(run_dir), name=record.name, status=record.status,
                     phase=record.phase, goal=record.goal, cut_of=record.cut_of, tasks=len(states),
                     done=sum(1 for s in states if s.state == "done"), task_states=states,
                     coverage=record.coverage, last_error=record.last_error, notes=list(notes))


@bounded
def status(workdir: str, run_id: str) -> RunStatus:
    wd = Path(workdir)
    run_dir, record = store.load(wd, run_id)
    states, notes, changed = reconcile(wd, run_dir, record)
    if changed:
        with workdir_lock(wd, "status"):
            run_dir, fresh = store.load(wd, run_id)
            states, notes, changed = reconcile(wd, run_dir, fresh)
            if changed:
                store.save(wd, fresh)
            record = fresh
    return _status(wd, run_dir, record, states, notes)


@bounded
def list_runs(workdir: str) -> RunList:
    wd = Path(workdir)
    runs, broken = store.all_runs(wd)
    out = []
    for run_dir, record in runs:
        states, notes, _ = reconcile(wd, run_dir, record)  # reported as found; persisted by `status`
        out.append(_status(wd, run_dir, record, states, notes))
    return RunList(runs=out, broken=broken)


@bounded
def cancel(workdir: str, run_id: str) -> RunStatus:
    wd = Path(workdir)
    with workdir_lock(wd, "cancel"):
        run_dir, record = store.load(wd, run_id)
        if record.status not in ACTIVE:
            raise Refused(f"run {run_id} is {record.status}; only an active run is canceled")
        record.status = "canceled"
        store.event(record, "canceled", "canceled on request; every file kept")
        store.save(wd, record)
    return _status(wd, run_dir, record)


_PARTIAL = re.compile(r"^\W*partial\b", re.I | re.M)


@bounded
def finish(workdir: str, run_id: str, *, partial: bool = False) -> FinishResult:
    """Verify every analysis and summary.md, record their digests, and complete the run.

    Missing or unfinished tasks block completion. With `partial`, a run completes over missing tasks
    only when summary.md carries a line starting `PARTIAL` and names every missing task."""
    wd = Path(workdir)
    with workdir_lock(wd, "finish"):
        run_dir, record = store.load(wd, run_id)
        states, notes, changed = reconcile(wd, run_dir, record)
        if record.status not in ("plan-ready", "analyzing", "complete"):
            if changed:
                store.save(wd, record)
            raise Refused(f"run {run_id} is {record.status}; only a prepared run is finished", notes=notes)
        states = task_states(wd, record, record_new=True)
        missing = [s.id for s in states if s.state != "done"]
        problems = [f"{s.id}: {s.state}{': ' + s.detail if s.detail else ''}" for s in states if s.state != "done"]
        summary = run_dir / SUMMARY
        state, detail, digest, _ = check_output(wd, f"{record.dir}/{SUMMARY}")
        if state != "done":
            problems.append(f"{SUMMARY}: {detail or 'missing'}")
        conflicts = [s.id for s in states if s.state == "conflict"]
        ok = state == "done" and not conflicts
        if missing and ok:
            if not partial:
                ok = False
                problems.append("tasks are missing; finish with partial=True and a summary labelled PARTIAL "
                                "that names them, or complete them")
            else:
                text = summary.read_text("utf-8")
                unnamed = [m for m in missing if m not in text]
                if not _PARTIAL.search(text) or unnamed:
                    ok = False
                    problems.append(f"{SUMMARY} must carry a line starting PARTIAL and name every missing task"
                                    + (f" (not named: {', '.join(unnamed)})" if unnamed else ""))
        if not ok:
            if record.status == "complete":
                record.status, record.finish = "analyzing", None
            elif record.status == "plan-ready" and any(s.state != "pending" for s in states):
                record.status = "analyzing"
            store.event(record, "finish-refused", "; ".join(problems), error=True)
            store.save(wd, record)
            return FinishResult(run_id=run_id, status=record.status, complete=False, partial=partial,
                                missing=missing, problems=problems)
        done = {s.id for s in states if s.state == "done"}
        record.finish = Finish(at=store.now(), partial=bool(missing), missing=missing, summary_sha256=digest,
                               analyses={tid: r.sha256 for tid, r in record.results.items() if tid in done})
        record.status = "complete"
        store.event(record, "complete", "partial: missing " + ", ".join(missing) if missing else "every task analyzed")
        store.save(wd, record)
    return FinishResult(run_id=run_id, status="complete", complete=True, partial=bool(missing), missing=missing,
                        problems=problems if missing else [])
