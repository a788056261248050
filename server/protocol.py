"""The sidecar's own protocol: `kitsoki/*` requests, notifications and command arguments.

Params arrive as plain JSON and are validated here (pydantic, unknown keys refused), so a bad
request gets JSON-RPC InvalidParams with a message a person can act on. The whole protocol is
generated into schemas/protocol.schema.json; the editor clients and the tests use exactly it.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any, Literal

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from core.apply.gates import FlowRun, GatePreview
from core.apply.resolve import Resolution, Unsettled
from core.mining.passes import PassReport
from core.proposals.hunks import Hunk
from core.sidecar import MineStatus

from server.methods import *  # noqa: F403 - the names are part of the protocol module
from server.client_paths import path_problem
from server.methods import QUESTION_HEADER


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


def client_path(value: str) -> str:
    """An absolute path a client sends (checked before any file-system call sees it)."""
    problem = path_problem(value, absolute=True)
    if problem:
        raise ValueError(problem)
    return value


ClientPath = Annotated[str, AfterValidator(client_path)]


class InitializationOptions(_Params):
    """What a client may send as `initializationOptions` (all optional). A bad value is reported
    (window/showMessage and the log) and left out; the valid ones are used."""

    model_config = ConfigDict(extra="forbid", strict=True)

    mining: bool | None = None
    """Mine transcripts even when `mining.enabled` is false (true), or not at all (false)."""
    transcriptDirs: list[ClientPath] = Field(default_factory=list)
    """Transcript folders to mine besides `mining.transcript_dirs` (absolute paths)."""
    watch: bool = True
    """false: no file watching (mine on demand only)."""


def initialization_options(raw: Any) -> tuple[InitializationOptions, list[str]]:
    """The client's options, each checked on its own: (what is usable, a problem per bad part)."""
    where = "initializationOptions"
    if raw is None:
        return InitializationOptions(), []
    if not isinstance(raw, dict):
        return InitializationOptions(), [f"{where} must be an object such as {{\"mining\": true}}, "
                                         f"got {type(raw).__name__}; using the defaults"]
    fields = InitializationOptions.model_fields
    usable: dict[str, Any] = {}
    found: list[str] = []
    for key, value in raw.items():
        if key not in fields:
            lowered = {name.lower(): name for name in fields}
            close = difflib.get_close_matches(str(key).lower(), list(lowered), n=1, cutoff=0.7)
            hint = f" (did you mean {lowered[close[0]]!r}?)" if close else f" (known: {', '.join(fields)})"
            found.append(f"{where}.{str(key)[:60]}: unknown option{hint}; ignored")
            continue
        if key == "transcriptDirs" and isinstance(value, list):
            kept = []
            for index, item in enumerate(value):
                try:
                    kept.append(InitializationOptions.model_validate({key: [item]}).transcriptDirs[0])
                except ValidationError as exc:
                    found.append(f"{where}.{key}[{index}]: {_first_message(exc)}; ignored")
            usable[key] = kept
            continue
        try:
            InitializationOptions.model_validate({key: value})
        except ValidationError as exc:
            found.append(f"{where}.{key}: {_first_message(exc)}; ignored")
            continue
        usable[key] = value
    return InitializationOptions.model_validate(usable), found


def _first_message(exc: ValidationError) -> str:
    error = exc.errors()[0]
    if error["type"] == "value_error":  # our own checks say what they got
        return error["msg"].removeprefix("Value error, ")
    shown = orjson.dumps(error.get("input")).decode()
    return f"{error['msg']} (got {shown if len(shown) <= 40 else shown[:37] + '...'})"


# -- requests ---------------------------------------------------------------------------------------


class MineStatusParams(_Params):
    uri: str | None = None
    """A workspace folder or a file inside one; all served workspaces when absent."""


class MineStatusResult(BaseModel):
    workspaces: list[MineStatus]


class MineControlParams(_Params):
    action: Literal["pause", "resume", "now", "scope"]
    dirs: list[ClientPath] | None = None
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
    proof: dict[str, Any] | None = None
    """What proves the change (core.proposals.model.ProofInfo): the new fixture, what it asserts,
    what no flow can assert and how that was checked instead."""
    waits: str | None = None
    """A stale proposal that cannot be re-drafted yet: why (the workspace does not load, file:line:col)."""
    impact: dict[str, Any] | None = None
    """What it would have done to this project's past prompts and fixtures (core.proposals.impact.Impact:
    replayed, gained [{text, count}], moved [{text, from, to, source}], reads), computed before accept."""
    impact_says: str | None = None
    """`impact` in a sentence or two, as the hover and the accept confirmation say it."""
    moves_routes: bool = False
    """The draft moves an input from the intent it routes to today: ranked below the others and labelled."""


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
    accept_brief: str | None = None
    """`gate` in a few words (`runs 2 flow files`, `no flow runs: kept after checks`, `would be held, not kept`)."""
    accept_says: str | None = None
    """`gate` as the confirmation says it: the files changed, what judges the change, what a failure does."""


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
    gated: bool = True
    """accept: False when no flow judged the change (held, or kept under miner.ungated: allow)."""
    held: bool = False
    """accept: not kept because nothing judged it; `failure` says what would."""
    flows: list[FlowRun] = Field(default_factory=list)
    """accept: per app the change reaches, the flows that passed, failed or did not run (and why)."""
    skipped: list[str] = Field(default_factory=list)
    """accept: apps the change reaches that miner.flow_gate.skip leaves ungated."""
    kept: str | None = None
    """accept, kept: what kept it, in words ("flows green"; core.proposals.wording.kept_text)."""
    unresolved: bool = False
    """accept: neither kept nor reverted (a file edited while it ran could not be restored without
    losing the edit); no verdict was recorded and `failure` says how to settle it (kitsoki-miner resolve)."""
    note: str | None = None
    """What else the person should know: a cancel that came after the verdict had begun (it was
    carried out), a verdict that will be recorded by the next command."""


