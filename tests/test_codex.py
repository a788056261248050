"""The Codex CLI reader, its discovery, and Codex sessions in mining, learnings and prepared runs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import orjson

from builders import pi_assistant, pi_entry, pi_header, pi_result, pi_user, prompt, tool_result, tool_use, uid
from conftest import jsonl
from core.transcripts.codex import read_codex_session, shell_text
from core.transcripts.discover import codex_roots, discover
from core.transcripts.model import TurnKind

F = Path(__file__).parent / "fixtures" / "transcripts" / "codex"
SESSION = next((F / "handmade-codex-session").rglob("rollout-*.jsonl"))


def test_a_rollout_into_the_normalized_model():
    s = read_codex_session(SESSION)
    assert (s.format, s.id, s.project) == ("codex", "0199a000-0000-7000-8000-000000000001", "/home/dev/app")
    assert (s.entrypoint, s.tool_version, s.git_branch, s.models) == ("codex_cli_rs", "0.142.0", "main", ["gpt-5-codex"])
    assert not s.agent_session
    # each prompt is written twice (a user response item and a user_message event): counted once
    assert [(t.text, t.source.line) for t in s.human_prompts] == [
        ("run the tests and fix the failure", 5), ("now deploy it", 23)]
    calls = s.tool_calls()
    assert [(c.name, c.input.get("command") or c.input.get("file_path") or c.input.get("query")) for c in calls] == [
        ("shell", "pytest -q"), ("apply_patch", "app/changelog.py"), ("local_shell", "pytest -q"),
        ("shell_command", "git push --force"), ("web_search", "pytest -q flag"), ("shell", "make deploy")]
    results = [(c.result.exit_code, c.result.is_error, c.result.rejected) if c.result else None for c in calls]
    assert results == [(1, True, False), (None, False, False), (0, False, False), (None, True, True),
                       (None, False, False), None]  # the last call was interrupted before any output
    assert calls[0].input["argv"] == ["bash", "-lc", "pytest -q"]
    assert s.interrupts == 1
    assert [t.reason for t in s.turns if t.kind is TurnKind.compaction] == ["compacted"]
    reasons = [t.reason for t in s.turns if t.kind is TurnKind.injected]
    assert reasons == ["context", "prompt-copy", "prompt-copy"]
    assistant = [t for t in s.turns if t.kind is TurnKind.assistant]
    assert assistant[0].text == "Fixed the changelog grouping; all 42 tests pass." and len(assistant[0].tool_calls) == 5
    acc = s.accounting
    assert acc.balanced and acc.unknown == 1  # the future_item line: counted, passed over
    assert acc.by_type["event_msg/agent_message"] == 1 and acc.by_type["response_item/reasoning"] == 1


def test_codex_published_test_data():
    """The rollout Codex's own tests write (codex-rs/rollout/src/tests.rs) and its image fixture."""
    [path] = (F / "codex-test-data").rglob("*.jsonl")
    s = read_codex_session(path)
    assert (s.id, s.project, s.entrypoint, s.tool_version) == (
        "00000000-0000-0000-0000-00000000012e", ".", "test_originator", "test_version")
    assert [t.text for t in s.human_prompts] == ["Hello from user", "pasted image"]
    assert s.accounting.unknown == 1 and s.started_at is None  # its timestamps are not ISO-8601
    item = next(t for t in s.turns if t.reason == "prompt-copy")
    assert item.text == "<image name=[Image #1]>\n[image]\n</image>\npasted image"


def test_originators_sources_and_providers():
    """Agent sessions are the ones a program started (exec, SDK, MCP) or another agent spawned."""
    sessions = {s.entrypoint: s for s in map(read_codex_session, sorted((F / "handmade-codex-originators").glob("*.jsonl")))}
    assert {k: v.agent_session for k, v in sessions.items()} == {
        "codex-tui": False, "codex_vscode": False, "Codex Desktop": False, "codex_exec": True, "codex_cli_rs": True}
    spawned = sessions["codex_cli_rs"]  # a thread_spawn subagent: its prompt is its parent agent's brief
    assert spawned.human_prompts == []
    assert [(t.reason, t.text) for t in spawned.turns if t.reason == "subagent-prompt"] == [
        ("subagent-prompt", "hello from codex_cli_rs")]
    assert spawned.launch.startswith("a subagent another agent spawned")


