"""Who started a session (core/transcripts/launch.py), on every entrypoint and originator Claude Code and
Codex write today, through every reader: the full one, the counts `sessions` reads, the steps mining reads
(its seed pass leaves programs' sessions out)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from builders import prompt, say, tool_result, tool_use, uid
from conftest import jsonl
from core.mining.passes import mine_file, run_pass
from core.mining.watermark import kitsoki_slug, load_state
from core.transcripts.claude import read_claude_session
from core.transcripts.codex import read_codex_session
from core.transcripts.discover import discover
from core.transcripts.ingest import scan
from core.transcripts.launch import PERSON_ENTRYPOINTS, PROGRAM_ENTRYPOINTS, PersonSigns, claude_launch, codex_launch

NO_HOME = {"home": Path("/nonexistent"), "env": {}, "project_paths": ["/work/proj"]}  # where the builders' sessions ran


def _claude(path: Path, records: list[dict]) -> Path:
    jsonl(path, records)
    return path


def _two_prompts(**kw) -> list[dict]:
    """A session of two prompts, each answered: what a person, or a program, sends."""
    a, b, c, d = uid(), uid(), uid(), uid()
    return [prompt(a, None, "add a health check endpoint", **kw), say(b, a, "m1", "done", **kw),
            prompt(c, b, "now run the tests", **kw), say(d, c, "m2", "they pass", **kw)]


def _every_reader(path: Path) -> tuple[bool, bool, bool]:
    """(full reader, counts reader through `sessions`, steps reader as the seed pass screens it)."""
    full = read_claude_session(path).agent_session
    [summary] = scan(discover(None, [path]), workers=1).sessions
    screened = mine_file("claude", path, path.stat().st_size, path.stat().st_mtime_ns, None, True) is None
    return full, summary.agent_session, screened


@pytest.mark.parametrize("entrypoint", sorted(PERSON_ENTRYPOINTS))
def test_a_person_types_in_every_claude_surface(tmp_path, entrypoint):
    path = _claude(tmp_path / "s.jsonl", _two_prompts(entrypoint=entrypoint))
    assert _every_reader(path) == (False, False, False)
    assert read_claude_session(path).launch == f"entrypoint {entrypoint}"


@pytest.mark.parametrize("entrypoint", sorted(PROGRAM_ENTRYPOINTS) + ["sdk-go"])
def test_a_program_starts_sdk_print_mcp_ci_and_bench_sessions(tmp_path, entrypoint):
    path = _claude(tmp_path / "s.jsonl", _two_prompts(entrypoint=entrypoint))
    assert _every_reader(path) == (True, True, True)


def test_the_desktop_apps_sdk_prompt_source_is_a_person_typing(tmp_path):
    """Claude Desktop 2.1 writes promptSource "sdk" (and origin human) on what a person types."""
    kw = dict(entrypoint="claude-desktop", promptSource="sdk", origin={"kind": "human"})
    path = _claude(tmp_path / "s.jsonl", _two_prompts(**kw))
    assert _every_reader(path) == (False, False, False)
    assert len(read_claude_session(path).human_prompts) == 2


def test_vscode_prompts_reach_the_seed_pass(tmp_path):
    """The four real sessions of issue 23 item 1 lost 48 prompts: VS Code and Desktop sessions are mined."""
    d = tmp_path / "t"
    _claude(d / "vscode.jsonl", _two_prompts(entrypoint="claude-vscode", session="vscode"))
    _claude(d / "desktop.jsonl", _two_prompts(entrypoint="claude-desktop", promptSource="sdk", session="desktop"))
    _claude(d / "script.jsonl", _two_prompts(entrypoint="sdk-cli", session="script"))
    ws = tmp_path / "ws"
    ws.mkdir()
    report, _ = run_pass(ws, dirs=[d], **NO_HOME)
    state = load_state(ws, kitsoki_slug(ws.resolve()))
    assert sorted(Path(p).name for p in state.files) == ["desktop.jsonl", "vscode.jsonl"]
    assert sum(len(m.episodes) for m in state.files.values()) == 4
    assert report.sessions == 2


@pytest.mark.parametrize("origin,agent", [("human", False), ("peer", True), (None, False)])
def test_without_an_entrypoint_the_first_prompt_says(tmp_path, origin, agent):
    """Older builds write no entrypoint; newer ones say where a prompt came from (another session: `peer`)."""
    kw = {"origin": {"kind": origin}} if origin else {}
    path = _claude(tmp_path / "s.jsonl", _two_prompts(**kw))
    assert _every_reader(path) == (agent,) * 3


def test_an_unknown_entrypoint_is_a_person_unless_the_files_say_otherwise(tmp_path):
    path = _claude(tmp_path / "s.jsonl", _two_prompts(entrypoint="claude-jetbrains-2027"))
    assert _every_reader(path) == (False, False, False)
    assert read_claude_session(path).launch == "entrypoint claude-jetbrains-2027; a person's by default"


def _sdk_with(kind: str) -> list[dict]:
    a, b, c, d, e = uid(), uid(), uid(), uid(), uid()
    kw = dict(entrypoint="sdk-ts")
    head = [prompt(a, None, "Fix the following issues", **kw)]
    if kind == "interrupted":
        return head + [prompt(b, a, "[Request interrupted by user]", **kw), prompt(c, b, "ERROR detected", **kw)]
    if kind == "refused":
        return head + [tool_use(b, a, "m1", "t1", "Bash", {"command": "rm -rf build"}, **kw),
                       tool_result(c, b, "t1", "The user doesn't want to proceed with this tool use.", is_error=True,
                                   **kw)]
    return head + [tool_use(b, a, "m1", "t1", "AskUserQuestion", {"questions": []}, **kw),
                   tool_result(c, b, "t1", 'User has answered your questions: "Which db?"="postgres".', **kw),
                   say(d, c, "m2", "postgres it is", **kw)]


@pytest.mark.parametrize("kind", ["interrupted", "refused", "answered"])
def test_an_sdk_session_a_person_interrupts_refuses_or_answers_in_is_theirs(tmp_path, kind):
    """GUIs built on the SDKs: the launch says program, what happens inside says a person is there."""
    path = _claude(tmp_path / "s.jsonl", _sdk_with(kind))
    assert _every_reader(path) == (False, False, False)
    words = {"interrupted": "interrupted", "refused": "refused a call", "answered": "answered a question"}[kind]
    assert read_claude_session(path).launch == f"entrypoint sdk-ts, but a person {words}"


@pytest.mark.parametrize("entrypoint", ["sdk-cli", None])
def test_kitsokis_dispatched_tasks_are_programs_whatever_else(tmp_path, entrypoint):
    """kitsoki runs `claude -p` with its validator; Claude Code before 2.1.40 wrote no entrypoint."""
    kw = {"entrypoint": entrypoint} if entrypoint else {}
    a, b, c, d = uid(), uid(), uid(), uid()
    path = _claude(tmp_path / "s.jsonl", [
        prompt(a, None, "Implement the ticket in the brief below.", **kw),
        tool_use(b, a, "m1", "t1", "mcp__validator__submit", {"result": {}}, **kw),
        tool_result(c, b, "t1", "[Request interrupted by user]", **kw),
        prompt(d, c, "[Request interrupted by user]", **kw),
    ])
    assert _every_reader(path) == (True, True, True)
    assert read_claude_session(path).launch == "dispatched by kitsoki (host.agent.*)"


def test_a_subagents_transcript_without_its_session_is_a_program(tmp_path):
    a, b = uid(), uid()
    sub = tmp_path / "p" / "s-9" / "subagents" / "agent-a1.jsonl"
    jsonl(sub, [prompt(a, None, "Warmup", session="s-9", isSidechain=True, agentId="a1", entrypoint="cli"),
                say(b, a, "m1", "ready", session="s-9", isSidechain=True, agentId="a1", entrypoint="cli")])
    [unit] = discover(None, [tmp_path / "p"])
    session = read_claude_session(unit.trunk, unit.subagents)
    assert session.agent_session and session.launch == "a subagent another agent spawned"
    assert session.human_prompts == []


def test_claude_20s_inline_warmup_is_no_prompt(tmp_path):
    """Claude Code 2.0 sends "Warmup" to its subagents as it starts; a sidechain record in a trunk is theirs."""
    a, b, c = uid(), uid(), uid()
    path = _claude(tmp_path / "s.jsonl", [prompt(a, None, "Warmup", isSidechain=True),
                                          say(b, a, "m1", "ready", isSidechain=True),
                                          prompt(c, None, "add a health check")])
    assert [t.text for t in read_claude_session(path).human_prompts] == ["add a health check"]
    [summary] = scan(discover(None, [path]), workers=1).sessions
    assert summary.human_prompts == 1


# --- Codex ---------------------------------------------------------------------------------------------

def _rollout(path: Path, source, originator: str | None, extra: list[dict] = ()) -> Path:
    meta = {"id": "0199b000-0000-7000-8000-000000000001", "timestamp": "2026-05-01T10:00:00Z", "cwd": "/work/proj",
            "cli_version": "0.142.0", "source": source}
    if originator is not None:
        meta["originator"] = originator
    lines = [{"timestamp": "2026-05-01T10:00:00Z", "type": "session_meta", "payload": meta},
             {"timestamp": "2026-05-01T10:00:01Z", "type": "event_msg",
              "payload": {"type": "user_message", "message": "add a health check"}},
             *extra]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


CODEX_CASES = [
    ("cli", "codex_cli_rs", False), ("cli", "codex-tui", False), ("vscode", "codex_vscode", False),
    ("vscode", "codex_vscode_copilot", False), ("vscode", "Codex Desktop", False), ("vscode", "codex_app", False),
    ("vscode", "codex_chatgpt_desktop", False), ("vscode", "codex_atlas", False),
    ("vscode", "t3code_desktop", False),  # a third-party app-server client: a person by default
    (None, None, False),  # before `source` was written
    ("exec", "codex_exec", True), ("exec", "codex_sdk_ts", True), ("exec", "Codex Desktop", True),
    ("mcp", "codex_mcp_server", True), ("vscode", "codex_sdk_py", True), ("cli", "codex_exec", True),
    ({"subagent": {"thread_spawn": {"parent_thread_id": "0199", "depth": 1}}}, "Codex Desktop", True),
    ({"subagent": "review"}, "codex_cli_rs", True), ({"subagent": {"other": "guardian"}}, "Codex Desktop", True),
]


@pytest.mark.parametrize("source,originator,agent", CODEX_CASES)
def test_every_codex_source_and_originator(tmp_path, source, originator, agent):
    path = _rollout(tmp_path / "sessions" / "rollout-2026-05-01T10-00-00-x.jsonl", source, originator)
    session = read_codex_session(path)
    assert session.agent_session is agent, session.launch
    [summary] = scan(discover(None, [path]), workers=1).sessions
    assert summary.agent_session is agent
    assert (mine_file("codex", path, path.stat().st_size, path.stat().st_mtime_ns, None, True) is None) is agent
    assert (session.human_prompts == []) is (type(source) is dict)  # a subagent's brief is its parent's


def test_codex_exec_a_person_interrupted_is_theirs(tmp_path):
    path = _rollout(tmp_path / "r.jsonl", "exec", "codex_sdk_ts", [
        {"timestamp": "2026-05-01T10:00:02Z", "type": "event_msg", "payload": {"type": "turn_aborted",
                                                                             "reason": "interrupted"}}])
    session = read_codex_session(path)
    assert not session.agent_session and session.launch == "source exec, but a person interrupted"


def test_the_rules_in_order():
    person = PersonSigns(interrupted=True)
    assert claude_launch("cli", kitsoki=True).agent  # kitsoki's tools win over the entrypoint
    assert claude_launch("sdk-cli", kitsoki=True, signs=person).agent  # and over a person's signs
    assert claude_launch(None, subagent=True, signs=person).agent
    assert not claude_launch("sdk-py", signs=person).agent
    assert not claude_launch("claude-vscode", origin="peer").agent  # a listed surface is not second-guessed
    assert codex_launch({"subagent": "compact"}, "codex_cli_rs", signs=person).agent
    assert codex_launch("vscode", "codex_exec").why == "originator codex_exec"


def test_sessions_reports_why(tmp_path):
    """`sessions --json` carries the rule that decided, for every format."""
    d = tmp_path / "h"
    _claude(d / "c.jsonl", _two_prompts(entrypoint="claude-vscode"))
    _rollout(d / "rollout-2026-05-01T10-00-00-0199b000-0000-7000-8000-000000000001.jsonl", "exec", "codex_exec")
    report = scan(discover(None, [d]), workers=1)
    assert sorted((s.format, s.agent_session, s.launch) for s in report.sessions) == [
        ("claude", False, "entrypoint claude-vscode"), ("codex", True, "source exec")]
    assert report.totals.agent_sessions == 1


def test_a_seed_fills_its_sample_with_people_when_programs_are_newest(tmp_path):
    d = tmp_path / "t"
    for i in range(3):
        _claude(d / f"person{i}.jsonl", _two_prompts(entrypoint="cli", session=f"p{i}"))
    for i in range(4):
        _claude(d / f"program{i}.jsonl", _two_prompts(entrypoint="sdk-cli", session=f"g{i}"))
    for i, name in enumerate(["person0", "person1", "person2", "program0", "program1", "program2", "program3"]):
        os.utime(d / f"{name}.jsonl", (1_700_000_000 + i, 1_700_000_000 + i))
    ws = tmp_path / "ws"
    ws.mkdir()
    report, _ = run_pass(ws, dirs=[d], first_pass_sample=2, **NO_HOME)
    state = load_state(ws, kitsoki_slug(ws.resolve()))
    assert sorted(Path(p).name for p in state.files) == ["person1.jsonl", "person2.jsonl"]
    assert report.sessions == 2 and state.mined_through == 1_700_000_002
