"""A small history of every transcript format, and everything kitsoki-miner makes from it.

`world(fmt)` is a set of transcript files (relative path -> records, or a dict for a JSON side file)
holding, for its format, every record shape the readers take apart, with the prompt repeated in
two sessions so that mining draws a recipe and the proposer stages a draft from it.

`run_everything` runs, in this process, what a user runs on such a history and returns every answer
and the text of every file written: `sessions` (JSON and table), `mine`, `propose`, `proposals`,
`evolve analyze`, `runs projects|coverage|confirm|prepare`, and the language server's answers
(mine status, proposal cards, each proposal with its diff and evidence, lenses, hover).
"""

from __future__ import annotations

import io
import os
import random
import shutil
import string
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson

from core.transcripts.redact import tokens as redact_tokens

CWD = "/home/dev/release-desk"
PROMPT = "take the build live"

# --- the history -------------------------------------------------------------------------------


def _claude(sid: str, day: str, cwd: str) -> dict[str, object]:
    """One Claude Code session (2.1.x) with a subagent: every record type and content block."""
    def env(kind, uuid, parent, **extra):
        rec = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd,
               "sessionId": sid, "version": "2.1.145", "gitBranch": "main", "entrypoint": "cli",
               "type": kind, "uuid": uuid, "timestamp": f"{day}T10:00:{len(uuid) % 60:02d}.000Z",
               "slug": "lexical-painting-whisper"}
        rec.update(extra)
        return rec

    u = [f"{sid[:8]}-0000-4000-8000-{n:012d}" for n in range(20)]
    trunk = [
        {"type": "permission-mode", "permissionMode": "default", "sessionId": sid},
        {"type": "file-history-snapshot", "messageId": u[0], "isSnapshotUpdate": False,
         "snapshot": {"messageId": u[0], "trackedFileBackups": {}, "timestamp": f"{day}T10:00:00.000Z"}},
        env("user", u[0], None, message={"role": "user", "content": PROMPT}, permissionMode="default",
            promptId="p-1"),
        env("attachment", u[1], u[0], attachment={"type": "hook_success", "hookName": "SessionStart",
                                                  "content": "hook said hello"}),
        env("assistant", u[2], u[1], requestId="req_011", message={
            "id": "msg_01A", "type": "message", "role": "assistant", "model": "claude-opus-4-6",
            "content": [{"type": "thinking", "thinking": "check first, then deploy", "signature": "c2ln"}],
            "stop_reason": None, "usage": {"input_tokens": 3, "output_tokens": 5}}),
        env("assistant", u[3], u[2], requestId="req_011", message={
            "id": "msg_01A", "type": "message", "role": "assistant", "model": "claude-opus-4-6",
            "content": [{"type": "text", "text": "Running the checks, then the deploy."}],
            "stop_reason": None, "usage": {"input_tokens": 3, "output_tokens": 5}}),
        env("assistant", u[4], u[3], requestId="req_011", message={
            "id": "msg_01A", "type": "message", "role": "assistant", "model": "claude-opus-4-6",
            "content": [{"type": "tool_use", "id": "toolu_01Check", "name": "Bash",
                         "input": {"command": "make check", "description": "run the checks"}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 3, "output_tokens": 5}}),
        env("user", u[5], u[4], sourceToolAssistantUUID=u[4], sourceToolUseID="toolu_01Check",
            message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01Check",
                                                  "content": "ruff: all checks passed", "is_error": False}]},
            toolUseResult={"stdout": "ruff: all checks passed", "stderr": "", "interrupted": False}),
        env("progress", u[6], u[5], toolUseID="toolu_01Task", parentToolUseID="toolu_01Task",
            data={"type": "agent_progress", "agentId": "a1b2c3d", "prompt": "look at the deploy script"}),
        env("assistant", u[7], u[6], requestId="req_012", message={
            "id": "msg_01B", "type": "message", "role": "assistant", "model": "claude-opus-4-6",
            "content": [{"type": "tool_use", "id": "toolu_01Task", "name": "Task",
                         "input": {"description": "read deploy", "prompt": "look at the deploy script",
                                   "subagent_type": "general-purpose"}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 3, "output_tokens": 5}}),
        env("user", u[8], u[7], message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01Task",
             "content": [{"type": "text", "text": "The script pushes the image.\nagentId: a1b2c3d"}]}]},
            toolUseResult={"agentId": "a1b2c3d", "status": "completed"}),
        env("assistant", u[9], u[8], requestId="req_013", message={
            "id": "msg_01C", "type": "message", "role": "assistant", "model": "claude-opus-4-6",
            "content": [{"type": "tool_use", "id": "toolu_01Deploy", "name": "Bash",
                         "input": {"command": "make deploy"}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 3, "output_tokens": 5}}),
        env("user", u[10], u[9], message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01Deploy", "is_error": True,
             "content": "Exit code 2\nrollout: 2/3 pods ready"}]},
            toolUseResult="Error: Exit code 2"),
        env("user", u[11], u[10], message={"role": "user", "content": [
            {"type": "text", "text": "[Request interrupted by user for tool use]"}]}),
        env("user", u[12], u[11], isMeta=True, message={"role": "user", "content": "<system-reminder>be brief</system-reminder>"}),
        env("user", u[13], u[12], message={"role": "user", "content": "<bash-input>kubectl get pods</bash-input>"}),
        env("user", u[14], u[13], message={"role": "user", "content": "<bash-stdout>web-1 Running</bash-stdout><bash-stderr></bash-stderr>"}),
        env("system", u[15], u[14], subtype="turn_duration", content="took 12s", level="info", durationMs=12000),
        env("assistant", u[16], u[15], requestId="req_014", isApiErrorMessage=True, message={
            "id": "msg_01D", "type": "message", "role": "assistant", "model": "<synthetic>",
            "content": [{"type": "text", "text": "API Error: overloaded"}], "stop_reason": "stop_sequence",
            "usage": {"input_tokens": 0, "output_tokens": 0}}),
        {"type": "queue-operation", "operation": "enqueue", "timestamp": f"{day}T10:01:00.000Z",
         "sessionId": sid, "content": "and tell me when done"},
        {"type": "custom-title", "customTitle": "deploy the release", "sessionId": sid},
        {"type": "ai-title", "aiTitle": "Deploying the release build", "sessionId": sid},
        {"type": "summary", "summary": "Deployed the release build", "leafUuid": u[16]},
        {"type": "last-prompt", "lastPrompt": PROMPT, "leafUuid": u[16], "sessionId": sid},
        {"type": "agent-name", "agentName": "release helper", "sessionId": sid},
        {"type": "pr-link", "prUrl": "https://github.com/o/release-desk/pull/7", "sessionId": sid},
    ]
    agent = [
        env("user", "agent-u0", u[7], isSidechain=True, agentId="a1b2c3d",
            message={"role": "user", "content": "look at the deploy script"}),
        env("assistant", "agent-u1", "agent-u0", isSidechain=True, agentId="a1b2c3d", requestId="req_020", message={
            "id": "msg_01E", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [{"type": "tool_use", "id": "toolu_01Read", "name": "Read",
                         "input": {"file_path": f"{cwd}/scripts/deploy.sh"}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}}),
        env("user", "agent-u2", "agent-u1", isSidechain=True, agentId="a1b2c3d", message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01Read", "content": "docker push release-desk"}]}),
    ]
    slug = "".join(c if c.isalnum() else "-" for c in cwd)
    return {
        f"claude/{slug}/{sid}.jsonl": trunk,
        f"claude/{slug}/{sid}/subagents/agent-a1b2c3d.jsonl": agent,
        f"claude/{slug}/{sid}/subagents/agent-a1b2c3d.meta.json": {"agentType": "general-purpose",
                                                                   "toolUseId": "toolu_01Task"},
    }


def _pi(sid: str, day: str, cwd: str) -> dict[str, object]:
    """One Pi v3 session: header, settings, a branch, tool calls, a shell command, compaction."""
    def entry(eid, parent, kind="message", **extra):
        rec = {"type": kind, "id": eid, "parentId": parent, "timestamp": f"{day}T11:00:{int(eid[-2:], 16) % 60:02d}.000Z"}
        rec.update(extra)
        return rec

    def assistant(content, stop="stop"):
        return {"role": "assistant", "content": content, "api": "openai-completions", "provider": "ollama",
                "model": "qwen3-coder", "responseId": "chatcmpl-9", "responseModel": "qwen3-coder:30b",
                "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                          "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                "stopReason": stop, "timestamp": 1778547747721}

    records = [
        {"type": "session", "version": 3, "id": sid, "timestamp": f"{day}T11:00:00.000Z", "cwd": cwd},
        entry("a0000001", None, "model_change", provider="ollama", modelId="qwen3-coder"),
        entry("a0000002", "a0000001", "thinking_level_change", thinkingLevel="low"),
        entry("a0000003", "a0000002", message={"role": "user", "content": [{"type": "text", "text": PROMPT}],
                                               "timestamp": 1778547747671}),
        entry("a0000004", "a0000003", message=assistant(
            [{"type": "thinking", "thinking": "checks first", "thinkingSignature": "sig"},
             {"type": "text", "text": "Checking, then deploying."},
             {"type": "toolCall", "id": "call_check", "name": "bash", "arguments": {"command": "make check"}}],
            "toolUse")),
        entry("a0000005", "a0000004", message={"role": "toolResult", "toolCallId": "call_check", "toolName": "bash",
                                               "content": [{"type": "text", "text": "ruff: all checks passed"}],
                                               "details": {"exit": 0}, "isError": False, "timestamp": 1778547747800}),
        entry("a0000006", "a0000005", message=assistant(
            [{"type": "toolCall", "id": "functions.bash:1", "name": "bash", "arguments": {"command": "make deploy"}}],
            "toolUse")),
        entry("a0000007", "a0000006", message={"role": "toolResult", "toolCallId": "functions.bash:1", "toolName": "bash",
                                               "content": [{"type": "text", "text": "rollout: 3/3 pods ready"}],
                                               "isError": False, "timestamp": 1778547747900}),
        entry("a0000008", "a0000007", message={"role": "bashExecution", "command": "kubectl get pods",
                                               "output": "web-1 Running", "exitCode": 0, "cancelled": False,
                                               "truncated": False, "timestamp": 1778547748000}),
        entry("a0000009", "a0000008", message=assistant([], "aborted")),
        entry("a000000a", "a0000003", message=assistant([{"type": "text", "text": "an abandoned branch"}])),
        entry("a000000b", "a0000009", "custom_message", customType="note", content="remember the tag",
              display=True),
        entry("a000000c", "a000000b", "custom", customType="ext-state", data={"k": "v"}),
        entry("a000000d", "a000000c", "label", targetId="a0000004", label="deploy step"),
        entry("a000000e", "a000000d", "session_info", name="deploy the release"),
        entry("a000000f", "a000000e", "compaction", summary="Checked and deployed the build.",
              firstKeptEntryId="a0000008", tokensBefore=1200,
              details={"readFiles": [f"{cwd}/Makefile"], "modifiedFiles": []}, fromHook=False),
        entry("a0000010", "a000000f", "branch_summary", fromId="a000000a", summary="tried another way"),
    ]
    name = "--" + cwd.strip("/").replace("/", "-") + "--"
    return {f"pi/{name}/{day}T11-00-00-000Z_{sid}.jsonl": records}


def _codex(sid: str, day: str, cwd: str) -> dict[str, object]:
    """One Codex CLI rollout: session meta, turn context, prompts (item and event), every tool call
    kind with its output, reasoning, an interrupt, a compaction."""
    n = iter(range(60))

    def line(kind, payload):
        return {"timestamp": f"{day}T12:00:{next(n):02d}.000Z", "type": kind, "payload": payload}

    def prompt_pair(text):
        return [line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}),
                line("event_msg", {"type": "user_message", "message": text, "images": []})]

    records = [
        line("session_meta", {"id": sid, "session_id": sid, "timestamp": f"{day}T12:00:00.000Z", "cwd": cwd,
                              "originator": "codex_cli_rs", "cli_version": "0.142.0", "source": "cli",
                              "model_provider": "openai", "base_instructions": {"text": "You are Codex."},
                              "git": {"commit_hash": "4b825dc642cb6eb9a060e54bf8d69288fbee4904", "branch": "main",
                                      "repository_url": "https://github.com/o/release-desk"}}),
        line("turn_context", {"cwd": cwd, "approval_policy": "on-request", "sandbox_policy": {"type": "workspace-write"},
                              "model": "gpt-5-codex", "summary": "auto"}),
        line("response_item", {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "be careful"}]}),
        line("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": f"<environment_context>\n<cwd>{cwd}</cwd>\n</environment_context>"}]}),
        *prompt_pair(PROMPT),
        line("event_msg", {"type": "task_started", "model_context_window": 272000}),
        line("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "checks first"}],
                               "content": None, "encrypted_content": "gAAAA"}),
        line("response_item", {"type": "function_call", "name": "shell", "call_id": "call_check",
                               "arguments": orjson.dumps({"command": ["bash", "-lc", "make check"], "workdir": cwd}).decode()}),
        line("response_item", {"type": "function_call_output", "call_id": "call_check",
                               "output": orjson.dumps({"output": "ruff: all checks passed", "metadata": {"exit_code": 0}}).decode()}),
        line("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": "call_patch", "name": "apply_patch",
                               "input": "*** Begin Patch\n*** Update File: scripts/deploy.sh\n@@\n-a\n+b\n*** End Patch\n"}),
        line("response_item", {"type": "custom_tool_call_output", "call_id": "call_patch", "output": "Success. Updated scripts/deploy.sh"}),
        line("event_msg", {"type": "patch_apply_end", "call_id": "call_patch", "stdout": "ok", "stderr": "", "success": True}),
        line("response_item", {"type": "local_shell_call", "call_id": "call_deploy", "status": "completed",
                               "action": {"type": "exec", "command": ["make", "deploy"], "working_directory": cwd,
                                          "timeout_ms": None, "env": None, "user": None}}),
        line("response_item", {"type": "function_call_output", "call_id": "call_deploy",
                               "output": "Exit code: 0\nWall time: 2 seconds\nOutput:\nrollout: 3/3 pods ready"}),
        line("response_item", {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "rollout status"}}),
        line("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Deployed."}]}),
        line("event_msg", {"type": "agent_message", "message": "Deployed."}),
        line("event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 1}}, "rate_limits": None}),
        line("event_msg", {"type": "task_complete", "last_agent_message": "Deployed."}),
        *prompt_pair("and tag it"),
        line("response_item", {"type": "function_call", "name": "shell_command", "call_id": "call_tag",
                               "arguments": orjson.dumps({"command": "git tag v1"}).decode()}),
        line("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
        line("compacted", {"message": "Checked, patched and deployed the build."}),
    ]
    return {f"codex/sessions/{day.replace('-', '/')}/rollout-{day}T12-00-00-{sid}.jsonl": records}


FORMATS: dict[str, Callable[[str, str, str], dict[str, object]]] = {"claude": _claude, "pi": _pi, "codex": _codex}
SESSION_IDS = {
    "claude": ["7f1c2a3b-0000-4000-8000-00000000c0de", "8e2d3b4c-0000-4000-8000-00000000c0df",
               "9f3e4c5d-0000-4000-8000-00000000c0e0"],
    "pi": ["019e0000-0000-7000-8000-0000000000a1", "019e0000-0000-7000-8000-0000000000a2",
           "019e0000-0000-7000-8000-0000000000a3"],
    "codex": ["0199b000-0000-7000-8000-0000000000b1", "0199b000-0000-7000-8000-0000000000b2",
              "0199b000-0000-7000-8000-0000000000b3"],
}


def world(fmt: str) -> dict[str, object]:
    """Three sessions of one format, a week apart, each asking PROMPT (an ask recurs in three sessions)."""
    files: dict[str, object] = {}
    for sid, day in zip(SESSION_IDS[fmt], ("2026-11-02", "2026-11-09", "2026-11-16")):
        files.update(FORMATS[fmt](sid, day, CWD))
    return files


def write_world(files: dict[str, object], root: Path) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, list):
            path.write_bytes(b"".join((r if isinstance(r, bytes) else orjson.dumps(r)) + b"\n" for r in content))
        else:
            path.write_bytes(orjson.dumps(content))
    return root