def test_an_old_rollout_without_events_and_ending_on_a_call_with_no_output():
    [path] = (F / "handmade-codex-old-no-events").glob("*.jsonl")
    s = read_codex_session(path)
    assert [t.text for t in s.human_prompts] == ["list the open bugs"]  # instructions and context are not prompts
    calls = s.tool_calls()
    assert [c.input["command"] for c in calls] == ["gh issue list --label bug", "gh issue view 14"]
    assert calls[0].result.output_head == "14 Changelog bug" and not calls[0].result.is_error
    assert calls[1].result is None and s.git_branch == "dev"


def test_shell_text():
    assert shell_text(["bash", "-lc", "make x && make y"]) == "make x && make y"
    assert shell_text(["rg", "-n", "a b"]) == "rg -n 'a b'"
    assert shell_text("ls") == "ls" and shell_text([1]) == "" and shell_text(None) == ""


def _rollout(root: Path, day: str, sid: str, cwd: str, text: str) -> Path:
    y, m, d = day.split("-")
    return jsonl(root / y / m / d / f"rollout-{day}T10-00-00-{sid}.jsonl", [
        {"timestamp": f"{day}T10:00:00.000Z", "type": "session_meta",
         "payload": {"id": sid, "timestamp": f"{day}T10:00:00.000Z", "cwd": cwd, "originator": "codex_cli_rs",
                     "cli_version": "0.142.0", "source": "cli", "model_provider": "openai"}},
        {"timestamp": f"{day}T10:00:01.000Z", "type": "event_msg", "payload": {"type": "user_message", "message": text}},
    ])


def test_discovery_under_dot_codex_codex_home_and_archived_sessions(tmp_path):
    home = tmp_path / "home"
    repo = tmp_path / "repo"
    repo.mkdir()
    _rollout(home / ".codex" / "sessions", "2026-03-01", "0199a000-0000-7000-8000-0000000000f1", str(repo), "a")
    _rollout(home / ".codex" / "sessions", "2026-03-02", "0199a000-0000-7000-8000-0000000000f2", "/elsewhere", "b")
    jsonl(home / ".codex" / "archived_sessions" / "rollout-2026-02-01T10-00-00-0199a000-0000-7000-8000-0000000000f3.jsonl",
          [{"timestamp": "2026-02-01T10:00:00Z", "type": "session_meta", "payload": {"id": "f3", "cwd": str(repo)}}])
    jsonl(home / ".codex" / "history.jsonl", [{"session_id": "x", "text": "not a rollout"}])
    env = {"HOME": str(home)}
    assert codex_roots(home, env) == [home / ".codex" / "sessions", home / ".codex" / "archived_sessions"]
    mine = discover(repo, env=env, home=home)
    assert sorted(u.trunk.name[-8:-6] for u in mine) == ["f1", "f3"] and {u.format for u in mine} == {"codex"}
    assert len(discover(None, env=env, home=home)) == 3  # all history: every rollout, not history.jsonl
    moved = tmp_path / "codex-home"
    shutil.move(home / ".codex", moved)
    assert discover(repo, env=env, home=home) == []
    assert len(discover(repo, env={**env, "CODEX_HOME": str(moved)}, home=home)) == 2
    assert len(discover(repo, env={**env, "CODEX_HOME": str(moved)}, home=home, fmt="claude")) == 0


