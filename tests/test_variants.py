"""The Claude Code, Pi and Codex variants real histories hold (issue 18), one fixture each.

Fixtures live in tests/fixtures/transcripts/ (hand-made ones say so in their name; Codex's own test
data is noted in codex/SOURCE.md). Every file's line accounting is checked against an independent
count: a plain `json` pass over its lines, with its own record labels.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from core.transcripts.claude import read_claude_file, read_claude_session
from core.transcripts.discover import discover
from core.transcripts.ingest import read_session, read_sessions, scan
from core.transcripts.model import SubagentKind, TurnKind
from core.transcripts.pi import read_pi_session

F = Path(__file__).parent / "fixtures" / "transcripts"
C, P = F / "claude", F / "pi"


def independent_count(path: Path, fmt: str) -> dict:
    """Lines, parsed records, malformed and blank lines and record labels, counted without our readers."""
    data = path.read_bytes()
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    out = {"lines": len(lines), "parsed": 0, "malformed": 0, "skipped": 0, "by_type": Counter()}
    for raw in lines:
        if not raw.strip():
            out["skipped"] += 1
            continue
        try:
            rec = json.loads(raw)
        except ValueError:
            out["malformed"] += 1
            continue
        if not isinstance(rec, dict):
            out["malformed"] += 1
            continue
        out["parsed"] += 1
        kind = rec.get("type") if isinstance(rec.get("type"), str) else "<none>"
        if fmt == "pi" and kind == "message":
            kind = f"message/{rec['message'].get('role')}"
        elif fmt == "codex" and kind in ("response_item", "event_msg"):
            kind = f"{kind}/{rec['payload'].get('type')}"
        out["by_type"][kind] += 1
    return out


def _fmt(path: Path) -> str:
    return "codex" if "codex" in path.parts[-6:] else "pi" if "pi" in path.parts[-3:] else "claude"


FIXTURE_FILES = sorted(p for p in F.rglob("*.jsonl") if "tool-results" not in p.parts and p.name != "journal.jsonl")


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: str(p.relative_to(F)))
def test_every_fixture_balances_and_agrees_with_an_independent_count(path):
    fmt = _fmt(path)
    if fmt == "claude":
        acc = read_claude_file(path, sidechain="subagents" in path.parts).accounting
    else:
        [unit] = discover(None, [path], fmt=fmt)
        acc = read_session(unit).accounting
    expected = independent_count(path, fmt)
    assert (acc.lines_read, acc.parsed, acc.malformed, acc.skipped) == (
        expected["lines"], expected["parsed"], expected["malformed"], expected["skipped"])
    assert Counter(acc.by_type) == expected["by_type"]
    assert acc.balanced and acc.parsed == sum(acc.by_type.values())


# --- Claude Code -----------------------------------------------------------------------------


def test_claude_record_types_beyond_user_and_assistant():
    """Many system subtypes, attachment kinds, titles, agent names, PR links, modes, queue operations, an
    old summary; most without uuid or timestamp, and the first line is not a user message."""
    s = read_claude_session(C / "handmade-claude-record-types.jsonl")
    assert [t.text for t in s.human_prompts] == ["add a health check endpoint"]
    assert [t.reason for t in s.turns if t.kind is TurnKind.system] == [
        "informational", "stop_hook_summary", "turn_duration", "away_summary", "api_error", "model_refusal_fallback"]
    assert [t.reason for t in s.turns if t.kind is TurnKind.compaction] == ["compact_boundary"]
    assert s.title == "health check"  # the name the person gave it wins over the app's (ai-title) and the old summary
    # snapshot, summary, 3 attachments, 2 queue ops, mode, permission-mode, titles, name, link, last prompt, worktree
    assert s.accounting.metadata == 15 and s.accounting.unknown == 0
    assert [c.name for c in s.tool_calls()] == ["Edit"] and s.tool_calls()[0].result is not None
    assert not [p for p in s.problems if p.kind.value == "dangling-parent"]


def test_claude_one_file_with_two_session_ids_is_the_session_it_is_named_after():
    path = next((C / "handmade-claude-continued").glob("*.jsonl"))
    s = read_claude_session(path)
    assert s.id == path.stem == "33333333-3333-4333-8333-333333333332"
    assert [t.text for t in s.human_prompts] == ["run the migrations", "now seed the database"]
    assert read_claude_file(path).session_ids == ["33333333-3333-4333-8333-333333333331", path.stem]


def test_claude_version_and_entrypoint_changing_inside_a_file():
    s = read_claude_session(C / "handmade-claude-version-change.jsonl")
    assert s.tool_version == "2.1.145"  # the newest writer of the file
    assert s.entrypoint == "cli" and not s.agent_session  # how the session was started
    assert len(s.human_prompts) == 2


def test_claude_sdk_ts_records_with_request_uuids():
    s = read_claude_session(C / "handmade-claude-sdk-ts.jsonl")
    assert s.agent_session and s.entrypoint == "sdk-ts"
    assert s.turns[0].id.startswith("request_") and s.turns[1].parent == s.turns[0].id
    assert [t.kind for t in s.turns] == [TurnKind.human, TurnKind.assistant]


@pytest.mark.parametrize("entrypoint,agent", [("cli", False), ("claude-desktop", False), ("claude-vscode", False),
                                              ("sdk-ts", True), ("none", False)])
def test_claude_entrypoints(entrypoint, agent):
    s = read_claude_session(C / "handmade-claude-entrypoints" / f"{entrypoint}.jsonl")
    assert s.entrypoint == (None if entrypoint == "none" else entrypoint)
    assert s.agent_session is agent  # a person at the terminal, in VS Code or the desktop app; an SDK is a program


def test_claude_non_anthropic_backend():
    """Tool ids `call_…` / `tooluse_…`, no message or request ids, a `<synthetic>` API error, and a
    tool_result holding tool_reference and image blocks."""
    s = read_claude_session(C / "handmade-claude-other-backend.jsonl")
    calls = s.tool_calls()
    assert [(c.id, c.name) for c in calls] == [("call_abc123", "Grep"), ("tooluse_Q1w2E3", "Read")]
    assert all(c.result is not None for c in calls)
    assert calls[0].result.output_head == "tests/test_x.py:3\n[image]"
    assistant = [t for t in s.turns if t.kind is TurnKind.assistant]
    assert len(assistant) == 3  # no message.id: each line is its own response
    assert assistant[-1].reason == "api-error" and assistant[-1].model == "<synthetic>"
    assert s.models == ["gpt-5", "amazon.nova-pro"]


def test_claude_conversation_order_comes_from_links_not_file_or_time():
    s = read_claude_session(C / "handmade-claude-out-of-order.jsonl")
    assert [t.text for t in s.turns] == ["first question", "first answer", "second question", "second answer"]


def test_claude_companion_files():
    """meta.json, a compaction agent, a side question replaying the parent, workflow agents with their
    journal, and a tool result spilled beside the transcript."""
    [unit] = discover(None, [C / "handmade-claude-companions"])
    assert sorted(p.name for p in unit.subagents) == [
        "agent-a0b1c2d3.jsonl", "agent-acompact-5e6f.jsonl", "agent-aside_question-7a8b.jsonl", "agent-w1.jsonl"]
    s = read_session(unit)
    kinds = {a.kind: a for a in s.subagents}
    assert set(kinds) == {SubagentKind.task, SubagentKind.compaction, SubagentKind.aside_question, SubagentKind.workflow}
    assert kinds[SubagentKind.task].tool_use_id == "toolu_01T" and kinds[SubagentKind.task].agent_type == "general-purpose"
    # the side question copied the prompt and two tool calls of the parent: only its question and answer are new
    assert [t.text for t in kinds[SubagentKind.aside_question].turns] == ["btw, which one is the oldest?", "left-pad."]
    assert s.accounting.duplicates == 3
    names = [c.input.get("command") for c in s.tool_calls(include_subagents=True) if c.name == "Bash"]
    assert names == ["npm ls --all", "npm outdated", "npm run lint"]  # each once
    report = scan(discover(None, [C / "handmade-claude-companions"]), workers=1)
    assert report.totals.sessions == 1 and report.sessions[0].tool_calls == 4  # Task, 2 trunk+agent Bash, lint


def test_claude_windows_drive_letter_in_either_case():
    env = {"CLAUDE_CONFIG_DIR": str(C / "handmade-claude-windows")}
    for repo in ("C:\\Users\\me\\proj", "c:\\Users\\me\\proj", "C:/Users/me/proj"):
        units = discover(repo, env=env, home=Path("/nonexistent"))
        assert len(units) == 2, repo  # C--Users-me-proj and c--Users-me-proj
    assert discover("D:\\Users\\me\\proj", env=env, home=Path("/nonexistent")) == []


# --- Pi --------------------------------------------------------------------------------------


def test_pi_header_later_than_its_entries():
    s = read_pi_session(P / "handmade-pi-header-later.jsonl")
    assert s.started_at.isoformat() == "2026-03-13T09:00:00+00:00"  # the entries, not the header (2 days later)


def test_pi_tool_call_ids_empty_error_and_aborted_messages_and_response_fields():
    s = read_pi_session(P / "handmade-pi-variants.jsonl")
    calls = s.tool_calls()
    assert [c.id for c in calls] == ["call_Zx81", "toolu_01Pq", "functions.read:0"]
    assert [c.result.is_error for c in calls] == [False, False, True]
    assistant = [t for t in s.turns if t.kind is TurnKind.assistant]
    assert [t.reason for t in assistant] == [None, "api-error", None]
    assert s.interrupts == 1  # the empty aborted message
    assert s.models == ["gpt-5"]  # `model`, not responseModel
    assert [t.text for t in s.human_prompts] == ["read the three config files", "try again"]


def test_pi_title_line_before_the_header():
    s = read_pi_session(P / "handmade-pi-title-line.jsonl")
    assert s.format_version == 3 and s.id == "019e2000-0000-7000-8000-000000000003"
    assert s.title == "config review" and not s.problems
    assert [t.text for t in s.human_prompts] == ["review the config"]
    [unit] = discover(None, [P / "handmade-pi-title-line.jsonl"])
    assert unit.format == "pi"  # sniffed past the title line


def test_a_folder_mixing_all_three_formats():
    """`sessions` over Claude Code, Pi and Codex fixtures: every session, with counts an independent
    pass agrees with."""
    report = scan(discover(None, [F]), workers=1)
    by_format = Counter(s.format for s in report.sessions)
    assert by_format == {"claude": 14, "pi": 3, "codex": 8}
    files = [p for p in FIXTURE_FILES]
    assert report.totals.lines == sum(independent_count(p, _fmt(p))["lines"] for p in files)
    assert report.totals.malformed == 0
    full = read_sessions(discover(None, [F]), workers=1)
    assert sum(len(s.human_prompts) for s in full) == report.totals.human_prompts


def test_mine_outside_a_kitsoki_workspace_refuses_and_writes_nothing(tmp_path):
    """Like `proposals` and `accept`: no `.kitsoki.yaml` here or above is a clear refusal, exit 2."""
    import subprocess
    import sys

    folder = tmp_path / "not-a-workspace"
    folder.mkdir()
    for argv in (["mine"], ["mine", "--repo", str(folder)]):
        done = subprocess.run([sys.executable, "-m", "server.cli", *argv, "--dir", str(F)], cwd=folder,
                              capture_output=True, text=True, timeout=60,
                              env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(Path(__file__).parents[1])})
        assert done.returncode == 2, done.stderr
        assert "no .kitsoki.yaml" in done.stderr and "pass --repo with a kitsoki workspace" in done.stderr
        assert "Traceback" not in done.stderr
    assert list(folder.iterdir()) == []
