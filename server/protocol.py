"""The sidecar's own protocol: `kitsoki/*` requests, notifications and command arguments.

Params arrive as plain JSON and are validated here (pydantic, unknown keys refused), so a bad
request gets JSON-RPC InvalidParams with a message a person can act on. The whole protocol is
generated into schemas/protocol.schema.json; the editor clients and the tests use exactly it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.apply.gates import GatePreview
from core.mining.passes import PassReport
from core.proposals.hunks import Hunk
from core.sidecar import MineStatus

from server.methods import *  # noqa: F403 - the names are part of the protocol module
from server.methods import QUESTION_HEADER


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- requests ---------------------------------------------------------------------------------------


class MineStatusParams(_Params):
    uri: str | None = None
    """A workspace folder or a file inside one; all served workspaces when absent."""


class MineStatusResult(BaseModel):
    workspaces: list[MineStatus]


class MineControlParams(_Params):
    action: Literal["pause", "resume", "now", "scope"]
    dirs: list[str] | None = None
    """scope: the transcript folders to mine (absolute paths)."""
    uri: str | None = None


class ProposalsParams(_Params):
    uri: str | None = None
    """Only proposals that change this file (or, for a folder, that workspace)."""


class FileCard(BaseModel):
    uri: str
    path: str
    """Workspace-relative."""
    line: int
    """0-based line of the first change in the live file (where the lens goes)."""
    changed_lines: list[int]
    """0-based lines the change touches."""
    added: list[str]
    created: bool = False
    hunks: list[Hunk] = Field(default_factory=list)
    """Each change block: the live lines it removes and the live line its new lines follow."""


class Card(BaseModel):
    """A proposal as an editor shows it."""

    id: str
    workspace: str
    title: str
    kind: str
    rung: int
    target: str
    priority: float
    status: str
    classification: str
    score: float
    reason: str
    failure: str | None = None
    suggestion_only: bool = False
    files: list[FileCard] = Field(default_factory=list)
    question_id: str


class ProposalsResult(BaseModel):
    proposals: list[Card]


class ProposalParams(_Params):
    id: str = Field(min_length=1)


class Evidence(BaseModel):
    sessions: int
    phrasings: list[tuple[str, int]]
    action_signature: list[str]
    cites: list[dict[str, Any]]
    value: str | None = None


class ProposalDetail(Card):
    diff: str
    summary_markdown: str
    evidence: Evidence
    draft_uris: list[str]
    """The staged draft files (what refine opens)."""
    gate: GatePreview | None = None
    """What an accept will run (the flows), for the confirmation asked before it."""


class ProposalContentParams(_Params):
    id: str = Field(min_length=1)
    uri: str = Field(min_length=1)
    """The live file; the result is the staged draft of that file."""


class ProposalContentResult(BaseModel):
    text: str
    state: str | None = None
    """Set when the proposal is no longer open (accepted, rejected, withdrawn): the text then says
    so above the live file, instead of a draft that no longer exists."""


class AnswerQuestionParams(_Params):
    """kitsoki's answer_question shape: {question_id, answers: {"<question>": "<label>"}}."""

    question_id: str = Field(min_length=1)
    answers: dict[str, str | list[str]] = Field(min_length=1)


class DecisionResult(BaseModel):
    recipe_id: str
    verdict: Literal["accept", "refine", "reject"]
    flows_green: bool
    reverted: bool
    failure: str | None
    draft_uri: str | None = None
    files: list[str] = Field(default_factory=list)
    """URIs of the files the verdict touched (accept) or proposes to change."""


class EvolveParams(_Params):
    """`kitsoki/evolve`: learnings (core/learnings). analyze mines candidates (and asks them as a
    multi-select `kitsoki/question`); list shows the store; confirm writes the selected candidates;
    prune drops expired and dead records to the archive (dry run unless apply)."""

    action: Literal["analyze", "list", "confirm", "prune"]
    uri: str | None = None
    select: list[str] = Field(default_factory=list)
    """confirm: candidate ids or `[type] subject` labels."""
    transcriptDirs: list[str] = Field(default_factory=list)
    sessionsJsonl: str | None = None
    hostClass: str | None = None
    all: bool = False
    """list: include expired records."""
    apply: bool = False
    """prune: write (otherwise a dry run)."""


