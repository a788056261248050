"""`kitsoki-miner sessions` as a person runs it: the installed console script, real files."""

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from builders import prompt, tool_use, uid
from conftest import jsonl

SCRIPT = Path(sys.executable).parent / "kitsoki-miner"


def run(*args, home: Path, env_extra=None):
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", **(env_extra or {})}
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=120)


def test_no_history_shows_the_bundled_examples(tmp_path):
    done = run("sessions", "--json", home=tmp_path)
    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout)
    assert "bundled examples" in report["note"]
    assert {s["format"] for s in report["sessions"]} == {"claude", "pi"}
    assert report["totals"]["sessions"] == 3 and report["totals"]["human_prompts"] == 5
    table = run("sessions", home=tmp_path)
    assert table.returncode == 0 and "3 sessions" in table.stdout and "bundled examples" in table.stderr


def test_json_shape_for_a_repo(tmp_path):
    home = tmp_path / "home"
    a, b = uid(), uid()
    repo = tmp_path / "repo"
    repo.mkdir()
    slug = "".join(c if c.isalnum() else "-" for c in str(repo))
    jsonl(home / ".claude" / "projects" / slug / "s-9.jsonl", [
        prompt(a, None, "run the linter", cwd=str(repo), session="s-9"),
        tool_use(b, a, "m1", "t1", "Bash", {"command": "ruff check ."}, cwd=str(repo), session="s-9"),
    ])
    done = run("sessions", "--repo", str(repo), "--json", home=home)
    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout)
    [s] = report["sessions"]
    assert {k: s[k] for k in ("id", "format", "project", "lines", "malformed", "human_prompts", "tool_calls",
                              "agent_session")} == {
        "id": "s-9", "format": "claude", "project": str(repo), "lines": 2, "malformed": 0,
        "human_prompts": 1, "tool_calls": 1, "agent_session": False}
    assert s["path"].endswith("s-9.jsonl") and s["started_at"] and s["ended_at"]
    assert report["totals"]["sessions"] == 1
    since = run("sessions", "--repo", str(repo), "--since", "2030-01-01", "--json", home=home)
    assert orjson.loads(since.stdout)["sessions"] == []


@pytest.mark.parametrize("args, message", [
    (["sessions", "--dir", "/no/such/folder"], "no such file or folder: /no/such/folder"),
    (["sessions", "--since", "last tuesday"], "not a date: 'last tuesday'"),
    (["sessions", "--format", "cursor"], "invalid choice: 'cursor'"),
])
def test_bad_arguments_say_what_was_wrong(tmp_path, args, message):
    done = run(*args, home=tmp_path)
    assert done.returncode == 2 and message in done.stderr


def test_mine_ranks_recipes_and_cites_evidence(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".kitsoki.yaml").write_text("mining:\n  enabled: true\n  first_pass_sample: 5\n  project_paths: [/work/proj]\n")
    for sid in ("s1", "s2", "s3"):  # an ask recurs in three sessions, on three days
        a, b = uid(), uid()
        jsonl(tmp_path / "t" / f"{sid}.jsonl", [
            prompt(a, None, "regenerate the protobuf stubs", session=sid, ts=f"2026-03-0{sid[1]}T10:00:00Z"),
            tool_use(b, a, "m1", f"t{sid}", "Bash", {"command": "buf generate"}, session=sid)])
    done = run("mine", "--repo", str(ws), "--dir", str(tmp_path / "t"), "--json", home=tmp_path)
    assert done.returncode == 0, done.stderr
    result = orjson.loads(done.stdout)
    assert result["pass"]["trigger"] == "seed" and result["pass"]["sessions"] == 3
    [recipe] = result["recipes"]
    assert recipe["kind"] == "intent" and recipe["title"] == "regenerate the protobuf stubs"
    assert [(Path(i["path"]).name, i["line_start"]) for i in recipe["instances"]] == [
        ("s1.jsonl", 1), ("s2.jsonl", 1), ("s3.jsonl", 1)]
    table = run("mine", "--repo", str(ws), "--dir", str(tmp_path / "t"), home=tmp_path)
    assert "live pass" in table.stdout and "regenerate the protobuf stubs" in table.stdout and "s1.jsonl:1" in table.stdout
    assert (ws / ".artifacts" / "mining" / "trace.jsonl").read_text().count("mining.pass_ran") == 2


def test_mine_refuses_a_bad_mining_block_naming_file_line_and_key(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".kitsoki.yaml").write_text("mining:\n  enabled: true\n  cadence: soon\n")
    done = run("mine", "--repo", str(ws), home=tmp_path)
    assert done.returncode == 2
    assert ".kitsoki.yaml:3" in done.stderr and "mining.cadence" in done.stderr
