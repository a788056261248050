"""A person's verdict through the CLI and core: accept keeps on green and restores every byte on
red, refine hands back an editable draft that is re-validated, reject suppresses; refusals write
and record nothing. Plus the demo, the README's main job, end to end from the console script."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from core.apply import GateResult
from core.demo.make_transcripts import files as demo_transcript_files
from core.demo.walkthrough import TRANSCRIPTS, WORKSPACE, lay_out, seed_pass
from core.mining.service import trace_path
from core.proposals.decide import DecisionRefused, accept, decide, refine, reject
from core.proposals.inbox import inbox
from core.proposals.proposer import run_proposer
from core.proposals.staging import stage_dir
from core.trace import Trace
from sim.kitsoki_sim import install
from test_proposals import recipe

REPO = Path(__file__).resolve().parent.parent


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, cwd=cwd)


def hashes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".artifacts" not in p.parts}


@pytest.fixture
def demo(tmp_path):
    """The demo workspace, mined and proposed: four pending proposals."""
    _, ws, transcripts = lay_out(tmp_path / "demo")
    _, recipes = seed_pass(ws, transcripts)
    run_proposer(ws, recipes)
    cards = {p.kind: p for p in inbox(ws)}
    assert set(cards) == {"intent", "world", "binding", "gate"}
    return ws, cards


def decided(ws: Path) -> list[dict]:
    return [e.payload for e in Trace(trace_path(ws)).events("mining.proposal_decided")]


def test_accept_on_green_keeps_and_records(demo):
    ws, cards = demo
    before = (ws / ".kitsoki.yaml").read_text()
    result = cli("accept", cards["world"].recipe_id, "--repo", str(ws), "--json")
    assert result.returncode == 0, result.stderr
    answer = orjson.loads(result.stdout)
    assert {k: answer[k] for k in ("recipe_id", "verdict", "flows_green", "reverted", "failure", "gated", "held")} == {
        "recipe_id": cards["world"].recipe_id, "verdict": "accept", "flows_green": True, "reverted": False,
        "failure": None, "gated": False, "held": False}  # the demo sets miner.ungated: allow: no flow reads it
    assert [(f["app"], f["why"], f["status"]) for f in answer["flows"]] == [
        ("<root>", "the root instance (root.overrides.world.test_cmd)", "not run")]
    after = (ws / ".kitsoki.yaml").read_text()
    assert after == before.replace("base_branch: main   # we release from main\n",
                                   "base_branch: main   # we release from main\n      test_cmd: pytest\n")
    assert decided(ws) == [{"recipe_id": cards["world"].recipe_id, "verdict": "accept", "by": "human",
                            "flows_green": True, "reverted": False}]
    assert cards["world"].recipe_id not in {p.recipe_id for p in inbox(ws)}
    artifact = orjson.loads((stage_dir(ws, cards["world"].recipe_id) / "author_artifact.json").read_bytes())
    assert artifact["flows_green"] is True and artifact["flow_files"] == []
    assert artifact["gate"]["gated"] is False and "structural checks" in artifact["gate"]["summary"]


def test_accept_on_red_restores_every_byte_and_holds_the_proposal(demo):
    # A person decides at rollout: ship.yaml expects a deploy to go live by itself (kitsoki's verdict too).
    ws, cards = demo
    before = hashes(ws)
    result = cli("accept", cards["gate"].recipe_id, "--repo", str(ws))
    assert result.returncode == 1
    assert "reverted, every byte restored" in result.stdout and "ship.yaml turn 1" in result.stdout
    assert 'expect_state: got "rollout", want "__exit__shipped"' in result.stdout
    assert ("flows:\n  stories/release-desk/app.yaml (edited stories/release-desk/rooms/desk.yaml): failed, 4 passed, "
            "1 failed\n") in result.stdout
    assert "proof: stories/release-desk/flows/mined-" in result.stdout  # its own proof passed; ship.yaml did not
    assert hashes(ws) == before
    assert decided(ws)[0]["reverted"] is True and decided(ws)[0]["flows_green"] is False
    held = next(p for p in inbox(ws) if p.recipe_id == cards["gate"].recipe_id)
    assert held.status == "held" and "1 of 5 flows failed" in held.failure


def test_a_synonym_that_moves_a_route_is_green_at_the_gate_so_its_impact_says_so_first(demo):
    # kitsoki resolves a fixture's typed input only through its recording: no flow sees the route it steals.
    ws, cards = demo
    synonym = cards["intent"]
    assert [(m.text, m.from_, m.to) for m in synonym.impact.moved] == [
        ("take the preview build live", "release-desk:preview", "release-desk:deploy")]
    decision = accept(ws, synonym.recipe_id)
    assert decision.flows_green and not decision.reverted


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
    with pytest.raises(DecisionRefused, match="refined draft .* has not been shown yet"):
        accept(ws, rid)  # the person has not seen this draft's diff
    card = next(p for p in inbox(ws, show=True) if p.recipe_id == rid)  # shown: validated, and it does not
    assert "does not validate" in card.failure
    with pytest.raises(DecisionRefused, match="does not validate"):
        accept(ws, rid)
    assert hashes(ws) == before
    # A sound refinement, once shown, is applied as the person wrote it.
    draft.write_text((ws / ".kitsoki.yaml").read_text().replace("  overrides:\n", "  overrides:\n"
                                                                "    bindings:\n      ticket: host.local_files.ticket\n"))
    card = next(p for p in inbox(ws, show=True) if p.recipe_id == rid)
    assert card.failure is None and "+      ticket: host.local_files.ticket" in card.diff
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
    config.write_text(config.read_text().replace("\nminer:\n", "\nminer:\n  flow_gate:\n    kind: command\n"
                                                               "    command: [\"false\"]\n"))
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
    assert result.returncode == 0 and result.stdout.endswith("Summary: 4/4 flows pass\nPASS\n")
    report = orjson.loads(cli("flows", "--repo", str(ws), "--json").stdout)
    assert (report["Passed"], report["Failed"]) == (4, 0)


def test_the_demo_runs_from_the_console_script(tmp_path):
    into = tmp_path / "demo"
    result = subprocess.run([str(Path(sys.executable).parent / "kitsoki-miner"), "demo", "--into", str(into)],
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "REVERTED Let a human decide at release-desk:rollout" in out and "ship.yaml turn 1" in out
    assert "LEFT     Add 1 synonym to release-desk's deploy: its impact moves 1 route" in out
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



# ── kitsoki's own workspace: the gate runs what a change reaches, as kitsoki would ───────────

KITSOKI_WS = REPO.parent / "shared" / "kitsoki-workspace"
OFF_RAMP = "stories/off-ramp-demo"
SKIP_BLOCK = "\nminer:\n  flow_gate:\n    skip: [repo-bakeoff, bench-bugfix]\n"


@pytest.fixture
def kitsoki_ws(tmp_path, monkeypatch):
    """A copy of kitsoki's own stories (the shared tree is read-only), kitsoki not on PATH."""
    if not KITSOKI_WS.is_dir():
        pytest.skip("../shared/kitsoki-workspace is not here")
    ws = tmp_path / "kitsoki"
    shutil.copytree(KITSOKI_WS, ws)
    monkeypatch.delenv("KITSOKI_REPO", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.kitsoki/repo: @kitsoki/ imports use our library
    monkeypatch.setenv("PATH", os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                                               if not (Path(p) / "kitsoki").exists()))
    return ws