class DecidedParams(_Params):
    uri: str | None = None
    """A workspace folder or a file inside one; all served workspaces when absent."""
    state: Literal["accepted", "rejected"] | None = None


class DecidedCard(BaseModel):
    """A proposal a person decided, and whether that can be taken back now."""

    id: str
    workspace: str
    title: str
    kind: str
    state: Literal["accepted", "rejected"]
    decided_at: str
    files: list[str] = Field(default_factory=list)
    """Workspace-relative."""
    can: Literal["undo", "restore"] | None = None
    """kitsoki.undo (a kept accept whose files still hold it) or kitsoki.restore (a rejection)."""
    why_not: str | None = None


class DecidedResult(BaseModel):
    decided: list[DecidedCard]


class TakenBackResult(BaseModel):
    """kitsoki.undo | kitsoki.restore, and the kitsoki/proposalTakenBack notification."""

    recipe_id: str
    workspace: str
    action: Literal["undo", "restore"]
    how: Literal["undo", "saved", "restore"]
    """undo: asked for; saved: a saved file no longer holds the kept change; restore: a rejection taken back."""
    title: str = ""
    files: list[str] = Field(default_factory=list)
    """URIs of the files the proposal changes."""
    restored: list[str] = Field(default_factory=list)
    """undo: URIs of the files whose bytes from before the accept were put back."""


class EvolveParams(_Params):
    """`kitsoki/evolve`: learnings (core/learnings). analyze mines candidates (and asks them as a
    multi-select `kitsoki/question`); list shows the store; confirm writes the selected candidates;
    prune drops expired and dead records to the archive (dry run unless apply)."""

    action: Literal["analyze", "list", "confirm", "prune"]
    uri: str | None = None
    select: list[str] = Field(default_factory=list)
    """confirm: candidate ids or `[type] subject` labels."""
    transcriptDirs: list[ClientPath] = Field(default_factory=list)
    sessionsJsonl: ClientPath | None = None
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

    @model_validator(mode="after")
    def _paths_are_paths(self) -> RunsParams:
        # The operation's arguments are extra keys; the two that name folders are checked here,
        # before any stat() of them (core/runs bounds the rest).
        extra = self.model_extra or {}
        for key, adapter in (("dirs", _DIRS), ("workdir", _WORKDIR)):
            try:
                adapter.validate_python(extra.get(key))
            except ValidationError as exc:
                error = exc.errors()[0]
                where = "".join(f"[{step}]" for step in error["loc"] if isinstance(step, int))
                raise ValueError(f"{key}{where}: {error['msg'].removeprefix('Value error, ')}") from None
        return self


_DIRS = TypeAdapter(list[ClientPath] | None)
_WORKDIR = TypeAdapter(ClientPath | None)


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
    workspace: str | None = None
    """The workspace folder (URI) the proposal belongs to."""


class QuestionWithdrawnNotification(BaseModel):
    """Questions that no longer wait: their proposal was decided, or left the inbox."""

    workspace: str
    question_ids: list[str]
    reason: str


# -- command arguments ---------------------------------------------------------------------------


class IdArgs(_Params):
    """kitsoki.accept | refine | reject: `[{"id": ...}]` (a bare id string is taken too)."""

    id: str = Field(min_length=1)


class ResolveArgs(_Params):
    """kitsoki.resolve: no id lists the accepts left unsettled; an id and a choice settles one."""

    id: str | None = Field(default=None, min_length=1)
    choice: Literal["restore", "keep"] | None = None
    uri: str | None = None


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


class UnsettledAccept(Unsettled):
    """An accept left for a person (core.apply.resolve.Unsettled) and the workspace it is in."""

    workspace: str


class ResolveListResult(BaseModel):
    """kitsoki.resolve without a choice."""

    unsettled: list[UnsettledAccept]


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
    decided_params: DecidedParams
    decided_result: DecidedResult
    taken_back: TakenBackResult
    resolve_args: ResolveArgs
    resolve_list_result: ResolveListResult
    resolve_result: Resolution


def problems(exc: ValidationError, method: str) -> str:
    """A one-line, actionable InvalidParams message."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return f"{method}: " + "; ".join(parts)
