"""Coverage of one project and timeframe (aggregates only), and its confirmation.

A coverage creates a run (status `preparing`, phase `coverage`) or recomputes an existing one;
any recompute (a changed timeframe) clears an earlier confirmation. The current session and the
sessions the user names are left out and the exclusions recorded.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import Path

import orjson

from core.runs import store
from core.runs.bounds import bounded
from core.runs.errors import Ambiguous, NotFound, Refused, RunError
from core.runs.files import ensure_dir
from core.runs.inventory import Sources, inventory, parse_instant
from core.runs.lock import workdir_lock
from core.runs.model import ACTIVE, Confirmation, Coverage, CoverageResult, Exclusion, RunRecord, SessionIdentity
from core.runs.packets import DEFAULT_ASSIGNMENT


def _instant(text: str | None, name: str, *, end: bool = False) -> datetime | None:
    if text in (None, ""):
        return None
    value = parse_instant(text)
    if value is None:
        raise RunError(f"{name}: {text!r} is not a date (YYYY-MM-DD) or an ISO-8601 instant")
    if end and len(text) == 10:  # a bare date as `until` means the whole day
        value = value.replace(hour=23, minute=59, second=59, microsecond=999999)
    return value


def selection_digest(selected: list[SessionIdentity]) -> str:
    keys = [[s.id, s.project, s.started_at.isoformat() if s.started_at else None, s.files] for s in selected]
    return hashlib.sha256(orjson.dumps(keys)).hexdigest()


def resolve_project(project: str, known: list[str]) -> str:
    """The exact full root, or a refusal naming the candidates (unknown, or ambiguous)."""
    if project in known:
        return project
    tail = project.rstrip("/").rsplit("/", 1)[-1]
    candidates = sorted(p for p in known if p.rsplit("/", 1)[-1] == tail or p.endswith("/" + project.strip("/")))
    if len(candidates) > 1:
        raise Ambiguous(f"project {project!r} is ambiguous; give the full root, one of: {', '.join(candidates)}",
                        candidates=candidates)
    if candidates:
        raise NotFound(f"no project {project!r}; give the full root: {candidates[0]}", candidates=candidates)
    raise NotFound(f"no sessions name the project {project!r} (see `runs projects`)")


def select(project: str, since: datetime | None, until: datetime | None, sessions: list[SessionIdentity],
           exclude: list[str], current_session: str | None) -> tuple[list[SessionIdentity], list[Exclusion], Coverage]:
    in_frame = []
    for s in sessions:
        if s.project != project:
            continue
        start, end = s.started_at or s.ended_at, s.ended_at or s.started_at
        if since is not None and (end is None or end < since):
            continue
        if until is not None and (start is None or start > until):
            continue
        in_frame.append(s)
    ids = {s.id for s in in_frame}
    exclusions = []
    if current_session:
        exclusions.append(Exclusion(id=current_session, reason="current-session", matched=current_session in ids))
    for sid in dict.fromkeys(exclude):
        if sid != current_session:
            exclusions.append(Exclusion(id=sid, reason="named", matched=sid in ids))
    gone = {e.id for e in exclusions}
    selected = [s for s in in_frame if s.id not in gone]
    starts = [s.started_at for s in selected if s.started_at] + [s.ended_at for s in selected if s.ended_at]
    cov = Coverage(
        project=project, since=since, until=until, sessions=len(selected),
        earliest=min(starts) if starts else None, latest=max(starts) if starts else None,
        approx_bytes=sum(s.bytes for s in selected), supported=sum(1 for s in selected if s.supported),
        unsupported=sum(1 for s in selected if not s.supported),
        excluded=sum(1 for e in exclusions if e.matched), digest=selection_digest(selected),
    )
    return selected, exclusions, cov


def _result(run_dir: Path, record: RunRecord, cleared: bool = False) -> CoverageResult:
    return CoverageResult(run_id=record.run_id, run_dir=str(run_dir), status=record.status,
                          coverage=record.coverage, exclusions=record.exclusions,
                          confirmed=record.confirmation is not None, cleared_confirmation=cleared)


def active_runs(workdir: Path, owner: str | None) -> list[RunRecord]:
    runs, _ = store.all_runs(workdir)
    return [r for _, r in runs if r.owner_session == owner and r.status in ACTIVE]


@bounded
def coverage(workdir: str, project: str, since: str | None = None, until: str | None = None, *,
             run_id: str | None = None, name: str | None = None, goal: str = "", assignment: str | None = None,
             exclude: list[str] = (), current_session: str | None = None, redact: bool = True,
             sources: Sources | None = None) -> CoverageResult:
    """Compute coverage; with `run_id`, recompute that run's (clearing its confirmation)."""
    wd = Path(workdir)
    since_at, until_at = _instant(since, "since"), _instant(until, "until", end=True)
    if since_at and until_at and since_at > until_at:
        raise RunError(f"since {since} is after until {until}")
    sessions = inventory(sources)
    project = resolve_project(project, sorted({s.project for s in sessions}))
    selected, exclusions, cov = select(project, since_at, until_at, sessions, list(exclude), current_session)
    ensure_dir(wd)
    with workdir_lock(wd, "coverage"):
        if run_id is None:
            others = active_runs(wd, current_session)
            if others:
                raise Refused(f"session {current_session or '(none)'} already has an active run "
                              f"{others[0].run_id} ({others[0].status}); finish, cancel or delete it first",
                              run_id=others[0].run_id)
            rid = store.new_run_id()
            label = store.run_name(name or project.rstrip("/").rsplit("/", 1)[-1])
            t = store.now()
            record = RunRecord(run_id=rid, name=label, dir=f"{label}_{rid}", created_at=t, updated_at=t,
                               status="preparing", phase="coverage", owner_session=current_session,
                               goal=goal, assignment=assignment or DEFAULT_ASSIGNMENT, redact=redact,
                               project=project)
            cleared = False
        else:
            run_dir, record = store.load(wd, run_id)
            if record.status != "preparing" or record.plan is not None or record.cut_of:
                raise Refused(f"run {run_id} is {record.status}; coverage changes only before preparation")
            if record.owner_session != current_session:
                raise Refused(f"run {run_id} belongs to session {record.owner_session or '(none)'}")
            cleared = record.confirmation is not None
            record.project = project
            if goal:
                record.goal = goal
            if assignment:
                record.assignment = assignment
        record.since, record.until = since_at, until_at
        record.exclusions, record.coverage, record.selected = exclusions, cov, selected
        record.confirmation, record.phase = None, "coverage"
        store.event(record, "coverage", f"{cov.sessions} sessions, {cov.approx_bytes} bytes"
                    + ("; earlier confirmation cleared" if cleared else ""))
        store.save(wd, record)
    return _result(wd / record.dir, record, cleared)