@pytest.fixture
def sim(tmp_path, monkeypatch):
    """tests/sim/kitsoki_sim.py (a simulation of the binary) as `kitsoki` on PATH; returns the calls."""
    install(tmp_path / "bin")
    log = tmp_path / "kitsoki-sim.log"
    log.touch()
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("KITSOKI_SIM_LOG", str(log))
    monkeypatch.setenv("KITSOKI_SIM_OUTCOMES", '{"*": "judge"}')  # the built-in runner's verdict per flow

    def calls() -> list[dict]:
        return [orjson.loads(line) for line in log.read_text().splitlines()]

    return calls


def stage(ws: Path, title: str, files: dict[str, str], *, kind: str = "intent", rung: int = 2) -> str:
    """Stage a proposal through the real proposer, drafted by a simulated drafter writing `files`."""
    from core.proposals.drafter import Draft

    def drafter(recipe_, mapping, model, inventory, read):
        return Draft(kind=kind, target="root-instance", rung=rung, title=title, files={k: v.encode() for k, v in files.items()},
                     summary_markdown=f"{title}: a simulated drafter's output, long enough for the schema.")

    r = recipe("binding" if rung == 1 else "intent", title, phrasings=[("frobnicate the quux widget", 3)],
               iface="ci", value="circleci")  # asks nothing here models, so the proposer drafts it
    report = run_proposer(ws, [r], drafter=drafter)
    assert [o.result for o in report.outcomes] == ["raised"], report.outcomes
    return r.id


