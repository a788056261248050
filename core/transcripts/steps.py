"""Steps: what mining reads of a Claude Code file, without building its turns.

An episode (core/mining/episodes.py) is a human prompt and what the agent did until the next one: it
needs, per turn in conversation order, the turn's kind and lines, a prompt's text and time, and per
tool call its name, id, line, the few input keys a signature and an argument read
(records.TOOL_INPUT_KEYS), and its outcome. This reader keeps exactly that (a `Step` per turn, a
`StepCall` per call, an `Outcome` per result) and nothing else: no Turn, ToolCall or SourceRef, no
tool input beyond those keys (a Write's content is skipped by the decoder, never built), no text of
an assistant, injected or system turn, no title.

It cannot drift from the full reader: both walk a file with the same ClaudeWalk (labels,
duplicates, envelope) and ClaudeTree (parent links, conversation order), classify user text with
the same classify_user_text, and read outcomes with the same refused_in and exit_code_of; what is
kept of a string is cut and redacted as the full reader cuts and redacts it. tests/test_steps.py
cuts episodes from both on every corpus, fixture and damaged file and compares them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from msgspec import Struct
from msgspec.structs import astuple

from core.transcripts import normalize as nz
from core.transcripts.accounting import CLAUDE_CONVERSATION, CLAUDE_METADATA
from core.transcripts.claude_walk import (
    REJECTED_TOOL_USE,
    ClaudeFile,
    ClaudeTree,
    _between,
    classify_user_text,
    refused_in,
    result_text,
)
from core.transcripts.launch import KITSOKI_TOOLS
from core.transcripts.lines import LineReader
from core.transcripts.model import ToolResult, TurnKind
from core.transcripts.records import (
    BLOCK_TYPES,
    MESSAGE_TYPES,
    STEPS,
    TOOL_INPUT_KEYS,
    TOOL_USE_RESULT_TYPES,
    StepInput,
)
from core.transcripts.redact import redact_text
from core.transcripts.tree import conversation_order


class Outcome:
    """A tool result as an episode's action reads it, and the line it came on."""

    __slots__ = ("is_error", "interrupted", "rejected", "exit_code", "line")

    def __init__(self, is_error: bool, interrupted: bool, rejected: bool, exit_code: int | None, line: int) -> None:
        self.is_error, self.interrupted, self.rejected, self.exit_code, self.line = (
            is_error, interrupted, rejected, exit_code, line)


class StepCall:
    """A tool call: `input` holds only the TOOL_INPUT_KEYS present, as the full reader's cleaned input
    holds them (strings cut and redacted; other values as read: only their truth and type are asked)."""

    __slots__ = ("id", "name", "input", "line", "result", "by_human")

    def __init__(self, id: str, name: str, input: dict, line: int, by_human: bool = False) -> None:
        self.id, self.name, self.input, self.line, self.by_human = id, name, input, line, by_human
        self.result: Outcome | None = None


class Step:
    """A turn: its kind (what classify_user_text says of user text; assistant; system for every system
    record), first and last line, tool calls; for a human prompt its text (cut and redacted as the
    full reader cuts it) and raw timestamp."""

    __slots__ = ("kind", "line", "last_line", "calls", "prompt", "timestamp")

    def __init__(self, kind: TurnKind, line: int) -> None:
        self.kind, self.line = kind, line
        self.last_line: int | None = None
        self.calls: list[StepCall] = []
        self.prompt = ""
        self.timestamp = None


@dataclass
class ClaudeSteps:
    file: ClaudeFile
    """The envelope (session, project, entrypoint), the books and where a later read resumes."""
    steps: list[Step] = field(default_factory=list)
    """The turns in conversation order."""
    orphan_results: dict[str, ToolResult] = field(default_factory=dict)
    """Results whose call is not in what was read (it sits before `start` in a resumed read)."""


def read_claude_steps(path: Path, *, sidechain: bool = False, redact: bool = True, start: int = 0,
                      first_line: int = 1) -> ClaudeSteps:
    """The steps of one file, or of what follows byte `start` (a line boundary) of a growing file."""
    return _StepReader(path, sidechain, redact, start, first_line).run()


_INPUT_MEMO = 4096
_VALUES: dict[str, str] = {}
"""Tool input string read -> the string as the full reader's cleaned input holds it, redacted: a person runs
the same commands on the same paths again and again, in one session and across them (a mining worker reads
many files; on the 200 MB corpus 14,323 strings are 2,418 distinct ones). Emptied when it holds _INPUT_MEMO,
and by forget_inputs when a pass ends: it holds strings as read, before redaction."""


