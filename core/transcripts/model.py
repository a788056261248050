"""The normalized transcript model every reader produces and every later stage consumes.

Every element carries where it came from (file and 1-based line) so a recipe, a proposal or a
learning can always cite its evidence. Text fields are already redacted when a reader returns them.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Literal

from dataclasses import dataclass, field

from pydantic import ConfigDict, TypeAdapter, with_config

Format = Literal["claude", "pi", "codex"]

# Plain slotted dataclasses: the readers build one per turn, tool call and result (tens of thousands
# in a 300 MB transcript), and building a pydantic dataclass validates every field (it cost as much
# as decoding the JSON). The readers set every field from checked values themselves; pydantic still
# gives the JSON Schema and the JSON dump (session_adapter()), with the same `extra="forbid"`.


def _model(cls):
    return with_config(ConfigDict(extra="forbid"))(dataclass(slots=True, kw_only=True)(cls))


@_model
class SourceRef:
    """A place in a transcript file: the file and its 1-based first and last lines."""

    file: str
    line: int
    last_line: int | None = None


@_model
class ToolResult:
    is_error: bool = False
    interrupted: bool = False
    rejected: bool = False
    exit_code: int | None = None
    output_head: str = ""
    """The first OUTPUT_HEAD_CHARS characters of the result text, redacted."""
    output_chars: int = 0
    """Length of the whole result text, so a reader can tell a head from the whole."""
    source: SourceRef | None = None


@_model
class ToolCall:
    id: str
    name: str
    input: dict = field(default_factory=dict)
    """The call's arguments, redacted; long string values are cut to INPUT_VALUE_CHARS."""
    result: ToolResult | None = None
    by_human: bool = False
    """True for a shell command the person ran themselves (Pi `!cmd`, Claude `!` bash mode)."""
    subagent: str | None = None
    """agentId of the subagent this call spawned (Task/Agent tools), when linked."""
    source: SourceRef


class TurnKind(str, Enum):
    human = "human"
    """A prompt a person typed."""
    assistant = "assistant"
    """One assistant response (all lines sharing message.id merged)."""
    injected = "injected"
    """A user-role line the person did not type: hook context, skill body, command wrapper, steering."""
    interrupt = "interrupt"
    """The person interrupted the agent."""
    compaction = "compaction"
    """A compaction boundary or summary."""
    system = "system"


@_model
class Turn:
    kind: TurnKind
    id: str | None = None
    """uuid (Claude) or entry id (Pi)."""
    parent: str | None = None
    timestamp: datetime | None = None
    text: str = ""
    reason: str | None = None
    """Why an injected/system turn is not a human prompt: meta, command, tool_result, steering, ..."""
    model: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    active: bool = True
    """False on a Pi branch that was abandoned (not on the path from the last entry to the root)."""
    sidechain: bool = False
    source: SourceRef


class ProblemKind(str, Enum):
    malformed = "malformed"
    """Not JSON, not an object, or not the shape of any record."""
    torn_tail = "torn-tail"
    """The last line has no newline and does not parse: a file being written."""
    glued = "glued"
    """Several JSON objects on one line; all were recovered."""
    invalid_utf8 = "invalid-utf8"
    """Bytes that are not UTF-8; decoded with replacement characters."""
    oversized = "oversized"
    """A line longer than the reader's limit; skipped without being held in memory."""
    unsupported = "unsupported"
    """A format version the reader does not know."""
    dangling_parent = "dangling-parent"
    cycle = "cycle"


@_model
class Problem:
    kind: ProblemKind
    file: str
    line: int
    detail: str = ""