def with_example(ws: Path) -> dict[str, str]:
    text = (ws / OFF_RAMP / "app.yaml").read_text()
    return {f"{OFF_RAMP}/app.yaml": text.replace('examples: ["browse", "catalogue",',
                                                 'examples: ["browse", "catalogue", "list the stories",')}


def broken_transition(ws: Path) -> dict[str, str]:
    text = (ws / OFF_RAMP / "rooms/desk.yaml").read_text()
    return {f"{OFF_RAMP}/rooms/desk.yaml": text.replace("      browse:\n        - target: catalogue",
                                                        "      browse:\n        - target: status_room", 1)}


def ran(decision) -> list[tuple[str, str, list[str]]]:
    return [(f["app"], f["status"], f["passed"] + f["failed"]) for f in decision.answer()["flows"]]


@pytest.mark.parametrize("gate_kind", ["builtin", "kitsoki"])
def test_a_rung_2_accept_on_kitsoki_is_kept_on_green_and_reverted_when_it_breaks_a_flow(kitsoki_ws, sim, gate_kind):
    ws = kitsoki_ws
    kept = accept(ws, stage(ws, "list the stories", with_example(ws)), gate_kind=gate_kind)
    shown = f"{OFF_RAMP}/flows/menu.yaml"
    assert kept.flows_green and kept.gated and ran(kept) == [(f"{OFF_RAMP}/app.yaml", "passed", [shown])]
    assert '"list the stories"' in (ws / OFF_RAMP / "app.yaml").read_text()
    before = hashes(ws)
    broken = accept(ws, stage(ws, "browse into status", broken_transition(ws), kind="gate"), gate_kind=gate_kind)
    assert broken.reverted and not broken.held and hashes(ws) == before
    assert ran(broken) == [(f"{OFF_RAMP}/app.yaml", "failed", [shown])]
    assert f"{shown} turn 1:" in broken.gate.failures[0]
    if gate_kind == "kitsoki":  # one call per app: exactly off-ramp-demo's own flows
        assert [(os.path.relpath(c["app"], ws), os.path.relpath(c["glob"], ws)) for c in sim()] == \
            [(f"{OFF_RAMP}/app.yaml", f"{OFF_RAMP}/flows/*.yaml")] * 2
        assert all("--kitsoki-repo" not in c["argv"] for c in sim()), "nothing names a kitsoki checkout"


def test_a_rung_2_edit_runs_only_that_story_and_its_importers(kitsoki_ws, sim, monkeypatch):
    ws = kitsoki_ws
    monkeypatch.setenv("KITSOKI_SIM_OUTCOMES", "{}")  # every flow passes: this is about which apps run
    app = (ws / "stories/robbery/app.yaml").read_text()
    decision = accept(ws, stage(ws, "rob the stage", {"stories/robbery/app.yaml": app + "\n# reviewed\n"}),
                      gate_kind="kitsoki")
    assert decision.flows_green
    assert sorted(os.path.relpath(c["app"], ws) for c in sim()) == [
        "stories/frontier_event/app.yaml", "stories/oregon-trail/app.yaml", "stories/robbery/app.yaml"]
    assert [(f["app"], f["why"]) for f in decision.answer()["flows"]] == [
        ("stories/robbery/app.yaml", "edited"),
        ("stories/frontier_event/app.yaml", "imports stories/robbery/app.yaml"),
        ("stories/oregon-trail/app.yaml", "imports stories/robbery/app.yaml (through its imports)")]
    # kitsoki skips the 2 oregon-trail documents whose test_kind is not `flow`: 3 + 2 + 28 flows ran.
    assert sum(len(f["passed"]) for f in decision.answer()["flows"]) == 3 + 2 + 28