def pending_run(wd: Path, run_id: str | None, current_session: str | None, *, want_confirmed: bool) -> tuple[Path, RunRecord]:
    """The run an argument-less confirm/prepare means: this session's one run in preparation."""
    if run_id is not None:
        return store.load(wd, run_id)
    runs, _ = store.all_runs(wd)
    pending = [(d, r) for d, r in runs if r.status == "preparing" and r.owner_session == current_session
               and r.plan is None and (r.confirmation is not None or not want_confirmed)]
    if not pending:
        what = "confirmed coverage" if want_confirmed else "coverage"
        raise NotFound(f"no {what} waiting in {wd} for session {current_session or '(none)'}")
    if len(pending) > 1:
        ids = [r.run_id for _, r in pending]
        raise Ambiguous(f"several runs wait in {wd}: {', '.join(ids)}; name one with its Run ID", candidates=ids)
    return pending[0]


@bounded
def confirm(workdir: str, run_id: str | None = None, *, digest: str | None = None,
            current_session: str | None = None) -> CoverageResult:
    """Confirm the coverage last shown. `digest`, when given, must be that coverage's digest."""
    wd = Path(workdir)
    with workdir_lock(wd, "confirm"):
        run_dir, record = pending_run(wd, run_id, current_session, want_confirmed=False)
        if record.status != "preparing" or record.plan is not None or record.coverage is None:
            raise Refused(f"run {record.run_id} is {record.status}; nothing to confirm")
        if digest is not None and digest != record.coverage.digest:
            raise Refused("the coverage changed since it was shown; look at it again before confirming")
        if record.coverage.sessions == 0:
            raise Refused("the coverage holds no sessions; change the timeframe or project")
        record.confirmation = Confirmation(at=store.now(), digest=record.coverage.digest)
        record.phase = "confirmed"
        store.event(record, "confirmed", f"{record.coverage.sessions} sessions confirmed")
        store.save(wd, record)
    return _result(run_dir, record)
