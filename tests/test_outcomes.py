"""Outcome after accept (core.proposals.outcomes): live passes follow each kept proposal; one unused for the
window is offered for revert as a proposal, through the same gate; an accepted change that did not stick
lowers the priority of recipes like it; the records are signed and survive a restart.

The demo's walkthrough accepts its world and binding cards; we accept its synonym too, then write the weeks
after: one session asks "take the build live" (it routes to what the synonym added: used), one runs the
tests with pytest (the world key in use), and nothing uses the ticket binding (never used).
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson
import pytest

from core.demo.make_transcripts import CHECK_OK, TESTS_OK, claude_session, render
from core.demo.walkthrough import run_demo
from core.kitsoki.config import CONFIG_FILE
from core.mining.passes import run_pass
from core.mining.recipes import Instance, Recipe, recipe_id
from core.proposals import outcomes
from core.proposals.decide import accept
from core.proposals.inbox import inbox


def cli(*argv: str) -> str:
    """The console script's output (a process of its own: the records are read back from disk)."""
    done = subprocess.run([sys.executable, "-m", "server.cli", *argv], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout

DEMO_CWD = "/home/dev/release-desk"


def later_sessions(folder: Path, workspace: Path, start: datetime) -> None:
    sessions = [
        (start, [("take the build live", [("make check", CHECK_OK, False)], "Checks pass; rolling out.")]),
        (start + timedelta(days=2), [("run the tests", [("pytest -q", TESTS_OK, False)], "42 passed.")]),
    ]
    for when, episodes in sessions:
        records = claude_session(when.strftime("%Y-%m-%dT%H:%M:%S"), episodes)
        text = render(records).decode().replace(DEMO_CWD, json.dumps(str(workspace))[1:-1])
        (folder / "claude" / f"{records[0]['sessionId']}.jsonl").write_text(text)


@pytest.fixture(scope="module")
def followed(tmp_path_factory):
    result = run_demo(tmp_path_factory.mktemp("outcomes") / "demo", say=lambda _: None)
    workspace = result.workspace
    synonym = next(p for p in inbox(workspace) if "synonym" in p.title)
    assert accept(workspace, synonym.recipe_id, gate_kind="builtin").flows_green
    transcripts = result.root / "transcripts"
    now = datetime.now(timezone.utc)
    later_sessions(transcripts, workspace, now + timedelta(days=1))
    run_pass(workspace, repo=workspace, dirs=[transcripts], trigger="live", workers=1)
    data = outcomes.follow(workspace, now=now + timedelta(days=40))
    return workspace, now, data


def by_title(data, word: str):
    return next(o for o in data.outcomes if word in o.title)


def test_a_kept_synonym_used_afterwards_is_in_use(followed):
    _, now, data = followed
    synonym = by_title(data, "synonym")
    assert (synonym.status, synonym.uses, synonym.free_form, synonym.target) == \
        ("in use", 1, 0, "release-desk:deploy")
    assert synonym.last_used is not None and synonym.last_used > now.isoformat()


def test_a_world_key_whose_value_is_used_afterwards_is_in_use(followed):
    _, _, data = followed
    world = by_title(data, "test_cmd")
    assert (world.status, world.uses) == ("in use", 1)


def test_a_binding_never_used_is_offered_for_revert_as_a_proposal_and_reverted_only_through_the_gate(followed):
    workspace, _, data = followed
    binding = by_title(data, "Bind ticket")
    assert (binding.status, binding.uses, binding.free_form) == ("not used", 0, 0)
    assert binding.revert_offer == outcomes.revert_id(binding.recipe_id)
    assert "host.gh.ticket" in (workspace / CONFIG_FILE).read_text()  # never reverted silently
    offer = next(p for p in inbox(workspace) if p.recipe_id == binding.revert_offer)
    assert offer.title == 'Revert "Bind ticket to host.gh.ticket" (not used)' and offer.status == "pending"
    assert "-      ticket: host.gh.ticket" in offer.diff
    # the gate card was held (its flows went red): not decided, so not followed
    assert not any("human decide" in o.title for o in data.outcomes)
    decision = accept(workspace, offer.recipe_id, gate_kind="builtin")
    assert decision.flows_green and not decision.reverted
    assert "host.gh.ticket" not in (workspace / CONFIG_FILE).read_text()
    assert "test_cmd: pytest" in (workspace / CONFIG_FILE).read_text()
    again = outcomes.follow(workspace, now=datetime.now(timezone.utc) + timedelta(days=41))
    assert next(o for o in again.outcomes if o.recipe_id == binding.recipe_id).status == "reverted"
    assert next(o for o in again.outcomes if o.recipe_id == offer.recipe_id).note == f"took back {binding.recipe_id}"


def test_a_change_that_did_not_stick_lowers_similar_recipes(followed):
    workspace, _, _ = followed
    like = Recipe(id=recipe_id("binding", "ticket|jira"), kind="binding", title="ticket via jira", priority=4.0,
                  sessions=3, determinism="deterministic", iface="ticket", value="jira",
                  instances=[Instance("s", "x.jsonl", 1, 1)])
    other = Recipe(id=recipe_id("world", "base_branch"), kind="world", title="base_branch = dev", priority=4.0,
                   sessions=3, determinism="deterministic", iface="base_branch", value="dev",
                   instances=[Instance("s", "x.jsonl", 1, 1)])
    weighed = {r.id: r for r in outcomes.weigh_recipes(workspace, [like, other], threshold=2.5)}
    assert weighed[like.id].priority == 2.0 and weighed[like.id].below_threshold
    assert weighed[other.id].priority == 4.0
    from core.mining import passes  # a pass weighs its recipes only where this file is: the same path

    assert passes.OUTCOMES_FILE == outcomes.OUTCOMES_FILE and (workspace / passes.OUTCOMES_FILE).is_file()


def test_outcomes_cli_lists_each_decision_and_the_records_survive_a_restart(followed, capsys):
    workspace, _, _ = followed
    data = orjson.loads(cli("outcomes", "--repo", str(workspace), "--json"))
    statuses = {o["title"]: o["status"] for o in data["outcomes"]}
    assert statuses["Add 1 synonym to release-desk's deploy"] == "in use"
    assert "Let a human decide at release-desk:rollout" not in statuses  # held (red), never kept: nothing to follow
    assert data["window_days"] == 30
    stored = outcomes.read_outcomes(workspace)  # what a new process reads back: signed, the same records
    assert [o.recipe_id for o in stored.outcomes] == [o["recipe_id"] for o in data["outcomes"]]
    text = cli("outcomes", "--repo", str(workspace))
    assert "in use" in text and "uses since 1, free-form asks since 0" in text


def test_a_tampered_outcomes_file_is_refused_by_name(followed, capsys):
    workspace, _, _ = followed
    path = workspace / outcomes.OUTCOMES_FILE
    good = path.read_bytes()
    try:
        path.write_bytes(good.replace(b'"in use"', b'"not used"', 1))
        with pytest.raises(outcomes.OutcomesError, match="outcomes.json"):
            outcomes.read_outcomes(workspace)
    finally:
        path.write_bytes(good)


def test_the_window_is_a_miner_setting(tmp_path):
    from core.kitsoki.config import load_config
    from core.proposals.settings import SettingsError, outcome_window

    (tmp_path / CONFIG_FILE).write_text("miner:\n  outcome_window: 10d\n")
    assert outcome_window(load_config(tmp_path)) == timedelta(days=10)
    (tmp_path / CONFIG_FILE).write_text("miner:\n  outcome_window: soon\n")
    with pytest.raises(SettingsError, match="miner.outcome_window"):
        outcome_window(load_config(tmp_path))
