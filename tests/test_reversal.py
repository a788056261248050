"""Taking a verdict back (core/proposals/reversal.py): an undo of a kept accept puts back every byte
through the apply journal and offers the proposal again; a saved file that dropped a kept change is
that accept undone; a rejection can be restored; nothing is lost when a file changed since."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from core.apply.journal import pending_journals
from core.apply.recovery import recover
from core.demo.walkthrough import lay_out
from core.mining.passes import run_pass
from core.mining.service import trace_path
from core.proposals.decide import accept, reject
from core.proposals.inbox import history, inbox
from core.proposals.proposer import run_proposer
from core.proposals.reversal import (
    RESTORED,
    UNDONE,
    ReversalRefused,
    decided,
    kept_dir,
    notice_dropped,
    restore_rejected,
    undo_accept,
)
from core.trace import Trace

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def demo(tmp_path):
    _, ws, transcripts = lay_out(tmp_path / "demo")
    _, recipes = run_pass(ws, repo=ws, dirs=[transcripts], trigger="seed", workers=1)
    run_proposer(ws, recipes)
    return ws, {p.kind: p for p in inbox(ws)}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def events(ws: Path, kind: str) -> list[dict]:
    return [e.payload for e in Trace(trace_path(ws)).events(kind)]


def test_undo_puts_back_every_byte_and_offers_the_proposal_again(demo):
    ws, cards = demo
    config = ws / ".kitsoki.yaml"
    before = config.read_bytes()
    world = cards["world"].recipe_id
    assert accept(ws, world).flows_green
    assert b"test_cmd: pytest" in config.read_bytes()
    [item] = [d for d in decided(ws) if d.recipe_id == world]
    assert (item.state, item.can) == ("accepted", "undo")

    reversal = undo_accept(ws, world[:8])  # a prefix, as people type them
    assert reversal.restored == [".kitsoki.yaml"] and reversal.how == "undo"
    assert config.read_bytes() == before
    assert not pending_journals(ws) and not kept_dir(ws, world).exists()
    assert history(Trace(trace_path(ws)))[world] == "pending"
    assert [p["recipe_id"] for p in events(ws, UNDONE)] == [world]
    again = {p.recipe_id: p for p in inbox(ws)}[world]
    assert again.status == "pending", "the same draft applies again to the bytes it was made against"
    assert accept(ws, world).flows_green, "and it can be accepted again"


def test_undo_refuses_when_the_file_changed_since_and_writes_nothing(demo):
    ws, cards = demo
    world = cards["world"].recipe_id
    accept(ws, world)
    config = ws / ".kitsoki.yaml"
    config.write_text(config.read_text() + "# my own edit\n")
    edited = config.read_bytes()
    with pytest.raises(ReversalRefused, match=r"\.kitsoki\.yaml changed since the accept wrote it"):
        undo_accept(ws, world)
    assert config.read_bytes() == edited
    assert history(Trace(trace_path(ws)))[world] == "accepted" and not events(ws, UNDONE)
    [item] = [d for d in decided(ws) if d.recipe_id == world]
    assert item.can is None and "changed since the accept" in item.why_not


def test_only_a_kept_accept_can_be_undone(demo):
    ws, cards = demo
    intent = cards["intent"].recipe_id
    assert accept(ws, intent).reverted  # held: nothing was kept
    with pytest.raises(ReversalRefused, match="not a kept accept"):
        undo_accept(ws, intent)


def test_a_saved_file_that_dropped_the_change_is_recorded_undone(demo):
    ws, cards = demo
    config = ws / ".kitsoki.yaml"
    before = config.read_bytes()
    world = cards["world"].recipe_id
    accept(ws, world)
    assert notice_dropped(ws, [".kitsoki.yaml"]) == [], "a file still holding the change is left alone"
    config.write_bytes(before)  # what an editor's undo, then save, does
    [reversal] = notice_dropped(ws, [".kitsoki.yaml"])
    assert (reversal.recipe_id, reversal.how) == (world, "saved")
    assert history(Trace(trace_path(ws)))[world] == "pending"
    assert {p.recipe_id: p.status for p in inbox(ws)}[world] == "pending"
    assert notice_dropped(ws, [".kitsoki.yaml"]) == [], "recorded once"


def test_a_saved_file_with_other_edits_and_none_of_the_added_lines_is_undone_too(demo):
    ws, cards = demo
    config = ws / ".kitsoki.yaml"
    world = cards["world"].recipe_id
    accept(ws, world)
    text = config.read_text().replace("      test_cmd: pytest\n", "")
    config.write_text(text + "# and something else\n")
    [reversal] = notice_dropped(ws, [".kitsoki.yaml"])
    assert reversal.recipe_id == world
    assert {p.recipe_id: p.status for p in inbox(ws)}[world] == "stale", "re-drafted against the new bytes"


def test_a_rejection_is_listed_and_restored(demo):
    ws, cards = demo
    binding = cards["binding"].recipe_id
    reject(ws, binding)
    assert binding not in {p.recipe_id for p in inbox(ws)}
    [item] = decided(ws, state="rejected")
    assert (item.recipe_id, item.can, item.title) == (binding, "restore", cards["binding"].title)
    restore_rejected(ws, binding)
    assert {p.recipe_id: p.status for p in inbox(ws)}[binding] == "pending"
    assert [p["recipe_id"] for p in events(ws, RESTORED)] == [binding]
    with pytest.raises(ReversalRefused, match="no rejected proposal"):
        restore_rejected(ws, "ffffffffffff")
    # kitsoki's own reading of the trace: a raise after the decision is pending again
    raised = [p["recipe_id"] for p in events(ws, "mining.proposal_raised")]
    assert raised.count(binding) == 2


def test_an_undo_killed_half_way_is_finished_by_recovery(demo, monkeypatch):
    ws, cards = demo
    config = ws / ".kitsoki.yaml"
    before = config.read_bytes()
    world = cards["world"].recipe_id
    accept(ws, world)
    import core.proposals.reversal as reversal

    def killed(*_a, **_k):
        raise KeyboardInterrupt  # the process dies after the journal and the record, before a byte moved

    monkeypatch.setattr(reversal, "restore", killed)
    with pytest.raises(KeyboardInterrupt):
        undo_accept(ws, world)
    assert pending_journals(ws) and b"test_cmd: pytest" in config.read_bytes()
    monkeypatch.undo()
    recover(ws, Trace(trace_path(ws)))
    assert config.read_bytes() == before and not pending_journals(ws)
    assert history(Trace(trace_path(ws)))[world] == "pending"


def test_a_planted_record_is_never_used(demo):
    ws, cards = demo
    world = cards["world"].recipe_id
    accept(ws, world)
    record = kept_dir(ws, world) / "record.json"
    body = orjson.loads(record.read_bytes())
    body["files"][0]["before_sha256"] = "0" * 64
    record.write_bytes(orjson.dumps(body))
    with pytest.raises(ReversalRefused, match="not signed"):
        undo_accept(ws, world)
    assert b"test_cmd: pytest" in (ws / ".kitsoki.yaml").read_bytes()


def test_the_cli_lists_undoes_and_restores(demo):
    ws, cards = demo
    world, binding = cards["world"].recipe_id, cards["binding"].recipe_id
    accept(ws, world)
    reject(ws, binding)

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "server.cli", *args, "--repo", str(ws)], capture_output=True,
                              text=True, cwd=REPO)

    listed = cli("decided")
    assert listed.returncode == 0, listed.stderr
    assert "undo" in listed.stdout and "restore" in listed.stdout and cards["world"].title in listed.stdout
    as_json = orjson.loads(cli("decided", "--json").stdout)
    assert {d["recipe_id"]: d["can"] for d in as_json["decided"]} == {world: "undo", binding: "restore"}
    done = cli("undo", world)
    assert done.returncode == 0 and "put back .kitsoki.yaml" in done.stdout, done.stdout + done.stderr
    done = cli("restore", binding)
    assert done.returncode == 0 and "offered again" in done.stdout, done.stdout + done.stderr
    again = cli("restore", binding)
    assert again.returncode == 1 and "not rejected" in again.stderr
    assert {p.recipe_id for p in inbox(ws)} >= {world, binding}
