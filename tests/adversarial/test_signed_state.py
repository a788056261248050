"""Signed state that is genuine but used where, when or as it was not meant: a draft changed behind
its card, a journal replayed after its accept was decided or put into a clone, a stage copied into
another workspace, and a signing key that is kept inside the workspace or cannot be used.

Pass rule of every case: the workspace's bytes are exactly before or exactly after what the person
accepted (an accept applies the bytes its card shows, never others), nothing outside the workspace
or under `.git/` changes, no verdict is recorded twice, and every refusal names the file and says
what to do (through the real CLI: no traceback, the words on stderr).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson
import pytest
import statekit
from conftest import FULL
from statekit import ROOT, adversarial_cases, decisions, no_journal_left, snapshot, untouched

from core.apply import recover
from core.apply.journal import journal_path
from core.apply.resolve import resolve_accept, unsettled
from core.attention import attention
from core.authn import KEY_DIR_ENV, seal, unsigned_body
from core.mining.service import trace_path
from core.proposals.decide import DecisionRefused, accept, refine
from core.proposals.inbox import inbox
from core.proposals.staging import PROPOSAL_FILE, PROPOSAL_PURPOSE, stage_dir, stage_rel
from core.trace import Trace

pytestmark = pytest.mark.adversarial("paths")

_TMP = Path(tempfile.mkdtemp(prefix="kitsoki-miner-signed-"))
atexit.register(shutil.rmtree, _TMP, True)
TEMPLATE = statekit.build_template(_TMP / "template")
WORLD, BINDING = TEMPLATE["cards"]["world"], TEMPLATE["cards"]["binding"]
MARK = "kitsoki-miner-planted-gate-ran"


@pytest.fixture
def case(tmp_path: Path):
    ws, outside = statekit.copy_case(TEMPLATE, tmp_path)
    return ws, outside, snapshot(ws), snapshot(outside)


def cli(ws: Path, *args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    run = subprocess.run([sys.executable, "-m", "server.cli", *args, "--repo", str(ws)], capture_output=True,
                         text=True, cwd=cwd or ROOT, env={**os.environ, **(env or {})}, timeout=120)
    assert "Traceback" not in run.stderr + run.stdout, run.stderr
    return run


# ── 1. a draft changed behind its signed proposal ─────────────────────────────────────────────

def _gate_plant(ws: Path, draft: bytes) -> bytes:
    """The draft with a gate command of the planter's under its `miner:` block."""
    gate = (f"  flow_gate:\n    kind: command\n    command: [\"sh\", \"-c\", \"touch {ws.parent / MARK}\"]\n").encode()
    assert b"\nminer:\n" in draft
    return draft.replace(b"\nminer:\n", b"\nminer:\n" + gate, 1)


