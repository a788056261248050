"""Counts-only reading for `sessions`: what a session holds, without building its turns.

The `sessions` report needs, per session, its line accounting, identity (id, project, times, title,
entrypoint), and how many prompts, tool calls, interrupts and refused calls it holds, plus each turn's
id for the cross-session duplicate count. This path decodes only the fields that decide those
(core/transcripts/records.py: `Count*`), keeps a tool result's text raw (only its first bytes say
whether the person refused the call), and keeps per turn three values instead of a Turn.

It cannot drift from the full reader: both walk a file with the same ClaudeWalk (labels, duplicates,
metadata, envelope, title), classify user text with the same classify_user_text, and tests/test_counts.py
runs both on every corpus, fixture and damaged file and compares. Where an answer depends on what
only the full reader keeps, the session is read in full instead (`None` from count_claude_session):
a side-question subagent (its turns are compared by text with the trunk's) and a turn id that
redaction changes (two ids could then redact alike).

Pi and Codex sessions are read in full (ingest.py): their files are small next to Claude Code's, and
their counts follow from the branch structure (Pi) and from which prompt records a file has (Codex).
"""

from __future__ import annotations

from pathlib import Path

from core.transcripts import normalize as nz
from core.transcripts.claude_walk import (
    REJECTED_TOOL_USE,
    ClaudeFile,
    ClaudeWalk,
    classify_user_text,
    is_tool_result_line,
    refused_in,
    session_launch,
    subagent_kind,
)
from core.transcripts.display import display_path, display_stem
from core.transcripts.launch import KITSOKI_TOOLS
from core.transcripts.lines import LineReader
from core.transcripts.model import LineAccounting, SubagentKind, TurnKind
from core.transcripts.records import COUNTS, CountBlock, CountBlockLoose, CountMessage, CountMessageLoose

_MESSAGES = (CountMessage, CountMessageLoose)
_BLOCKS = (CountBlock, CountBlockLoose)


class ClaudeCounts(ClaudeWalk):
    """One Claude file's counts (the books as the full reader keeps them, and three numbers per turn)."""

    def __init__(self, path: Path, sidechain: bool, redact: bool) -> None:
        self.out = ClaudeFile(path=path, sidechain=sidechain)
        self.redact = redact
        self.sidechain = sidechain
        self.reader = LineReader(path, decoding=COUNTS)
        self.out.accounting = self.reader.accounting
        self.seen: dict[str, str] = {}
        self.keys: list[list] = []
        """[turn id as the full reader gives it, 1 if a prompt, tool calls] per turn with an id."""
        self.calls: dict[str, int] = {}
        """tool_use id -> the latest call with that id (its index in `refused`)."""
        self.refused: list[bool | None] = []
        """Per call: whether its latest result says the person refused it (None: no result)."""
        self.early: dict[str, bool] = {}
        self.by_message: dict[str, list] = {}
        self.prompts = self.interrupts = self.tool_calls = 0
        self.exact = True
        """False when the full reader must answer for this file's session (see the module doc)."""

    def run(self) -> ClaudeCounts:
        self.walk()
        self._finish_envelope()
        return self

    def _turn(self, node, prompt: int) -> list:
        entry = [None, prompt, 0]
        if type(node) is str:
            tid = nz.clean_id(node, self.redact)
            if tid is not node:
                self.exact = False
            entry[0] = tid
            self.keys.append(entry)
        return entry

    def _conversation(self, kind: str, rec, node, lineno: int) -> None:
        if kind == "user":
            self._user(rec, node)
        elif kind == "assistant":
            self._assistant(rec, node, lineno)
        else:
            self._turn(node, 0)  # system: a turn, never a prompt

    def _user(self, rec, node) -> None:
        msg = rec.message
        content = msg.content if type(msg) in _MESSAGES else None
        if is_tool_result_line(content):
            self._results(rec, content)
            return
        kind, reason = classify_user_text(nz.blocks_text(content), rec, self.sidechain)
        self._person(kind, reason, rec)
        if kind is TurnKind.human:
            self.prompts += 1
        elif kind is TurnKind.interrupt:
            self.interrupts += 1
        entry = self._turn(node, int(kind is TurnKind.human))
        if reason == "human-shell":  # the person's own `!cmd`: a call of theirs, never refused
            entry[2] += 1
            self.tool_calls += 1
            self.refused.append(None)

    def _results(self, rec, content: list) -> None:
        by_person = rec.toolUseResult == REJECTED_TOOL_USE
        for block in content:
            if type(block) not in _BLOCKS or block.type != "tool_result":
                continue
            refused = refused_in(block.content) or by_person
            self._result_signs(refused, block.content)
            tool_id = block.tool_use_id
            if type(tool_id) is not str:
                continue
            at = self.calls.get(tool_id)
            if at is not None:
                self.refused[at] = refused
            else:
                self.early[tool_id] = refused

    def _assistant(self, rec, node, lineno: int) -> None:
        msg = rec.message
        if type(msg) not in _MESSAGES:
            return
        msg_id = msg.id
        entry = self.by_message.get(msg_id) if type(msg_id) is str else None
        if entry is None:
            entry = self._turn(node, 0)
            if type(msg_id) is str:
                self.by_message[msg_id] = entry
        content = msg.content
        if type(content) is not list:
            return
        for block in content:
            if type(block) in _BLOCKS and block.type == "tool_use":
                if type(block.name) is str and block.name in KITSOKI_TOOLS:
                    self.out.kitsoki = True
                call_id = block.id if type(block.id) is str else f"line:{lineno}"
                self.calls[call_id] = len(self.refused)
                self.refused.append(self.early.pop(call_id, None))
                entry[2] += 1
                self.tool_calls += 1