@_model
class LineAccounting:
    """How every line read was accounted for: parsed + malformed + skipped == lines_read."""

    lines_read: int = 0
    parsed: int = 0
    malformed: int = 0
    skipped: int = 0
    """Blank and oversized lines."""
    by_type: dict[str, int] = field(default_factory=dict)
    """Parsed records by record type (Claude `type`, Pi entry type or `message/<role>`)."""
    metadata: int = 0
    """Records kept out of the conversation: summaries, titles, snapshots, progress, queue ops, ..."""
    unknown: int = 0
    """Records of a type the reader does not know: passed through, counted."""
    duplicates: int = 0
    """Lines repeating a uuid already read in this file, plus (after a multi-session read) turns
    repeated from an earlier file or session (resume, fork, copied subagent file)."""

    def add(self, other: "LineAccounting") -> None:
        self.lines_read += other.lines_read
        self.parsed += other.parsed
        self.malformed += other.malformed
        self.skipped += other.skipped
        self.metadata += other.metadata
        self.unknown += other.unknown
        self.duplicates += other.duplicates
        for k, v in other.by_type.items():
            self.by_type[k] = self.by_type.get(k, 0) + v

    @property
    def balanced(self) -> bool:
        return self.parsed + self.malformed + self.skipped == self.lines_read


class SubagentKind(str, Enum):
    task = "task"
    compaction = "compaction"
    prompt_suggestion = "prompt-suggestion"
    aside_question = "aside-question"
    """A side question (`/btw`): it copies the whole parent context before the question."""
    workflow = "workflow"
    """An agent of a workflow run (`subagents/workflows/<run>/agent-*.jsonl`)."""
    other = "other"


@_model
class Subagent:
    agent_id: str
    kind: SubagentKind
    file: str
    tool_use_id: str | None = None
    """The spawning tool call (from .meta.json or the trunk's tool_result), when known."""
    agent_type: str | None = None
    turns: list[Turn] = field(default_factory=list)


@_model
class Session:
    id: str
    format: Format
    format_version: int | None = None
    """Pi session version as written (1, 2, 3); Claude, Codex: None."""
    project: str | None = None
    """The true project path, from the records' `cwd`."""
    files: list[str] = field(default_factory=list)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    entrypoint: str | None = None
    """How the session was started: Claude's `entrypoint` (cli, claude-vscode, sdk-ts, ...), Codex's
    `originator` (codex_cli_rs, codex-tui, codex_vscode, codex_exec, ...)."""
    agent_session: bool = False
    """Started by a program (an SDK, `claude -p`, `codex exec`, kitsoki's dispatch, a spawning agent)
    rather than a person: core/transcripts/launch.py."""
    launch: str | None = None
    """Which rule decided `agent_session`, e.g. "entrypoint claude-vscode", "source exec"."""
    tool_version: str | None = None
    git_branch: str | None = None
    title: str | None = None
    models: list[str] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    subagents: list[Subagent] = field(default_factory=list)
    accounting: LineAccounting = field(default_factory=LineAccounting)
    problems: list[Problem] = field(default_factory=list)
    """The first MAX_PROBLEMS problems in file order; the counts in `accounting` are complete."""
    problem_count: int = 0

    @property
    def human_prompts(self) -> list[Turn]:
        return [t for t in self.turns if t.kind is TurnKind.human and t.active]

    def tool_calls(self, *, include_subagents: bool = False) -> list[ToolCall]:
        calls = [c for t in self.turns if t.active for c in t.tool_calls]
        if include_subagents:
            calls += [c for a in self.subagents for t in a.turns for c in t.tool_calls]
        return calls

    @property
    def interrupts(self) -> int:
        return sum(1 for t in self.turns if t.kind is TurnKind.interrupt and t.active)

    @property
    def rejected_tool_uses(self) -> int:
        return sum(1 for c in self.tool_calls() if c.result is not None and c.result.rejected)


_adapter: TypeAdapter | None = None


def session_adapter() -> TypeAdapter:
    """pydantic's view of a Session (JSON dump, schema), built on first use: building it is a good
    part of importing this module, and `sessions` never needs it."""
    global _adapter
    if _adapter is None:
        _adapter = TypeAdapter(Session)
    return _adapter


def session_to_json(session: Session) -> dict:
    """The session as plain JSON-ready data (what `schemas/transcript-session.schema.json` describes)."""
    return session_adapter().dump_python(session, mode="json")
