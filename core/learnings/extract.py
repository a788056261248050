"""Learnings mined from raw transcripts (core/transcripts) and, when present, from
session-orchestrator's `.orchestrator/metrics/sessions.jsonl`.

Every finding cites the transcript lines it came from (file and 1-based line) and names a
`source_session`. Transcript text is data: only paths, command heads, error classes and counts
reach a learning, never free text from a tool result beyond a short marker like `[DIALYZER]`.

From transcripts:
- fragile-file: a file edited in >= 3 sessions, or with >= 2 failed edits each followed by another
  edit of it (edit-fail cycles);
- recurring-issue: the same failing test or lint command class (command head + marker) in >= 2
  sessions, or >= 3 times in one session;
- stagnation-class-frequency: a (file, edit error class) pair in >= 2 of the last 5 sessions;
- effective-sizing: sessions that used subagents against those that did not (error rate per tool
  call), when each side has >= 2 sessions;
- hardware-pattern: exit 137 / OOM (`oom-kill`) and ENOSPC (`disk-full`) seen >= 2 times, subject
  `<signal>::<host_class or unknown>`, scope private, at most 3 samples.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, Field

from core.mining.signatures import EDIT_TOOLS, SHELL_TOOLS, command_head, relative_path
from core.transcripts.model import Session, ToolCall
from core.transcripts.redact import redact_value

FRAGILE_SESSIONS = 3
EDIT_FAIL_CYCLES = 2
RECURRING_SESSIONS = 2
RECURRING_IN_ONE = 3
STAGNATION_SESSIONS = 2
STAGNATION_WINDOW = 5
SIZING_MIN_PER_SIDE = 2
HARDWARE_MIN = 2
MAX_CITES = 8
MAX_SAMPLES = 3

_CHECK = re.compile(r"\b(test|tests|pytest|jest|vitest|mocha|rspec|unittest|lint|ruff|eslint|biome|flake8|pylint|"
                    r"mypy|pyright|tsc|check|credo|dialyzer|clippy|fmt|format|pre-commit|vet|typecheck)\b", re.I)
_TEST = re.compile(r"\b(test|tests|pytest|jest|vitest|mocha|rspec|unittest)\b", re.I)
_HOOK = re.compile(r"pre-commit|validation failed|hook", re.I)
_MARKER = re.compile(r"\[([A-Z][A-Z_-]{2,20})\]")
_ABORTED = re.compile(r"^\s*(command aborted|interrupted)", re.I)
_NO_MATCH = re.compile(r"not found in file|could not find the exact text|old_string|no match", re.I)
_NO_CHANGE = re.compile(r"no changes made|identical|same as", re.I)
_NOT_READ = re.compile(r"has not been read|read it first|modified since read", re.I)
_OOM = re.compile(r"out of memory|\boom\b|oom-kill|killed process|cannot allocate memory|\bKilled\b")
_ENOSPC = re.compile(r"ENOSPC|no space left on device", re.I)


class Cite(BaseModel):
    """A transcript line a finding rests on."""

    file: str
    line: int
    session: str


class Finding(BaseModel):
    """A learning as mined, before dedupe, pools and confirmation."""

    type: str
    subject: str
    insight: str
    evidence: str
    cites: list[Cite] = Field(default_factory=list)
    source_session: str
    evidence_sessions: list[str] = Field(default_factory=list)
    file_paths: list[str] = Field(default_factory=list)
    scope: str = "local"
    host_class: str | None = None
    origin: str = "transcripts"


def _when(session: Session) -> datetime:
    return session.ended_at or session.started_at or datetime.min.replace(tzinfo=timezone.utc)


def _calls(session: Session) -> list[ToolCall]:
    return session.tool_calls(include_subagents=True)


def _failed(call: ToolCall) -> bool:
    r = call.result
    if r is None or r.rejected or r.interrupted:
        return False
    if _ABORTED.match(r.output_head or ""):
        return False
    return r.is_error or (r.exit_code is not None and r.exit_code != 0)


def _cite(call: ToolCall, session: Session) -> Cite:
    src = call.result.source if call.result is not None and call.result.source is not None else call.source
    return Cite(file=src.file, line=src.line, session=session.id)


def _path(call: ToolCall) -> str | None:
    value = call.input.get("file_path") or call.input.get("path") or call.input.get("notebook_path")
    return value if isinstance(value, str) and value else None


def _cites_text(cites: list[Cite]) -> str:
    return ", ".join(f"{Path(c.file).name}:{c.line}" for c in cites[:MAX_CITES])


def _latest(sessions: list[Session], ids: set[str]) -> str:
    chosen = [s for s in sessions if s.id in ids]
    return max(chosen, key=_when).id if chosen else (sessions[-1].id if sessions else "unknown")


def edit_error_class(call: ToolCall) -> str:
    head = (call.result.output_head if call.result else "") or ""
    if _NO_MATCH.search(head):
        return "edit-no-match"
    if _NO_CHANGE.search(head):
        return "edit-no-change"
    if _NOT_READ.search(head):
        return "edit-not-read"
    return "edit-failed"


def check_error_class(call: ToolCall) -> str | None:
    """`test: pytest`, `lint: git commit [DIALYZER]` ... for a failing test/lint command, else None."""
    command = call.input.get("command") or call.input.get("cmd")
    if not isinstance(command, str) or not command:
        return None
    out = call.result.output_head if call.result else ""
    if not (_CHECK.search(command) or _HOOK.search(out or "")):
        return None
    kind = "test" if _TEST.search(command) else "lint"
    marker = _MARKER.search(out or "")
    head = "git commit" if _HOOK.search(out or "") and "git commit" in command else command_head(command)
    return f"{kind}: {head}" + (f" [{marker.group(1)}]" if marker else "")


# --- the extractors ---------------------------------------------------------------------------


def fragile_files(sessions: list[Session]) -> list[Finding]:
    sessions_by_file: dict[str, set[str]] = defaultdict(set)
    cites: dict[str, list[Cite]] = defaultdict(list)
    cycles: dict[str, int] = defaultdict(int)
    for s in sessions:
        pending_fail: dict[str, bool] = {}
        for call in _calls(s):
            if call.name not in EDIT_TOOLS:
                continue
            path = _path(call)
            if path is None:
                continue
            rel = relative_path(path, s.project)
            sessions_by_file[rel].add(s.id)
            if pending_fail.get(rel):
                cycles[rel] += 1
                pending_fail[rel] = False
                cites[rel].append(_cite(call, s))
            if _failed(call):
                pending_fail[rel] = True
                cites[rel].append(_cite(call, s))
            elif len(cites[rel]) < 2:
                cites[rel].append(_cite(call, s))
    found = []
    for rel in sorted(sessions_by_file):
        n, c = len(sessions_by_file[rel]), cycles[rel]
        if n < FRAGILE_SESSIONS and c < EDIT_FAIL_CYCLES:
            continue
        why = []
        if n >= FRAGILE_SESSIONS:
            why.append(f"edited in {n} sessions")
        if c >= EDIT_FAIL_CYCLES:
            why.append(f"{c} edit-fail cycles (a failed edit, then another edit)")
        found.append(Finding(
            type="fragile-file", subject=rel,
            insight=f"{rel} is fragile: {' and '.join(why)}; read it fresh before editing and keep edits small",
            evidence=f"{'; '.join(why)}; at {_cites_text(cites[rel])}", cites=cites[rel][:MAX_CITES],
            source_session=_latest(sessions, sessions_by_file[rel]),
            evidence_sessions=sorted(sessions_by_file[rel]), file_paths=[rel]))
    return found


def recurring_issues(sessions: list[Session]) -> list[Finding]:
    per_class: dict[str, dict[str, list[Cite]]] = defaultdict(lambda: defaultdict(list))
    for s in sessions:
        for call in _calls(s):
            if call.name in SHELL_TOOLS and _failed(call):
                cls = check_error_class(call)
                if cls:
                    per_class[cls][s.id].append(_cite(call, s))
    found = []
    for cls in sorted(per_class):
        by_session = per_class[cls]
        total = sum(len(v) for v in by_session.values())
        if len(by_session) < RECURRING_SESSIONS and total < RECURRING_IN_ONE:
            continue
        cites = [c for sid in sorted(by_session) for c in by_session[sid]]
        found.append(Finding(
            type="recurring-issue", subject=cls,
            insight=f"`{cls}` keeps failing ({total} failures in {len(by_session)} session(s)); run it before "
                    "declaring work done and fix the cause, not the symptom",
            evidence=f"{total} failing runs at {_cites_text(cites)}", cites=cites[:MAX_CITES],
            source_session=_latest(sessions, set(by_session)), evidence_sessions=sorted(by_session)))
    return found


def stagnation_classes(sessions: list[Session]) -> list[Finding]:
    recent = sorted(sessions, key=_when, reverse=True)[:STAGNATION_WINDOW]
    pairs: dict[tuple[str, str], dict[str, list[Cite]]] = defaultdict(lambda: defaultdict(list))
    for s in recent:
        for call in _calls(s):
            if call.name in EDIT_TOOLS and _failed(call) and (path := _path(call)):
                pairs[(relative_path(path, s.project), edit_error_class(call))][s.id].append(_cite(call, s))
    found = []
    for (rel, cls) in sorted(pairs):
        by_session = pairs[(rel, cls)]
        if len(by_session) < STAGNATION_SESSIONS:
            continue
        cites = [c for sid in sorted(by_session) for c in by_session[sid]]
        found.append(Finding(
            type="stagnation-class-frequency", subject=f"{rel}::{cls}",
            insight=f"edits to {rel} keep failing with {cls} in {len(by_session)} of the last "
                    f"{len(recent)} sessions; re-read the file before each edit",
            evidence=f"{len(cites)} failed edits at {_cites_text(cites)}", cites=cites[:MAX_CITES],
            source_session=_latest(sessions, set(by_session)), evidence_sessions=sorted(by_session),
            file_paths=[rel]))
    return found


def effective_sizing(sessions: list[Session]) -> list[Finding]:
    sides: dict[bool, list[tuple[Session, float, Cite | None]]] = {True: [], False: []}
    for s in sessions:
        calls = _calls(s)
        if not calls:
            continue
        spawns = [c for c in s.tool_calls() if c.name in ("Task", "Agent") or c.subagent]
        rate = sum(1 for c in calls if _failed(c)) / len(calls)
        sides[bool(spawns or s.subagents)].append((s, rate, _cite(spawns[0], s) if spawns else None))
    if min(len(sides[True]), len(sides[False])) < SIZING_MIN_PER_SIDE:
        return []
    with_rate = statistics.median(r for _, r, _ in sides[True])
    without = statistics.median(r for _, r, _ in sides[False])
    better = "fewer" if with_rate < without else "more" if with_rate > without else "as many"
    cites = [c for _, _, c in sides[True] if c is not None]
    ids = {s.id for s, _, _ in sides[True] + sides[False]}
    return [Finding(
        type="effective-sizing", subject="subagent-use",
        insight=f"sessions that delegated to subagents had {better} failing tool calls "
                f"(median {with_rate:.0%} vs {without:.0%} without)",
        evidence=f"{len(sides[True])} sessions with subagents, {len(sides[False])} without; spawns at "
                 f"{_cites_text(cites)}", cites=cites[:MAX_CITES],
        source_session=_latest(sessions, ids), evidence_sessions=sorted(ids))]


def hardware_patterns(sessions: list[Session], host_class: str | None = None) -> list[Finding]:
    hits: dict[str, list[tuple[str, Cite]]] = defaultdict(list)
    for s in sessions:
        for call in _calls(s):
            r = call.result
            if r is None:
                continue
            head = r.output_head or ""
            if r.exit_code == 137 or (call.name in SHELL_TOOLS and _failed(call) and _OOM.search(head)):
                hits["oom-kill"].append((s.id, _cite(call, s)))
            elif _ENOSPC.search(head) and _failed(call):
                hits["disk-full"].append((s.id, _cite(call, s)))
    found = []
    for signal in sorted(hits):
        if len(hits[signal]) < HARDWARE_MIN:
            continue
        cites = [c for _, c in hits[signal]][:MAX_SAMPLES]
        ids = {sid for sid, _ in hits[signal]}
        host = host_class or "unknown"
        found.append(Finding(
            type="hardware-pattern", subject=f"{signal}::{host}",
            insight=f"{signal} hit {len(hits[signal])} times on host class {host}; size jobs to the machine",
            evidence=f"{len(hits[signal])} hits, samples at {_cites_text(cites)}", cites=cites,
            source_session=_latest(sessions, ids), evidence_sessions=sorted(ids), scope="private",
            host_class=host_class))
    return found


def from_transcripts(sessions: list[Session], *, host_class: str | None = None) -> list[Finding]:
    return (fragile_files(sessions) + recurring_issues(sessions) + stagnation_classes(sessions)
            + effective_sizing(sessions) + hardware_patterns(sessions, host_class))


# --- sessions.jsonl (session-orchestrator's metrics) ------------------------------------------

SESSION_KEY_ALIASES = {"type": "session_type", "mode": "session_type", "files_changed": "total_files_changed",
                       "waves_total": "total_waves", "waves_completed": "total_waves"}
SCOPE_MIN = 2
SIZING_WINDOW = 5
SIZING_MIN = 3


def read_sessions_jsonl(path: Path) -> list[dict]:
    """The metrics records (aliases applied), newest first by completed_at; bad lines skipped."""
    out = []
    try:
        data = Path(path).read_bytes()
    except OSError:
        return []
    for n, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(rec, dict):
            continue
        rec = redact_value(rec)  # its ids, file names and error classes end up in learnings
        for alias, key in SESSION_KEY_ALIASES.items():
            if alias in rec and key not in rec:
                rec[key] = rec.pop(alias)
        rec["_line"] = n
        out.append(rec)
    out.sort(key=lambda r: str(r.get("completed_at") or ""), reverse=True)
    return out


def _sid(rec: dict) -> str:
    return str(rec.get("session_id") or "unknown")


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def from_sessions_jsonl(path: Path) -> list[Finding]:
    """The anchor's heuristics (SKILL.md Step 3.2) with their data gates."""
    recs = read_sessions_jsonl(path)
    if not recs:
        return []
    file = str(path)
    found: list[Finding] = []

    def cites(rs):
        return [Cite(file=file, line=r["_line"], session=_sid(r)) for r in rs][:MAX_CITES]

    failing = [r for r in recs if isinstance(r.get("agent_summary"), dict)
               and ((_num(r["agent_summary"].get("failed")) or 0) > 0 or (_num(r["agent_summary"].get("partial")) or 0) > 0)]
    if len(failing) >= 2:
        found.append(Finding(
            type="recurring-issue", subject="agents-failed-or-partial", origin="sessions.jsonl",
            insight=f"agents ended failed or partial in {len(failing)} sessions; plan smaller agent tasks",
            evidence=f"agent_summary.failed/partial > 0 in {', '.join(_sid(r) for r in failing[:MAX_CITES])}",
            cites=cites(failing), source_session=_sid(failing[0]), evidence_sessions=[_sid(r) for r in failing]))
    rated = [r for r in recs if isinstance(r.get("effectiveness"), dict)
             and _num(r["effectiveness"].get("completion_rate")) is not None]
    low = [r for r in rated if _num(r["effectiveness"]["completion_rate"]) < 0.7]
    if len(rated) >= SCOPE_MIN and low:
        found.append(Finding(
            type="scope-guidance", subject="session-scope", origin="sessions.jsonl",
            insight=f"{len(low)} of {len(rated)} sessions completed < 70% of planned issues: plan smaller sessions",
            evidence=f"completion_rate < 0.7 in {', '.join(_sid(r) for r in low[:MAX_CITES])}",
            cites=cites(low), source_session=_sid(low[0]), evidence_sessions=[_sid(r) for r in low]))
    carry = [r for r in rated if (_num(r["effectiveness"].get("carryover")) or 0) > 0
             or (_num(r["effectiveness"].get("emergent")) or 0) > 0]
    if len(carry) >= 2:
        found.append(Finding(
            type="deviation-pattern", subject="plan-deviation", origin="sessions.jsonl",
            insight=f"{len(carry)} sessions carried over or picked up emergent work beyond the plan",
            evidence=f"carryover/emergent > 0 in {', '.join(_sid(r) for r in carry[:MAX_CITES])}",
            cites=cites(carry), source_session=_sid(carry[0]), evidence_sessions=[_sid(r) for r in carry]))
    by_type: dict[str, list[dict]] = defaultdict(list)
    for r in recs:
        by_type[str(r.get("session_type"))].append(r)
    for stype, rs in sorted(by_type.items()):
        window = rs[:SIZING_WINDOW]
        ratios = [_num(w.get("over_delivery_ratio")) for r in window for w in (r.get("waves") or [])
                  if isinstance(w, dict) and str(w.get("role", "")).lower() not in ("discovery", "finalization")]
        ratios = [x for x in ratios if x is not None]
        if len(ratios) >= SIZING_MIN:
            med = statistics.median(ratios)
            found.append(Finding(
                type="effective-sizing", subject=f"{stype}-wave-sizing", origin="sessions.jsonl",
                insight=f"{stype} sessions deliver {med:.2f}x the planned files per wave (median of "
                        f"{len(ratios)} waves); size waves accordingly",
                evidence=f"over_delivery_ratio median {med:.2f} over the last {len(window)} {stype} sessions",
                cites=cites(window), source_session=_sid(window[0]), evidence_sessions=[_sid(r) for r in window]))
    pairs: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in recs[:STAGNATION_WINDOW]:
        st = r.get("stagnation_events")
        if not isinstance(st, dict):
            continue
        files = [f for f in st.get("files") or [] if isinstance(f, str)]
        classes = [c for c in (st.get("by_error_class") or {}) if isinstance(c, str)]
        for f in files:
            for c in classes:
                if r not in pairs[(f, c)]:
                    pairs[(f, c)].append(r)
    for (f, c), rs in sorted(pairs.items()):
        if len(rs) >= STAGNATION_SESSIONS:
            found.append(Finding(
                type="stagnation-class-frequency", subject=f"{f}::{c}", origin="sessions.jsonl",
                insight=f"{f} stalled with {c} in {len(rs)} of the last {STAGNATION_WINDOW} sessions",
                evidence=f"stagnation_events in {', '.join(_sid(r) for r in rs)}", cites=cites(rs),
                source_session=_sid(rs[0]), evidence_sessions=[_sid(r) for r in rs], file_paths=[f]))
    return found
