"""Preparation: check the confirmed sessions, excerpt them in worker processes, cut the snippets,
write and validate the plan. Phases, in this order, each recorded in run.json as it starts:

1. checking-sessions: re-inventory; every confirmed session must still have its identity (id,
   project, start instant, files). A change fails visibly, keeps the Run ID and partial state, and
   clears the confirmation (a new one is required).
2. preparing-excerpts: each session's evidence in physical order, by bounded worker processes.
3. creating-snippets: the evidence stream cut into `plan.partial/Txxxx/snippet.md`.
4. writing-plan: the task packets, validation of every snippet against the stream's digest, then
   publishing (`plan.partial` -> `plan`, root README, run.json `plan-ready`) under the workdir lock.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

import orjson

from core.runs import store
from core.runs.bounds import bounded
from core.runs.coverage import pending_run
from core.runs.cut import SNIPPET_LIMIT, Snippet, cut, parse
from core.runs.errors import Refused, RunError, StaleSelection
from core.runs.evidence import write_excerpt
from core.runs.files import contained, ensure_dir, sha256_file, write_bytes
from core.runs.inventory import Sources, inventory
from core.runs.lock import workdir_lock
from core.runs.model import FileAccount, Plan, PrepareResult, RunRecord, SessionIdentity, TaskEntry
from core.runs.packets import root_readme, task_readme
from core.runs.workdir import remember_workdir
from core.transcripts.ingest import parallel_map

DEFAULT_WORKERS = 4
PHASES = ("checking sessions", "preparing excerpts", "creating snippets", "writing and validating the plan")
Progress = Callable[[str, int, int], None]
"""progress(phase, done, total)"""


def task_id(n: int) -> str:
    return f"T{n:04d}"


def _excerpt_job(index: int, session: str, fmt: str, files: list[str], out: str, redact: bool, root: str):
    return index, write_excerpt(session, fmt, files, out, redact, root)


def identity_changes(selected: list[SessionIdentity], now: list[SessionIdentity]) -> list[str]:
    by_id: dict[str, list[SessionIdentity]] = {}
    for s in now:
        by_id.setdefault(s.id, []).append(s)
    changes = []
    for s in selected:
        found = by_id.get(s.id, [])
        if not found:
            changes.append(f"session {s.id} is gone")
            continue
        if len(found) > 1:
            changes.append(f"session id {s.id} now names {len(found)} sessions")
            continue
        cur = found[0]
        if cur.project != s.project:
            changes.append(f"session {s.id} moved from project {s.project} to {cur.project}")
        elif cur.started_at != s.started_at:
            changes.append(f"session {s.id} starts at {cur.started_at}, not {s.started_at}")
        elif cur.files != s.files:
            changes.append(f"session {s.id} is now read from other files")
    return changes


def coverage_text(record: RunRecord) -> str:
    c = record.coverage
    return (f"{c.sessions} sessions from {c.earliest} to {c.latest}, about {c.approx_bytes} bytes; "
            f"{c.excluded} excluded; {c.unsupported} of an unsupported version")


@bounded
def prepare(workdir: str, run_id: str | None = None, *, current_session: str | None = None,
            sources: Sources | None = None, workers: int = DEFAULT_WORKERS, prefs: Path | None = None,
            progress: Progress | None = None) -> PrepareResult:
    """Prepare this session's confirmed run (or `run_id`'s): no selection arguments, only the confirmation."""
    wd = Path(workdir)
    step = progress or (lambda phase, done, total: None)
    workers = max(1, min(int(workers), 32))
    with workdir_lock(wd, "prepare"):
        run_dir, record = pending_run(wd, run_id, current_session, want_confirmed=True)
        if record.status != "preparing" or record.plan is not None:
            raise Refused(f"run {record.run_id} is {record.status}; only a run in preparation is prepared")
        if record.confirmation is None:
            raise Refused(f"run {record.run_id}: confirm its coverage first")
        if record.coverage is None or record.confirmation.digest != record.coverage.digest:
            raise Refused(f"run {record.run_id}: the confirmation is not for the current coverage; confirm again")
        record.phase = "checking-sessions"
        store.event(record, "prepare", "checking sessions")
        store.save(wd, record)
    try:
        return _prepare(wd, run_dir, record, sources, workers, prefs, step)
    except StaleSelection:
        raise
    except KeyboardInterrupt:
        _end(wd, record, "canceled", "preparation interrupted; partial files kept")
        raise
    except Exception as exc:
        _end(wd, record, "failed", f"preparation failed in {record.phase}: {exc}")
        if isinstance(exc, RunError):
            raise
        raise RunError(f"run {record.run_id}: preparation failed in {record.phase}: {exc}",
                       run_id=record.run_id) from exc


def _end(wd: Path, record: RunRecord, status: str, message: str) -> None:
    record.status = status
    store.event(record, status, message, error=True)
    store.save(wd, record)


def _prepare(wd: Path, run_dir: Path, record: RunRecord, sources, workers: int, prefs, step) -> PrepareResult:
    rel = record.dir
    step(PHASES[0], 0, len(record.selected))
    changes = identity_changes(record.selected, inventory(sources))
    step(PHASES[0], len(record.selected), len(record.selected))
    if changes:
        record.confirmation = None
        record.phase = "coverage"
        store.event(record, "stale-selection", "; ".join(changes) + "; a new confirmation is required", error=True)
        store.save(wd, record)
        raise StaleSelection(f"run {record.run_id}: the confirmed sessions changed since confirmation: "
                             + "; ".join(changes) + ". Look at the coverage again and confirm it.",
                             run_id=record.run_id, changes=changes)

    record.phase = "preparing-excerpts"
    store.save(wd, record)
    excerpts = ensure_dir(wd, f"{rel}/prep/excerpts")
    jobs, sizes = [], []
    for i, s in enumerate(record.selected):
        jobs.append((i, s.id, s.format, s.files, str(excerpts / f"S{i + 1:04d}.jsonl"), record.redact, str(wd)))
        sizes.append(max(1, s.bytes))
    accounts: list[list[dict]] = [[] for _ in jobs]
    for index, acc in parallel_map(_excerpt_job, jobs, sizes, workers=workers,
                                   progress=lambda d, t: step(PHASES[1], d, t)):
        accounts[index] = acc
    record.accounting = [FileAccount.model_validate(a) for acc in accounts for a in acc]

    record.phase = "creating-snippets"
    store.save(wd, record)
    partial = f"{rel}/plan.partial"
    if contained(wd, partial).exists():
        shutil.rmtree(contained(wd, partial))  # our own leftover of an interrupted attempt
    ensure_dir(wd, partial)
    written: list[Snippet] = []

    def pieces():
        for i in range(len(jobs)):
            with open(excerpts / f"S{i + 1:04d}.jsonl", "rb") as fh:
                for raw in fh:
                    p = orjson.loads(raw)
                    yield p["s"], p["f"], p["l"], p["t"]

    def emit(snippet: Snippet) -> None:
        write_bytes(wd, f"{partial}/{task_id(snippet.index)}/snippet.md", bytes(snippet.data))
        written.append(Snippet(snippet.index, bytearray(), snippet.first, snippet.last, list(snippet.sessions)))
        step(PHASES[2], len(written), 0)

    stats = cut(pieces(), emit)

    record.phase = "writing-plan"
    store.save(wd, record)
    total = len(written)
    tasks: list[TaskEntry] = []
    stream = hashlib.sha256()
    stream_bytes = 0
    for n, snip in enumerate(written, 1):
        tid = task_id(n)
        path = contained(wd, f"{partial}/{tid}/snippet.md")
        data = path.read_bytes()
        if len(data) > SNIPPET_LIMIT:
            raise RunError(f"{tid}: snippet is {len(data)} bytes, over {SNIPPET_LIMIT}")
        data.decode("utf-8")  # strict: raises on a cut inside a character
        for _, content in parse(data):
            stream.update(content)
            stream_bytes += len(content)
        entry = TaskEntry(id=tid, order=n, snippet=f"{rel}/plan/{tid}/snippet.md", readme=f"{rel}/plan/{tid}/README.md",
                          output=f"{rel}/analyze/{tid}/analysis.md", bytes=len(data),
                          sha256=hashlib.sha256(data).hexdigest(), first_source=snip.first,
                          last_source=snip.last, sessions=snip.sessions)
        tasks.append(entry)
        write_bytes(wd, f"{partial}/{tid}/README.md", _task_readme(wd, record, entry, total).encode())
        step(PHASES[3], n, total)
    if stream_bytes != stats.evidence_bytes or stream.hexdigest() != stats.digest.hexdigest():
        raise RunError("the snippets do not reproduce the evidence stream; nothing published")

    with workdir_lock(wd, "publish plan"):
        contained(wd, partial).rename(contained(wd, f"{rel}/plan"))
        for t in tasks:
            ensure_dir(wd, f"{rel}/analyze/{t.id}")
        record.plan = Plan(tasks=tasks, snippet_limit=SNIPPET_LIMIT, evidence_bytes=stats.evidence_bytes,
                           evidence_sha256=stats.digest.hexdigest(), evidence_pieces=stats.pieces)
        write_bytes(wd, f"{rel}/README.md", _root_readme(wd, record).encode())
        record.status, record.phase = "plan-ready", "done"
        store.event(record, "plan-ready", f"{total} tasks, {stats.evidence_bytes} bytes of evidence")
        store.save(wd, record)
        shutil.rmtree(contained(wd, f"{rel}/prep"))
    try:
        remember_workdir(wd, prefs)
    except OSError as exc:  # the suggestion is a convenience; the run is ready either way
        store.event(record, "preference", f"could not remember the workdir: {exc}")
    omitted = sum(o.last_line - o.first_line + 1 for a in record.accounting for o in a.omitted)
    return PrepareResult(run_id=record.run_id, run_dir=str(run_dir), status=record.status, tasks=total,
                         evidence_bytes=stats.evidence_bytes,
                         malformed_lines=sum(a.malformed for a in record.accounting), omitted_lines=omitted,
                         readme=str(run_dir / "README.md"))


def _task_readme(wd: Path, record: RunRecord, t: TaskEntry, total: int, original: str | None = None) -> str:
    return task_readme(run_id=record.run_id, goal=record.goal, assignment=record.assignment, task_id=t.id,
                       order=t.order, total=total, snippet=str(wd / t.snippet), output=str(wd / t.output),
                       first=t.first_source, last=t.last_source, sessions=t.sessions, size=t.bytes,
                       original=original)


def _root_readme(wd: Path, record: RunRecord) -> str:
    return root_readme(run_id=record.run_id, name=record.name, goal=record.goal, project=record.project,
                       coverage_text=coverage_text(record),
                       tasks=[(t.id, str(wd / t.readme), str(wd / t.output)) for t in record.plan.tasks],
                       original=record.cut_of)


def verify_plan(wd: Path, record: RunRecord) -> list[str]:
    """Problems with the plan files on disk (missing or changed snippets and packets); [] when intact."""
    problems = []
    if record.plan is None:
        return ["no plan"]
    for t in record.plan.tasks:
        try:
            path = contained(wd, t.snippet)
            digest, size = sha256_file(path)
        except (OSError, RunError):
            problems.append(f"{t.id}: snippet {t.snippet} is missing")
            continue
        if digest != t.sha256 or size != t.bytes:
            problems.append(f"{t.id}: snippet {t.snippet} changed")
        if not contained(wd, t.readme).is_file():
            problems.append(f"{t.id}: packet {t.readme} is missing")
    return problems