def test_a_skipped_story_is_not_gated_and_the_answer_says_so(kitsoki_ws, sim, monkeypatch):
    ws = kitsoki_ws
    monkeypatch.setenv("KITSOKI_SIM_OUTCOMES", "{}")
    (ws / ".kitsoki.yaml").write_text((ws / ".kitsoki.yaml").read_text() + SKIP_BLOCK)
    app = (ws / "stories/conflict-resolve/app.yaml").read_text()
    decision = accept(ws, stage(ws, "resolve it", {"stories/conflict-resolve/app.yaml": app + "\n# ok\n"}),
                      gate_kind="kitsoki")
    assert decision.flows_green
    called = {os.path.relpath(c["app"], ws) for c in sim()}
    assert "stories/bench-bugfix/app.yaml" not in called and "stories/conflict-resolve/app.yaml" in called
    assert len(called) == 9, "conflict-resolve and the 8 stories importing it that are not skipped"
    assert decision.answer()["skipped"] == ["stories/bench-bugfix/app.yaml: miner.flow_gate.skip lists bench-bugfix "
                                            "(imports stories/conflict-resolve/app.yaml (through its imports))"]
    # A change to the skipped story itself is gated by nothing: held, and the answer says why.
    bakeoff = (ws / "stories/repo-bakeoff/app.yaml").read_text()
    before = hashes(ws)
    held = accept(ws, stage(ws, "bake it off", {"stories/repo-bakeoff/app.yaml": bakeoff + "\n# ok\n"}),
                  gate_kind="kitsoki")
    assert held.held and held.reverted and not held.flows_green and hashes(ws) == before
    assert "no flow exercises this change" in held.failure and "miner.flow_gate.skip" in held.failure


def test_a_rung_1_world_edit_no_flow_reads_is_held_and_kept_with_ungated_allow(kitsoki_ws):
    ws = kitsoki_ws
    config = (ws / ".kitsoki.yaml").read_text()
    edited = config + "\nroot:\n  import: dev-story\n  overrides:\n    world:\n      test_cmd: make test\n"
    before = hashes(ws)
    rid = stage(ws, "test with make", {".kitsoki.yaml": edited}, kind="world", rung=1)
    held = accept(ws, rid, gate_kind="builtin")
    assert held.held and not held.gated and held.reverted and not held.flows_green
    assert hashes(ws) == before, "held: every byte as before"
    assert held.failure.startswith("held: no flow exercises this change (root.overrides.world.test_cmd); it would be "
                                   "exercised by a root flow (flows/*.yaml beside .kitsoki.yaml")
    assert next(p for p in inbox(ws) if p.recipe_id == rid).status == "held"
    assert decided(ws)[-1] == {"recipe_id": rid, "verdict": "accept", "by": "human", "flows_green": False,
                               "reverted": True}, "the trace keeps kitsoki's shape"
    # With miner.ungated: allow the same change is kept after the structural checks, recorded ungated.
    (ws / ".kitsoki.yaml").write_text(config + "\nminer:\n  ungated: allow\n")
    rid = stage(ws, "test with make again", {".kitsoki.yaml": config + "\nminer:\n  ungated: allow\n"
                                             + edited[len(config):]}, kind="world", rung=1)
    kept = accept(ws, rid, gate_kind="builtin")
    assert kept.flows_green and not kept.gated and not kept.held
    assert "the synthesized root loads" in kept.gate.checks and \
        "world.test_cmd is a string, as dev-story declares" in kept.gate.checks
    assert "test_cmd: make test" in (ws / ".kitsoki.yaml").read_text()
    artifact = orjson.loads((stage_dir(ws, rid) / "author_artifact.json").read_bytes())
    assert artifact["gate"]["gated"] is False


