"""A person's verdict through the CLI and core: accept keeps on green and restores every byte on
red, refine hands back an editable draft that is re-validated, reject suppresses; refusals write
and record nothing. Plus the demo, the README's main job, end to end from the console script."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from core.apply import GateResult
from core.demo.make_transcripts import files as demo_transcript_files
from core.demo.walkthrough import TRANSCRIPTS, WORKSPACE, lay_out
from core.mining.passes import run_pass
from core.mining.service import trace_path
from core.proposals.decide import DecisionRefused, accept, decide, refine, reject
from core.proposals.inbox import inbox
from core.proposals.proposer import run_proposer
from core.proposals.staging import stage_dir
from core.trace import Trace

REPO = Path(__file__).resolve().parent.parent


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, cwd=cwd)


def hashes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".artifacts" not in p.parts}


@pytest.fixture
def demo(tmp_path):
    """The demo workspace, mined and proposed: three pending proposals."""
    _, ws, transcripts = lay_out(tmp_path / "demo")
    _, recipes = run_pass(ws, repo=ws, dirs=[transcripts], trigger="seed", workers=1)
    run_proposer(ws, recipes)
    cards = {p.kind: p for p in inbox(ws)}
    assert set(cards) == {"intent", "world", "binding"}
    return ws, cards


def decided(ws: Path) -> list[dict]:
    return [e.payload for e in Trace(trace_path(ws)).events("mining.proposal_decided")]


def test_accept_on_green_keeps_and_records(demo):
    ws, cards = demo
    before = (ws / ".kitsoki.yaml").read_text()
    result = cli("accept", cards["world"].recipe_id, "--repo", str(ws), "--json")
    assert result.returncode == 0, result.stderr
    assert orjson.loads(result.stdout) == {"recipe_id": cards["world"].recipe_id, "verdict": "accept",
                                           "flows_green": True, "reverted": False, "failure": None}
    after = (ws / ".kitsoki.yaml").read_text()
    assert after == before.replace("base_branch: main   # we release from main\n",
                                   "base_branch: main   # we release from main\n      test_cmd: pytest\n")
    assert decided(ws) == [{"recipe_id": cards["world"].recipe_id, "verdict": "accept", "by": "human",
                            "flows_green": True, "reverted": False}]
    assert cards["world"].recipe_id not in {p.recipe_id for p in inbox(ws)}
    artifact = orjson.loads((stage_dir(ws, cards["world"].recipe_id) / "author_artifact.json").read_bytes())
    assert artifact["flows_green"] is True


def test_accept_on_red_restores_every_byte_and_holds_the_proposal(demo):
    ws, cards = demo
    before = hashes(ws)
    result = cli("accept", cards["intent"].recipe_id, "--repo", str(ws))
    assert result.returncode == 1
    assert "reverted, every byte restored" in result.stdout and "preview.yaml turn 1" in result.stdout
    assert hashes(ws) == before
    assert decided(ws)[0]["reverted"] is True and decided(ws)[0]["flows_green"] is False
    held = next(p for p in inbox(ws) if p.recipe_id == cards["intent"].recipe_id)
    assert held.status == "held" and "1 of 3 flows failed" in held.failure


def test_a_second_rung_1_accept_on_the_same_file_is_stale_until_redrafted(demo):
    ws, cards = demo
    accept(ws, cards["world"].recipe_id)
    with pytest.raises(DecisionRefused, match=r"\.kitsoki\.yaml changed since the proposal was drafted"):
        accept(ws, cards["binding"].recipe_id)
    assert len(decided(ws)) == 1, "a refusal records nothing"
    run_proposer(ws)
    assert accept(ws, cards["binding"].recipe_id).flows_green
    config = (ws / ".kitsoki.yaml").read_text()
    assert "test_cmd: pytest" in config and "ticket: host.gh.ticket" in config


def test_unsaved_edits_refuse_the_accept(demo):
    ws, cards = demo
    before = hashes(ws)
    result = cli("accept", cards["world"].recipe_id, "--repo", str(ws), "--unsaved", ".kitsoki.yaml")
    assert result.returncode == 1 and "unsaved" in result.stderr
    assert hashes(ws) == before and decided(ws) == []


def test_refine_hands_back_the_draft_and_a_broken_refinement_is_refused(demo):
    ws, cards = demo
    rid = cards["binding"].recipe_id
    decision = refine(ws, rid)
    draft = Path(decision.draft_path)
    assert draft == stage_dir(ws, rid) / ".kitsoki.yaml" and draft.exists()
    assert next(p for p in inbox(ws) if p.recipe_id == rid).status == "refining"
    draft.write_text(draft.read_text().replace("host.gh.ticket", "host.gh.ticket\n    nonsense: [1"))
    before = hashes(ws)
    with pytest.raises(DecisionRefused, match="refined draft .* does not validate"):
        accept(ws, rid)
    assert hashes(ws) == before
    # A sound refinement is applied as the person wrote it.
    draft.write_text((ws / ".kitsoki.yaml").read_text().replace("  overrides:\n", "  overrides:\n"
                                                                "    bindings:\n      ticket: host.local_files.ticket\n"))
    assert accept(ws, rid).flows_green
    assert "ticket: host.local_files.ticket" in (ws / ".kitsoki.yaml").read_text()
    assert [d["verdict"] for d in decided(ws)] == ["refine", "accept"]


def test_reject_and_dismiss_suppress_and_unknown_ids_are_refused(demo):
    ws, cards = demo
    assert decide(ws, cards["intent"].recipe_id, "dismiss").verdict == "reject"
    assert decided(ws) == [{"recipe_id": cards["intent"].recipe_id, "verdict": "reject", "by": "human",
                            "flows_green": False, "reverted": False}]
    with pytest.raises(DecisionRefused, match="already rejected"):
        reject(ws, cards["intent"].recipe_id)
    with pytest.raises(DecisionRefused, match="no open proposal ffff"):
        accept(ws, "ffffffffffffffff")
    with pytest.raises(DecisionRefused, match='"maybe" is not a verdict'):
        decide(ws, cards["world"].recipe_id, "maybe")
    result = cli("reject", "nope", "--repo", str(ws))
    assert result.returncode == 1 and "no open proposal nope" in result.stderr


def test_a_gate_that_crashes_is_red_and_reverts(demo):
    ws, cards = demo
    before = hashes(ws)

    def crashing_gate(_ws):
        raise RuntimeError("simulated gate crash")

    decision = accept(ws, cards["world"].recipe_id, gate=crashing_gate)
    assert decision.reverted and not decision.flows_green and hashes(ws) == before


def test_a_command_gate_from_the_config_is_used(demo):
    ws, cards = demo
    config = ws / ".kitsoki.yaml"
    config.write_text(config.read_text() + "miner:\n  flow_gate:\n    kind: command\n    command: [\"false\"]\n")
    run_proposer(ws)  # the config changed: re-draft the rung-1 proposals
    decision = accept(ws, cards["world"].recipe_id)
    assert decision.reverted and decision.gate == GateResult.model_validate(decision.gate.model_dump())
    assert decision.gate.gate == "command"


def test_a_leftover_journal_is_rolled_back_on_the_next_start(demo):
    ws, cards = demo
    before = hashes(ws)
    script = (f"import os, signal\nfrom pathlib import Path\nfrom core.proposals.decide import accept\n"
              f"def hook(name):\n    if name == 'before_gate':\n        os.kill(os.getpid(), signal.SIGKILL)\n"
              f"accept(Path({str(ws)!r}), {cards['world'].recipe_id!r}, hook=hook)\n")
    killed = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True)
    assert killed.returncode == -9
    assert hashes(ws) != before, "killed after the write: the tree is half way"
    result = cli("proposals", "--repo", str(ws))
    assert result.returncode == 0 and "recovered an interrupted accept" in result.stderr
    assert hashes(ws) == before
    recovered = list(Trace(trace_path(ws)).events("mining.recovered"))
    assert [e.payload["recipe_id"] for e in recovered] == [cards["world"].recipe_id]


def test_flows_command_prints_kitsokis_report(tmp_path):
    _, ws, _ = lay_out(tmp_path / "d")
    result = cli("flows", "--repo", str(ws))
    assert result.returncode == 0 and result.stdout.endswith("Summary: 3/3 flows pass\nPASS\n")
    report = orjson.loads(cli("flows", "--repo", str(ws), "--json").stdout)
    assert (report["Passed"], report["Failed"]) == (3, 0)


def test_the_demo_runs_from_the_console_script(tmp_path):
    into = tmp_path / "demo"
    result = subprocess.run([str(Path(sys.executable).parent / "kitsoki-miner"), "demo", "--into", str(into)],
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "REVERTED Add 1 synonym to release-desk's deploy" in out and "preview.yaml turn 1" in out
    assert "KEPT     Set world.test_cmd to 'pytest'" in out and "KEPT     Bind ticket to host.gh.ticket" in out
    assert '"kind":"mining.proposal_decided"' in out
    assert "+      test_cmd: pytest" in out
    config = (into / "release-desk" / ".kitsoki.yaml").read_text()
    assert "# we release from main" in config and "ticket: host.gh.ticket" in config
    assert (into / "release-desk" / "stories/release-desk/app.yaml").read_bytes() == \
        (WORKSPACE / "stories/release-desk/app.yaml").read_bytes()
    again = subprocess.run([str(Path(sys.executable).parent / "kitsoki-miner"), "demo", "--into", str(into)],
                           capture_output=True, text=True)
    assert again.returncode == 2 and "not an empty folder" in again.stderr


def test_the_committed_demo_transcripts_are_the_generators_output():
    committed = {p.relative_to(TRANSCRIPTS).as_posix(): p.read_bytes() for p in TRANSCRIPTS.rglob("*.jsonl")}
    assert committed == demo_transcript_files(), "run `python -m core.demo.make_transcripts`"
