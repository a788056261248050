"""Builders for small Claude Code and Pi records shaped like the real tools write them."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

_ids = itertools.count(1)


def uid(n: int | None = None) -> str:
    return f"00000000-0000-4000-8000-{(n if n is not None else next(_ids)):012d}"


def envelope(kind: str, uuid: str, parent: str | None, *, session="s-1", cwd="/work/proj", ts=None, **extra):
    rec = {
        "parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd,
        "sessionId": session, "version": "2.1.38", "gitBranch": "main", "type": kind,
        "uuid": uuid, "timestamp": ts or "2026-02-10T21:11:56.846Z",
    }
    rec.update(extra)
    return rec


def prompt(uuid, parent, text, **kw):
    return envelope("user", uuid, parent, message={"role": "user", "content": text}, **kw)


def tool_use(uuid, parent, msg_id, call_id, name, inp, **kw):
    return envelope("assistant", uuid, parent, requestId="req_1", message={
        "model": "claude-opus-4-6", "id": msg_id, "type": "message", "role": "assistant",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": inp}],
        "usage": {"input_tokens": 1, "output_tokens": 1}}, **kw)


def say(uuid, parent, msg_id, text, **kw):
    return envelope("assistant", uuid, parent, requestId="req_1", message={
        "model": "claude-opus-4-6", "id": msg_id, "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": text}], "usage": {"input_tokens": 1, "output_tokens": 1}}, **kw)


def tool_result(uuid, parent, call_id, text, *, is_error=False, extra=None, **kw):
    rec = envelope("user", uuid, parent, message={"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": is_error}]}, **kw)
    if extra is not None:
        rec["toolUseResult"] = extra
    return rec


def pi_header(sid="019e0000-0000-7000-8000-000000000001", cwd="/work/proj", version=3):
    rec = {"type": "session", "id": sid, "timestamp": "2026-05-12T01:02:27.657Z", "cwd": cwd}
    if version is not None:
        rec["version"] = version
    return rec


def pi_entry(entry_id, parent, message=None, **extra):
    rec = {"type": "message" if message is not None else extra.pop("type"), "id": entry_id,
           "parentId": parent, "timestamp": "2026-05-12T01:02:28.000Z"}
    if message is not None:
        rec["message"] = message
    rec.update(extra)
    return rec


def pi_user(text):
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1778547747671}


def pi_assistant(text="", calls=(), stop="stop"):
    content = [{"type": "text", "text": text}] if text else []
    content += [{"type": "toolCall", "id": cid, "name": name, "arguments": args} for cid, name, args in calls]
    return {"role": "assistant", "content": content, "model": "m-1", "provider": "p", "stopReason": stop,
            "usage": {"input": 1, "output": 1}, "timestamp": 1778547747721}


def pi_result(call_id, name, text, is_error=False):
    return {"role": "toolResult", "toolCallId": call_id, "toolName": name,
            "content": [{"type": "text", "text": text}], "isError": is_error, "timestamp": 1778547747800}


def assert_gone(pid: int) -> None:
    """The process is dead (reaped, or a zombie waiting for its reaper)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.02)
    pytest.fail(f"process {pid} is still running")