# --- fields -------------------------------------------------------------------------------------

STRUCTURAL = frozenset({
    "type", "role", "uuid", "parentUuid", "logicalParentUuid", "leafUuid", "sessionId", "id", "parentId",
    "tool_use_id", "toolCallId", "toolUseID", "parentToolUseID", "sourceToolUseID", "sourceToolAssistantUUID",
    "agentId", "toolUseId", "messageId", "targetId", "fromId", "firstKeptEntryId", "timestamp", "call_id",
    "session_id",
})
"""Keys whose values link records or say what a record is: planted by replacing every occurrence of a
value consistently (so links still hold), one key per case."""


def leaves(value, path=()) -> Iterator[tuple[tuple, str]]:
    """(path, string) of every string in a JSON value, keys excluded."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, (*path, i))


def set_at(value, path: tuple, new):
    for key in path[:-1]:
        value = value[key]
    value[path[-1]] = new


def content_fields(files: dict[str, object]) -> list[tuple[str, tuple]]:
    """(file, path) of every string field that is not structural."""
    out = []
    for rel, content in files.items():
        for path, _ in leaves(content):
            key = next((k for k in reversed(path) if isinstance(k, str)), "")
            if key not in STRUCTURAL:
                out.append((rel, path))
    return out


def structural_keys(files: dict[str, object]) -> list[str]:
    keys = set()
    for content in files.values():
        for path, _ in leaves(content):
            key = next((k for k in reversed(path) if isinstance(k, str)), "")
            if key in STRUCTURAL:
                keys.add(key)
    return sorted(keys)


# --- secrets ------------------------------------------------------------------------------------

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"


def _r(rnd: random.Random, alphabet: str, n: int) -> str:
    return "".join(rnd.choice(alphabet) for _ in range(n))


def _mixed(rnd, alphabet, n):
    return rnd.choice(string.ascii_lowercase) + _r(rnd, alphabet, n - 3) + rnd.choice(string.digits) + rnd.choice(string.ascii_uppercase)


def _bare_aws(rnd) -> str:
    # a key regular enough to pass for an identifier is kept by design (test_redact measures how often)
    while True:
        key = _r(rnd, B64, 40)
        if redact_tokens._aws_bare(redact_tokens._AWS_BARE.match(key)) != key:
            return key


def _password(rnd) -> str:
    return rnd.choice(string.ascii_letters) + rnd.choice(string.digits) + _r(rnd, ALNUM + "!@#%^*_.+~", 12)


# kind -> (make a secret, the text it is planted as). `{s}` is the secret; the rest is its context.
KINDS: dict[str, tuple[Callable[[random.Random], str], str]] = {
    "private-key": (lambda r: "\n".join(_r(r, B64, 64) for _ in range(2)),
                    "-----BEGIN RSA PRIVATE KEY-----\n{s}\n-----END RSA PRIVATE KEY-----"),
    "anthropic-key": (lambda r: "sk-ant-api03-" + _mixed(r, ALNUM + "-_", 93) + "AA", "{s}"),
    "openai-key": (lambda r: "sk-proj-" + _mixed(r, ALNUM + "-_", 120), "{s}"),
    "google-api-key": (lambda r: "AIza" + _r(r, ALNUM + "-_", 35), "{s}"),
    "slack-token": (lambda r: f"xoxb-{_r(r, string.digits, 12)}-{_r(r, string.digits, 13)}-{_r(r, ALNUM, 24)}", "{s}"),
    "slack-webhook": (lambda r: f"T{_r(r, string.ascii_uppercase, 8)}/B{_r(r, string.ascii_uppercase, 8)}/{_r(r, ALNUM, 24)}",
                      "https://hooks.slack.com/services/{s}"),
    "stripe-key": (lambda r: "sk_live_" + _r(r, ALNUM, 40), "{s}"),
    "huggingface-token": (lambda r: "hf_" + _r(r, string.ascii_letters, 34), "{s}"),
    "npm-token": (lambda r: "npm_" + _r(r, ALNUM, 36), "{s}"),
    "aws-access-key": (lambda r: "AKIA" + _r(r, string.ascii_uppercase + string.digits, 16), "{s}"),
    "aws-secret-key": (_bare_aws, "aws_secret_access_key = {s}"),
    "aws-secret-key-bare": (_bare_aws, "{s}"),
    "github-token": (lambda r: "ghp_" + _r(r, ALNUM, 36), "{s}"),
    "bearer-token": (lambda r: _mixed(r, ALNUM + "-._~", 40), "Authorization: Bearer {s}"),
    "jwt": (lambda r: f"eyJ{_r(r, ALNUM, 20)}.eyJ{_r(r, ALNUM, 30)}.{_r(r, ALNUM + '-_', 43)}", "{s}"),
    "basic-auth": (_password, "curl -u admin:{s} https://ci.internal/api"),
    "url-credential": (_password, "postgres://app:{s}@db.internal:5432/app"),
    "password": (_password, "password={s}"),
    "mysql-password": (_password, "mysql -uroot -p{s} app"),
    "secret": (_password, "api_key = '{s}'"),
}
TOKEN_KINDS = [k for k, (_, ctx) in KINDS.items() if ctx == "{s}"]
"""Kinds that are secrets on their own, with no context around them (what an id can be replaced by)."""


def plant_content(files: dict[str, object], kind: str, seed: int) -> dict[str, tuple]:
    """Append a fresh secret of `kind`, in its context, to every content field. Returns secret -> field."""
    rnd = random.Random(seed)
    make, context = KINDS[kind]
    planted = {}
    for rel, path in content_fields(files):
        content = files[rel]
        old = content
        for key in path:
            old = old[key]
        secret = make(rnd)
        set_at(content, path, f"{old} {context.format(s=secret)}")
        planted[secret] = (rel, path)
    return planted


def plant_structural(files: dict[str, object], key: str, seed: int) -> dict[str, tuple]:
    """Replace every value of `key` with a secret token, the same value always by the same token."""
    rnd = random.Random(seed)
    by_value: dict[str, str] = {}
    planted = {}
    for rel, content in files.items():
        for path, old in list(leaves(content)):
            if next((k for k in reversed(path) if isinstance(k, str)), "") != key:
                continue
            if old not in by_value:
                kind = TOKEN_KINDS[(seed + len(by_value)) % len(TOKEN_KINDS)]
                by_value[old] = KINDS[kind][0](rnd)
                planted[by_value[old]] = (rel, path)
            set_at(content, path, by_value[old])
    # references to ids inside text (a Claude `agentId: <id>` tail) follow the id
    for rel, content in files.items():
        for path, old in list(leaves(content)):
            for value, secret in by_value.items():
                if len(value) >= 6 and value in old and old != secret:
                    set_at(content, path, old.replace(value, secret))
                    old = old.replace(value, secret)
    return planted


def leaked(secret: str, text: str, window: int = 12) -> bool:
    """The secret, or any `window`-character piece of it, is in `text`."""
    if secret in text:
        return True
    pieces = {secret[i:i + window] for i in range(0, max(1, len(secret) - window + 1), 3)}
    return any(p in text for p in pieces if len(p) == window and p.strip())


# --- everything a user runs ---------------------------------------------------------------------


def _cli(argv: list[str]) -> tuple[int, str]:
    from server.cli import build_parser, run_mine, run_sessions
    from server.cli_evolve import run_evolve
    from server.cli_proposals import run_command
    from server.cli_runs import run_runs

    args = build_parser().parse_args(argv)
    run = {"sessions": run_sessions, "mine": run_mine, "evolve": run_evolve, "runs": run_runs}.get(args.command, run_command)
    out, err = io.StringIO(), io.StringIO()
    code = run(args, out=out, err=err)
    return code, out.getvalue() + "\n" + err.getvalue()


def prepare_workspace(root: Path) -> Path:
    """The demo's kitsoki workspace, without its transcripts."""
    from core.demo.walkthrough import WORKSPACE

    ws = root / "release-desk"
    shutil.copytree(WORKSPACE, ws)
    # A secret planted in a session's `cwd` changes the folder it recorded: every folder is named this
    # workspace's, so each planted world is mined whole (which sessions belong is tests/test_scope.py's).
    config = ws / ".kitsoki.yaml"
    config.write_text(config.read_text().replace("mining:\n", "mining:\n  project_paths: [/]\n", 1))
    return ws


