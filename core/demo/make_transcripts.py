"""Writes the demo workspace's transcripts: `python -m core.demo.make_transcripts`.

Four weeks of a small team working on the release-desk demo project, in the formats the real tools
write (Claude Code 2.x JSONL with split assistant lines and toolUseResult; Pi session v3 with an
id/parentId tree and toolCall/toolResult). The sessions are written by us, for the demo; a test
keeps the committed files equal to this script's output.
"""

from __future__ import annotations

import json
import sys
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

CWD = "/home/dev/release-desk"
OUT = Path(__file__).resolve().parent / "workspace_transcripts"

# (prompt, [(command, stdout or REJECTED, is_error)], answer)
Episode = tuple[str, list[tuple[str, str, bool]], str]

CHECK_OK = "ruff: all checks passed\nmypy: Success: no issues found in 41 source files"
DEPLOY_OK = "building release-desk:2026.11 ... done\npushing image ... done\nrollout: 3/3 pods ready"
TESTS_OK = "........................................ [100%]\n42 passed in 3.18s"
REJECTED = None
"""A call the person refused (Claude Code's "Do you want to proceed?" answered no)."""
REJECTION = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
             "edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to "
             "tell you how to proceed.")
TESTS_FAIL = "FAILED tests/test_changelog.py::test_groups_by_type - AssertionError\n1 failed, 41 passed in 3.30s"

CLAUDE_SESSIONS: list[tuple[str, list[Episode]]] = [
    ("2026-11-02T09:14:05", [
        ("can you list the open bugs in the tracker",
         [("gh issue list --label bug --state open", "14  Changelog groups fixes under Features  bug\n"
                                                      "11  Preview URL missing from PR comment  bug", False)],
         "Two open bugs: #14 (changelog grouping) and #11 (preview URL in PR comments)."),
        ("take the build live",
         [("make check", CHECK_OK, False), ("make deploy", REJECTED, True)],
         "Checks passed; I stopped before `make deploy` as you asked. Say when and I'll roll it out."),
        ("run the tests before I merge",
         [("pytest -q", TESTS_OK, False)],
         "All 42 tests pass; safe to merge."),
    ]),
    ("2026-11-09T14:02:41", [
        ("take the build live please",
         [("make check", CHECK_OK, False), ("make deploy", REJECTED, True)],
         "Checks are green; the deploy waits for your go."),
        ("show me issue 14",
         [("gh issue view 14", "Changelog groups fixes under Features\nopen • 2 comments\n\n"
                               "Fix commits end up in the Features section.", False)],
         "#14: fix commits land under Features in the changelog; 2 comments."),
        ("cut a new release",
         [("make release VERSION=0.3.1", "changelog updated\nversion bumped to 0.3.1", False),
          ("git tag v0.3.1", "", False)],
         "Release 0.3.1 is cut and tagged."),
    ]),
    ("2026-11-16T10:45:12", [
        ("can you take the build live",
         [("make check", CHECK_OK, False), ("make deploy", REJECTED, True)],
         "Checks green. You declined the deploy, so nothing was rolled out."),
        ("cut a new release for friday",
         [("make release VERSION=0.3.2", "changelog updated\nversion bumped to 0.3.2", False),
          ("git tag v0.3.2", "", False)],
         "0.3.2 is cut and tagged for Friday."),
        ("run the tests and fix what fails",
         [("pytest -q", TESTS_FAIL, True), ("pytest -q", TESTS_OK, False)],
         "One changelog test failed; fixed the grouping and all 42 pass now."),
    ]),
]

PI_SESSIONS: list[tuple[str, list[Episode]]] = [
    ("2026-11-20T16:30:00", [
        ("take the build live",
         [("make check", CHECK_OK, False), ("make deploy", DEPLOY_OK, False)],
         "Shipped. Rollout complete."),
        ("what bugs are open in the tracker",
         [("gh issue list --label bug --state open", "11  Preview URL missing from PR comment  bug", False)],
         "Just #11 is still open."),
        ("run the tests before I merge",
         [("pytest -q", TESTS_OK, False)],
         "42 passed."),
    ]),
]


