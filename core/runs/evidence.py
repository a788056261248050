"""Evidence: each transcript line rendered as readable text, in physical source order.

One piece per conversational record (a prompt, a response with its tool calls, a tool result, a
compaction summary), labelled with its file and line. Records that carry no conversation (headers,
snapshots, progress, model changes), malformed, blank and oversized lines are not evidence: each is
accounted in run.json as an omission with its reason, never silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import orjson

from core.runs.model import FileAccount, Omission
from core.transcripts.display import display_path, real_path
from core.transcripts.lines import LineReader
from core.transcripts.redact import redact_text, redact_value


@dataclass
class _AllProblems(LineReader):
    """A LineReader that keeps the kind of every problem (not only the first 200)."""

    kinds: dict = field(default_factory=dict)

    def problem(self, kind, line, detail=""):
        super().problem(kind, line, detail)
        self.kinds.setdefault(line, getattr(kind, "value", str(kind)))


def _json(value) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except orjson.JSONEncodeError:  # nested past what orjson writes (255 levels), though it parsed
        return "[a value nested too deeply to show]"


def _blocks(content) -> list[str]:
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return [_json(content)]
    out = []
    for block in content:
        if not isinstance(block, dict):
            out.append(block if isinstance(block, str) else _json(block))
            continue
        kind = block.get("type")
        if kind == "text":
            out.append(str(block.get("text", "")))
        elif kind == "thinking":
            out.append("[thinking]\n" + str(block.get("thinking", "")))
        elif kind == "redacted_thinking":
            out.append("[thinking withheld by the provider]")
        elif kind == "tool_use":
            out.append(f"[tool call {block.get('name')} id={block.get('id')}] {_json(block.get('input'))}")
        elif kind == "toolCall":
            out.append(f"[tool call {block.get('name')} id={block.get('id')}] {_json(block.get('arguments'))}")
        elif kind == "tool_result":
            flag = " error" if block.get("is_error") else ""
            out.append(f"[tool result{flag} for {block.get('tool_use_id')}]\n" + "\n".join(_blocks(block.get("content"))))
        elif kind == "image":
            src = block.get("source") if isinstance(block.get("source"), dict) else block
            data = src.get("data") or ""
            out.append(f"[image {src.get('media_type') or src.get('mimeType') or ''}: {len(data)} characters of data not shown]")
        else:
            out.append(f"[{kind}] {_json({k: v for k, v in block.items() if k != 'type'})}")
    return out


def render(fmt: str, rec: dict) -> tuple[str | None, str]:
    """(text, kind): text None when the record is not conversational (kind says what it is)."""
    kind = rec.get("type")
    stamp = rec.get("timestamp")
    head = f"[{stamp}] " if isinstance(stamp, str) else ""
    if fmt == "claude":
        if kind in ("user", "assistant") and isinstance(rec.get("message"), dict):
            msg = rec["message"]
            role = msg.get("role") or kind
            tags = [t for t, on in (("subagent", rec.get("isSidechain")), ("meta", rec.get("isMeta"))) if on]
            body = "\n".join(_blocks(msg.get("content")))
            return f"{head}{role}{' (' + ', '.join(tags) + ')' if tags else ''}:\n{body}", kind
        if kind == "system" and rec.get("content"):
            return f"{head}system ({rec.get('subtype') or 'note'}):\n{rec.get('content')}", kind
        if kind == "summary" and rec.get("summary"):
            return f"summary:\n{rec['summary']}", kind
        return None, f"metadata:{kind}"
    if fmt == "codex":
        return _render_codex(rec, head)
    if kind == "message" and isinstance(rec.get("message"), dict):
        msg = rec["message"]
        role = msg.get("role")
        if role == "toolResult":
            flag = " error" if msg.get("isError") else ""
            body = "\n".join(_blocks(msg.get("content")))
            return f"{head}tool result{flag} ({msg.get('toolName')}, {msg.get('toolCallId')}):\n{body}", kind
        if role == "bashExecution":
            return f"{head}shell (by the person): {msg.get('command')}\n{msg.get('output', '')}", kind
        return f"{head}{role}:\n" + "\n".join(_blocks(msg.get("content"))), kind
    if kind in ("compaction", "branch_summary") and rec.get("summary"):
        return f"{head}{kind}:\n{rec['summary']}", kind
    if kind == "custom_message" and rec.get("content"):
        return f"{head}note ({rec.get('customType')}):\n" + "\n".join(_blocks(rec.get("content"))), kind
    return None, f"metadata:{kind}"


def _render_codex(rec: dict, head: str) -> tuple[str | None, str]:
    """A Codex rollout line: the response items (what went to and came from the model) and the
    compactions are evidence; events repeat them (user_message, agent_message) or are bookkeeping."""
    kind = rec.get("type")
    p = rec.get("payload") if isinstance(rec.get("payload"), dict) else {}
    inner = p.get("type")
    if kind == "response_item":
        if inner == "message":
            return f"{head}{p.get('role')}:\n" + "\n".join(_codex_blocks(p.get("content"))), kind
        if inner == "function_call":
            args = p.get("arguments")
            return f"{head}[tool call {p.get('name')} id={p.get('call_id')}] {args if type(args) is str else _json(args)}", kind
        if inner == "custom_tool_call":
            return f"{head}[tool call {p.get('name')} id={p.get('call_id')}]\n{p.get('input')}", kind
        if inner == "local_shell_call":
            action = p.get("action") if isinstance(p.get("action"), dict) else {}
            return f"{head}[tool call local_shell id={p.get('call_id')}] {_json(action.get('command'))}", kind
        if inner in ("function_call_output", "custom_tool_call_output"):
            out = p.get("output")
            text = out if isinstance(out, str) else "\n".join(_codex_blocks(out)) if isinstance(out, list) else _json(out)
            return f"{head}[tool result for {p.get('call_id')}]\n{text}", kind
        if inner == "reasoning":
            summary = [s.get("text", "") for s in p.get("summary") or [] if isinstance(s, dict)]
            return (f"{head}[thinking]\n" + "\n".join(map(str, summary)), kind) if any(summary) else (None, "metadata:reasoning")
        if inner == "web_search_call":
            return f"{head}[web search] {_json(p.get('action'))}", kind
        return None, f"metadata:response_item/{inner}"
    if kind == "compacted" and p.get("message"):
        return f"{head}compaction:\n{p['message']}", kind
    if kind == "event_msg" and inner == "turn_aborted":
        return f"{head}[turn aborted: {p.get('reason')}]", kind
    return None, f"metadata:{kind}" + (f"/{inner}" if kind == "event_msg" else "")


def _codex_blocks(content) -> list[str]:
    if isinstance(content, str):
        return [content]
    out = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            out.append(block["text"])
        elif block.get("type") in ("input_image", "image"):
            url = block.get("image_url") or ""
            out.append(f"[image: {len(url)} characters of data not shown]")
    return out


def _omit(omitted: list[Omission], line: int, reason: str) -> None:
    last = omitted[-1] if omitted else None
    if last is not None and last.reason == reason and last.last_line == line - 1:
        last.last_line = line
    else:
        omitted.append(Omission(first_line=line, last_line=line, reason=reason))


def _redacted_record(fmt: str, rec):
    """The record with every value redacted where it stands (core/transcripts/redact.redact_value),
    before rendering: a rule's context (a keyword, a tab, a quote before the value) is whole there, and
    JSON-escaped in the rendered text (`\\t`, `\\n`). A Codex call's `arguments`, a JSON string, is
    decoded first for the same reason. The rendered text is redacted again after."""
    if type(rec) is not dict:
        return rec
    if fmt == "codex" and type(rec.get("payload")) is dict and type(rec["payload"].get("arguments")) is str:
        try:
            decoded = orjson.loads(rec["payload"]["arguments"])
        except orjson.JSONDecodeError:
            decoded = None
        if type(decoded) in (dict, list):
            rec = {**rec, "payload": {**rec["payload"], "arguments": decoded}}
    return redact_value(rec)


def file_pieces(session: str, fmt: str, path: Path, *, redact: bool = True, account: FileAccount | None = None):
    """Yield (line, text) evidence of one file in physical order; fill `account` with the rest."""
    account = account or FileAccount(session=session, file=display_path(path))
    reader = _AllProblems(Path(path))
    expected = 1
    for lineno, rec in reader:
        for missing in range(expected, lineno):
            _omit(account.omitted, missing, reader.kinds.get(missing, "blank"))
        expected = lineno + 1
        if redact:
            rec = _redacted_record(fmt, rec)
        text, kind = render(fmt, rec)
        if text is None:
            _omit(account.omitted, lineno, redact_text(kind) if redact else kind)  # kind names the record's type
            continue
        account.evidence_records += 1
        yield lineno, (redact_text(text) if redact else text) + "\n"
    for missing in range(expected, reader.accounting.lines_read + 1):
        _omit(account.omitted, missing, reader.kinds.get(missing, "blank"))
    account.lines_read = reader.accounting.lines_read
    account.malformed = reader.accounting.malformed
    account.bytes_read = reader.end_offset


def session_pieces(session: str, fmt: str, files: list[str], *, redact: bool = True, accounts: list | None = None):
    """Yield (file, line, text) for a whole session: its trunk, then its subagent files."""
    for f in files:
        account = FileAccount(session=session, file=f)
        if accounts is not None:
            accounts.append(account)
        # `f` is a display path (core/transcripts/display.py): the packets name it, the file is found again
        for line, text in file_pieces(session, fmt, real_path(f), redact=redact, account=account):
            yield f, line, text


def write_excerpt(session: str, fmt: str, files: list[str], out: str, redact: bool,
                  root: str | None = None) -> list[dict]:
    """Worker job: one session's evidence as JSONL at `out` (0600); returns its file accounts. The
    folder of `out` is reached from `root` (the workdir) without following a link (core.statefs)."""
    import os

    from core import statefs

    accounts: list[FileAccount] = []
    dir_fd, name = statefs.dir_of(out, root=root)
    try:
        tmp = name + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600, dir_fd=dir_fd)
        with os.fdopen(fd, "wb") as fh:
            for f, line, text in session_pieces(session, fmt, files, redact=redact, accounts=accounts):
                fh.write(orjson.dumps({"s": session, "f": f, "l": line, "t": text}) + b"\n")
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    return [a.model_dump(mode="json") for a in accounts]
