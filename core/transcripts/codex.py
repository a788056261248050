"""Codex CLI rollout reader: one session = one `rollout-<local time>-<uuid>.jsonl` file.

The format, from Codex's own types (github.com/openai/codex, Apache-2.0: `RolloutLine`, `RolloutItem`,
`SessionMeta` in codex-rs/protocol/src/protocol.rs; `ResponseItem` in codex-rs/protocol/src/models.rs;
what is persisted in codex-rs/rollout/src/policy.rs; test rollouts in codex-rs/rollout/src/tests.rs):

- every line is `{"timestamp", "type", "payload"}` (newer builds add an `ordinal`);
- `session_meta` comes first: `id` (the thread id; 0.142 adds `session_id`), `cwd`, `originator`,
  `cli_version`, `source` ("cli", "vscode", "exec", "mcp", a custom name, or
  `{"subagent": "review" | {"thread_spawn": {"parent_thread_id", "depth", ...}}}`), `model_provider`, `git`;
- `turn_context`: the turn's `cwd`, `model`, approval and sandbox policy;
- `response_item`: what went to and came from the model: `message` by role (`input_text`,
  `output_text`, `input_image` content), `reasoning`, `function_call` {name, arguments: a JSON *string*,
  call_id} and `function_call_output` {call_id, output}, `custom_tool_call` {name, input: a string,
  call_id} and `custom_tool_call_output` (apply_patch), `local_shell_call` {call_id, action: {type:
  exec, command: [argv]}} answered by a `function_call_output`, `web_search_call`;
- `event_msg`: `user_message` (what the person typed), `agent_message`, `turn_aborted` {reason},
  `token_count`, `task_started`/`task_complete`, ...; `compacted` {message}.

Human prompts: `event_msg/user_message` when the file has any; older rollouts have none, and there a
user-role message is a prompt unless it is context Codex injected (`<environment_context>`,
`<user_instructions>`, AGENTS.md). Conversation order is file order (Codex writes one line per
item, in order, with no parent links). Not in Codex's types, so read from the text: the exit code of
a shell call (`metadata.exit_code` in a JSON output, or an `Exit code: N` line) and a declined approval
(an output saying it was rejected by the user).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import orjson

from core.transcripts import normalize as nz
from core.transcripts.accounting import CONVERSATION, METADATA, codex_label
from core.transcripts.display import display_path, display_stem
from core.transcripts.launch import PersonSigns, codex_launch
from core.transcripts.lines import LineReader
from core.transcripts.model import (
    ProblemKind,
    Session,
    SourceRef,
    Subagent,
    SubagentKind,
    ToolCall,
    ToolResult,
    Turn,
    TurnKind,
)

_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call"})
_CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>",
                     "<user_shell_command>", "<turn_aborted>", "<subagent_notification>")
_SHELL_WRAPPERS = ({"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh", "pwsh", "powershell"},
                   {"-lc", "-c", "-Command"})
_EXIT_LINE = re.compile(r"^(?:Exit code|Process exited with code):?\s*(-?\d+)", re.M)
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.M)
_ROLLOUT_UUID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")


def is_agent_source(source, originator: str | None) -> bool:
    """Started by a program (exec, SDK, MCP server) or spawned by another agent, from a rollout's
    session_meta alone (core/transcripts/launch.py; a person's signs need the whole rollout)."""
    return codex_launch(source, originator).agent


_REFUSALS = ("exec command rejected by user", "patch rejected by user", "exec command declined by user")
_REFUSED_INSIDE = re.compile(r'Rejected\(\\?"rejected by user\\?"\)')


def refused_by_person(text: str) -> bool:
    """A call's output saying the person declined it: the approval answer Codex writes ("exec command
    rejected by user"), also wrapped in a failed exec's message. Not a guardian's "rejected due to
    unacceptable risk", nor a command that merely printed the words."""
    head = text.lstrip()[:200].lower()
    return head.startswith(_REFUSALS) or (
        "rejected by user" in text and _REFUSED_INSIDE.search(text) is not None)


def codex_home(path: Path) -> Path | None:
    """The CODEX_HOME a rollout lives in (the parent of its sessions/ or archived_sessions/)."""
    for parent in path.parents:
        if parent.name in ("sessions", "archived_sessions"):
            return parent.parent
    return None


_NAMES: dict[str, tuple[tuple[int, int], dict[str, str]]] = {}


def thread_names(path: Path) -> dict[str, str]:
    """Thread id -> the name a person (or Codex) gave it, from `session_index.jsonl` beside the
    rollouts' folder (each rename appends a line: the last one for an id wins). Read once per process
    and index version."""
    home = codex_home(path)
    if home is None:
        return {}
    index = home / "session_index.jsonl"
    try:
        st = index.stat()
    except OSError:
        return {}
    key = str(index)
    memo = _NAMES.get(key)
    if memo is not None and memo[0] == (st.st_size, st.st_mtime_ns):
        return memo[1]
    names: dict[str, str] = {}
    reader = LineReader(index)
    for _, rec in reader:
        if type(rec) is dict and type(rec.get("id")) is str and type(rec.get("thread_name")) is str:
            if rec["thread_name"].strip():
                names[rec["id"]] = rec["thread_name"]
    _NAMES[key] = ((st.st_size, st.st_mtime_ns), names)
    return names


def shell_text(command) -> str:
    """A shell call's argv as the command line a person would type: `bash -lc "make x"` -> `make x`."""
    if type(command) is str:
        return command
    if type(command) is not list or not all(type(a) is str for a in command):
        return ""
    if len(command) == 3 and command[0] in _SHELL_WRAPPERS[0] and command[1] in _SHELL_WRAPPERS[1]:
        return command[2]
    return shlex.join(command)


def read_codex_session(path: Path, *, redact: bool = True) -> Session:
    return _CodexParser(path, redact).run()


class _CodexParser:
    def __init__(self, path: Path, redact: bool) -> None:
        self.path = path
        self.file = display_path(path)  # what outputs name the file by (core/transcripts/display.py)
        self.redact = redact
        self.reader = LineReader(path)
        self.names = nz.Cleaner(redact)
        self.meta: dict | None = None
        self.cwd: str | None = None
        self.models: list[str] = []
        self.turns: list[Turn] = []
        self.calls: dict[str, ToolCall] = {}
        self.typed: list[Turn] = []
        """Prompts from event_msg/user_message."""
        self.user_items: list[Turn] = []
        """User-role response items that are not injected context: prompts only in older rollouts."""
        self.first_ts: str | None = None
        self.last_ts: str | None = None
        self.aborted_items: list[Turn] = []
        """`<turn_aborted>` user items: the model's copy of an interrupt the turn_aborted event records
        (both are written by newer builds), the interrupt itself where no event is."""
        self.aborted_events = 0
        self.spawned: dict[str, Subagent] = {}
        """Threads this one spawned (collab_agent_spawn_end), by thread id."""
        self.spawn_calls: list[ToolCall] = []
        self.thread_name: str | None = None
        self.signs = PersonSigns()

    def run(self) -> Session:
        acc = self.reader.accounting
        by_type = acc.by_type
        for lineno, rec in self.reader:
            label, category = codex_label(rec)
            by_type[label] = by_type.get(label, 0) + 1
            ts = rec.get("timestamp")
            self.first_ts, self.last_ts = nz.widen(self.first_ts, self.last_ts, ts)
            payload = rec.get("payload")
            payload = payload if type(payload) is dict else {}
            if category == METADATA:
                acc.metadata += 1
                kind = rec.get("type")
                if kind == "session_meta" and self.meta is None:
                    self.meta = payload
                elif kind == "turn_context":
                    model = payload.get("model")
                    if type(model) is str:
                        self._model(model)
                    if self.cwd is None and type(payload.get("cwd")) is str:
                        self.cwd = payload["cwd"]
                elif kind == "event_msg":
                    self._meta_event(payload)
            elif category == CONVERSATION:
                if rec.get("type") == "response_item":
                    self._response_item(payload, lineno, ts)
                elif rec.get("type") == "event_msg":
                    self._event(payload, lineno, ts)
                else:  # compacted
                    self._add(TurnKind.compaction, lineno, ts, reason="compacted",
                              text=nz.clean_text(_str(payload.get("message")), nz.TEXT_CHARS, self.redact))
            else:
                acc.unknown += 1
        return self._finish()

    # -- records -----------------------------------------------------------------------------

    def _ref(self, lineno: int) -> SourceRef:
        return SourceRef(file=self.file, line=lineno)

    def _add(self, kind: TurnKind, lineno: int, ts, **fields) -> Turn:
        turn = Turn(kind=kind, timestamp=nz.parse_time(ts), source=self._ref(lineno), **fields)
        self.turns.append(turn)
        return turn

    def _model(self, model: str) -> None:
        model = self.names[model]
        if model not in self.models:
            self.models.append(model)

    def _assistant(self, lineno: int, ts) -> Turn:
        """The assistant turn a call belongs to: the one in progress, or a new one."""
        last = self.turns[-1] if self.turns else None
        if last is not None and last.kind is TurnKind.assistant:
            last.source.last_line = lineno
            return last
        return self._add(TurnKind.assistant, lineno, ts, model=self.models[-1] if self.models else None)

    def _response_item(self, item: dict, lineno: int, ts) -> None:
        kind = item.get("type")
        if kind == "message":
            role = item.get("role")
            text = _content_text(item.get("content"))
            if role == "assistant":
                turn = self._assistant(lineno, ts)
                if text.strip() and len(turn.text) < nz.TEXT_CHARS:
                    text = nz.clean_text(text, nz.TEXT_CHARS, self.redact)
                    turn.text = nz.cut(f"{turn.text}\n{text}" if turn.text else text, nz.TEXT_CHARS)
            elif role == "user":
                head = text.lstrip()
                if head.startswith("<turn_aborted>"):
                    self.aborted_items.append(self._add(TurnKind.interrupt, lineno, ts, reason="turn_aborted"))
                    return
                context = head.startswith(_CONTEXT_PREFIXES) or not head
                turn = self._add(TurnKind.injected, lineno, ts, reason="context" if context else "user-item",
                                 text=nz.clean_text(text, nz.PROMPT_CHARS if not context else nz.TEXT_CHARS,
                                                    self.redact))
                if not context:
                    self.user_items.append(turn)
            else:  # developer / system instructions
                self._add(TurnKind.injected, lineno, ts, reason=self.names[_str(role) or "?"],
                          text=nz.clean_text(text, nz.TEXT_CHARS, self.redact))
        elif type(kind) is str and kind in _CALLS:
            self._call(item, kind, lineno, ts)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self._output(item, lineno)
        # reasoning, ghost_snapshot, compaction (encrypted), other: conversation the model keeps; not turns

    def _call(self, item: dict, kind: str, lineno: int, ts) -> None:
        if item.get("call_id") is not None and type(item.get("call_id")) is not str:
            self.reader.wrong_type(lineno, "payload.call_id", item.get("call_id"))
            return
        call_id = item.get("call_id") if type(item.get("call_id")) is str else None
        call_id = call_id or (item.get("id") if type(item.get("id")) is str else None) or f"line:{lineno}"
        if kind == "function_call":
            name = _str(item.get("name")) or "?"
            args = item.get("arguments")
            if type(args) is str:
                try:
                    args = orjson.loads(args)
                except orjson.JSONDecodeError:
                    args = {"arguments": args}
            args = dict(args) if type(args) is dict else {"arguments": args}
            if "command" in args and type(args["command"]) is list:
                args["argv"] = args.pop("command")
        elif kind == "custom_tool_call":
            name = _str(item.get("name")) or "?"
            text = _str(item.get("input"))
            args = {"input": text}
            if name == "apply_patch":
                files = _PATCH_FILE.findall(text)
                args = {"patch": text, **({"file_path": files[0].strip()} if files else {}),
                        **({"files": [f.strip() for f in files]} if len(files) > 1 else {})}
        elif kind == "local_shell_call":
            name = "local_shell"
            action = item.get("action") if type(item.get("action")) is dict else {}
            args = {"argv": action.get("command")}
            if type(action.get("working_directory")) is str:
                args["workdir"] = action["working_directory"]
        elif kind == "tool_search_call":  # the model looking up a tool; answered by tool_search_output
            name = "tool_search"
            args = item.get("arguments") if type(item.get("arguments")) is dict else {}
        else:  # web_search_call: answered inline, no output item
            name = "web_search"
            action = item.get("action") if type(item.get("action")) is dict else {}
            args = {k: v for k, v in action.items() if k in ("query", "url", "pattern", "type")}
        args = nz.clean_input(args, self.redact)
        if "argv" in args:
            # joined from the redacted words: quoting a word first would hide a secret's context
            args = {"command": shell_text(args["argv"]), **args}
        call = ToolCall(id=nz.clean_id(call_id, self.redact), name=self.names[name], input=args,
                        source=self._ref(lineno))
        if kind == "web_search_call":
            status = item.get("status")
            call.result = ToolResult(is_error=status == "failed", source=self._ref(lineno))
        self._assistant(lineno, ts).tool_calls.append(call)
        self.calls[call_id] = call
        if name == "spawn_agent":
            self.spawn_calls.append(call)

    def _output(self, item: dict, lineno: int) -> None:
        if type(item.get("call_id")) is not str:
            if item.get("call_id") is not None:
                self.reader.wrong_type(lineno, "payload.call_id", item.get("call_id"))
            return
        call = self.calls.get(item.get("call_id"))
        if call is None:
            return
        text, exit_code, success = _output_text(item.get("output"))
        if exit_code is None:
            m = _EXIT_LINE.search(text[:300])
            exit_code = int(m.group(1)) if m else None
        rejected = refused_by_person(text)
        if rejected:
            self.signs.refused = True
        if call.name == "request_user_input" and success is not False and text.strip():
            self.signs.answered = True
        call.result = ToolResult(
            is_error=success is False or (exit_code is not None and exit_code != 0) or rejected,
            rejected=rejected,
            exit_code=exit_code,
            output_head=nz.clean_text(text, nz.OUTPUT_HEAD_CHARS, self.redact),
            output_chars=len(text),
            source=self._ref(lineno),
        )

    def _event(self, event: dict, lineno: int, ts) -> None:
        kind = event.get("type")
        if kind == "user_message":
            text = _str(event.get("message"))
            turn = self._add(TurnKind.human if text.strip() else TurnKind.injected, lineno, ts,
                             reason=None if text.strip() else "empty",
                             text=nz.clean_text(text, nz.PROMPT_CHARS, self.redact))
            if turn.kind is TurnKind.human:
                self.typed.append(turn)
        elif kind == "turn_aborted":
            self.aborted_events += 1
            reason = _str(event.get("reason")) or "interrupted"
            if reason == "interrupted":
                self._add(TurnKind.interrupt, lineno, ts, reason="interrupted")
            else:  # replaced by a new turn, review ended: not the person stopping the agent
                self._add(TurnKind.system, lineno, ts, reason=self.names[f"turn_aborted:{reason}"])

    def _meta_event(self, event: dict) -> None:
        """Events about the thread rather than the conversation: a spawned agent, a new name."""
        kind = event.get("type")
        if kind == "collab_agent_spawn_end":
            thread = event.get("new_thread_id")
            if type(thread) is str and thread and thread not in self.spawned:
                role = event.get("new_agent_role")
                call = event.get("call_id")
                self.spawned[thread] = Subagent(
                    agent_id=nz.clean_id(thread, self.redact), kind=SubagentKind.task, file="",
                    tool_use_id=nz.clean_id(call, self.redact) if type(call) is str else None,
                    agent_type=self.names[role] if type(role) is str else None)
        elif kind == "thread_name_updated":
            name = event.get("thread_name")
            if type(name) is str and name.strip():
                self.thread_name = name

    # -- assembly ----------------------------------------------------------------------------

    def _finish(self) -> Session:
        # A prompt is recorded twice in newer rollouts (a user response item and a user_message
        # event): the event is what the person typed. Older rollouts have only the item.
        meta = self.meta or {}
        source = meta.get("source")
        prompts = self.typed or self.user_items
        if self.typed:
            for turn in self.user_items:
                turn.reason = "prompt-copy"
        else:
            for turn in self.user_items:
                turn.kind, turn.reason = TurnKind.human, None
        if type(source) is dict:
            # A subagent's prompts are its parent agent's brief (or the harness's), never a person's.
            for turn in prompts:
                turn.kind, turn.reason = TurnKind.injected, "subagent-prompt"
        if self.aborted_events:
            for turn in self.aborted_items:  # the event is the interrupt; the item repeats it to the model
                turn.kind, turn.reason = TurnKind.injected, "interrupt-copy"
        if any(t.kind is TurnKind.interrupt for t in self.turns):
            self.signs.interrupted = True
        if self.meta is None:
            self.reader.problem(ProblemKind.unsupported, 1, "no session_meta line: the id is taken from the file name")
        sid = next((v for v in (meta.get("id"), meta.get("session_id")) if type(v) is str and v), None)
        if sid is None:
            stem = display_stem(self.path)  # a name may hold a secret (core/transcripts/display.py)
            m = _ROLLOUT_UUID.search(stem)
            sid = m.group(1) if m else stem
        cwd = meta.get("cwd") if type(meta.get("cwd")) is str else self.cwd
        originator = meta.get("originator") if type(meta.get("originator")) is str else None
        launch = codex_launch(source, originator, signs=self.signs)
        git = meta.get("git") if type(meta.get("git")) is dict else {}
        subagents = list(self.spawned.values())
        if not subagents:  # older builds write no spawn event: a spawn call that got an answer
            subagents = [Subagent(agent_id=c.id, kind=SubagentKind.task, file="", tool_use_id=c.id)
                         for c in self.spawn_calls if c.result is not None and not c.result.is_error]
        title = thread_names(self.path).get(sid) or self.thread_name
        starts = [t for t in (nz.parse_time(meta.get("timestamp")), nz.parse_time(self.first_ts)) if t]
        if self.redact:
            self.reader.accounting.by_type = nz.clean_keys(self.reader.accounting.by_type)
        return Session(
            id=nz.clean_id(sid, self.redact),
            format="codex",
            project=nz.clean_id(cwd, self.redact),
            files=[self.file],
            started_at=min(starts) if starts else None,
            ended_at=nz.parse_time(self.last_ts),
            entrypoint=nz.clean_id(originator, self.redact),
            agent_session=launch.agent,
            launch=nz.clean_text(launch.why, nz.TEXT_CHARS, self.redact),  # it names the originator
            title=nz.clean_text(title, nz.TEXT_CHARS, self.redact) if title else None,
            tool_version=nz.clean_id(_str(meta.get("cli_version")) or None, self.redact),
            git_branch=nz.clean_id(_str(git.get("branch")) or None, self.redact),
            models=self.models,
            turns=self.turns,
            subagents=subagents,
            accounting=self.reader.accounting,
            problems=self.reader.problems,
            problem_count=self.reader.problem_count,
        )


def _str(value) -> str:
    return value if type(value) is str else ""


def _content_text(content) -> str:
    """Text of a message's content items (input_text / output_text; images named)."""
    if type(content) is str:
        return content
    if type(content) is not list:
        return ""
    parts = []
    for block in content:
        if type(block) is not dict:
            continue
        kind = block.get("type")
        if kind in ("input_text", "output_text", "text") and type(block.get("text")) is str:
            parts.append(block["text"])
        elif kind in ("input_image", "image"):
            parts.append("[image]")
    return "\n".join(parts)


def _output_text(output) -> tuple[str, int | None, bool | None]:
    """(text, exit code, success) of a tool output: a string (plain, or JSON holding `output` and
    `metadata.exit_code`), a list of content items, or (older builds) an object {content, success}."""
    success = None
    if type(output) is dict:
        success = output.get("success") if type(output.get("success")) is bool else None
        output = output.get("content") if "content" in output else output.get("output")
    if type(output) is list:
        return _content_text(output), None, success
    if type(output) is not str:
        return "", None, success
    if output.startswith("{") and '"output"' in output[:200]:
        try:
            data = orjson.loads(output)
        except orjson.JSONDecodeError:
            return output, None, success
        if type(data) is dict and type(data.get("output")) is str:
            meta = data.get("metadata") if type(data.get("metadata")) is dict else {}
            code = meta.get("exit_code")
            return data["output"], code if type(code) is int else None, success
    return output, None, success