def test_sessions_format_codex(tmp_path):
    done = subprocess.run([sys.executable, "-m", "server.cli", "sessions", "--dir", str(F.parent), "--format", "codex",
                           "--json", "--workers", "1"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    # --format codex reads every file as a rollout: the Codex ones are all there, with their prompts
    codex = [s for s in report["sessions"] if s["path"].startswith(str(F))]
    assert len(codex) == 8 and sum(s["human_prompts"] for s in codex) == 9  # a spawned subagent's brief is none


def _mixed_history(root: Path) -> Path:
    """The same request asked of Claude Code, Pi and Codex, each running the same command."""
    ask, cmd = "bump the version and tag a release", "make release"
    for n, sid in enumerate(("c-1", "c-2")):
        a, b, c = uid(), uid(), uid()
        jsonl(root / "claude" / f"{sid}.jsonl", [
            prompt(a, None, ask, session=sid, cwd="/home/dev/app", ts=f"2026-03-0{n + 1}T10:00:00.000Z"),
            tool_use(b, a, f"m{sid}", f"t{sid}", "Bash", {"command": cmd}, session=sid, cwd="/home/dev/app"),
            tool_result(c, b, f"t{sid}", "tagged v1.2.3", session=sid, cwd="/home/dev/app")])
    jsonl(root / "pi" / "p.jsonl", [pi_header(cwd="/home/dev/app"), pi_entry("e1", None, pi_user(ask)),
                                    pi_entry("e2", "e1", pi_assistant("", calls=[("k1", "bash", {"command": cmd})])),
                                    pi_entry("e3", "e2", pi_result("k1", "bash", "tagged v1.2.4"))])
    sid = "0199a000-0000-7000-8000-0000000000aa"
    path = _rollout(root / "codex", "2026-03-05", sid, "/home/dev/app", ask)
    with open(path, "ab") as fh:
        for rec in ({"type": "function_call", "name": "shell", "call_id": "x1",
                     "arguments": json.dumps({"command": ["bash", "-lc", cmd]})},
                    {"type": "function_call_output", "call_id": "x1", "output": "tagged v1.2.5"}):
            fh.write(orjson.dumps({"timestamp": "2026-03-05T10:00:02.000Z", "type": "response_item", "payload": rec}) + b"\n")
    return root


def test_mine_draws_one_recipe_from_claude_pi_and_codex(tmp_path):
    from core.mining.passes import run_pass

    history = _mixed_history(tmp_path / "history")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".kitsoki.yaml").write_text("name: app\n")
    _, recipes = run_pass(ws, repo=ws, dirs=[history], trigger="seed", workers=1, project_paths=["/home/dev/app"])
    [recipe] = [r for r in recipes if "make release" in " ".join(r.action_signature)]
    formats = {Path(i.path).parts[-2] if "codex" not in i.path else "codex" for i in recipe.instances}
    assert {"claude", "pi", "codex"} <= formats and recipe.sessions == 4


def test_learnings_and_prepared_runs_take_codex_sessions(tmp_path):
    from core import runs
    from core.runs.inventory import Sources, inventory

    history = _mixed_history(tmp_path / "history")
    found = inventory(Sources(home=tmp_path / "nohome", env={"HOME": str(tmp_path / "nohome")}, dirs=[history]))
    assert {s.format for s in found} == {"claude", "pi", "codex"}
    codex = next(s for s in found if s.format == "codex")
    assert (codex.project, codex.version, codex.supported) == ("/home/dev/app", "0.142.0", True)
    wd = str(tmp_path / "work")
    sources = Sources(home=tmp_path / "nohome", env={"HOME": str(tmp_path / "nohome")}, dirs=[history])
    cov = runs.coverage(wd, "/home/dev/app", sources=sources, goal="find repeated requests")
    runs.confirm(wd, run_id=cov.run_id)
    result = runs.prepare(wd, run_id=cov.run_id, sources=sources, workers=1, prefs=tmp_path / "prefs.json")
    text = "".join(p.read_text() for p in Path(result.run_dir).rglob("snippet.md"))
    assert "[tool call shell id=x1]" in text and "tagged v1.2.5" in text  # the Codex session's evidence

    done = subprocess.run([sys.executable, "-m", "server.cli", "evolve", "analyze", "--repo", str(tmp_path),
                           "--transcripts", str(history), "--json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_secret_in_one_word_of_an_argv_is_redacted_before_the_words_are_joined(tmp_path):
    """shlex quoting `api_key = 'x'` as one word would hide the assignment from redaction."""
    path = _rollout(tmp_path, "2026-03-06", "0199a000-0000-7000-8000-0000000000ab", "/home/dev/app", "configure it")
    secret = "i2^g^*!UQXIiHq"
    with open(path, "ab") as fh:
        fh.write(orjson.dumps({"timestamp": "2026-03-06T10:00:02Z", "type": "response_item", "payload": {
            "type": "local_shell_call", "call_id": "l1", "status": "completed",
            "action": {"type": "exec", "command": ["./set.sh", f"api_key = '{secret}'"]}}}) + b"\n")
    [call] = read_codex_session(path).tool_calls()
    assert secret not in orjson.dumps(call.input).decode()
    assert call.input["command"].startswith("./set.sh 'api_key = ")
