"""The run record (`run.json`) and the results the operations return, as pydantic models."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Status = Literal["preparing", "plan-ready", "analyzing", "complete", "canceled", "failed"]
ACTIVE: frozenset[str] = frozenset({"preparing", "plan-ready", "analyzing"})
Phase = Literal["coverage", "confirmed", "checking-sessions", "preparing-excerpts", "creating-snippets",
                "writing-plan", "done"]

RUN_SCHEMA_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SessionIdentity(_Model):
    """What a session is known by at confirmation: checked again before preparation reads it."""

    id: str
    format: Literal["claude", "pi", "codex"]
    project: str
    started_at: datetime | None = None
    ended_at: datetime | None = None
    files: list[str] = Field(default_factory=list)
    bytes: int = 0
    version: str | None = None
    supported: bool = True


class Exclusion(_Model):
    id: str
    reason: Literal["current-session", "named"]
    matched: bool
    """True when a session with this id was in the project and timeframe (and so left out)."""


class Coverage(_Model):
    """Aggregates only: no session ids, titles or text."""

    project: str
    since: datetime | None = None
    until: datetime | None = None
    sessions: int = 0
    earliest: datetime | None = None
    latest: datetime | None = None
    approx_bytes: int = 0
    supported: int = 0
    unsupported: int = 0
    excluded: int = 0
    digest: str = ""
    """sha256 of the selected identities: what a confirmation confirms."""


class Confirmation(_Model):
    at: datetime
    digest: str


class TaskEntry(_Model):
    id: str
    order: int
    snippet: str
    """Path of the snippet relative to the workdir (a reuse points at its original's)."""
    readme: str
    output: str
    bytes: int
    sha256: str
    first_source: str
    last_source: str
    sessions: list[str] = Field(default_factory=list)


class Plan(_Model):
    tasks: list[TaskEntry] = Field(default_factory=list)
    snippet_limit: int
    evidence_bytes: int
    evidence_sha256: str
    evidence_pieces: int


class Omission(_Model):
    """Lines of a source file that are not evidence, with the reason: never silently dropped."""

    first_line: int
    last_line: int
    reason: str


class FileAccount(_Model):
    session: str
    file: str
    bytes_read: int = 0
    lines_read: int = 0
    evidence_records: int = 0
    malformed: int = 0
    omitted: list[Omission] = Field(default_factory=list)


class ResultEntry(_Model):
    sha256: str
    bytes: int
    recorded_at: datetime


class Finish(_Model):
    at: datetime
    partial: bool
    missing: list[str] = Field(default_factory=list)
    summary_sha256: str
    analyses: dict[str, str] = Field(default_factory=dict)


class Event(_Model):
    at: datetime
    kind: str
    message: str


class RunRecord(_Model):
    """`<workdir>/<runname>_<runid>/run.json`: everything known about one run."""

    schema_version: int = RUN_SCHEMA_VERSION
    run_id: str
    name: str
    dir: str
    created_at: datetime
    updated_at: datetime
    status: Status
    phase: Phase | None = None
    owner_session: str | None = None
    goal: str = ""
    assignment: str = ""
    redact: bool = True
    project: str
    since: datetime | None = None
    until: datetime | None = None
    exclusions: list[Exclusion] = Field(default_factory=list)
    coverage: Coverage | None = None
    selected: list[SessionIdentity] = Field(default_factory=list)
    confirmation: Confirmation | None = None
    cut_of: str | None = None
    """Run ID whose snippets this run analyzes (a reuse); None for a run with its own cut."""
    plan: Plan | None = None
    accounting: list[FileAccount] = Field(default_factory=list)
    results: dict[str, ResultEntry] = Field(default_factory=dict)
    finish: Finish | None = None
    events: list[Event] = Field(default_factory=list)
    last_error: Event | None = None


class ProjectEntry(_Model):
    project: str
    sessions: int
    latest: datetime | None = None


class ProjectsPage(_Model):
    projects: list[ProjectEntry]
    total: int
    offset: int
    next_offset: int | None = None


class CoverageResult(_Model):
    run_id: str
    run_dir: str
    status: Status
    coverage: Coverage
    exclusions: list[Exclusion]
    confirmed: bool
    cleared_confirmation: bool = False


class TaskState(_Model):
    id: str
    state: Literal["pending", "done", "conflict", "partial"]
    detail: str = ""


class RunStatus(_Model):
    run_id: str
    run_dir: str
    name: str
    status: Status
    phase: Phase | None = None
    goal: str = ""
    cut_of: str | None = None
    tasks: int = 0
    done: int = 0
    task_states: list[TaskState] = Field(default_factory=list)
    coverage: Coverage | None = None
    last_error: Event | None = None
    notes: list[str] = Field(default_factory=list)


class RunList(_Model):
    runs: list[RunStatus]
    broken: list[dict] = Field(default_factory=list)
    """Run directories that cannot be read (no run.json, unreadable): named, never skipped silently."""


class FinishResult(_Model):
    run_id: str
    status: Status
    complete: bool
    partial: bool
    missing: list[str] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)


class SynthesisGroup(_Model):
    id: str
    inputs: list[str]
    bytes: int
    output: str
    oversize: bool = False


class SynthesisRound(_Model):
    run_id: str
    round: int
    budget_bytes: int
    groups: list[SynthesisGroup]
    final: bool
    """One group: its output is the input for summary.md."""


class PrepareResult(_Model):
    run_id: str
    run_dir: str
    status: Status
    tasks: int
    evidence_bytes: int
    malformed_lines: int
    omitted_lines: int
    readme: str
