"""The books every Claude Code reader keeps, record by record: what a user line is (a person's words or
not, and why), what one file contributes to its session (ClaudeFile), the walk shared by the full
reader (core/transcripts/claude.py), the counts-only one (core/transcripts/counts.py) and the steps
mining reads (core/transcripts/steps.py), and the conversation tree the ordering readers keep.

See reference/transcript-formats.md §A.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import msgspec
from msgspec import Raw, Struct

from core.transcripts import normalize as nz
from core.transcripts.accounting import CLAUDE_CONVERSATION, CLAUDE_METADATA
from core.transcripts.launch import ANSWERED_MARKER, PersonSigns, claude_launch
from core.transcripts.lines import LineReader
from core.transcripts.model import (
    LineAccounting,
    Problem,
    SubagentKind,
    ToolResult,
    Turn,
    TurnKind,
)
from core.transcripts.records import BRANCH

METADATA_TYPES = CLAUDE_METADATA  # records about the session (core/transcripts/accounting.py)

_WRAPPER_REASONS = (
    ("<command-name>", "command"),
    ("<command-message>", "command"),
    ("<local-command-stdout>", "command-output"),
    ("<local-command-stderr>", "command-output"),
    ("<local-command-caveat>", "command-output"),
    ("<bash-input>", "human-shell"),
    ("<bash-stdout>", "human-shell-output"),
    ("<bash-stderr>", "human-shell-output"),
    ("<task-notification>", "task-notification"),
    ("<system-reminder>", "meta"),
    ("<user-prompt-submit-hook>", "hook"),
)


REJECTED_TOOL_USE = "User rejected tool use"
"""`toolUseResult` of a call the person refused."""


def origin_kind(record) -> str | None:
    """`origin.kind` of a user record (newer builds: "human", "peer", "task-notification", ...)."""
    origin = record.origin
    if type(origin) is dict:
        kind = origin.get("kind")
        return kind if type(kind) is str else None
    return None


def subagent_kind(path: Path) -> SubagentKind:
    name = path.stem
    if name.startswith("agent-acompact"):
        return SubagentKind.compaction
    if name.startswith("agent-aprompt_suggestion"):
        return SubagentKind.prompt_suggestion
    if name.startswith(("agent-aside_question", "agent-aaside_question")):
        return SubagentKind.aside_question
    if "workflows" in path.parts[-4:-1]:
        return SubagentKind.workflow
    if name.startswith("agent-"):
        return SubagentKind.task
    return SubagentKind.other


def classify_user_text(text: str, record, sidechain: bool) -> tuple[TurnKind, str | None]:
    """Is this user-role text something a person typed? If not, why not. (`record`: a decoded line,
    core/transcripts/records.py; the counts-only path asks the same.)"""
    if record.isCompactSummary:
        return TurnKind.compaction, "compact-summary"
    if record.isMeta:
        return TurnKind.injected, "meta"
    if nz.is_interrupt(text):
        return TurnKind.interrupt, None
    head = text.lstrip()
    if head.startswith("<"):
        for prefix, reason in _WRAPPER_REASONS:
            if head.startswith(prefix):
                return TurnKind.injected, reason
    if sidechain or record.isSidechain is True:
        # The first prompt of a subagent is written by the parent agent, never by a person (Claude
        # Code 2.0's "Warmup" too, which it sends to subagents as it starts).
        return TurnKind.injected, "subagent-prompt"
    if not head:
        return TurnKind.injected, "empty"
    kind = origin_kind(record)
    if kind is not None and kind != "human":
        return TurnKind.injected, "origin"  # another session, a notification: not a person's words
    return TurnKind.human, None


@dataclass
class ClaudeFile:
    """What one Claude file contributes to its session."""

    path: Path
    sidechain: bool
    turns: list[Turn] = field(default_factory=list)
    accounting: LineAccounting = field(default_factory=LineAccounting)
    problems: list[Problem] = field(default_factory=list)
    problem_count: int = 0
    session_id: str | None = None
    session_ids: list[str] = field(default_factory=list)
    """Every sessionId in the file, in order: a continued session carries its predecessor's too."""
    agent_id: str | None = None
    cwd: str | None = None
    spare_cwd: str | None = None
    """The first `cwd` of a record outside the conversation (hook, metadata records)."""
    first_ts: str | None = None
    last_ts: str | None = None
    entrypoint: str | None = None
    prompt_source: str | None = None
    origin: str | None = None
    """`origin.kind` of the first prompt (a person's or not), when the build writes one."""
    kitsoki: bool = False
    """Calls one of kitsoki's dispatch tools (launch.KITSOKI_TOOLS)."""
    signs: PersonSigns = field(default_factory=PersonSigns)
    """What only a person does: interrupt, refuse a call, answer a question."""
    version: str | None = None
    git_branch: str | None = None
    title: str | None = None
    """The person's name for the session (custom-title), else the app's (ai-title), else the summary
    whose leafUuid is on the file's final branch."""
    custom_title: str | None = None
    ai_title: str | None = None
    summaries: list[tuple[str, str]] = field(default_factory=list)
    """(leafUuid, summary) of every summary record, in file order."""
    models: list[str] = field(default_factory=list)
    agent_progress: dict[str, str] = field(default_factory=dict)
    """agentId -> spawning tool_use id, from `progress` agent_progress lines."""
    orphan_results: dict[str, ToolResult] = field(default_factory=dict)
    """Results whose tool call is not in what was read (it sits before `start` in a resumed read)."""
    end_offset: int = 0
    """Where a later read of this file should resume (see LineReader.end_offset)."""
    last_line: int = 0


