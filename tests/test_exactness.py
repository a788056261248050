"""Transcript facts the readers got wrong on real held-out histories (issue 23 item 8), each on a file
shaped like the real one: what `sessions --json` reports must be what the file says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from builders import envelope, prompt, say, uid
from conftest import jsonl
from core.transcripts.claude import read_claude_session
from core.transcripts.codex import read_codex_session
from core.transcripts.discover import discover
from core.transcripts.ingest import scan

REPO = Path(__file__).resolve().parent.parent
SID = "019e1c6b-6b4c-7f52-9b7a-3a7d96c0faac"


def _line(kind: str, payload: dict, ts: str = "2026-05-12T13:45:00Z") -> dict:
    return {"timestamp": ts, "type": kind, "payload": payload}


def _rollout(home: Path, sid: str = SID, extra: list[dict] = (), source="vscode") -> Path:
    path = home / "sessions" / "2026" / "05" / "12" / f"rollout-2026-05-12T21-41-02-{sid}.jsonl"
    lines = [_line("session_meta", {"id": sid, "timestamp": "2026-05-12T13:41:02Z", "cwd": "/work/proj",
                                    "originator": "Codex Desktop", "cli_version": "0.130.0", "source": source}),
             _line("response_item", {"type": "message", "role": "user",
                                     "content": [{"type": "input_text", "text": "design the pantheon"}]}),
             _line("event_msg", {"type": "user_message", "message": "design the pantheon"}),
             *extra]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines))
    return path


ABORT_TEXT = ("<turn_aborted>\nThe user interrupted the previous turn on purpose. Any running unified exec processes "
              "may still be running in the background.\n</turn_aborted>")


def _interrupt() -> list[dict]:
    """How 0.98+ records one interrupt: the model's copy as a user item, then the event."""
    return [_line("response_item", {"type": "message", "role": "user",
                                    "content": [{"type": "input_text", "text": ABORT_TEXT}]}),
            _line("event_msg", {"type": "turn_aborted", "reason": "interrupted"})]


def test_a_codex_interrupt_written_twice_counts_once(tmp_path):
    path = _rollout(tmp_path / ".codex", extra=_interrupt() + _interrupt() + _interrupt())
    session = read_codex_session(path)
    assert session.interrupts == 3
    assert [t.reason for t in session.turns if t.reason == "interrupt-copy"] == ["interrupt-copy"] * 3
    [summary] = scan(discover(None, [path]), workers=1).sessions
    assert summary.interrupts == 3


def test_an_older_rollout_with_only_the_item_still_counts_its_interrupt(tmp_path):
    path = _rollout(tmp_path / ".codex", extra=_interrupt()[:1])
    assert read_codex_session(path).interrupts == 1


def _spawn(call: str, thread: str, nickname: str) -> list[dict]:
    return [_line("response_item", {"type": "function_call", "name": "spawn_agent", "call_id": call,
                                    "arguments": json.dumps({"agent_type": "default", "message": "audit the skills"})}),
            _line("event_msg", {"type": "collab_agent_spawn_end", "call_id": call, "sender_thread_id": SID,
                                "new_thread_id": thread, "new_agent_nickname": nickname, "new_agent_role": "default",
                                "prompt": "audit the skills"}),
            _line("response_item", {"type": "function_call_output", "call_id": call,
                                    "output": json.dumps({"agent_id": thread, "nickname": nickname})})]


def test_a_codex_parent_counts_the_threads_it_spawned_and_each_child_is_a_programs(tmp_path):
    home = tmp_path / ".codex"
    children = ["019e1c6f-7141-7f40-8c27-a49f47a2b526", "019e1c78-cb52-7a83-adbf-db3295db7f86"]
    parent = _rollout(home, extra=_spawn("call_1", children[0], "Russell") + _spawn("call_2", children[1], "Bernoulli"))
    for child in children:
        _rollout(home, sid=child, source={"subagent": {"thread_spawn": {"parent_thread_id": SID, "depth": 1,
                                                                        "agent_nickname": "Russell"}}})
    session = read_codex_session(parent)
    assert [s.agent_id for s in session.subagents] == children
    assert [s.tool_use_id for s in session.subagents] == ["call_1", "call_2"]
    report = {s.id: s for s in scan(discover(None, [home]), workers=1).sessions}
    assert report[SID].subagents == 2 and not report[SID].agent_session and report[SID].human_prompts == 1
    for child in children:  # the brief its parent wrote is no person's prompt
        assert report[child].agent_session and report[child].human_prompts == 0


def test_an_older_codex_parent_without_spawn_events_counts_answered_spawn_calls(tmp_path):
    spawn = [line for line in _spawn("call_1", "019e1c6f-7141-7f40-8c27-a49f47a2b526", "Russell")
             if line["payload"]["type"] != "collab_agent_spawn_end"]
    failed = [_line("response_item", {"type": "function_call", "name": "spawn_agent", "call_id": "call_2",
                                      "arguments": "{}"}),
              _line("response_item", {"type": "function_call_output", "call_id": "call_2",
                                      "output": {"content": "too many agents", "success": False}})]
    assert len(read_codex_session(_rollout(tmp_path / ".codex", extra=spawn + failed)).subagents) == 1


