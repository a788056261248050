"""Pi coding-agent session reader (v3, and v1/v2 through pi's own migration, done in memory).

See reference/transcript-formats.md §B. Line 1 is the header; entries form an id/parentId tree
whose active branch is the path from the last entry to the root. Entries off that path are kept
and marked inactive. The file on disk is never rewritten.
"""

from __future__ import annotations

from pathlib import Path

from core.transcripts import normalize as nz
from core.transcripts.accounting import METADATA, PI_METADATA, pi_label
from core.transcripts.display import display_path, display_stem
from core.transcripts.lines import LineReader
from core.transcripts.model import (
    ProblemKind,
    Session,
    SourceRef,
    ToolCall,
    ToolResult,
    Turn,
    TurnKind,
)
from core.transcripts.tree import conversation_order, path_to_root

CURRENT_VERSION = 3
METADATA_TYPES = PI_METADATA  # entries about the session (core/transcripts/accounting.py)


def read_pi_session(path: Path, *, redact: bool = True) -> Session:
    return _PiParser(path, redact).run()


class _PiParser:
    def __init__(self, path: Path, redact: bool) -> None:
        self.path = path
        self.file = display_path(path)  # what outputs name the file by (core/transcripts/display.py)
        self.redact = redact
        self.reader = LineReader(path)
        self.header: dict | None = None
        self.version: int | None = None
        self.parent_of: dict[str, str | None] = {}
        self.turns_at: dict[str, list[Turn]] = {}
        self.calls: dict[str, ToolCall] = {}
        self.models: list[str] = []
        self.title: str | None = None
        self.first_ts: str | None = None
        self.last_ts: str | None = None
        self.last_id: str | None = None
        self.names = nz.Cleaner(redact)  # tool names, models, custom types: few distinct values

    def run(self) -> Session:
        acc = self.reader.accounting
        by_type = acc.by_type
        for lineno, rec in self.reader:
            kind = rec.get("type")
            kind = kind if type(kind) is str else "<none>"
            if self.header is None and kind == "session":
                by_type["session"] = by_type.get("session", 0) + 1
                self.header = rec
                version = rec.get("version")
                self.version = version if type(version) is int else 1
                if self.version > CURRENT_VERSION:
                    self.reader.problem(ProblemKind.unsupported, lineno,
                                        f"session version {self.version} is newer than {CURRENT_VERSION}; read as v3")
                acc.metadata += 1
                continue
            if self.header is None and kind == "title":
                # some tools write {"type":"title",...} before pi's header: a title, not an entry
                by_type["title"] = by_type.get("title", 0) + 1
                acc.metadata += 1
                title = rec.get("title") or rec.get("name") or rec.get("text")
                if type(title) is str and self.title is None:
                    self.title = nz.clean_text(title, nz.TEXT_CHARS, self.redact)
                continue
            if self.header is None:
                self.header = {}
                self.version = None
                self.reader.problem(ProblemKind.unsupported, lineno, "no session header before the first entry")
            label, category = pi_label(rec)
            by_type[label] = by_type.get(label, 0) + 1
            node = self._node(rec, lineno)
            if node is None:
                acc.duplicates += 1
                continue
            ts = rec.get("timestamp")
            self.first_ts, self.last_ts = nz.widen(self.first_ts, self.last_ts, ts)
            if kind == "message":
                self._message(rec, node, lineno)
            elif kind in ("compaction", "branch_summary"):
                summary = rec.get("summary")
                self._add(node, Turn(
                    kind=TurnKind.compaction, id=self._id(node), reason=kind,
                    text=nz.clean_text(summary if type(summary) is str else "", nz.TEXT_CHARS, self.redact),
                    timestamp=nz.parse_time(ts), source=self._ref(lineno),
                ))
            elif kind == "custom_message":
                custom = rec.get("customType")
                self._add(node, Turn(
                    kind=TurnKind.injected, id=self._id(node), reason=self.names[f"custom:{custom}"],
                    text=nz.clean_text(nz.blocks_text(rec.get("content")), nz.TEXT_CHARS, self.redact),
                    timestamp=nz.parse_time(ts), source=self._ref(lineno),
                ))
            elif category == METADATA:
                acc.metadata += 1
                if kind == "session_info" and type(rec.get("name")) is str:
                    self.title = nz.clean_text(rec["name"], nz.TEXT_CHARS, self.redact)
                elif kind == "model_change" and type(rec.get("modelId")) is str:
                    self._model(rec["modelId"])
            else:
                acc.unknown += 1
        return self._finish()

    def _node(self, rec: dict, lineno: int) -> str | None:
        """The entry's id and its parent, migrating v1 (no ids: each entry follows the previous)."""
        entry_id = rec.get("id")
        if self.version is not None and self.version >= 2 and type(entry_id) is str:
            if entry_id in self.parent_of:
                return None
            parent = rec.get("parentId")
            self.parent_of[entry_id] = parent if type(parent) is str else None
        else:
            entry_id = entry_id if type(entry_id) is str and entry_id not in self.parent_of else f"L{lineno}"
            self.parent_of[entry_id] = self.last_id
        self.last_id = entry_id
        return entry_id

    def _id(self, node: str | None) -> str | None:
        return nz.clean_id(node, self.redact)

    def _ref(self, lineno: int) -> SourceRef:
        return SourceRef(file=self.file, line=lineno)

    def _add(self, node: str, turn: Turn) -> None:
        turn.parent = self._id(self.parent_of.get(node))
        self.turns_at.setdefault(node, []).append(turn)

    def _model(self, model: str) -> None:
        model = self.names[model]
        if model not in self.models:
            self.models.append(model)

    def _message(self, rec: dict, node: str, lineno: int) -> None:
        msg = rec.get("message")
        if type(msg) is not dict:
            return
        role = msg.get("role")
        ts = nz.parse_time(rec.get("timestamp")) or nz.parse_time(msg.get("timestamp"))
        if role == "user":
            text = nz.blocks_text(msg.get("content"))
            kind = TurnKind.human if text.strip() else TurnKind.injected
            self._add(node, Turn(
                kind=kind, id=self._id(node), reason=None if kind is TurnKind.human else "empty",
                text=nz.clean_text(text, nz.PROMPT_CHARS, self.redact), timestamp=ts, source=self._ref(lineno),
            ))
        elif role == "assistant":
            self._assistant(msg, node, lineno, ts)
        elif role == "toolResult":
            self._tool_result(msg, lineno)
        elif role == "bashExecution":
            command = msg.get("command")
            output = msg.get("output") if type(msg.get("output")) is str else ""
            exit_code = msg.get("exitCode")
            call = ToolCall(
                id=f"bash:{self._id(node)}", name="bash", by_human=True, source=self._ref(lineno),
                input=nz.clean_input({"command": command if type(command) is str else ""}, self.redact),
                result=ToolResult(
                    is_error=type(exit_code) is int and exit_code != 0,
                    interrupted=msg.get("cancelled") is True,
                    exit_code=exit_code if type(exit_code) is int else None,
                    output_head=nz.clean_text(output, nz.OUTPUT_HEAD_CHARS, self.redact),
                    output_chars=len(output),
                    source=self._ref(lineno),
                ),
            )
            self._add(node, Turn(kind=TurnKind.injected, id=self._id(node), reason="human-shell",
                                 tool_calls=[call], timestamp=ts, source=self._ref(lineno)))
        else:
            # custom / hookMessage (v2 name) / branchSummary / compactionSummary
            reason = "custom" if role == "hookMessage" else self.names[str(role)]
            kind = TurnKind.compaction if role in ("branchSummary", "compactionSummary") else TurnKind.injected
            self._add(node, Turn(
                kind=kind, id=self._id(node), reason=reason,
                text=nz.clean_text(nz.blocks_text(msg.get("content")), nz.TEXT_CHARS, self.redact),
                timestamp=ts, source=self._ref(lineno),
            ))

    def _assistant(self, msg: dict, node: str, lineno: int, ts) -> None:
        model = self.names[msg["model"]] if type(msg.get("model")) is str else None
        if model:
            self._model(model)
        stop = msg.get("stopReason")
        turn = Turn(kind=TurnKind.assistant, id=self._id(node), model=model, timestamp=ts, source=self._ref(lineno),
                    reason="api-error" if stop == "error" else None)
        texts = []
        content = msg.get("content")
        for block in content if type(content) is list else []:
            if type(block) is not dict:
                continue
            if block.get("type") == "text" and type(block.get("text")) is str:
                texts.append(block["text"])
            elif block.get("type") == "toolCall":
                call_id = block.get("id") if type(block.get("id")) is str else f"line:{lineno}"
                call = ToolCall(
                    id=self._id(call_id),
                    name=self.names[block["name"]] if type(block.get("name")) is str else "?",
                    input=nz.clean_input(block.get("arguments"), self.redact),
                    source=self._ref(lineno),
                )
                turn.tool_calls.append(call)
                self.calls[call_id] = call
        turn.text = nz.clean_text("\n".join(t for t in texts if t.strip()), nz.TEXT_CHARS, self.redact)
        self._add(node, turn)
        if stop == "aborted":
            self._add(node, Turn(kind=TurnKind.interrupt, id=None, timestamp=ts, source=self._ref(lineno)))

    def _tool_result(self, msg: dict, lineno: int) -> None:
        if type(msg.get("toolCallId")) is not str:
            if msg.get("toolCallId") is not None:
                self.reader.wrong_type(lineno, "message.toolCallId", msg.get("toolCallId"))
            return
        call = self.calls.get(msg.get("toolCallId"))
        if call is None:
            return
        text = nz.blocks_text(msg.get("content"))
        is_error = msg.get("isError") is True
        call.result = ToolResult(
            is_error=is_error,
            interrupted=is_error and "aborted" in text[:200].lower(),
            exit_code=nz.exit_code_of(text) if is_error else None,
            output_head=nz.clean_text(text, nz.OUTPUT_HEAD_CHARS, self.redact),
            output_chars=len(text),
            source=self._ref(lineno),
        )

    def _finish(self) -> Session:
        order, dangling, breaks = conversation_order(self.parent_of)
        active = path_to_root(self.last_id, self.parent_of) if self.last_id else set()
        turns: list[Turn] = []
        for node in order:
            for turn in self.turns_at.get(node, ()):
                turn.active = node in active
                turns.append(turn)
        for node in dangling:
            line = self.turns_at[node][0].source.line if node in self.turns_at else 0
            self.reader.problem(ProblemKind.dangling_parent, line, f"parent {self.parent_of[node]} is not in this file")
        for node in breaks:
            self.reader.problem(ProblemKind.cycle, 0, f"parent links loop back; {node} made a root")
        header = self.header or {}
        sid = header.get("id") if type(header.get("id")) is str else None
        if sid is None:
            # pi names files <timestamp>_<sessionId>.jsonl
            stem = display_stem(self.path)  # a name may hold a secret (core/transcripts/display.py)
            sid = stem.split("_", 1)[1] if "_" in stem else stem
        sid = self._id(sid)
        cwd = header.get("cwd")
        cwd = self._id(cwd) if type(cwd) is str else None
        if type(header.get("modelId")) is str:
            self._model(header["modelId"])
        # A branched v1 file's header is younger than the entries it copied: take the earliest.
        if self.redact:
            self.reader.accounting.by_type = nz.clean_keys(self.reader.accounting.by_type)
        starts = [t for t in (nz.parse_time(header.get("timestamp")), nz.parse_time(self.first_ts)) if t]
        return Session(
            id=sid,
            format="pi",
            format_version=self.version,
            project=cwd if type(cwd) is str else None,
            files=[self.file],
            started_at=min(starts) if starts else None,
            ended_at=nz.parse_time(self.last_ts),
            title=self.title,
            models=self.models,
            turns=turns,
            accounting=self.reader.accounting,
            problems=self.reader.problems,
            problem_count=self.reader.problem_count,
        )