def is_tool_result_line(content) -> bool:
    """A user line carrying tool results (no turn of its own), not a prompt."""
    return type(content) is list and any(isinstance(b, Struct) and b.type == "tool_result" for b in content)


_STRING_HEAD = 12 * max(len(m) for m in (*nz.REJECTION_MARKERS, ANSWERED_MARKER)) + 16
"""Bytes of a JSON string that hold at least as many characters as the longest marker: a character
takes at most 12 (an escaped surrogate pair)."""
_decode_str = msgspec.json.Decoder(str).decode


def result_text(content) -> str:
    """The text of a tool result's content, raw (core/transcripts/records.py) or decoded."""
    if type(content) is Raw:
        content = msgspec.json.decode(content)
    return nz.blocks_text(content)


def _string_head(view: memoryview) -> str:
    """The text of a raw JSON string, or a prefix of it at least as long as every marker."""
    if len(view) <= _STRING_HEAD:
        return _decode_str(view)
    head = bytes(view[:_STRING_HEAD])
    for cut in range(len(head), len(head) - 16, -1):
        # closed early; a cut inside an escape or a character does not decode: one byte less
        try:
            return _decode_str(head[:cut] + b'"')
        except (msgspec.DecodeError, UnicodeDecodeError):  # msgspec raises the latter on a cut character
            continue
    return _decode_str(view)


class _Markers:
    """Does a tool result's text start with one of these markers? Asked of a raw JSON value by
    looking only at its head (the counts-only and steps readers keep results raw)."""

    def __init__(self, markers: tuple[str, ...]) -> None:
        self.text = markers
        self.bytes = tuple(m.encode() for m in markers)
        self.head = 1 + max(len(m) for m in self.bytes)

    def __call__(self, content) -> bool:
        if type(content) is Raw:
            view = memoryview(content)
            head = bytes(view[:self.head])
            if head[:1] == b'"':
                if b"\\" not in head:
                    return head[1:].startswith(self.bytes)  # ASCII markers: the bytes match iff the text does
                return _string_head(view).startswith(self.text)
            if head[:1] != b"[":
                return False  # a number, object, true/false/null: no text
        return result_text(content).startswith(self.text)


refused_in = _Markers(nz.REJECTION_MARKERS)
"""nz.is_rejection(result_text(content)): the person refused the call."""
answered_in = _Markers((ANSWERED_MARKER,))
"""The person answered the agent's question (AskUserQuestion)."""