def _ids(seed: str):
    n = 0
    while True:
        n += 1
        yield str(uuid.uuid5(uuid.NAMESPACE_URL, f"kitsoki-miner-demo/{seed}/{n}"))


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def claude_session(start: str, episodes: list[Episode]) -> list[dict]:
    ids = _ids(start)
    session = next(ids)
    clock = datetime.fromisoformat(start).replace(tzinfo=timezone.utc)
    records: list[dict] = []
    parent = None

    def add(kind: str, **body) -> str:
        nonlocal parent, clock
        clock += timedelta(seconds=7, milliseconds=431)
        me = next(ids)
        records.append({"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": CWD,
                        "sessionId": session, "version": "2.1.38", "gitBranch": "main", "type": kind,
                        "uuid": me, "timestamp": _iso(clock), **body})
        parent = me
        return me

    for ask, calls, answer in episodes:
        add("user", message={"role": "user", "content": ask})
        for command, stdout, is_error in calls:
            msg = f"msg_{next(ids).replace('-', '')[:24]}"
            call = f"toolu_{next(ids).replace('-', '')[:24]}"
            add("assistant", requestId=f"req_{msg[4:]}", message={
                "model": "claude-opus-4-6", "id": msg, "type": "message", "role": "assistant",
                "content": [{"type": "tool_use", "id": call, "name": "Bash",
                             "input": {"command": command, "description": f"Run {command.split()[0]}"}}],
                "stop_reason": "tool_use", "usage": {"input_tokens": 812, "output_tokens": 64}})
            if stdout is REJECTED:
                add("user", message={"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": call, "content": REJECTION, "is_error": True}]},
                    toolUseResult="User rejected tool use")
                continue
            output = stdout if not is_error else f"Exit code 1\n{stdout}"
            add("user", message={"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call, "content": output, "is_error": is_error}]},
                toolUseResult={"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False})
        msg = f"msg_{next(ids).replace('-', '')[:24]}"
        add("assistant", requestId=f"req_{msg[4:]}", message={
            "model": "claude-opus-4-6", "id": msg, "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": answer}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 904, "output_tokens": 38}})
    return records


def pi_session(start: str, episodes: list[Episode]) -> list[dict]:
    ids = _ids(f"pi/{start}")
    clock = datetime.fromisoformat(start).replace(tzinfo=timezone.utc)
    session = str(uuid.uuid5(uuid.NAMESPACE_URL, f"kitsoki-miner-demo/pi/{start}"))
    records: list[dict] = [{"type": "session", "version": 3, "id": session, "timestamp": _iso(clock), "cwd": CWD}]
    parent = None

    def add(message: dict | None = None, **extra) -> None:
        nonlocal parent, clock
        clock += timedelta(seconds=5, milliseconds=113)
        me = next(ids)[:8]
        record = {"type": "message" if message is not None else extra.pop("type"), "id": me, "parentId": parent,
                  "timestamp": _iso(clock)}
        if message is not None:
            message["timestamp"] = int(clock.timestamp() * 1000)
            record["message"] = message
        record.update(extra)
        records.append(record)
        parent = me

    add(type="model_change", provider="anthropic", modelId="claude-sonnet-4-5")
    for ask, calls, answer in episodes:
        add({"role": "user", "content": [{"type": "text", "text": ask}]})
        for command, stdout, is_error in calls:
            call = f"toolu_{next(ids).replace('-', '')[:20]}"
            add({"role": "assistant", "content": [{"type": "toolCall", "id": call, "name": "bash",
                                                   "arguments": {"command": command}}],
                 "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
                 "usage": {"input": 640, "output": 40}, "stopReason": "toolUse"})
            add({"role": "toolResult", "toolCallId": call, "toolName": "bash",
                 "content": [{"type": "text", "text": stdout}], "isError": is_error})
        add({"role": "assistant", "content": [{"type": "text", "text": answer}], "api": "anthropic-messages",
             "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": {"input": 700, "output": 20},
             "stopReason": "stop"})
    return records


def render(records: list[dict]) -> bytes:
    return b"".join(json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode() + b"\n" for r in records)


def files() -> dict[str, bytes]:
    out = {}
    for start, episodes in CLAUDE_SESSIONS:
        records = claude_session(start, episodes)
        out[f"claude/{records[0]['sessionId']}.jsonl"] = render(records)
    for start, episodes in PI_SESSIONS:
        records = pi_session(start, episodes)
        stamp = start.replace(":", "-")
        out[f"pi/{stamp}_{records[0]['id']}.jsonl"] = render(records)
    return out


def write(target: Path = OUT) -> list[Path]:
    written = []
    for rel, data in files().items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT):
        print(path)
