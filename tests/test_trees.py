"""Conversation order, branches, dangling parents, cycles and repeated uuids."""

from builders import (envelope, pi_assistant, pi_entry, pi_header, pi_result, pi_user, prompt, say,
                      tool_result, tool_use, uid)
from conftest import jsonl
from core.transcripts.claude import read_claude_session
from core.transcripts.discover import discover
from core.transcripts.ingest import read_sessions, scan
from core.transcripts.model import ProblemKind, TurnKind
from core.transcripts.pi import read_pi_session


def test_claude_order_follows_parent_links_not_file_order(tmp_path):
    a, b, c = uid(), uid(), uid()
    # Written out of order: the reply's line comes before the prompt it answers.
    path = jsonl(tmp_path / "s.jsonl", [say(b, a, "m1", "answer"), prompt(a, None, "question"),
                                        prompt(c, b, "follow-up")])
    s = read_claude_session(path)
    assert [t.text for t in s.turns] == ["question", "answer", "follow-up"]


def test_dangling_parent_becomes_a_root_and_is_reported(tmp_path):
    a, b = uid(), uid()
    path = jsonl(tmp_path / "s.jsonl", [prompt(a, None, "one"), prompt(b, "missing-uuid", "two")])
    s = read_claude_session(path)
    assert [t.text for t in s.human_prompts] == ["one", "two"]
    assert [(p.kind, p.line) for p in s.problems] == [(ProblemKind.dangling_parent, 2)]


def test_a_parent_cycle_is_broken_not_looped(tmp_path):
    a, b = uid(), uid()
    path = jsonl(tmp_path / "s.jsonl", [prompt(a, b, "one"), prompt(b, a, "two")])
    s = read_claude_session(path)
    assert [t.text for t in s.turns] == ["one", "two"]
    assert [p.kind for p in s.problems] == [ProblemKind.cycle]


def test_compact_boundary_continues_from_its_logical_parent(tmp_path):
    a, b, c, d = uid(), uid(), uid(), uid()
    boundary = envelope("system", c, None, subtype="compact_boundary", logicalParentUuid=b, content="Compacted")
    path = jsonl(tmp_path / "s.jsonl", [prompt(a, None, "start"), say(b, a, "m1", "working"), boundary,
                                        prompt(d, c, "continue")])
    s = read_claude_session(path)
    assert [t.kind for t in s.turns] == [TurnKind.human, TurnKind.assistant, TurnKind.compaction, TurnKind.human]
    assert s.problems == []


def test_repeated_uuid_in_one_file_is_counted_once(tmp_path):
    a, b = uid(), uid()
    path = jsonl(tmp_path / "s.jsonl", [prompt(a, None, "one"), prompt(a, None, "one"), say(b, a, "m", "x")])
    s = read_claude_session(path)
    assert len(s.human_prompts) == 1 and s.accounting.duplicates == 1
    assert s.accounting.balanced


def test_forked_session_repeats_count_in_the_earliest_session_only(tmp_path):
    a, b, c, d = uid(), uid(), uid(), uid()
    first = [prompt(a, None, "fix the build", session="s-1", ts="2026-01-01T10:00:00Z"),
             tool_use(b, a, "m1", "t1", "Bash", {"command": "make"}, session="s-1", ts="2026-01-01T10:00:01Z")]
    # A fork copies the earlier records (same uuids) into a new session file, then goes on.
    fork = [{**r, "sessionId": "s-2"} for r in first] + [
        prompt(c, b, "now the docs", session="s-2", ts="2026-01-02T10:00:00Z"),
        tool_use(d, c, "m2", "t2", "Bash", {"command": "make docs"}, session="s-2", ts="2026-01-02T10:00:01Z")]
    jsonl(tmp_path / "proj" / "s-2.jsonl", fork)
    jsonl(tmp_path / "proj" / "s-1.jsonl", first)
    units = discover(None, [tmp_path])
    report = {s.id: s for s in scan(units, workers=1).sessions}
    assert (report["s-1"].human_prompts, report["s-1"].tool_calls, report["s-1"].duplicates) == (1, 1, 0)
    assert (report["s-2"].human_prompts, report["s-2"].tool_calls, report["s-2"].duplicates) == (1, 1, 2)
    full = {s.id: s for s in read_sessions(units, workers=1)}
    assert [t.text for t in full["s-2"].human_prompts] == ["now the docs"]
    assert [t.text for t in full["s-1"].human_prompts] == ["fix the build"]