class ClaudeWalk:
    """The books every Claude reader keeps, record by record, the same for the full reader and the
    counts-only one (core/transcripts/counts.py): each record's label, duplicates (a uuid already
    read), conversation versus metadata versus unknown, the envelope (session, project, times,
    entrypoint) and the title. What a conversation record makes is the subclass's."""

    out: ClaudeFile
    reader: LineReader
    redact: bool
    seen: dict
    """uuids read so far (a record repeating one is a duplicate), each mapped to itself until a
    reader says otherwise (the full reader's `anchor`: the turn a record hangs under)."""
    METADATA_HOOKED = frozenset({"ai-title", "custom-title", "summary"})
    """Metadata records `_metadata` looks at (the rest are only counted)."""

    def walk(self) -> None:
        out = self.out
        by_type = out.accounting.by_type
        duplicates = metadata = unknown = 0
        spare_cwd = None
        seen = self.seen
        conversation, other = self._conversation, self._other
        envelope, on_metadata, hooked = self._envelope, self._metadata, self.METADATA_HOOKED
        for lineno, rec in self.reader:
            kind = rec.type
            if type(kind) is not str:
                kind = "<none>"
            by_type[kind] = by_type.get(kind, 0) + 1
            uuid = rec.uuid
            if type(uuid) is str and uuid:
                if uuid in seen:
                    duplicates += 1
                    continue
                node = uuid
            else:
                node = ("line", lineno)
            if kind in CLAUDE_CONVERSATION:  # the same books as accounting.claude_label
                if node is uuid:
                    seen[uuid] = uuid
                envelope(rec)
                conversation(kind, rec, node, lineno)
            else:
                if kind in CLAUDE_METADATA:
                    metadata += 1
                    if kind in hooked:
                        on_metadata(kind, rec)
                else:
                    unknown += 1
                if spare_cwd is None and type(rec.cwd) is str:
                    spare_cwd = rec.cwd  # the project, if no conversation record names one
                if type(uuid) is str:
                    if uuid:
                        seen[uuid] = uuid
                    if other is not None:
                        other(rec, node)
        out.accounting.duplicates += duplicates
        out.accounting.metadata += metadata
        out.accounting.unknown += unknown
        out.spare_cwd = spare_cwd

    def _conversation(self, kind: str, rec, node, lineno: int) -> None:
        raise NotImplementedError

    _prompted = False

    def _person(self, kind: TurnKind, reason: str | None, rec) -> None:
        """The launch evidence a user line carries (core/transcripts/launch.py), the same in every
        reader: the first prompt's origin, and an interrupt as a person's sign."""
        if kind is TurnKind.interrupt:
            self.out.signs.interrupted = True
        elif (reason is None or reason == "origin") and not self._prompted:
            self._prompted = True
            self.out.origin = origin_kind(rec)

    def _result_signs(self, refused: bool, content) -> None:
        signs = self.out.signs
        if refused:
            signs.refused = True
        if not signs.answered and answered_in(content):
            signs.answered = True

    _other = None
    """other(rec, node) for a record outside the conversation whose uuid is a string, if set."""

    def _envelope(self, rec) -> None:
        out = self.out
        out.first_ts, out.last_ts = nz.widen(out.first_ts, out.last_ts, rec.timestamp)
        sid = rec.sessionId
        if type(sid) is str and sid != out.session_id and sid not in out.session_ids:
            out.session_ids.append(sid)  # a continued session: its predecessor's id, then its own
        version = rec.version
        if type(version) is str:
            out.version = version  # the newest writer of the file (it may change inside a file)
        if out.session_id is None:
            if type(sid) is str:
                out.session_id = sid
            cwd = rec.cwd
            if type(cwd) is str:
                out.cwd = cwd
            out.git_branch = rec.gitBranch if type(rec.gitBranch) is str else None
            agent = rec.agentId
            if type(agent) is str:
                out.agent_id = agent
        elif out.cwd is None and type(rec.cwd) is str:
            out.cwd = rec.cwd
        if out.entrypoint is None and type(rec.entrypoint) is str:
            out.entrypoint = rec.entrypoint
        if out.prompt_source is None and type(rec.promptSource) is str:
            out.prompt_source = rec.promptSource

    def _metadata(self, kind: str, rec) -> None:
        out = self.out
        if kind == "custom-title":
            title = rec.customTitle if type(rec.customTitle) is str else rec.title
            if type(title) is str:
                out.custom_title = nz.clean_text(title, nz.TEXT_CHARS, self.redact)
        elif kind == "ai-title":
            title = rec.aiTitle if type(rec.aiTitle) is str else rec.title
            if type(title) is str:
                out.ai_title = nz.clean_text(title, nz.TEXT_CHARS, self.redact)
        elif kind == "summary":
            summary, leaf = rec.summary, rec.leafUuid
            if type(summary) is str and len(out.summaries) < MAX_SUMMARIES:
                out.summaries.append((leaf if type(leaf) is str else "",
                                      nz.clean_text(summary, nz.TEXT_CHARS, self.redact)))

    def _finish_envelope(self) -> None:
        """The file's identity as it leaves the reader: named after its session, titled, redacted."""
        out = self.out
        if out.cwd is None:
            out.cwd = out.spare_cwd  # a file of hook or metadata records only still says where it ran
        out.spare_cwd = None
        out.title = out.custom_title or out.ai_title
        if out.title is None and out.summaries:
            out.title = final_branch_summary(out.path, out.summaries)
        if out.path.stem in out.session_ids:
            out.session_id = out.path.stem  # the file is named after the session it continues into
        if self.redact:
            out.session_ids = [nz.clean_id(s, True) for s in out.session_ids]
            for name in ("session_id", "agent_id", "cwd", "version", "git_branch", "entrypoint", "prompt_source",
                         "origin"):
                value = getattr(out, name)
                if value is not None:
                    setattr(out, name, nz.clean_id(value, True))
            out.accounting.by_type = nz.clean_keys(out.accounting.by_type)
        out.end_offset = self.reader.end_offset
        out.last_line = self.reader.first_line - 1 + self.reader.accounting.lines_read


