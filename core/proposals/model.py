"""A proposal: one recipe drafted into a concrete, validated change, staged for a human verdict.

`.artifacts/mining/<recipe_id>/proposal.json` holds a `Proposal`; beside it the draft files by
workspace-relative path and kitsoki's `author_artifact.json`. Everything a card shows (diff,
evidence, classification, score, reason) is in the file, so the inbox is rebuilt from the trace
and these files alone after a restart.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from core.proposals.impact import Impact
from core.trace import ProposalKind

Classification = Literal["ALREADY-MODELED", "ENRICH", "GAP"]
Status = Literal["pending", "refining", "held", "stale"]
"""pending: waiting for a verdict; refining: a person is editing the staged draft; held: an accept
was reverted (the failure is attached); stale: a target changed since drafting."""


class Cite(BaseModel, defer_build=True):
    """Where in a transcript the evidence is."""

    session: str
    path: str
    line_start: int
    line_end: int


class Evidence(BaseModel, defer_build=True):
    sessions: int
    phrasings: list[tuple[str, int]] = Field(default_factory=list)
    """(normalized phrasing, how often it was asked), most frequent first."""
    action_signature: list[str] = Field(default_factory=list)
    cites: list[Cite] = Field(default_factory=list)
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    tool_calls: int = 0
    edit_rerun_cycles: int = 0
    retries: int = 0
    value: str | None = None
    """binding: the provider seen; world: the value seen; gate: the decision seen."""


class Mapping(BaseModel, defer_build=True):
    """The mapper's verdict on one recipe against the live inventory."""

    classification: Classification
    score: float
    """ALREADY-MODELED: the routed share; ENRICH: closeness to `near`; GAP: the best closeness found."""
    reason: str
    near: str | None = None
    """What it is close to or already modeled by: `story:intent`, `story:state`, `bindings.ticket`..."""
    near_at: str | None = None
    """file:line:col of that row."""


class FileChange(BaseModel, defer_build=True):
    path: str
    """Workspace-relative POSIX path."""
    before_sha256: str | None
    """Of the live bytes the draft was made against; None when the draft creates the file."""
    after_sha256: str
    changed_lines: list[int] = Field(default_factory=list)
    """1-based lines of the live file the change touches (where added lines go for an insertion)."""
    added: list[str] = Field(default_factory=list)
    """The lines the change adds, as they read in the new file."""
    diff: str = ""


class ProofInfo(BaseModel, defer_build=True):
    """The proposal's own proof: a new flow fixture asserting what it claims (core.proposals.proofs)."""

    path: str | None = None
    """The new fixture, workspace-relative (one of `files`); None when no flow can show the claim."""
    app: str | None = None
    """The app it runs against (`<root>` for a root flow, run against the synthesized root)."""
    claims: list[str] = Field(default_factory=list)
    """What the fixture asserts."""
    unprovable: list[str] = Field(default_factory=list)
    """What the proposal claims that no kitsoki flow can assert, and how it was checked instead."""
    verified: str = ""
    """How it was checked before it was shown."""


class Proposal(BaseModel, defer_build=True):
    recipe_id: str
    kind: ProposalKind
    target: Literal["root-instance", "dev-story"]
    rung: Literal[1, 2]
    priority: float
    title: str
    mapping: Mapping
    files: list[FileChange] = Field(default_factory=list)
    diff: str = ""
    """Unified diff of every file, live against draft."""
    evidence: Evidence
    summary_markdown: str
    drafter: Literal["builtin", "agent"] = "builtin"
    suggestion_only: bool = False
    """dev-story-enrich: shown, never applied."""
    drafted_at: datetime
    status: Status = "pending"
    failure: str | None = None
    """Why the last accept was reverted (status held), or why a refined draft cannot be accepted."""
    runs_commands: list[str] = Field(default_factory=list)
    """Keys of `.kitsoki.yaml` the change sets that decide which commands kitsoki-miner runs
    (`miner.flow_gate`, `harness_profiles.<name>`...): the card shows them as a warning, and an
    accept refuses a draft whose keys differ from these (core.proposals.shown)."""
    proof: ProofInfo | None = None
    """What proves the change, run by the flow gate with the app's other flows."""
    impact: Impact | None = None
    """What it would have done to this project's past prompts, fixture inputs and phrases (or who reads
    the key, interface or state it sets), computed before anyone is asked (core.proposals.impact)."""

    @property
    def draft_path(self) -> str:
        return f".artifacts/mining/{self.recipe_id}"


class AuthorArtifact(BaseModel, defer_build=True):
    """kitsoki's author_artifact.json (schemas/author_artifact.json); extra keys are allowed there."""

    files_changed: list[str]
    flows_green: bool = False
    flow_files: list[str] = Field(default_factory=list)
    summary_markdown: str