def count_claude_session(trunk: Path | None, subagent_files: list[Path] = (), *, redact: bool = True):
    """(SessionSummary, turn keys) of a Claude session, as ingest.summarize and _turn_keys give them
    from the full reader; None when only the full reader can say (see the module doc)."""
    from core.transcripts.ingest import SessionSummary

    if trunk is not None and any(subagent_kind(p) is SubagentKind.aside_question for p in subagent_files):
        return None
    main = ClaudeCounts(trunk, False, redact).run() if trunk is not None else None
    agents = [ClaudeCounts(p, True, redact).run() for p in subagent_files]
    counted = ([main] if main else []) + agents
    if not all(c.exact for c in counted):
        return None
    files = [c.out for c in counted]
    head = files[0]
    accounting = LineAccounting()
    for f in files:
        accounting.add(f.accounting)
    firsts = [f.first_ts for f in files if f.first_ts]
    lasts = [f.last_ts for f in files if f.last_ts]
    launch = session_launch(main.out if main else None, files)
    summary = SessionSummary(
        id=head.session_id or nz.clean_id(display_stem(trunk or head.path), redact),
        format="claude",
        project=next((f.cwd for f in files if f.cwd), None),
        path=display_path(head.path),
        files=len(files),
        lines=accounting.lines_read,
        malformed=accounting.malformed,
        skipped=accounting.skipped,
        human_prompts=main.prompts if main else 0,
        tool_calls=sum(c.tool_calls for c in counted),
        interrupts=main.interrupts if main else 0,
        rejected_tool_uses=sum(1 for r in main.refused if r) if main else 0,
        subagents=len(agents),
        duplicates=accounting.duplicates,
        agent_session=launch.agent,
        launch=launch.why,
        started_at=nz.parse_time(min(firsts)) if firsts else None,
        ended_at=nz.parse_time(max(lasts)) if lasts else None,
        title=head.title,
    )
    keys = [(tid, prompt, calls) for c in counted for tid, prompt, calls in c.keys]
    return summary, keys, accounting