def test_tool_results_errors_and_agent_session_flag(tmp_path):
    a, b, c = uid(), uid(), uid()
    path = jsonl(tmp_path / "s.jsonl", [
        prompt(a, None, "run tests", entrypoint="sdk-cli"),
        tool_use(b, a, "m1", "t1", "Bash", {"command": "pytest -q"}),
        tool_result(c, b, "t1", "Exit code 1\nFAILED test_x", is_error=True,
                    extra={"stdout": "", "stderr": "", "interrupted": False}),
    ])
    s = read_claude_session(path)
    [call] = s.tool_calls()
    assert (call.result.is_error, call.result.exit_code, call.result.rejected) == (True, 1, False)
    assert call.result.source.line == 3
    assert s.agent_session and s.entrypoint == "sdk-cli"


def test_sdk_prompt_source_alone_is_no_agent_session(tmp_path):
    """Claude Desktop 2.1 writes promptSource "sdk" on the prompts people type."""
    path = jsonl(tmp_path / "s.jsonl", [prompt(uid(), None, "hi", entrypoint="claude-desktop", promptSource="sdk")])
    assert not read_claude_session(path).agent_session


def test_injected_user_lines_are_not_human_prompts(tmp_path):
    ids = [uid() for _ in range(7)]
    path = jsonl(tmp_path / "s.jsonl", [
        prompt(ids[0], None, "<command-name>/model</command-name>"),
        prompt(ids[1], ids[0], "<system-reminder>be brief</system-reminder>"),
        prompt(ids[2], ids[1], "skill body", isMeta=True),
        prompt(ids[3], ids[2], "[Request interrupted by user]"),
        prompt(ids[4], ids[3], "<bash-input>git status</bash-input>"),
        prompt(ids[5], ids[4], "<bash-stdout>clean</bash-stdout><bash-stderr></bash-stderr>"),
        prompt(ids[6], ids[5], "a real request"),
    ])
    s = read_claude_session(path)
    assert [t.text for t in s.human_prompts] == ["a real request"]
    assert s.interrupts == 1
    [shell] = s.tool_calls()
    assert shell.by_human and shell.input == {"command": "git status"}
    assert shell.result.output_head == "clean" and not shell.result.is_error


def test_pi_branches_active_path_and_abandoned_entries(tmp_path):
    path = jsonl(tmp_path / "p.jsonl", [
        pi_header(),
        pi_entry("a1", None, pi_user("add a flag")),
        pi_entry("a2", "a1", pi_assistant(calls=[("c1", "edit", {"path": "cli.py"})])),
        pi_entry("a3", "a2", pi_result("c1", "edit", "ok")),
        # The person went back to a1 and tried again: a2/a3 are an abandoned branch.
        pi_entry("b2", "a1", pi_assistant("let me look first", calls=[("c2", "read", {"path": "cli.py"})])),
        pi_entry("b3", "b2", pi_result("c2", "read", "boom", is_error=True)),
        pi_entry("b4", "b3", pi_user("try again")),
    ])
    s = read_pi_session(path)
    assert [(t.id, t.active) for t in s.turns] == [("a1", True), ("a2", False), ("b2", True), ("b4", True)]
    assert [c.name for c in s.tool_calls()] == ["read"]  # active branch only
    assert s.tool_calls()[0].result.is_error
    assert [t.text for t in s.human_prompts] == ["add a flag", "try again"]


def test_pi_v1_and_v2_migrations(tmp_path):
    v1 = jsonl(tmp_path / "v1.jsonl", [
        pi_header(version=None) | {"provider": "anthropic", "modelId": "claude-x"},
        {"type": "message", "timestamp": "2025-12-08T22:41:05Z", "message": pi_user("hello")},
        {"type": "message", "timestamp": "2025-12-08T22:41:06Z", "message": pi_assistant("hi")},
        {"type": "compaction", "timestamp": "2025-12-08T22:42:00Z", "summary": "s", "firstKeptEntryIndex": 0},
    ])
    s = read_pi_session(v1)
    assert s.format_version == 1 and all(t.active for t in s.turns)
    assert [t.kind for t in s.turns] == [TurnKind.human, TurnKind.assistant, TurnKind.compaction]
    assert "claude-x" in s.models
    v2 = jsonl(tmp_path / "v2.jsonl", [
        pi_header(version=2),
        pi_entry("e1", None, {"role": "hookMessage", "content": "from a hook"}),
        pi_entry("e2", "e1", pi_user("go")),
    ])
    s = read_pi_session(v2)
    assert [(t.kind, t.reason) for t in s.turns] == [(TurnKind.injected, "custom"), (TurnKind.human, None)]


def test_pi_bash_execution_and_newer_version(tmp_path):
    path = jsonl(tmp_path / "p.jsonl", [
        pi_header(version=4),
        pi_entry("e1", None, {"role": "bashExecution", "command": "ls", "output": "a\nb", "exitCode": 2,
                              "cancelled": False, "truncated": False}),
    ])
    s = read_pi_session(path)
    [call] = s.tool_calls()
    assert call.by_human and call.result.exit_code == 2 and call.result.is_error
    assert [p.kind for p in s.problems] == [ProblemKind.unsupported]
