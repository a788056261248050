"""`/evolve` for kitsoki-miner: analyze -> operator question -> confirm (or prune), one core for the
CLI and the server.

- `analyze` mines candidates (transcripts and, when present, sessions.jsonl), dedupes them against
  the store on exact type + subject (those become confirmations, +0.15), pools the rest against
  live records, asks the judge when one is configured (a void judgment changes nothing and is never
  shown; without a judge a pool is shown as possible duplicates only), and saves the analysis as
  pending beside our store. Nothing is written to the store.
- `confirm` applies only the selected candidates, in one pass of the write pipeline under the lock.
  No selection, an unknown id, or a stale analysis: InputError, nothing touched.
- `prune` is the pipeline with no change: expired and dead records archived, duplicates consolidated.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel, Field

from core.learnings.extract import Finding, from_sessions_jsonl, from_transcripts
from core.learnings.judgment import (
    Decision,
    Judge,
    Verdict,
    apply_verdict,
    build_judgment_input,
    judge_candidate,
)
from core.learnings.pools import PoolMember, build_candidate_pools
from core.learnings.schema import (
    CONFIRM_STEP,
    NEW_CONFIDENCE,
    clamp,
    derive_expires_at,
    iso,
    learning_key,
    now_utc,
)
from core.learnings.store import (
    OWN_STORE,
    WriteResult,
    confirmed,
    contradicted,
    default_store_path,
    live_records,
    read_store,
    write_generation,
)
from core.mining.watermark import write_atomic

SESSIONS_JSONL = ".orchestrator/metrics/sessions.jsonl"
PENDING_NAME = "evolve-pending.json"


class InputError(ValueError):
    """The request cannot be acted on as given; nothing was touched."""


class Candidate(Finding):
    """A finding that survived dedupe, with what confirming it would do."""

    id: str
    key: str
    action: Literal["new", "confirm"] = "new"
    existing_id: str | None = None
    confidence: float = NEW_CONFIDENCE
    """The confidence the record will have once confirmed."""
    possible_duplicates: list[PoolMember] = Field(default_factory=list)
    relations: list[Decision] = Field(default_factory=list)
    """Decisions of a judgment that parsed (ok); empty when unjudged or void."""


class QuestionOption(BaseModel):
    label: str
    description: str


class Question(BaseModel):
    question: str
    header: str
    options: list[QuestionOption]
    multiSelect: bool = True


class OperatorQuestion(BaseModel):
    """The `kitsoki/question` card (kitsoki's answer_question shape)."""

    question_id: str
    questions: list[Question]


class Analysis(BaseModel):
    question_id: str
    store: str
    generation: str
    created_at: str
    candidates: list[Candidate]
    question: OperatorQuestion | None = None
    judged: int = 0
    void_judgments: int = 0


class ConfirmResult(BaseModel):
    applied: list[str]
    """Candidate ids written."""
    written_ids: list[str]
    """Record ids created or changed."""
    write: WriteResult


@dataclass
class EvolveConfig:
    workspace: Path
    store: Path | None = None
    transcript_dirs: list[Path] = field(default_factory=list)
    sessions_jsonl: Path | None = None
    judge: Judge | None = None
    host_class: str | None = None
    use_default_transcripts: bool = True
    """Read the workspace's own Claude/Pi history when no transcript_dirs are given."""

    @property
    def store_path(self) -> Path:
        return Path(self.store) if self.store else default_store_path(self.workspace)

    @property
    def pending_path(self) -> Path:
        return Path(self.workspace) / OWN_STORE.rsplit("/", 1)[0] / PENDING_NAME


def _candidate_id(key: str) -> str:
    return "c-" + hashlib.sha256(key.encode()).hexdigest()[:12]


def _findings(config: EvolveConfig) -> list[Finding]:
    from core.transcripts.discover import discover
    from core.transcripts.ingest import read_sessions

    found: list[Finding] = []
    if config.transcript_dirs or config.use_default_transcripts:
        units = discover(None if config.transcript_dirs else config.workspace, config.transcript_dirs)
        if units:
            found += from_transcripts(read_sessions(units, workers=1), host_class=config.host_class)
    metrics = config.sessions_jsonl or Path(config.workspace) / SESSIONS_JSONL
    if Path(metrics).is_file():
        found += from_sessions_jsonl(Path(metrics))
    return found


def analyze(config: EvolveConfig, *, findings: list[Finding] | None = None, now: datetime | None = None,
            save: bool = True) -> Analysis:
    now = now or now_utc()
    store = config.store_path
    content = read_store(store)
    live = live_records(store, now=now)
    by_exact = {(str(r.get("type")), str(r.get("subject"))): r for r in live}
    findings = _findings(config) if findings is None else findings
    candidates: dict[str, Candidate] = {}
    for f in findings:
        key = learning_key({"type": f.type, "subject": f.subject}) or f"{f.type}/"
        if key in candidates:
            continue
        cand = Candidate(id=_candidate_id(key), key=key, **f.model_dump())
        match = by_exact.get((f.type, f.subject))
        if match is not None and isinstance(match.get("id"), str):
            cand.action, cand.existing_id = "confirm", match["id"]
            cand.confidence = round(clamp(float(match.get("confidence", NEW_CONFIDENCE)) + CONFIRM_STEP), 6)
        candidates[key] = cand
    new = [c for c in candidates.values() if c.action == "new"]
    drafts = [_draft(c, now) for c in new]
    pools = build_candidate_pools(live + drafts, now=now)
    store_ids = {r["id"] for r in live if isinstance(r.get("id"), str)}
    by_id = {r["id"]: r for r in live if isinstance(r.get("id"), str)}
    for dup in pools.duplicates:  # the same key as a stored record: a confirmation, not a new one
        for c in new:
            if c.id in [dup["kept"], *dup["dropped"]]:
                stored = [i for i in [dup["kept"], *dup["dropped"]] if i in store_ids]
                if stored:
                    c.action, c.existing_id = "confirm", stored[0]
                    c.confidence = round(clamp(float(by_id[stored[0]].get("confidence", 0.5)) + CONFIRM_STEP), 6)
    judged = void = 0
    for c in new:
        if c.action != "new":
            continue
        c.possible_duplicates = [m for m in pools.pools.get(c.id, []) if m.id in store_ids]
        if config.judge is None or not c.possible_duplicates:
            continue
        inp = build_judgment_input(_draft(c, now), [by_id[m.id] for m in c.possible_duplicates])
        verdict = judge_candidate(inp, config.judge)
        judged += 1
        if verdict.ok:
            c.relations = [d for d in verdict.decisions]
        else:
            void += 1  # fail closed: changes nothing, never shown
    ordered = sorted(candidates.values(), key=lambda c: (c.type, c.subject))
    qid = "evolve-" + hashlib.sha256(("\n".join(c.id for c in ordered) + content.generation).encode()).hexdigest()[:12]
    analysis = Analysis(question_id=qid, store=str(store), generation=content.generation, created_at=iso(now),
                        candidates=ordered, judged=judged, void_judgments=void)
    analysis.question = operator_question(analysis, by_id)
    if save:
        write_atomic(config.pending_path, orjson.dumps(analysis.model_dump(mode="json"), option=orjson.OPT_INDENT_2))
    return analysis


def _draft(c: Candidate, now: datetime) -> dict:
    return {"id": c.id, "type": c.type, "subject": c.subject, "insight": c.insight, "evidence": c.evidence,
            "confidence": NEW_CONFIDENCE, "source_session": c.source_session, "created_at": iso(now),
            "expires_at": derive_expires_at(iso(now), c.type, now=now), "file_paths": c.file_paths}


def label(c: Candidate) -> str:
    return f"[{c.type}] {c.subject}"


def describe(c: Candidate, records: dict[str, dict] | None = None) -> str:
    records = records or {}
    conf = (f"confidence {c.confidence:.2f} (+{CONFIRM_STEP})" if c.action == "confirm"
            else f"confidence new {NEW_CONFIDENCE}")
    parts = [c.insight, c.evidence, conf]
    for d in c.relations:
        if d.target_ids:
            names = ", ".join(str(records.get(t, {}).get("subject", t)) for t in d.target_ids)
            parts.append(f"judge: {d.decision} {names} ({d.rationale})")
    if c.possible_duplicates and not c.relations:
        parts.append("possible duplicate of " + ", ".join(
            f"{records.get(m.id, {}).get('subject', m.id)} ({m.score:.2f})" for m in c.possible_duplicates[:3]))
    return " | ".join(parts)


def operator_question(analysis: Analysis, records: dict[str, dict] | None = None) -> OperatorQuestion | None:
    if not analysis.candidates:
        return None
    return OperatorQuestion(question_id=analysis.question_id, questions=[Question(
        question="Which learnings should be kept?", header="Learnings",
        options=[QuestionOption(label=label(c), description=describe(c, records)) for c in analysis.candidates],
        multiSelect=True)])


def load_pending(config: EvolveConfig) -> Analysis | None:
    try:
        return Analysis.model_validate_json(config.pending_path.read_bytes())
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise InputError(f"the pending analysis {config.pending_path} is unreadable ({exc}); run analyze again")


def _select(analysis: Analysis, selection: list[str]) -> list[Candidate]:
    by_id = {c.id: c for c in analysis.candidates}
    by_label = {label(c): c for c in analysis.candidates}
    chosen, unknown = [], []
    for s in selection:
        c = by_id.get(s) or by_label.get(s)
        if c is None:
            unknown.append(s)
        elif c not in chosen:
            chosen.append(c)
    if unknown:
        raise InputError(f"no pending candidate {', '.join(map(repr, unknown))}; "
                         f"pending: {', '.join(by_id) or 'none'}")
    return chosen


def new_record(c: Candidate, now: datetime) -> dict:
    rec: dict[str, Any] = {
        "id": str(uuid.uuid4()), "type": c.type, "subject": c.subject, "insight": c.insight,
        "evidence": c.evidence, "confidence": NEW_CONFIDENCE, "source_session": c.source_session,
        "created_at": iso(now), "expires_at": derive_expires_at(iso(now), c.type, now=now),
        "schema_version": 1, "scope": c.scope, "host_class": c.host_class, "anonymized": False,
    }
    if c.file_paths:
        rec["file_paths"] = list(c.file_paths)
    if c.evidence_sessions:
        rec["evidence_sessions"] = list(c.evidence_sessions)
    return rec


def confirm(config: EvolveConfig, selection: list[str], *, now: datetime | None = None,
            fault=None) -> ConfirmResult:
    """Write the selected candidates. Nothing is written without a selection."""
    if not selection:
        raise InputError("nothing selected: pass the candidate ids (or labels) to keep")
    analysis = load_pending(config)
    if analysis is None:
        raise InputError("no pending analysis: run `evolve analyze` first")
    chosen = _select(analysis, selection)
    now = now or now_utc()
    drops: dict[str, tuple[str, str]] = {}
    applied: list[str] = []
    written: list[str] = []

    def transform(records: list[dict]) -> list[dict]:
        drops.clear(), applied.clear(), written.clear()
        index = {r.get("id"): i for i, r in enumerate(records) if isinstance(r.get("id"), str)}
        out = list(records)
        removed: set[str] = set()
        for c in chosen:
            for d in c.relations:
                missing = [t for t in d.target_ids if t not in index]
                if missing:
                    raise InputError(f"candidate {c.id} relates to {', '.join(missing)}, which is no longer in the "
                                     "store; run analyze again")
            if c.action == "confirm" and c.existing_id in index:
                i = index[c.existing_id]
                out[i] = confirmed(out[i], now, session=c.source_session)
                applied.append(c.id), written.append(c.existing_id)
                continue
            rec = new_record(c, now)
            keep_new = True
            effects = {
                "refine": lambda cid, d: _refine(out, index, d, c, now, written),
                "supersede": lambda cid, d: _retire(d, "superseded", rec, removed, drops, out, index),
                "merge": lambda cid, d: _retire(d, "merged", rec, removed, drops, out, index),
                "proposeContradiction": lambda cid, d: _contradict(out, index, d, now, written),
            }
            if c.relations:
                verdict = Verdict(ok=True, candidate_id=c.id, decisions=c.relations)
                result = apply_verdict(verdict, effects)
                if not result.ok:
                    raise InputError(f"candidate {c.id}: {result.reason} {result.detail}")
                keep_new = "refine" not in result.invoked
            if keep_new:
                out.append(rec)
                written.append(rec["id"])
            applied.append(c.id)
        return [r for r in out if r.get("id") not in removed]

    result = write_generation(config.store_path, transform, now=now,
                              drop_reason=lambda r: drops.get(r.get("id"), ("pruned", None)), fault=fault)
    remaining = [c for c in analysis.candidates if c.id not in applied]
    analysis.candidates = remaining
    analysis.question = operator_question(analysis)
    write_atomic(config.pending_path, orjson.dumps(analysis.model_dump(mode="json"), option=orjson.OPT_INDENT_2))
    return ConfirmResult(applied=list(applied), written_ids=list(written), write=result)


def _refine(out, index, d: Decision, c: Candidate, now, written) -> None:
    for t in d.target_ids:
        i = index[t]
        rec = confirmed(out[i], now, session=c.source_session)
        rec["insight"] = c.insight
        out[i] = rec
        written.append(t)


def _retire(d: Decision, reason: str, rec: dict, removed: set, drops: dict, out, index) -> None:
    best = rec["confidence"]
    for t in d.target_ids:
        removed.add(t)
        drops[t] = (reason, rec["id"])
        conf = out[index[t]].get("confidence")
        if reason == "merged" and isinstance(conf, (int, float)):
            best = max(best, clamp(float(conf) + CONFIRM_STEP))
    rec["confidence"] = round(best, 6)


def _contradict(out, index, d: Decision, now, written) -> None:
    for t in d.target_ids:
        out[index[t]] = contradicted(out[index[t]], now)
        written.append(t)


def prune(config: EvolveConfig, *, dry_run: bool = True, now: datetime | None = None) -> WriteResult:
    return write_generation(config.store_path, None, now=now, dry_run=dry_run)


def list_records(config: EvolveConfig, *, now: datetime | None = None, include_expired: bool = False) -> list[dict]:
    if include_expired:
        return read_store(config.store_path).records
    return live_records(config.store_path, now=now)