MAX_SUMMARIES = 4096
"""Summary records kept per file (a resumed session repeats its predecessors'; a title needs one)."""


def final_branch_summary(path: Path, summaries: list[tuple[str, str]]) -> str | None:
    """The summary whose leafUuid is on the file's final branch (the parent chain of its last
    conversation record), the one nearest that record; else the last summary that names no leaf;
    None when neither is (a summary copied from the session this one continues names a leaf of that
    session's).

    A second, light read of the file (four fields a line), made only for a file that has summaries
    and no title record: the walk that counts keeps no parent links."""
    parent: dict[str, str | None] = {}
    last = None
    for _, rec in LineReader(path, decoding=BRANCH):
        uuid = rec.uuid
        if type(uuid) is not str or not uuid or uuid in parent:
            continue
        up = rec.parentUuid
        if up is None and rec.type == "system":
            up = rec.logicalParentUuid  # a compaction boundary continues from its logical parent
        parent[uuid] = up if type(up) is str else None
        if rec.type in CLAUDE_CONVERSATION:
            last = uuid
    distance: dict[str, int] = {}
    node, steps = last, 0
    while node is not None and node not in distance:
        distance[node] = steps
        node, steps = parent.get(node), steps + 1
    best = None
    for position, (leaf, text) in enumerate(summaries):
        if leaf in distance:
            key = (distance[leaf], -position)  # nearest the end; of two for one leaf, the later record
            if best is None or key < best[0]:
                best = (key, text)
    if best is not None:
        return best[1]
    return next((text for leaf, text in reversed(summaries) if not leaf), None)


class ClaudeTree(ClaudeWalk):
    """The conversation tree as every reader that orders turns keeps it (the full reader, and the
    steps mining reads, core/transcripts/steps.py): only turn-bearing records enter the tree; every
    other uuid (progress, tool results, continuation lines) maps to the nearest turn above it, so
    the tree stays small. A subclass sets `anchor`, `parent_of` and `turn_at` (node -> its turn)
    and makes turns in `_user`, `_assistant` and `_system`."""

    anchor: dict
    """Every uuid read -> the turn node it hangs under (a turn's maps to itself: resolving a parent
    through it changes nothing), so it is also the set of uuids seen (`seen`)."""
    parent_of: dict
    turn_at: dict

    def _conversation(self, kind: str, rec, node, lineno: int) -> None:
        anchor, parent_of = self.anchor, self.parent_of
        parent = rec.parentUuid
        parent = anchor.get(parent, parent) if type(parent) is str else None
        if parent is None and kind == "system":
            parent = rec.logicalParentUuid  # compaction boundary keeps its place
            parent = anchor.get(parent, parent) if type(parent) is str else None
        parent_of[node] = parent
        if kind == "user":
            self._user(rec, node, lineno)
        elif kind == "assistant":
            self._assistant(rec, node, lineno)
        else:
            self._system(rec, node, lineno)
        if node not in self.turn_at:
            # A tool result or a continuation line of a response: no turn of its own.
            anchor[node] = parent_of.pop(node)

    def _other(self, rec, node) -> None:
        # Progress and attachment lines sit inside the uuid chain: later records may
        # name them as parent, so remember the turn they hang under.
        anchor, parent = self.anchor, rec.parentUuid
        anchor[node] = anchor.get(parent, parent) if type(parent) is str else None

    def _resolve_later_parents(self) -> list:
        """Turns whose parent was named before it was read (a record later in the file): their
        parent followed now, through the anchors. Returns those nodes."""
        parent_of, anchor = self.parent_of, self.anchor
        changed = []
        for node, parent in parent_of.items():
            if parent is not None and parent not in parent_of and parent in anchor:
                seen = set()
                while parent in anchor and parent not in seen:
                    seen.add(parent)
                    parent = anchor[parent]
                parent_of[node] = parent
                changed.append(node)
        return changed


def _between(text: str, start: str, end: str) -> str:
    i = text.find(start)
    if i < 0:
        return ""
    i += len(start)
    j = text.find(end, i)
    return text[i:] if j < 0 else text[i:j]


def session_launch(main: ClaudeFile | None, files: list[ClaudeFile]):
    """Who started a session (core/transcripts/launch.py), from its trunk and subagent files: the
    first entrypoint any of them carries, the trunk's first prompt and a person's signs in it, kitsoki's
    tools anywhere; a session of subagent files alone (its trunk gone) was spawned by an agent."""
    return claude_launch(next((f.entrypoint for f in files if f.entrypoint), None),
                         origin=main.origin if main is not None else None, subagent=main is None,
                         kitsoki=any(f.kitsoki for f in files), signs=main.signs if main is not None else None)