def run_everything(root: Path, transcripts: Path, *, between_passes: Callable[[], None] | None = None) -> dict[str, str]:
    """Every answer (command -> printed text, and "<command> (exit)" -> its exit code) and every file
    written (path -> text). `between_passes` runs after the first mining pass (a file that grows)."""
    ws = prepare_workspace(root)
    workdir = root / "runs-workdir"
    home = root / "home"
    home.mkdir(exist_ok=True)
    answers: dict[str, str] = {}
    saved = {k: os.environ.get(k) for k in ("HOME", "XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "PI_CODING_AGENT_DIR", "CODEX_HOME")}
    os.environ.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    for k in ("CLAUDE_CONFIG_DIR", "PI_CODING_AGENT_DIR", "CODEX_HOME"):
        os.environ.pop(k, None)
    try:
        t = str(transcripts)
        for argv in (["mine", "--repo", str(ws), "--dir", t, "--json", "--workers", "1"],
                     ["mine", "--repo", str(ws), "--dir", t, "--workers", "1", "--live"],
                     ["mine", "--repo", str(ws), "--dir", t, "--workers", "1", "--live", "--json"],
                     ["sessions", "--dir", t, "--json", "--workers", "1"], ["sessions", "--dir", t, "--workers", "1"],
                     ["propose", "--repo", str(ws), "--json"], ["proposals", "--repo", str(ws), "--json"],
                     ["proposals", "--repo", str(ws)],
                     ["evolve", "analyze", "--repo", str(ws), "--transcripts", t, "--json"],
                     ["runs", "projects", "--dir", t, "--json"]):
            name = " ".join(a for a in argv if not a.startswith("/"))
            code, text = _cli(argv)
            answers[name], answers[f"{name} (exit)"] = text, str(code)
            if argv[0] == "mine" and "--live" not in argv and between_passes is not None:
                between_passes()
        projects = _json_head(answers["runs projects --dir --json"]) or {}
        for entry in (projects.get("projects") or [])[:1]:
            w = ["--workdir", str(workdir)]
            code, text = _cli(["runs", "coverage", entry["project"], *w, "--dir", t, "--json"])
            answers["runs coverage"], answers["runs coverage (exit)"] = text, str(code)
            digest = _find(text, "digest")
            if code == 0 and digest:
                for verb, more in (("confirm", ["--digest", digest]), ("prepare", ["--dir", t, "--workers", "1"])):
                    code, text = _cli(["runs", verb, *w, *more, "--json"])
                    answers[f"runs {verb}"], answers[f"runs {verb} (exit)"] = text, str(code)
        answers.update(_server_answers(ws))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    for base in (ws / ".artifacts", workdir, home):
        for path in sorted(base.rglob("*")) if base.exists() else ():
            if path.is_file() and not path.is_symlink():
                answers[str(path)] = path.read_bytes().decode("utf-8", "replace")
    return answers


def _json_head(text: str):
    """The JSON document a command printed (before what it wrote to stderr)."""
    head = text.rsplit("\n", 1)[0] if text.endswith("\n") else text
    for cut in (len(head), head.rfind("\n}") + 2):
        try:
            return orjson.loads(head[:cut])
        except orjson.JSONDecodeError:
            continue
    return None


def _find(text: str, key: str):
    stack = [_json_head(text)]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get(key), str):
                return item[key]
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def _server_answers(ws: Path) -> dict[str, str]:
    """What the language server answers about the workspace: status, cards, each proposal, lenses, hover."""
    from lsprotocol import types

    from core.sidecar import WorkspaceSidecar
    from server.lsp import KitsokiServer, hover_impl, lenses_impl, mine_status_impl, proposal_impl, proposals_impl

    sidecar = WorkspaceSidecar(ws, watch=False, mining=False)
    sidecar.start()
    try:
        server = KitsokiServer()
        server.sidecars[sidecar.workspace] = sidecar
        cards = proposals_impl(server, {})
        out = {"server mineStatus": _dump(mine_status_impl(server, {})), "server proposals": _dump(cards)}
        for card in _all_dicts(cards):
            if isinstance(card.get("id"), str) and "title" in card:
                out[f"server proposal {card['id']}"] = _dump(proposal_impl(server, {"id": card["id"]}))
        for doc in [ws / ".kitsoki.yaml", *sorted((ws / "stories").rglob("app.yaml"))]:
            ident = types.TextDocumentIdentifier(uri=doc.as_uri())
            lenses = lenses_impl(server, types.CodeLensParams(text_document=ident))
            out[f"server lenses {doc.name}"] = _dump(lenses)
            for lens in lenses:
                hover = hover_impl(server, types.HoverParams(text_document=ident, position=lens.range.start))
                out[f"server hover {doc.name}:{lens.range.start.line}"] = _dump(hover)
        return out
    finally:
        sidecar.stop()


def _all_dicts(value) -> Iterator[dict]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _dump(value) -> str:
    try:
        from lsprotocol import converters

        return orjson.dumps(converters.get_converter().unstructure(value), default=str).decode()
    except Exception:  # noqa: BLE001 - a plain value (dict/list) needs no converter
        return orjson.dumps(value, default=str).decode()