class RunsParams(BaseModel):
    """`kitsoki/runs`: prepared analysis runs (core/runs). `action` names the operation; the other
    keys are that operation's arguments, as the CLI's `kitsoki-miner runs` takes them (snake_case:
    workdir, project, since, until, run_id, name, goal, assignment, exclude, current_session, digest,
    partial, budget_bytes, round, offset, limit, dirs). Bounds are checked by core before anything
    changes."""

    model_config = ConfigDict(extra="allow")

    action: Literal["projects", "coverage", "confirm", "prepare", "list", "status", "reuse", "resume",
                    "finish", "cancel", "delete", "groups", "workdir"]


# -- notifications ---------------------------------------------------------------------------------


class PassRanNotification(BaseModel):
    workspace: str
    report: PassReport
    raised: list[str] = Field(default_factory=list)
    proposer_error: str | None = None


class ProposalsChangedNotification(BaseModel):
    workspace: str
    uris: list[str]
    """Files whose proposals changed."""
    pending: int


class ProposalDecidedNotification(DecisionResult):
    workspace: str
    title: str = ""
    gate_summary: str | None = None
    gate_failures: list[str] = Field(default_factory=list)


class QuestionOption(BaseModel):
    label: str
    description: str = ""


class Question(BaseModel):
    question: str
    header: str = QUESTION_HEADER
    options: list[QuestionOption]
    multiSelect: bool = False


class QuestionNotification(BaseModel):
    """An operator-question card (kitsoki's AskUserQuestion shape). `kind` says what answers it:
    a proposal (one of accept/refine/dismiss) or learnings (a multi-select of candidates to keep);
    both are answered with `kitsoki/answerQuestion`."""

    question_id: str
    questions: list[Question]
    kind: Literal["proposal", "learnings"] = "proposal"


class QuestionWithdrawnNotification(BaseModel):
    """Questions that no longer wait: their proposal was decided, or left the inbox."""

    workspace: str
    question_ids: list[str]
    reason: str


# -- command arguments ---------------------------------------------------------------------------


class IdArgs(_Params):
    """kitsoki.accept | refine | reject: `[{"id": ...}]` (a bare id string is taken too)."""

    id: str = Field(min_length=1)


class DiffArgs(_Params):
    """kitsoki.diff, as the Diff lens sends it."""

    id: str = Field(min_length=1)
    uri: str | None = None


class UriArgs(_Params):
    """kitsoki.showProposals | mineNow | pause | resume: an optional file or workspace."""

    uri: str | None = None


class DiffResult(BaseModel):
    id: str
    diff: str


class Protocol(BaseModel):
    """Every message shape, for the generated schema."""

    mine_status_params: MineStatusParams
    mine_status_result: MineStatusResult
    mine_control_params: MineControlParams
    proposals_params: ProposalsParams
    proposals_result: ProposalsResult
    proposal_params: ProposalParams
    proposal_result: ProposalDetail
    proposal_content_params: ProposalContentParams
    proposal_content_result: ProposalContentResult
    answer_question_params: AnswerQuestionParams
    decision_result: DecisionResult
    pass_ran: PassRanNotification
    proposals_changed: ProposalsChangedNotification
    proposal_decided: ProposalDecidedNotification
    question: QuestionNotification
    question_withdrawn: QuestionWithdrawnNotification
    evolve_params: EvolveParams
    runs_params: RunsParams
    id_args: IdArgs
    diff_args: DiffArgs
    uri_args: UriArgs
    diff_result: DiffResult


def problems(exc: ValidationError, method: str) -> str:
    """A one-line, actionable InvalidParams message."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "params"
        parts.append(f"{where}: {error['msg']}")
    return f"{method}: " + "; ".join(parts)
