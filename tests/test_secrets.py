"""Secrets planted in transcripts never leave a reader: not in the model, not in the CLI's output."""

import subprocess
import sys

import orjson

from builders import pi_assistant, pi_entry, pi_header, pi_result, pi_user, prompt, say, tool_result, tool_use, uid
from conftest import jsonl
from core.transcripts.discover import discover
from core.transcripts.ingest import read_sessions
from core.transcripts.model import session_to_json

AWS = "AKIA" + "Q3J7XK2M9PLW4RTZ"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
ANTHROPIC = "sk-ant-api03-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0EdCbA-_x1y2z3"
PASSWORD = "Tr0ub4dor&3horse"
BEARER = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.c2lnbmF0dXJlX3NpZw"
PRIVATE = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
KEY_BLOCK = f"-----BEGIN PRIVATE KEY-----\n{PRIVATE}\n-----END PRIVATE KEY-----"
SECRETS = [AWS, GITHUB, ANTHROPIC, PASSWORD, BEARER, PRIVATE]


def plant(tmp_path):
    a, b, c, d = uid(), uid(), uid(), uid()
    jsonl(tmp_path / "claude" / "s-1.jsonl", [
        prompt(a, None, f"deploy with AWS_ACCESS_KEY_ID={AWS} and token {GITHUB}"),
        tool_use(b, a, "m1", "t1", "Bash", {"command": f"curl -H 'Authorization: Bearer {BEARER}' https://x"}),
        tool_result(c, b, "t1", f"DB_PASSWORD={PASSWORD}\n{KEY_BLOCK}"),
        say(d, c, "m2", f"I found ANTHROPIC_API_KEY={ANTHROPIC} in .env"),
    ])
    jsonl(tmp_path / "pi" / "p.jsonl", [
        pi_header(),
        pi_entry("e1", None, pi_user(f"my password: {PASSWORD}")),
        pi_entry("e2", "e1", pi_assistant(f"key {ANTHROPIC}", calls=[("c1", "write", {"content": KEY_BLOCK})])),
        pi_entry("e3", "e2", pi_result("c1", "write", f"wrote {GITHUB}")),
        pi_entry("e4", "e3", {"role": "bashExecution", "command": f"export AWS_KEY={AWS}", "output": BEARER,
                              "exitCode": 0, "cancelled": False}),
    ])


def test_planted_secrets_never_appear_in_the_model(tmp_path):
    plant(tmp_path)
    sessions = read_sessions(discover(None, [tmp_path]), workers=1)
    dumped = orjson.dumps([session_to_json(s) for s in sessions]).decode()
    for secret in SECRETS:
        assert secret not in dumped
    assert "[REDACTED:" in dumped
    # The text around a secret is still there for mining.
    assert "deploy with" in dumped and "Authorization: Bearer" in dumped


def test_planted_secrets_never_appear_in_cli_output(tmp_path):
    plant(tmp_path)
    done = subprocess.run([sys.executable, "-m", "server.cli", "sessions", "--dir", str(tmp_path), "--json"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    for secret in SECRETS:
        assert secret not in done.stdout and secret not in done.stderr


def test_redaction_can_be_turned_off_for_a_private_look(tmp_path):
    plant(tmp_path)
    [claude] = [s for s in read_sessions(discover(None, [tmp_path]), redact=False, workers=1) if s.format == "claude"]
    assert AWS in claude.human_prompts[0].text


TITLES = {"ghp": GITHUB, "ant": ANTHROPIC, "slack": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
          "pw": "password=" + PASSWORD}


def test_session_titles_of_every_kind_are_redacted(tmp_path):
    """custom-title, ai-title and an old summary (Claude), session_info (Pi): what `sessions` prints as title."""
    a = uid()
    for i, (kind, field) in enumerate((("custom-title", "customTitle"), ("ai-title", "aiTitle"), ("summary", "summary"))):
        secret = list(TITLES.values())[i]
        jsonl(tmp_path / "claude" / f"t-{i}.jsonl", [
            prompt(a, None, "hello", session=f"t-{i}"), {"type": kind, field: f"fix deploy {secret}", "sessionId": f"t-{i}"}])
    jsonl(tmp_path / "pi" / "p.jsonl", [pi_header(), pi_entry("e1", None, pi_user("hi")),
                                        pi_entry("e2", "e1", type="session_info", name=f"deploy {TITLES['pw']}")])
    done = subprocess.run([sys.executable, "-m", "server.cli", "sessions", "--dir", str(tmp_path), "--json"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    titles = [s["title"] for s in orjson.loads(done.stdout)["sessions"]]
    assert len(titles) == 4 and all(t.startswith(("fix deploy [REDACTED:", "deploy password=[REDACTED:")) for t in titles)
    for secret in (*TITLES.values(), PASSWORD):
        assert secret not in done.stdout


def test_ids_names_and_problem_details_are_redacted_too(tmp_path):
    """A secret where an id, a tool name, a model or a record type goes, or in a line that is not JSON."""
    a, b = uid(), uid()
    jsonl(tmp_path / "s.jsonl", [
        prompt(a, None, "deploy", cwd=f"/srv/{GITHUB}"),
        tool_use(b, a, "m1", AWS, f"Bash {ANTHROPIC}", {"command": "ls"}),
        {"type": GITHUB, "uuid": uid()},
        f'{{"broken": "{GITHUB}" ,,}}',
    ])
    [s] = read_sessions(discover(None, [tmp_path]), workers=1)
    dumped = orjson.dumps(session_to_json(s)).decode()
    for secret in (GITHUB, AWS, ANTHROPIC):
        assert secret not in dumped
    assert s.problems[0].detail.startswith("not JSON:") and "[REDACTED:github-token]" in s.problems[0].detail
