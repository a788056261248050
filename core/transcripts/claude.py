"""Claude Code JSONL reader: one session = a trunk file plus its subagent files.

See reference/transcript-formats.md §A. The reader streams each file once, keeps only the
normalized turns and the uuid -> parentUuid links, and rebuilds conversation order from them.
The books it keeps while walking a file (shared with the counts-only and steps readers) are in
core/transcripts/claude_walk.py.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from core.transcripts import normalize as nz
from core.transcripts.claude_walk import (
    REJECTED_TOOL_USE,
    ClaudeFile,
    ClaudeTree,
    ClaudeWalk,
    _between,
    classify_user_text,
    is_tool_result_line,
    session_launch,
    subagent_kind,
)
from core.transcripts.display import display_path, display_stem
from core.transcripts.launch import KITSOKI_TOOLS
from core.transcripts.launch import is_agent_session  # noqa: F401 - re-exported: callers import it from here
from core.transcripts.lines import LineReader
from core.transcripts.records import (
    BLOCK_TYPES,
    FULL,
    MESSAGE_TYPES,
    PROGRESS_DATA_TYPES,
    TOOL_USE_RESULT_TYPES,
    Block,
)
from core.transcripts.model import (
    LineAccounting,
    Problem,
    ProblemKind,
    Session,
    Subagent,
    SourceRef,
    SubagentKind,
    ToolCall,
    ToolResult,
    Turn,
    TurnKind,
)
from core.transcripts.tree import conversation_order


def read_claude_file(
    path: Path, *, sidechain: bool = False, redact: bool = True, start: int = 0, first_line: int = 1,
) -> ClaudeFile:
    """Read one file, or only what follows byte `start` (a line boundary) of a growing file.
    (Mining reads a file's steps instead: core/transcripts/steps.py.)"""
    return _FileParser(path, sidechain, redact, start, first_line).run()


class _FileParser(ClaudeTree):
    def __init__(self, path: Path, sidechain: bool, redact: bool, start: int = 0, first_line: int = 1) -> None:
        self.out = ClaudeFile(path=path, sidechain=sidechain)
        self.file = display_path(path)  # what outputs name the file by (core/transcripts/display.py)
        self.redact = redact
        self.sidechain = sidechain
        # Only turn-bearing records enter the tree; every other uuid (progress, tool results,
        # continuation lines) maps to the nearest turn above it, so the walk stays small.
        self.parent_of: dict[object, object] = {}
        self.anchor: dict[str, object] = {}
        # Every uuid read is in `anchor` (a turn's maps to itself: resolving a parent through it
        # changes nothing), so it is also the set of uuids seen, without a second copy of 200k keys.
        self.seen = self.anchor
        self.turn_at: dict[object, Turn] = {}
        self.calls: dict[str, ToolCall] = {}
        self.early_results: dict[str, tuple[ToolResult, str | None]] = {}
        self.assistant_by_msg: dict[str, Turn] = {}
        self.shell_pending: ToolCall | None = None
        # Every string the reader hands on is redacted, ids and names too; fields with few distinct
        # values go through a per-file memo, hex ids through clean_id's fast path.
        self.names = nz.Cleaner(redact)
        self.reader = LineReader(path, start=start, first_line=first_line, decoding=FULL)
        self.out.accounting = self.reader.accounting

    def run(self) -> ClaudeFile:
        self.walk()
        return self._finish()

    # -- records -----------------------------------------------------------------------------

    def _ref(self, lineno: int) -> SourceRef:
        return SourceRef(file=self.file, line=lineno)

    def _turn(self, node, kind: TurnKind, rec: dict, lineno: int, **fields) -> Turn:
        parent = self.parent_of.get(node)
        turn = Turn(
            kind=kind,
            id=nz.clean_id(node, self.redact) if type(node) is str else None,
            parent=nz.clean_id(parent, self.redact) if type(parent) is str else None,
            timestamp=nz.parse_time(rec.timestamp),
            sidechain=self.sidechain,
            source=self._ref(lineno),
            **fields,
        )
        self.turn_at[node] = turn
        return turn

    def _user(self, rec, node, lineno: int) -> None:
        msg = rec.message
        content = msg.content if type(msg) in MESSAGE_TYPES else None
        if is_tool_result_line(content):
            self._tool_results(rec, content, lineno)
            return
        text = nz.blocks_text(content)
        kind, reason = classify_user_text(text, rec, self.sidechain)
        self._person(kind, reason, rec)
        if kind is TurnKind.human:
            kept = nz.clean_text(text, nz.PROMPT_CHARS, self.redact)
        else:
            kept = nz.clean_text(text, nz.TEXT_CHARS, self.redact)
        turn = self._turn(node, kind, rec, lineno, text=kept, reason=reason)
        if reason == "human-shell":
            command = _between(text, "<bash-input>", "</bash-input>")
            call = ToolCall(
                id=f"shell:{lineno}",
                name="Bash",
                input=nz.clean_input({"command": command}, self.redact),
                by_human=True,
                source=self._ref(lineno),
            )
            turn.tool_calls.append(call)
            self.shell_pending = call
        elif reason == "human-shell-output" and self.shell_pending is not None:
            out = _between(text, "<bash-stdout>", "</bash-stdout>") + _between(text, "<bash-stderr>", "</bash-stderr>")
            self.shell_pending.result = ToolResult(
                is_error="<bash-stderr></bash-stderr>" not in text and "<bash-stderr>" in text,
                output_head=nz.clean_text(out, nz.OUTPUT_HEAD_CHARS, self.redact),
                output_chars=len(out),
                source=self._ref(lineno),
            )
            self.shell_pending = None

    def _tool_results(self, rec, content: list, lineno: int) -> None:
        extra = rec.toolUseResult
        described = type(extra) in TOOL_USE_RESULT_TYPES
        for block in content:
            if type(block) not in BLOCK_TYPES or block.type != "tool_result":
                continue
            is_error = block.is_error is True
            agent = extra.agentId if described else None
            text = nz.blocks_text(block.content)
            if type(agent) is not str:
                agent = nz.agent_id_in(text) if "agentId" in text else None
            refused = nz.is_rejection(text) or extra == REJECTED_TOOL_USE
            self._result_signs(refused, block.content)
            result = ToolResult(
                is_error=is_error,
                interrupted=described and extra.interrupted is True,
                rejected=refused,
                exit_code=nz.exit_code_of(text) if is_error else None,
                output_head=nz.clean_text(text, nz.OUTPUT_HEAD_CHARS, self.redact),
                output_chars=len(text),
                source=self._ref(lineno),
            )
            if agent:
                agent = nz.clean_id(agent, self.redact)
            tool_id = block.tool_use_id
            call = self.calls.get(tool_id) if type(tool_id) is str else None
            if call is not None:
                call.result = result
                if agent:
                    call.subagent = agent
            elif type(tool_id) is str:
                self.early_results[tool_id] = (result, agent)

    def _assistant(self, rec, node, lineno: int) -> None:
        msg = rec.message
        if type(msg) not in MESSAGE_TYPES:
            return
        msg_id = msg.id
        turn = self.assistant_by_msg.get(msg_id) if type(msg_id) is str else None
        if turn is None:
            model = msg.model
            turn = self._turn(
                node, TurnKind.assistant, rec, lineno,
                model=self.names[model] if type(model) is str else None,
                reason="api-error" if rec.isApiErrorMessage else None,
            )
            if type(msg_id) is str:
                self.assistant_by_msg[msg_id] = turn
            if turn.model and turn.model != "<synthetic>" and turn.model not in self.out.models:
                self.out.models.append(turn.model)
        else:
            turn.source.last_line = lineno
        content = msg.content
        if type(content) is str:
            content = [Block(type="text", text=content)]
        if type(content) is not list:
            return
        for block in content:
            if type(block) not in BLOCK_TYPES:
                continue
            kind = block.type
            if kind == "text":
                text = block.text
                if type(text) is str and text.strip() and len(turn.text) < nz.TEXT_CHARS:
                    # Each block is redacted once as it arrives; the joined text is only cut.
                    text = nz.clean_text(text, nz.TEXT_CHARS, self.redact)
                    turn.text = nz.cut(f"{turn.text}\n{text}" if turn.text else text, nz.TEXT_CHARS)
            elif kind == "tool_use":
                call_id = block.id
                call_id = call_id if type(call_id) is str else f"line:{lineno}"
                name = block.name
                if type(name) is str and name in KITSOKI_TOOLS:
                    self.out.kitsoki = True
                call = ToolCall(
                    id=nz.clean_id(call_id, self.redact),
                    name=self.names[name] if type(name) is str else "?",
                    input=nz.clean_input(block.input, self.redact),
                    source=self._ref(lineno),
                )
                turn.tool_calls.append(call)
                self.calls[call_id] = call
                early = self.early_results.pop(call_id, None)
                if early is not None:
                    call.result, call.subagent = early[0], early[1] or call.subagent

    def _system(self, rec, node, lineno: int) -> None:
        subtype = rec.subtype
        subtype = subtype if type(subtype) is str else None
        content = rec.content
        text = content if type(content) is str else ""
        kind = TurnKind.compaction if subtype == "compact_boundary" else TurnKind.system
        self._turn(node, kind, rec, lineno, text=nz.clean_text(text, nz.TEXT_CHARS, self.redact),
                   reason=self.names[subtype] if subtype else None)

    METADATA_HOOKED = ClaudeWalk.METADATA_HOOKED | {"progress"}

    def _metadata(self, kind: str, rec) -> None:
        if kind == "progress":
            data = rec.data
            if type(data) in PROGRESS_DATA_TYPES and data.type == "agent_progress":
                agent, tool = data.agentId, rec.parentToolUseID or rec.toolUseID
                if type(agent) is str and type(tool) is str:
                    self.out.agent_progress.setdefault(agent, tool)
        else:
            super()._metadata(kind, rec)

    # -- assembly ----------------------------------------------------------------------------

    def _finish(self) -> ClaudeFile:
        out = self.out
        parent_of = self.parent_of
        for node in self._resolve_later_parents():
            parent = parent_of[node]
            self.turn_at[node].parent = nz.clean_id(parent, self.redact) if type(parent) is str else None
        order, dangling, breaks = conversation_order(parent_of)
        out.turns = [self.turn_at[n] for n in order]
        reader = self.reader
        # A subagent's records point into the trunk by design, and a resumed read's into the
        # part already read: not a problem there.
        for node in dangling if not (self.sidechain or self.reader.start) else ():
            if node in self.turn_at:
                reader.problem(ProblemKind.dangling_parent, self.turn_at[node].source.line,
                               f"parent {self.parent_of[node]} is not in this file")
        for node in breaks:
            line = self.turn_at[node].source.line if node in self.turn_at else 0
            reader.problem(ProblemKind.cycle, line, f"parent links loop back; {node} made a root")
        out.problems = reader.problems
        out.problem_count = reader.problem_count
        self._finish_envelope()
        if self.redact:
            out.agent_progress = {nz.clean_id(a, True): nz.clean_id(t, True) for a, t in out.agent_progress.items()}
        out.orphan_results = {nz.clean_id(k, self.redact): r for k, (r, _) in self.early_results.items()}
        return out


def _turn_key(turn: Turn) -> tuple:
    # not the kind: in a sidechain file a replayed prompt reads as the parent agent's
    return turn.text, tuple(c.id for c in turn.tool_calls)


def _without_copies(turns: list[Turn], trunk: list[Turn]) -> tuple[list[Turn], int]:
    """`turns` minus those repeating a trunk turn (same uuid, or same text and tool call ids)."""
    ids = {t.id for t in trunk if t.id}
    keys = {_turn_key(t) for t in trunk}
    kept = [t for t in turns if not ((t.id and t.id in ids) or _turn_key(t) in keys)]
    return kept, len(turns) - len(kept)


def read_meta(path: Path) -> dict:
    """The `.meta.json` beside a subagent file ({toolUseId, agentType, ...}); {} when absent or bad."""
    meta = path.with_suffix(".meta.json")
    try:
        data = orjson.loads(meta.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return data if type(data) is dict else {}


def read_claude_session(
    trunk: Path | None, subagent_files: list[Path] = (), *, redact: bool = True
) -> Session:
    """Read a trunk file (None for subagent files whose trunk is gone) and its subagent files."""
    main = read_claude_file(trunk, redact=redact) if trunk is not None else None
    agents = [(p, read_claude_file(p, sidechain=True, redact=redact)) for p in subagent_files]
    files = ([main] if main else []) + [a for _, a in agents]

    spawned_by: dict[str, str] = {}
    if main is not None:
        spawned_by.update(main.agent_progress)
        for turn in main.turns:
            for call in turn.tool_calls:
                if call.subagent:
                    spawned_by[call.subagent] = call.id
    subagents = []
    calls_by_id = {c.id: c for t in (main.turns if main else []) for c in t.tool_calls}
    for path, parsed in agents:
        meta = read_meta(path)
        agent_id = parsed.agent_id or nz.clean_id(display_stem(path).removeprefix("agent-"), redact)
        tool_use = meta.get("toolUseId")
        tool_use = nz.clean_id(tool_use, redact) if type(tool_use) is str else spawned_by.get(agent_id)
        agent_type = meta.get("agentType")
        if tool_use in calls_by_id and calls_by_id[tool_use].subagent is None:
            calls_by_id[tool_use].subagent = agent_id
        kind = subagent_kind(path)
        turns = parsed.turns
        if kind is SubagentKind.aside_question and main is not None:
            # A side question replays the whole parent conversation before its own question: the
            # replayed turns are the trunk's work, counted there once.
            turns, copied = _without_copies(turns, main.turns)
            parsed.accounting.duplicates += copied
        subagents.append(
            Subagent(
                agent_id=agent_id,
                kind=kind,
                file=display_path(path),
                tool_use_id=tool_use,
                agent_type=nz.clean_id(agent_type, redact) if type(agent_type) is str else None,
                turns=turns,
            )
        )

    head = main or files[0]
    accounting = LineAccounting()
    problems: list[Problem] = []
    problem_count = 0
    for f in files:
        accounting.add(f.accounting)
        problems.extend(f.problems)
        problem_count += f.problem_count
    firsts = [f.first_ts for f in files if f.first_ts]
    lasts = [f.last_ts for f in files if f.last_ts]
    launch = session_launch(main, files)
    models: list[str] = []
    for f in files:
        models += [m for m in f.models if m not in models]
    return Session(
        id=head.session_id or nz.clean_id(display_stem(trunk or head.path), redact),
        format="claude",
        project=next((f.cwd for f in files if f.cwd), None),
        files=[display_path(f.path) for f in files],
        started_at=nz.parse_time(min(firsts)) if firsts else None,
        ended_at=nz.parse_time(max(lasts)) if lasts else None,
        entrypoint=next((f.entrypoint for f in files if f.entrypoint), None),
        agent_session=launch.agent,
        launch=launch.why,
        tool_version=head.version,
        git_branch=head.git_branch,
        title=head.title,
        models=models,
        turns=main.turns if main else [],
        subagents=subagents,
        accounting=accounting,
        problems=problems,
        problem_count=problem_count,
    )