PLANTS = {
    # name: the staged draft of the world proposal, as the planter leaves it
    "a miner.flow_gate command": _gate_plant,
    "a harness profile": lambda ws, d: d + b"\nharness_profiles:\n  evil:\n    backend: claude\n    env: {X: y}\n",
    "one byte": lambda ws, d: d + b" ",
    "a comment": lambda ws, d: d + b"# planted\n",
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_lines_planted_in_a_staged_draft_are_never_applied(case, plant: str) -> None:
    """The card shows the signed diff; a draft whose bytes are not those is refused by name."""
    ws, outside, ws_before, outside_before = case
    draft = stage_dir(ws, WORLD) / ".kitsoki.yaml"
    draft.write_bytes(PLANTS[plant](ws, draft.read_bytes()))
    card = next(p for p in inbox(ws, show=True) if p.recipe_id == WORLD)
    assert card.files[0].after_sha256 != statekit.sha(draft.read_bytes()), "a pending card took the planted bytes"
    run = cli(ws, "accept", WORLD)
    assert run.returncode == 1 and "was changed after it was proposed" in run.stderr and ".kitsoki.yaml" in run.stderr
    untouched(ws, outside, ws_before, outside_before)
    assert decisions(ws, WORLD) == [] and no_journal_left(ws)
    assert not (ws.parent / MARK).exists(), "the planted gate command ran"


def test_a_refined_draft_is_shown_before_it_can_be_accepted_and_a_command_change_is_said(case) -> None:
    ws, outside, ws_before, outside_before = case
    refine(ws, WORLD)
    draft = stage_dir(ws, WORLD) / ".kitsoki.yaml"
    draft.write_bytes(_gate_plant(ws, draft.read_bytes()))
    ws_before = snapshot(ws)
    run = cli(ws, "accept", WORLD)
    assert run.returncode == 1 and "has not been shown yet" in run.stderr
    untouched(ws, outside, ws_before, outside_before)
    shown = cli(ws, "proposals")  # the person sees the new diff, the command line and the warning
    assert "miner.flow_gate" in shown.stdout and "changes how kitsoki-miner runs commands" in shown.stdout
    assert f"touch {ws.parent / MARK}" in shown.stdout
    [card] = [p for p in inbox(ws) if p.recipe_id == WORLD]
    assert card.runs_commands == ["miner.flow_gate"]
    decision = accept(ws, WORLD)  # exactly what was shown; its own gate is the old one
    assert decision.flows_green and (ws / ".kitsoki.yaml").read_bytes() == draft.read_bytes()


def test_a_signed_card_whose_diff_is_not_its_drafts_change_is_refused(case) -> None:
    """Signed by a bug (or a drafter that wrote one diff and other bytes): re-derived at accept."""
    ws, outside, ws_before, outside_before = case
    path = stage_dir(ws, WORLD) / PROPOSAL_FILE
    body = unsigned_body(path.read_bytes())
    body["files"][0]["diff"] = body["files"][0]["diff"].replace("+", "+ ", 1)
    path.write_bytes(seal(body, purpose=PROPOSAL_PURPOSE, rel=f"{stage_rel(WORLD)}/{PROPOSAL_FILE}", workspace=ws))
    ws_before = snapshot(ws)
    with pytest.raises(DecisionRefused, match="the diff the card .* shows is not the change"):
        accept(ws, WORLD)
    untouched(ws, outside, ws_before, outside_before)


# ── 2. a journal is single-use ────────────────────────────────────────────────────────────────

def _captured_mid_gate(ws: Path, recipe_id: str, green: bool) -> bytes:
    from core.apply import GateResult

    captured = {}

    def gate(workspace: Path) -> GateResult:
        captured["journal"] = journal_path(workspace, recipe_id).read_bytes()
        return GateResult(green=green, gate="test", summary="simulated")

    accept(ws, recipe_id, gate=gate)
    return captured["journal"]


@pytest.mark.parametrize("green", [True, False], ids=["kept", "reverted"])
def test_a_journal_put_back_after_its_accept_was_decided_restores_nothing(case, green: bool) -> None:
    ws, outside, _, outside_before = case
    journal = _captured_mid_gate(ws, WORLD, green)
    settled = snapshot(ws)
    journal_path(ws, WORLD).write_bytes(journal)  # replayed
    [report] = recover(ws, Trace(trace_path(ws)))
    assert "already decided" in report["spent"] and report["restored"] == []
    assert report["moved_to"].endswith(".spent")
    assert snapshot(ws) == settled, "a replayed journal changed the tree"
    assert snapshot(outside) == outside_before
    assert len(decisions(ws, WORLD)) == 1 and no_journal_left(ws) and recover(ws) == []


def test_a_journal_copied_into_a_clone_that_has_the_change_is_never_obeyed(case, tmp_path: Path) -> None:
    ws, _, _, _ = case
    journal = _captured_mid_gate(ws, WORLD, True)
    clone = tmp_path / "clone" / ws.name
    shutil.copytree(ws, clone, symlinks=True)
    journal_path(clone, WORLD).write_bytes(journal)
    before = snapshot(clone)
    [report] = recover(clone, Trace(trace_path(clone)))
    assert report["refused"] == "other-workspace" and report["restored"] == []
    assert snapshot(clone) == before
    [line] = attention(clone)
    assert "signed for another workspace" in line and f"resolve {WORLD}" in line
    resolve_accept(clone, WORLD, "keep")
    assert snapshot(clone) == before and unsettled(clone) == []


# ── 3. a signed stage copied into another workspace ───────────────────────────────────────────

def test_a_signed_stage_copied_into_another_workspace_is_not_accepted_there(tmp_path: Path) -> None:
    root = tmp_path / "case"
    shutil.copytree(TEMPLATE["root"], root, symlinks=True)  # stages as signed for the template
    ws = root / TEMPLATE["workspace"].name
    before, outside_before = snapshot(ws), snapshot(root / "outside")
    run = cli(ws, "accept", WORLD)
    assert run.returncode == 1 and "signed for another workspace" in run.stderr and PROPOSAL_FILE in run.stderr
    listing = cli(ws, "proposals")
    assert f"{WORLD}  not shown:" in listing.stdout and "signed for another workspace" in listing.stdout
    assert snapshot(ws) == before and snapshot(root / "outside") == outside_before
    assert decisions(ws, WORLD) == []


# ── 7. the key: never inside the workspace, never a silent empty inbox ────────────────────────

def _key_env(ws: Path, outside: Path, how: str) -> tuple[dict, Path | None]:
    """(environment, cwd) that puts the key folder inside the workspace some way."""
    clean = {KEY_DIR_ENV: "", "XDG_STATE_HOME": ""}
    if how == "keys/":
        return {**clean, KEY_DIR_ENV: str(ws / "keys")}, None
    if how == ".git/km":
        return {**clean, KEY_DIR_ENV: str(ws / ".git" / "km")}, None
    if how == "the tree root":
        return {**clean, KEY_DIR_ENV: str(ws)}, None
    if how == "a relative path":
        return {**clean, KEY_DIR_ENV: "keys"}, ws
    if how == "..":
        return {**clean, KEY_DIR_ENV: str(outside / ".." / ws.name / "keys")}, None
    if how == "a link":
        link = outside / "keys-link"
        link.symlink_to(ws / "stories", target_is_directory=True)
        return {**clean, KEY_DIR_ENV: str(link / "km")}, None
    if how == "XDG_STATE_HOME":
        return {"XDG_STATE_HOME": str(ws / "state"), KEY_DIR_ENV: ""}, None
    if how == "HOME":
        return {"HOME": str(ws), KEY_DIR_ENV: "", "XDG_STATE_HOME": ""}, None
    raise AssertionError(how)


INSIDE = ["keys/", ".git/km", "the tree root", "a relative path", "..", "a link", "XDG_STATE_HOME", "HOME"]


@pytest.mark.parametrize("how", adversarial_cases(INSIDE, fast=4))
def test_a_key_folder_inside_the_workspace_is_refused_before_anything_is_created(case, how: str) -> None:
    ws, outside, ws_before, _ = case
    env, cwd = _key_env(ws, outside, how)
    env = {k: v for k, v in env.items()}
    full = {**os.environ, **env}
    for key, value in env.items():
        if value == "":
            full.pop(key, None)
    outside_before = snapshot(outside)
    for command in (["proposals"], ["accept", WORLD]):
        run = subprocess.run([sys.executable, "-m", "server.cli", *command, "--repo", str(ws)], capture_output=True,
                             text=True, cwd=cwd or ROOT, env=full, timeout=120)
        assert "Traceback" not in run.stderr, run.stderr
        assert run.returncode != 0 and "signing key" in run.stderr, run.stderr
        assert "inside the workspace" in run.stderr or "must be an absolute path outside" in run.stderr, run.stderr
    now = snapshot(ws, skip_state=True)
    assert now == ws_before, f"something was created in the workspace: {set(now) - set(ws_before)}"
    assert not list(ws.rglob("authn.key")) and not list(ws.rglob(".authn.key*")), "a key file was made inside"
    assert snapshot(outside) == outside_before


def _bad_key(folder: Path, how: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / "authn.key"
    if how == "a dangling link":
        key.symlink_to(folder / "gone")
    elif how == "a link loop":
        key.symlink_to(key)
    elif how == "/dev/zero":
        key.symlink_to("/dev/zero")
    elif how == "/dev/null":
        key.symlink_to("/dev/null")
    elif how == "empty":
        key.write_bytes(b"")
    elif how == "the wrong size":
        key.write_bytes(b"x" * 31)
    elif how == "a folder":
        key.mkdir()
    elif how == "a FIFO":
        os.mkfifo(key)
    else:
        raise AssertionError(how)


BAD_KEYS = ["a dangling link", "a link loop", "/dev/zero", "/dev/null", "empty", "the wrong size", "a folder",
            "a FIFO"]


@pytest.mark.parametrize("how", adversarial_cases(BAD_KEYS, fast=4))
def test_a_key_that_cannot_be_used_is_said_by_every_command_and_the_status(case, tmp_path: Path, how: str) -> None:
    from core.sidecar import WorkspaceSidecar

    ws, outside, ws_before, outside_before = case
    folder = tmp_path / "bad-key"
    _bad_key(folder, how)
    env = {KEY_DIR_ENV: str(folder)}
    commands = [["proposals"], ["accept", WORLD]] + ([["reject", WORLD], ["propose"]] if FULL else [])
    for command in commands:
        run = cli(ws, *command, env=env)
        assert run.returncode != 0 and "signing key" in run.stderr and str(folder / "authn.key") in run.stderr, \
            (command, run.stderr)
        assert "remove" in run.stderr, "the message does not say how to fix it"
    home = tmp_path / "home"  # `sessions` looks for history under HOME: an empty one here
    home.mkdir()
    saying = [["decided"], ["resolve"], ["flows"], ["evolve", "list"], ["sessions", "--dir", str(home)]]
    for command in saying if FULL else saying[::2]:  # commands that still work say it too
        run = cli(ws, *command, env={**env, "HOME": str(home)})
        assert "attention: the signing key" in run.stderr and "remove" in run.stderr, (command, run.stderr)
    untouched(ws, outside, ws_before, outside_before)
    saved = os.environ[KEY_DIR_ENV]
    os.environ[KEY_DIR_ENV] = str(folder)
    try:
        sidecar = WorkspaceSidecar(ws, mining=False, watch=False)
        sidecar.start()
        try:
            status = sidecar.status()
            assert any("signing key" in line for line in status.attention), status.attention
        finally:
            sidecar.stop()
    finally:
        os.environ[KEY_DIR_ENV] = saved
    assert decisions(ws, WORLD) == []
    if how != "a folder":
        assert orjson.dumps(snapshot(ws)) == orjson.dumps(ws_before)
