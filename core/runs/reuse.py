"""Reuse a cut, resume a run, delete a run.

- reuse: a new sibling run (own Run ID, goal, outputs) whose task packets point at the original's
  read-only snippets; reusing a reuse resolves to the original.
- resume: the same Run ID, taken up by (possibly) another session; valid outputs are revalidated by
  digest, conflicting or partial files are preserved and reported, never overwritten.
- delete: needs the exact Run ID; refused while the run is active or other runs reference its cut.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from core.runs import store
from core.runs.bounds import bounded
from core.runs.coverage import active_runs
from core.runs.errors import BrokenRun, Refused
from core.runs.files import contained, ensure_dir, write_bytes
from core.runs.lifecycle import _status, reconcile, task_states
from core.runs.lock import workdir_lock
from core.runs.model import ACTIVE, Plan, RunRecord, RunStatus
from core.runs.packets import DEFAULT_ASSIGNMENT
from core.runs.prepare import _root_readme, _task_readme, verify_plan


@bounded
def reuse(workdir: str, run_id: str, *, goal: str, name: str | None = None, assignment: str | None = None,
          current_session: str | None = None) -> RunStatus:
    wd = Path(workdir)
    with workdir_lock(wd, "reuse"):
        _, source = store.load(wd, run_id)
        original_id = source.cut_of or source.run_id
        orig_dir, original = store.load(wd, original_id)
        if original.plan is None or original.status in ("preparing", "failed"):
            raise Refused(f"run {original_id} has no ready cut ({original.status})")
        problems = verify_plan(wd, original)
        if problems:
            raise Refused(f"the cut of run {original_id} is damaged: " + "; ".join(problems))
        others = active_runs(wd, current_session)
        if others:
            raise Refused(f"session {current_session or '(none)'} already has an active run {others[0].run_id} "
                          f"({others[0].status}); finish, cancel or delete it first", run_id=others[0].run_id)
        rid = store.new_run_id()
        label = store.run_name(name or f"{original.name}-reuse")
        t = store.now()
        rel = f"{label}_{rid}"
        tasks = [task.model_copy(update={"readme": f"{rel}/plan/{task.id}/README.md",
                                         "output": f"{rel}/analyze/{task.id}/analysis.md"})
                 for task in original.plan.tasks]
        record = RunRecord(
            run_id=rid, name=label, dir=rel, created_at=t, updated_at=t, status="plan-ready", phase="done",
            owner_session=current_session, goal=goal, assignment=assignment or DEFAULT_ASSIGNMENT,
            redact=original.redact, project=original.project, since=original.since, until=original.until,
            exclusions=original.exclusions, coverage=original.coverage, selected=original.selected,
            confirmation=original.confirmation, cut_of=original_id,
            plan=Plan(**{**original.plan.model_dump(), "tasks": [x.model_dump() for x in tasks]}),
            accounting=original.accounting,
        )
        ensure_dir(wd, rel)
        for task in tasks:
            write_bytes(wd, task.readme, _task_readme(wd, record, task, len(tasks), original=original_id).encode())
            ensure_dir(wd, f"{rel}/analyze/{task.id}")
        write_bytes(wd, f"{rel}/README.md", _root_readme(wd, record).encode())
        store.event(record, "plan-ready", f"reuses the cut of run {original_id} ({len(tasks)} tasks)")
        store.save(wd, record)
    return _status(wd, wd / rel, record)


@bounded
def resume(workdir: str, run_id: str, *, current_session: str | None = None) -> RunStatus:
    """Take up a prepared run again with the same Run ID: which tasks are done, pending, conflicting."""
    wd = Path(workdir)
    with workdir_lock(wd, "resume"):
        run_dir, record = store.load(wd, run_id)
        states, notes, _ = reconcile(wd, run_dir, record)
        if record.plan is None or record.status not in ("plan-ready", "analyzing", "canceled"):
            store.save(wd, record)
            raise Refused(f"run {run_id} is {record.status}; only a prepared run (plan-ready, analyzing or "
                          "canceled) is resumed", notes=notes)
        others = [r for r in active_runs(wd, current_session) if r.run_id != run_id]
        if others:
            raise Refused(f"session {current_session or '(none)'} already has an active run {others[0].run_id}",
                          run_id=others[0].run_id)
        states = task_states(wd, record, record_new=True)
        record.owner_session = current_session
        record.status = "analyzing" if any(s.state != "pending" for s in states) else "plan-ready"
        troubles = [f"{s.id} {s.state}: {s.detail}" for s in states if s.state in ("conflict", "partial")]
        store.event(record, "resumed", f"{sum(s.state == 'done' for s in states)} done, "
                    f"{sum(s.state == 'pending' for s in states)} pending"
                    + (f"; preserved: {'; '.join(troubles)}" if troubles else ""))
        store.save(wd, record)
    return _status(wd, run_dir, record, states, notes + troubles)


@bounded
def delete(workdir: str, run_id: str) -> dict:
    """Delete a run directory. `run_id` must be the exact Run ID (no prefixes, no names)."""
    wd = Path(workdir)
    with workdir_lock(wd, "delete"):
        run_dir = store.find_dir(wd, run_id)
        record = store.read_run(run_dir, run_id)  # a directory without run.json fails visibly here
        if record.status in ACTIVE:
            raise Refused(f"run {run_id} is {record.status}; cancel or finish it before deleting", run_id=run_id)
        runs, broken = store.all_runs(wd)
        users = [r.run_id for _, r in runs if r.cut_of == run_id]
        if users:
            raise Refused(f"runs {', '.join(users)} reuse the cut of run {run_id}; delete them first",
                          run_id=run_id, referenced_by=users)
        if broken:
            raise BrokenRun("cannot tell whether these runs reference this cut: "
                            + "; ".join(b["message"] for b in broken), run_id=run_id)
        target = contained(wd, run_dir.name)
        shutil.rmtree(target)
    return {"run_id": run_id, "deleted": str(target)}