def test_a_rung_1_edit_is_gated_only_by_root_flows_never_by_an_importers_flows(kitsoki_ws, sim, monkeypatch):
    """`kitsoki test flows <story>` never reads .kitsoki.yaml: the stories importing dev-story run the
    same with and without the override, so they never gate it (gated: true would be vacuous)."""
    ws = kitsoki_ws
    monkeypatch.setenv("KITSOKI_SIM_OUTCOMES", "{}")
    edited = (ws / ".kitsoki.yaml").read_text() + "\nroot:\n  overrides:\n    world:\n      judge_mode: llm_then_human\n"
    before = hashes(ws)
    held = accept(ws, stage(ws, "judge by llm", {".kitsoki.yaml": edited}, kind="world", rung=1), gate_kind="kitsoki")
    assert held.held and not held.gated and hashes(ws) == before
    assert sim() == [], "no story's flows can see a root override"
    assert "a root flow (flows/*.yaml beside .kitsoki.yaml, run against the synthesized root)" in held.failure
    (ws / "flows").mkdir()
    (ws / "flows/landing.yaml").write_text("test_kind: flow\ninitial_state: root.landing\nturns: []\n")
    kept = accept(ws, stage(ws, "judge by llm, with a root flow", {".kitsoki.yaml": edited}, kind="world", rung=1),
                  gate_kind="kitsoki")
    assert kept.flows_green and kept.gated
    [call] = sim()
    assert call["glob"] == str(ws / "flows/*.yaml") and not call["app"].startswith(str(ws))
    assert [(f["app"], f["why"], f["status"]) for f in kept.answer()["flows"]] == [
        ("<root>", "the root instance (root.overrides.world.judge_mode)", "passed")]


def test_a_newly_materialised_story_is_gated_on_the_tree_after_the_edit(kitsoki_ws):
    ws = kitsoki_ws
    rel = ".kitsoki/stories/kitsoki/app.yaml"
    story = ("app: { id: kitsoki, version: 0.1.0 }\nintents:\n  ship: { examples: [ship it] }\nroot: landing\n"
             "states:\n  landing:\n    on:\n      ship: [{ target: shipped }]\n  shipped: {}\n")
    before = hashes(ws)
    held = accept(ws, stage(ws, "ship it", {rel: story}), gate_kind="builtin")
    assert held.held and hashes(ws) == before and not (ws / rel).exists()
    assert "a flow in .kitsoki/stories/kitsoki/flows/*.yaml (new story)" in held.failure
    # A person writes its first flow; the next accept of the same story runs it (the scope is the new tree's).
    flows = ws / ".kitsoki/stories/kitsoki/flows"
    flows.mkdir(parents=True)
    (flows / "ship.yaml").write_text("test_kind: flow\napp: ../app.yaml\ninitial_state: landing\nturns:\n"
                                     "  - intent: { name: ship }\n    expect_state: shipped\n")
    kept = accept(ws, stage(ws, "ship it now", {rel: story}), gate_kind="builtin")
    assert kept.flows_green and ran(kept) == [(rel, "passed", [".kitsoki/stories/kitsoki/flows/ship.yaml"])]
    assert kept.answer()["flows"][0]["why"] == "new story"


def test_the_preview_before_an_accept_names_exactly_what_runs(kitsoki_ws, sim):
    from core.sidecar import planned_gate

    ws = kitsoki_ws
    rid = stage(ws, "list the stories", with_example(ws))
    preview = planned_gate(ws, rid)
    assert (preview.kind, preview.runs) == ("kitsoki", [f"{OFF_RAMP}/flows/menu.yaml"])
    decision = accept(ws, rid)
    assert decision.answer()["flows"][0]["passed"] == preview.runs
    edited = (ws / ".kitsoki.yaml").read_text() + "\nroot:\n  overrides:\n    world:\n      test_cmd: make test\n"
    world = planned_gate(ws, stage(ws, "test with make", {".kitsoki.yaml": edited}, kind="world", rung=1))
    assert world.runs == [] and world.held and world.note.startswith("no flow exercises this change: an accept is held")


def test_every_kitsoki_call_of_a_parallel_gate_is_in_the_journal_before_it_runs(kitsoki_ws, sim, monkeypatch):
    """Recovery ends a killed accept's gate processes: with one kitsoki call per app, all of them."""
    from core.apply.journal import journal_path, read_journal

    ws = kitsoki_ws
    monkeypatch.setenv("KITSOKI_SIM_OUTCOMES", "{}")
    app = (ws / "stories/robbery/app.yaml").read_text()
    rid = stage(ws, "rob the stage", {"stories/robbery/app.yaml": app + "\n# reviewed\n"})
    leaders = []

    def hook(name):
        if name == "after_gate":
            journal = read_journal(ws, journal_path(ws, rid))
            leaders.extend([journal.gate_process, *journal.gate_processes])

    assert accept(ws, rid, gate_kind="kitsoki", hook=hook).flows_green
    assert len(sim()) == 3 and len({leader.pid for leader in leaders}) == 3