def test_codex_thread_names_are_titles_and_the_index_is_no_session(tmp_path):
    home = tmp_path / ".codex"
    named = _rollout(home)
    renamed = _rollout(home, sid="019e1c11-76eb-74f2-bfcf-02fd9932b87e", extra=[
        _line("event_msg", {"type": "thread_name_updated", "thread_id": "019e1c11-76eb-74f2-bfcf-02fd9932b87e",
                            "thread_name": "检查记忆"})])
    (home / "session_index.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [
        {"id": SID, "thread_name": "Design pantheon", "updated_at": "2026-05-12T13:42:00Z"},
        {"id": SID, "thread_name": "生成奥林匹斯 skill 映射", "updated_at": "2026-05-12T14:00:00Z"}]))
    (home / "history.jsonl").write_text(json.dumps({"session_id": SID, "ts": 1778600000, "text": "design"}) + "\n")
    assert read_codex_session(named).title == "生成奥林匹斯 skill 映射"  # the last rename
    assert read_codex_session(renamed).title == "检查记忆"  # from the rollout itself
    report = scan(discover(None, [home]), workers=1)
    assert sorted(Path(s.path).name for s in report.sessions) == sorted([named.name, renamed.name])


def test_claude_and_codex_prompt_histories_are_no_sessions(tmp_path):
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "history.jsonl").write_text(json.dumps(
        {"display": "add a health check", "pastedContents": {}, "timestamp": 1778600000000,
         "project": "/work/proj", "sessionId": "s-1"}) + "\n")
    done = subprocess.run([sys.executable, "-m", "server.cli", "sessions", "--dir", str(tmp_path), "--json"],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sessions"] == []


def test_a_codex_refusal_wrapped_in_a_failed_exec_is_the_persons(tmp_path):
    cmd = "/bin/zsh -lc 'docker build -f react-remote/Dockerfile -t " + "x" * 200 + "'"
    calls = [
        _line("response_item", {"type": "function_call", "name": "exec_command", "call_id": "c1",
                                "arguments": json.dumps({"cmd": "docker build"})}),
        _line("response_item", {"type": "function_call_output", "call_id": "c1", "output":
                                f'exec_command failed for `{cmd}`: CreateProcess {{ message: "Rejected(\\"rejected by '
                                f'user\\")" }}'}),
        _line("response_item", {"type": "function_call", "name": "exec_command", "call_id": "c2",
                                "arguments": json.dumps({"cmd": "curl -d x"})}),
        _line("response_item", {"type": "function_call_output", "call_id": "c2", "output":
                                'exec_command failed: CreateProcess { message: "Rejected(\\"This action was rejected '
                                'due to unacceptable risk.\\")" }'}),  # the guardian, not the person
    ]
    session = read_codex_session(_rollout(tmp_path / ".codex", extra=calls))
    assert session.rejected_tool_uses == 1


def test_a_one_line_hook_record_has_its_project(tmp_path):
    path = tmp_path / "hook.jsonl"
    path.write_text(json.dumps({"session_id": "s-7", "transcript_path": "/x.jsonl", "cwd": "/work/proj",
                                "hook_event_name": "SessionStart", "source": "startup"}) + "\n")
    assert read_claude_session(path).project == "/work/proj"
    [summary] = scan(discover(None, [path]), workers=1).sessions
    assert summary.project == "/work/proj"


def test_the_title_is_the_summary_on_the_final_branch(tmp_path):
    """A resumed 2.0 session carries its predecessor's summaries first (their leaves are in that session),
    then its own; an abandoned branch has one too. The title is the one on the branch that ends the file."""
    a, b, c, d, e, f = (uid() for _ in range(6))
    path = jsonl(tmp_path / "s.jsonl", [
        {"type": "summary", "summary": "Fortune AI MVP Implementation Planning", "leafUuid": uid()},
        prompt(a, None, "plan the fixes"), say(b, a, "m1", "planned"),
        prompt(c, b, "try the other design"), say(d, c, "m2", "abandoned"),  # a branch left behind
        {"type": "summary", "summary": "An abandoned design", "leafUuid": d},
        prompt(e, b, "fix the P0 issues"), say(f, e, "m3", "fixed"),
        {"type": "summary", "summary": "Fortune AI: P0 fixes", "leafUuid": b},
        {"type": "summary", "summary": "Fortune AI: P0 fixes + P1/P2 architecture", "leafUuid": f},
    ])
    assert read_claude_session(path).title == "Fortune AI: P0 fixes + P1/P2 architecture"
    [summary] = scan(discover(None, [path]), workers=1).sessions
    assert summary.title == "Fortune AI: P0 fixes + P1/P2 architecture"


def test_no_title_from_a_summary_of_another_session(tmp_path):
    a, b = uid(), uid()
    path = jsonl(tmp_path / "s.jsonl", [{"type": "summary", "summary": "Someone else's work", "leafUuid": uid()},
                                        prompt(a, None, "hello"), say(b, a, "m1", "hi")])
    assert read_claude_session(path).title is None


def test_a_compaction_boundary_keeps_the_branch(tmp_path):
    a, b, c, d = uid(), uid(), uid(), uid()
    path = jsonl(tmp_path / "s.jsonl", [
        prompt(a, None, "refactor the parser"), say(b, a, "m1", "done"),
        envelope("system", c, None, subtype="compact_boundary", logicalParentUuid=b, content="Conversation compacted"),
        prompt(d, c, "go on"),
        {"type": "summary", "summary": "Parser refactor", "leafUuid": b},
    ])
    assert read_claude_session(path).title == "Parser refactor"


def test_the_persons_name_for_a_session_wins_over_the_apps(tmp_path):
    a = uid()
    path = jsonl(tmp_path / "s.jsonl", [prompt(a, None, "hello"),
                                        {"type": "custom-title", "customTitle": "health check", "sessionId": "s-1"},
                                        {"type": "ai-title", "aiTitle": "Adding a health check endpoint",
                                         "sessionId": "s-1"}])
    assert read_claude_session(path).title == "health check"
