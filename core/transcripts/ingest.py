"""Read many sessions in parallel, drop records repeated across files, and summarize them.

Each session is read by one worker process (files are independent; two cores read two sessions).
A record repeated in a resumed or forked session (same uuid) belongs to the earliest session.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from datetime import datetime, timezone

from pydantic import BaseModel

from core.transcripts.claude import read_claude_session
from core.transcripts.codex import read_codex_session
from core.transcripts.discover import SessionFiles
from core.transcripts.lines import paused_gc
from core.transcripts.model import Session, TurnKind
from core.transcripts.pi import read_pi_session

IN_PROCESS_BYTES = 8 * 1024 * 1024
"""Below this much input, starting worker processes costs more than it saves."""

Progress = Callable[[int, int], None]
"""progress(bytes_done, bytes_total)"""


def read_session(files: SessionFiles, *, redact: bool = True) -> Session:
    if files.format == "pi":
        return read_pi_session(files.trunk, redact=redact)
    if files.format == "codex":
        return read_codex_session(files.trunk, redact=redact)
    return read_claude_session(files.trunk, files.subagents, redact=redact)


class SessionSummary(BaseModel):
    id: str
    format: str
    project: str | None
    path: str
    files: int
    lines: int
    malformed: int
    skipped: int
    human_prompts: int
    tool_calls: int
    interrupts: int
    rejected_tool_uses: int
    subagents: int
    duplicates: int
    agent_session: bool
    launch: str | None = None
    """Why agent_session is what it is (core/transcripts/launch.py)."""
    started_at: datetime | None
    ended_at: datetime | None
    title: str | None = None


class Totals(BaseModel):
    sessions: int = 0
    files: int = 0
    bytes: int = 0
    lines: int = 0
    parsed: int = 0
    malformed: int = 0
    skipped: int = 0
    duplicates: int = 0
    human_prompts: int = 0
    tool_calls: int = 0
    agent_sessions: int = 0


class ScanReport(BaseModel):
    sessions: list[SessionSummary]
    totals: Totals


TurnKey = tuple[str, int, int]
"""(record uuid, 1 if it is an active human prompt, number of tool calls) for duplicate accounting."""


def _turn_keys(session: Session) -> list[TurnKey]:
    keys = []
    for turn in session.turns:
        if turn.id:
            keys.append((turn.id, int(turn.kind is TurnKind.human and turn.active), len(turn.tool_calls)))
    for agent in session.subagents:
        for turn in agent.turns:
            if turn.id:
                keys.append((turn.id, 0, len(turn.tool_calls)))
    return keys


def summarize(session: Session) -> SessionSummary:
    acc = session.accounting
    return SessionSummary(
        id=session.id,
        format=session.format,
        project=session.project,
        path=session.files[0] if session.files else "",
        files=len(session.files),
        lines=acc.lines_read,
        malformed=acc.malformed,
        skipped=acc.skipped,
        human_prompts=len(session.human_prompts),
        tool_calls=len(session.tool_calls(include_subagents=True)),
        interrupts=session.interrupts,
        rejected_tool_uses=session.rejected_tool_uses,
        subagents=len(session.subagents),
        duplicates=acc.duplicates,
        agent_session=session.agent_session,
        launch=session.launch,
        started_at=session.started_at,
        ended_at=session.ended_at,
        title=session.title,
    )


def count_session(files: SessionFiles, redact: bool = True) -> tuple[SessionSummary, list[TurnKey]]:
    """A session's summary and turn keys: counts only for Claude Code (core/transcripts/counts.py),
    the full reader for the rest and where only it can answer."""
    if files.format == "claude":
        from core.transcripts.counts import count_claude_session

        counted = count_claude_session(files.trunk, files.subagents, redact=redact)
        if counted is not None:
            return counted[0], counted[1]
    session = read_session(files, redact=redact)
    return summarize(session), _turn_keys(session)


_read_for_summary = count_session


def _read_full(files: SessionFiles, redact: bool) -> tuple[Session, list[TurnKey]]:
    session = read_session(files, redact=redact)
    return session, _turn_keys(session)


def parallel_map(
    fn,
    jobs: list[tuple],
    sizes: list[int],
    *,
    workers: int | None = None,
    progress: Progress | None = None,
    batch_bytes: int | None = None,
) -> Iterator:
    """fn(*job) for each job, across `workers` processes when the input is big enough to pay for
    them; results arrive as they finish. `sizes` (bytes per job) drive scheduling and progress.

    The calling process is one of the workers: it starts `workers - 1` helper processes, hands them
    every job but the largest, which it takes itself, then takes from the other end (the smallest job no
    helper has started) until none is left. The caller reads the biggest file because what it frees
    is reused by the caller's own later work (the results it collects), where a helper would hold its
    peak until the pool ends; helpers take jobs largest first, so none starts a big one last. Jobs
    smaller than BATCH_BYTES (or `batch_bytes`) are handed out in batches of about that much (_batches).
    At the end the caller waits for what the pool has already handed a helper (up to two units), so work
    that costs more per byte than counting (mining) passes smaller batches.
    """
    order = sorted(range(len(jobs)), key=lambda i: sizes[i], reverse=True)
    total = sum(sizes)
    done = 0
    workers = workers or os.cpu_count() or 1
    if workers <= 1 or len(jobs) <= 1 or total < IN_PROCESS_BYTES:
        for i in order:
            yield fn(*jobs[i])
            done += sizes[i]
            if progress:
                progress(done, total)
        return
    units = _batches(order, sizes, batch_bytes or BATCH_BYTES)
    helpers = min(workers - 1, len(units) - 1)
    if helpers < 1:
        for i in order:
            yield fn(*jobs[i])
            done += sizes[i]
            if progress:
                progress(done, total)
        return
    pool = ProcessPoolExecutor(max_workers=helpers, mp_context=_process_context())
    finished: deque = deque()
    """Futures as they finish (appended by the pool's thread); cancelled ones are skipped."""
    unstarted: deque = deque()
    """(future, unit), largest first: the caller takes from the small end what no helper has started."""
    running: dict = {}
    """future -> unit, until its results are handed on."""
    try:
        for u in range(1, len(units)):
            future = pool.submit(_run_batch, fn, [jobs[i] for i in units[u]])
            future.add_done_callback(finished.append)
            unstarted.append((future, u))
            running[future] = u
        own = 0
        while own is not None or running:
            if own is not None:
                for i in units[own]:  # the caller's own share of the work
                    result = fn(*jobs[i])
                    done += sizes[i]
                    if progress:
                        progress(done, total)
                    yield result
            while finished:
                future = finished.popleft()
                u = running.pop(future, None)
                if u is None or future.cancelled():
                    continue
                for i, result in zip(units[u], future.result()):
                    done += sizes[i]
                    if progress:
                        progress(done, total)
                    yield result
            own = None
            while unstarted:
                future, u = unstarted.pop()
                if future.cancel():
                    del running[future]
                    own = u
                    break
                # Helpers start jobs in the order they were handed them: all the bigger ones are started.
                unstarted.clear()
            if own is None and running:
                for future in wait(running, return_when=FIRST_COMPLETED)[0]:
                    if future not in finished:
                        finished.append(future)  # its callback may not have run yet
    finally:
        # A consumer that stops early (a cancelled pass) does not wait for the jobs not yet started.
        pool.shutdown(wait=True, cancel_futures=True)


BATCH_BYTES = 8 * 1024 * 1024
"""Jobs smaller than this travel to a helper in batches of about this much: each job handed over and
each result sent back wakes the caller's pool threads, which then take the GIL from its own reading
(a corpus holds a thousand small sessions)."""


def _batches(order: list[int], sizes: list[int], batch_bytes: int = BATCH_BYTES) -> list[list[int]]:
    """Job indices, largest first, in units: a job of `batch_bytes` or more alone, smaller ones
    gathered (in the same order) until a unit holds `batch_bytes`."""
    units: list[list[int]] = []
    current: list[int] = []
    held = 0
    for i in order:
        if sizes[i] >= batch_bytes:
            units.append([i])
            continue
        current.append(i)
        held += sizes[i]
        if held >= batch_bytes:
            units.append(current)
            current, held = [], 0
    if current:
        units.append(current)
    return units


def _run_batch(fn, jobs: list[tuple]) -> list:
    return [fn(*job) for job in jobs]


def _process_context():
    """fork is fastest, but forking a process with other threads running (the language server:
    its event loop, watchers, workers) can leave the child stuck on a lock one of them held; there
    the workers come from a fork server instead."""
    return multiprocessing.get_context("fork" if threading.active_count() == 1 else "forkserver")


def _run(units: list[SessionFiles], fn, *, redact: bool, workers: int | None, progress: Progress | None) -> Iterator:
    return parallel_map(fn, [(u, redact) for u in units], [u.size for u in units], workers=workers, progress=progress)


def _started(item) -> tuple:
    start = item.started_at
    return (start is None, start or datetime.min.replace(tzinfo=timezone.utc), item.id)


def _duplicate_positions(keyed: list[list[TurnKey]]) -> list[list[int]]:
    """For sessions in start order, the positions of keys already seen in an earlier one."""
    seen: set[str] = set()
    out = []
    for keys in keyed:
        dup = []
        for pos, (uuid, _, _) in enumerate(keys):
            if uuid in seen:
                dup.append(pos)
            else:
                seen.add(uuid)
        out.append(dup)
    return out


def scan(
    units: Iterable[SessionFiles],
    *,
    redact: bool = True,
    workers: int | None = None,
    since: datetime | None = None,
    progress: Progress | None = None,
) -> ScanReport:
    """Summaries of every session, sorted by start; repeated records counted once."""
    units = list(units)
    with paused_gc():
        results = list(_run(units, _read_for_summary, redact=redact, workers=workers, progress=progress))
    results.sort(key=lambda r: _started(r[0]))
    summaries = []
    for (summary, keys), dups in zip(results, _duplicate_positions([k for _, k in results])):
        for pos in dups:
            _, human, calls = keys[pos]
            summary.human_prompts -= human
            summary.tool_calls -= calls
            summary.duplicates += 1
        if since is None or summary.ended_at is None or summary.ended_at >= since:
            summaries.append(summary)
    totals = Totals(
        sessions=len(summaries),
        files=sum(s.files for s in summaries),
        bytes=sum(u.size for u in units),
        lines=sum(s.lines for s in summaries),
        malformed=sum(s.malformed for s in summaries),
        skipped=sum(s.skipped for s in summaries),
        duplicates=sum(s.duplicates for s in summaries),
        human_prompts=sum(s.human_prompts for s in summaries),
        tool_calls=sum(s.tool_calls for s in summaries),
        agent_sessions=sum(1 for s in summaries if s.agent_session),
    )
    totals.parsed = totals.lines - totals.malformed - totals.skipped
    return ScanReport(sessions=summaries, totals=totals)


def read_sessions(
    units: Iterable[SessionFiles],
    *,
    redact: bool = True,
    workers: int | None = None,
    progress: Progress | None = None,
) -> list[Session]:
    """Every session in full, sorted by start, with turns repeated from an earlier session removed."""
    with paused_gc():
        results = list(_run(list(units), _read_full, redact=redact, workers=workers, progress=progress))
    results.sort(key=lambda r: _started(r[0]))
    sessions = []
    for (session, _keys), dups in zip(results, _duplicate_positions([k for _, k in results])):
        if dups:
            _drop_positions(session, set(dups))
            session.accounting.duplicates += len(dups)
        sessions.append(session)
    return sessions


def _drop_positions(session: Session, positions: set[int]) -> None:
    """Remove the turns at these positions of _turn_keys' order (trunk, then each subagent)."""
    pos = 0

    def keep(turns):
        nonlocal pos
        kept = []
        for turn in turns:
            if turn.id:
                if pos in positions:
                    pos += 1
                    continue
                pos += 1
            kept.append(turn)
        return kept

    session.turns = keep(session.turns)
    for agent in session.subagents:
        agent.turns = keep(agent.turns)