def forget_inputs() -> None:
    """Drop the remembered tool inputs (what a long-lived process calls when its pass is over)."""
    _VALUES.clear()


_MESSAGES = frozenset(MESSAGE_TYPES)
_BLOCKS = frozenset(BLOCK_TYPES)
_HUMAN, _ASSISTANT = TurnKind.human, TurnKind.assistant


class _StepReader(ClaudeTree):
    METADATA_HOOKED = frozenset()  # no title, no subagent link: mining reads neither

    def __init__(self, path: Path, sidechain: bool, redact: bool, start: int, first_line: int) -> None:
        self.out = ClaudeFile(path=path, sidechain=sidechain)
        self.redact = redact
        self.sidechain = sidechain
        self.parent_of: dict[object, object] = {}
        self.anchor: dict[str, object] = {}
        self.seen = self.anchor
        self.turn_at: dict[object, Step] = {}
        self.calls: dict[str, StepCall] = {}
        self.early: dict[str, Outcome] = {}
        self.by_message: dict[str, Step] = {}
        self.shell_pending: StepCall | None = None
        self.names = nz.Cleaner(redact)
        self.values = _VALUES if redact else {}
        self.reader = LineReader(path, start=start, first_line=first_line, decoding=STEPS)
        self.out.accounting = self.reader.accounting

    def walk(self) -> None:
        """ClaudeWalk.walk with ClaudeTree's hooks written into the loop (`seen` is `anchor`, no
        metadata record is hooked): the same books, parent links and turns, without two method calls
        on each of the two lines in three that are progress (tests/test_steps.py compares the books and
        the episodes with the full reader's)."""
        out = self.out
        by_type = out.accounting.by_type
        duplicates = metadata = unknown = 0
        spare_cwd = None
        anchor, parent_of, turn_at = self.anchor, self.parent_of, self.turn_at
        envelope, user, assistant, system = self._envelope, self._user, self._assistant, self._system
        for lineno, rec in self.reader:
            kind = rec.type
            if type(kind) is not str:
                kind = "<none>"
            by_type[kind] = by_type.get(kind, 0) + 1
            uuid = rec.uuid
            if type(uuid) is str and uuid:
                if uuid in anchor:
                    duplicates += 1
                    continue
                node = uuid
            else:
                node = ("line", lineno)
            if kind in CLAUDE_CONVERSATION:
                if node is uuid:
                    anchor[uuid] = uuid
                envelope(rec)
                parent = rec.parentUuid
                parent = anchor.get(parent, parent) if type(parent) is str else None
                if parent is None and kind == "system":
                    parent = rec.logicalParentUuid  # compaction boundary keeps its place
                    parent = anchor.get(parent, parent) if type(parent) is str else None
                parent_of[node] = parent
                if kind == "user":
                    user(rec, node, lineno)
                elif kind == "assistant":
                    assistant(rec, node, lineno)
                else:
                    system(rec, node, lineno)
                if node not in turn_at:
                    # A tool result or a continuation line of a response: no turn of its own.
                    anchor[node] = parent_of.pop(node)
            else:
                if kind in CLAUDE_METADATA:
                    metadata += 1
                else:
                    unknown += 1
                if spare_cwd is None and type(rec.cwd) is str:
                    spare_cwd = rec.cwd
                if type(uuid) is str:
                    # Progress and attachment lines sit inside the uuid chain: later records may
                    # name them as parent, so remember the turn they hang under.
                    parent = rec.parentUuid
                    anchor[node] = anchor.get(parent, parent) if type(parent) is str else None
        out.accounting.duplicates += duplicates
        out.accounting.metadata += metadata
        out.accounting.unknown += unknown
        out.spare_cwd = spare_cwd

    def run(self) -> ClaudeSteps:
        self.walk()
        self._resolve_later_parents()
        order, _dangling, _breaks = conversation_order(self.parent_of)
        turn_at = self.turn_at
        self._finish_envelope()
        orphans = {nz.clean_id(k, self.redact): ToolResult(is_error=r.is_error, interrupted=r.interrupted,
                                                           rejected=r.rejected, exit_code=r.exit_code)
                   for k, r in self.early.items()}
        return ClaudeSteps(file=self.out, steps=[turn_at[n] for n in order], orphan_results=orphans)

    # -- tool inputs -------------------------------------------------------------------------

    def _input(self, value) -> dict:
        """nz.clean_input(value) restricted to TOOL_INPUT_KEYS (a value that is not an object keeps
        none of them: the full reader files it under "value")."""
        if type(value) is not StepInput:
            return {}
        out = {}
        string = self._string
        for key, v in zip(TOOL_INPUT_KEYS, astuple(value)):
            if v is not None:
                out[key] = string(key, v) if type(v) is str else v
        return out

    def _string(self, key: str, value: str) -> str:
        memo = self.values
        done = memo.get(value)
        if done is None:
            # what trim_input and redact_value make of a string directly under `key`: no key of
            # TOOL_INPUT_KEYS names a secret, so that is redact_text's (tests/test_steps.py checks),
            # and what it makes of a string does not depend on the key
            done = nz.cut(value, nz.INPUT_VALUE_CHARS)
            if self.redact:
                done = redact_text(done)
            if len(value) <= nz.INPUT_VALUE_CHARS:  # a long one (a heredoc) is not kept whole in memory
                if len(memo) >= _INPUT_MEMO:
                    memo.clear()
                memo[value] = done
        return done

    # -- records -----------------------------------------------------------------------------

    def _step(self, node, kind: TurnKind, lineno: int) -> Step:
        step = self.turn_at[node] = Step(kind, lineno)
        return step

    def _user(self, rec, node, lineno: int) -> None:
        msg = rec.message
        content = msg.content if type(msg) in _MESSAGES else None
        if type(content) is list:
            for block in content:  # is_tool_result_line(content), without a generator
                if isinstance(block, Struct) and block.type == "tool_result":
                    self._tool_results(rec, content, lineno)
                    return
        text = nz.blocks_text(content)
        kind, reason = classify_user_text(text, rec, self.sidechain)
        self._person(kind, reason, rec)
        step = self.turn_at[node] = Step(kind, lineno)
        if kind is _HUMAN:
            step.prompt = nz.clean_text(text, nz.PROMPT_CHARS, self.redact)
            step.timestamp = rec.timestamp
        elif reason == "human-shell":
            command = _between(text, "<bash-input>", "</bash-input>")
            call = StepCall(f"shell:{lineno}", "Bash", {"command": self._string("command", command)}, lineno,
                            by_human=True)
            step.calls.append(call)
            self.shell_pending = call
        elif reason == "human-shell-output" and self.shell_pending is not None:
            self.shell_pending.result = Outcome(
                "<bash-stderr></bash-stderr>" not in text and "<bash-stderr>" in text, False, False, None, lineno)
            self.shell_pending = None

    def _tool_results(self, rec, content: list, lineno: int) -> None:
        extra = rec.toolUseResult
        interrupted = type(extra) in TOOL_USE_RESULT_TYPES and extra.interrupted is True
        by_person = type(extra) is str and extra == REJECTED_TOOL_USE
        calls, early = self.calls, self.early
        for block in content:
            if type(block) not in _BLOCKS or block.type != "tool_result":
                continue
            is_error = block.is_error is True
            body = block.content
            refused = refused_in(body) or by_person
            self._result_signs(refused, body)
            result = Outcome(
                is_error,
                interrupted,
                refused,
                nz.exit_code_of(result_text(body)) if is_error else None,
                lineno,
            )
            tool_id = block.tool_use_id
            if type(tool_id) is not str:
                continue
            call = calls.get(tool_id)
            if call is not None:
                call.result = result
            else:
                early[tool_id] = result

    def _assistant(self, rec, node, lineno: int) -> None:
        msg = rec.message
        if type(msg) not in _MESSAGES:
            return
        msg_id = msg.id
        step = self.by_message.get(msg_id) if type(msg_id) is str else None
        if step is None:
            step = self.turn_at[node] = Step(_ASSISTANT, lineno)
            if type(msg_id) is str:
                self.by_message[msg_id] = step
        else:
            step.last_line = lineno
        content = msg.content
        if type(content) is not list:
            return  # a string is one text block: no call in it
        for block in content:
            if type(block) not in _BLOCKS or block.type != "tool_use":
                continue
            call_id = block.id
            call_id = call_id if type(call_id) is str else f"line:{lineno}"
            name = block.name
            if type(name) is str and name in KITSOKI_TOOLS:
                self.out.kitsoki = True
            call = StepCall(nz.clean_id(call_id, self.redact), self.names[name] if type(name) is str else "?",
                            self._input(block.input), lineno)
            step.calls.append(call)
            self.calls[call_id] = call
            early = self.early.pop(call_id, None)
            if early is not None:
                call.result = early

    def _system(self, rec, node, lineno: int) -> None:
        # a compaction boundary is a system turn here too: an episode tells only prompts and
        # interrupts from the rest
        self._step(node, TurnKind.system, lineno)
