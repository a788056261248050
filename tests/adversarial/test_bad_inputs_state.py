"""Damaged or special files where kitsoki-miner keeps its own state, through the real command line.

Pass rule: the command answers (never hangs: a FIFO is not opened blocking, a link to /dev/zero is
never read), exits non-zero (or, for a journal, moves it aside and says so), names the file (and
the field, for a damaged `recipes.json` or a bad `miner:` setting), prints no traceback, and
writes nothing: no stage folder, no trace line, no workspace byte.

The commands run in this process (`server.cli.main`, the console script's entry) on a thread with
a deadline, so a hang fails the case instead of the suite; output is captured at the descriptors.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from pathlib import Path

import orjson
import pytest
import statekit
from statekit import adversarial_cases, snapshot

from core.mining.passes import recipes_path
from core.mining.service import trace_path
from core.mining.watermark import kitsoki_slug, state_path
from core.proposals.staging import stage_dir

pytestmark = pytest.mark.adversarial("bad-inputs")

_TMP = Path(tempfile.mkdtemp(prefix="kitsoki-miner-badstate-"))
atexit.register(shutil.rmtree, _TMP, True)
TEMPLATE = statekit.build_template(_TMP / "template")
WORLD = TEMPLATE["cards"]["world"]
DEADLINE_S = 30.0


def cli(capfd, *argv: str) -> tuple[int, str]:
    """(exit code, stdout + stderr) of `kitsoki-miner <argv>`; fails on a hang or a traceback.

    The console script's parser and handlers, given this test's streams (their defaults are the
    streams of whoever imported them first)."""
    import sys

    from server.cli import build_parser, run_mine
    from server.cli_evolve import run_evolve
    from server.cli_proposals import run_command

    args = build_parser().parse_args(list(argv))
    handler = {"mine": run_mine, "evolve": run_evolve}.get(args.command, run_command)
    box: dict = {}

    def run() -> None:
        try:
            box["code"] = handler(args, sys.stdout, sys.stderr)
        except BaseException as exc:  # noqa: BLE001 - a traceback is what the case forbids
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(DEADLINE_S)
    assert not thread.is_alive(), f"`kitsoki-miner {' '.join(argv)}` hung"
    out, err = capfd.readouterr()
    assert "error" not in box, f"traceback: {box.get('error')!r}\n{err}"
    assert "Traceback" not in out + err, out + err
    return box["code"], out + err


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return statekit.copy_case(TEMPLATE, tmp_path)[0]


def state_snapshot(ws: Path) -> dict:
    """The tree, the stage folders and the trace: what 'nothing written' is checked against."""
    trace = trace_path(ws)
    return {"tree": snapshot(ws), "stages": sorted(p.name for p in (ws / ".artifacts" / "mining").iterdir()
                                                  if p.is_dir() and not p.is_symlink()) if (ws / ".artifacts" / "mining").is_dir() else [],
            "trace": trace.read_bytes() if trace.is_file() and not trace.is_symlink() else None}


# ── special files where a state file should be ────────────────────────────────────────────────


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    os.symlink("/dev/zero", path)


def _directory(path: Path) -> None:
    path.mkdir()


def _loop(path: Path) -> None:
    os.symlink(path.name + ".b", path)
    os.symlink(path.name, path.with_name(path.name + ".b"))


KINDS = {"fifo": _fifo, "dev-zero-link": _dev_zero, "directory": _directory, "symlink-loop": _loop}

# where: (the path in a workspace, the command that reads it, does the command exit non-zero)
PLACES = {
    "proposal.json": (lambda ws: stage_dir(ws, WORLD) / "proposal.json", lambda ws: ["accept", WORLD, "--repo", str(ws)]),
    "staged draft": (lambda ws: stage_dir(ws, WORLD) / ".kitsoki.yaml", lambda ws: ["accept", WORLD, "--repo", str(ws)]),
    "recipes.json": (recipes_path, lambda ws: ["propose", "--repo", str(ws)]),
    "trace.jsonl": (trace_path, lambda ws: ["proposals", "--repo", str(ws)]),
    "trace lock": (lambda ws: Path(f"{trace_path(ws)}.lock"), lambda ws: ["reject", WORLD, "--repo", str(ws)]),
    "workspace.lock": (lambda ws: ws / ".artifacts" / "mining" / "workspace.lock",
                       lambda ws: ["accept", WORLD, "--repo", str(ws)]),
    "mining state": (lambda ws: state_path(ws, kitsoki_slug(ws.resolve())),
                     lambda ws: ["mine", "--repo", str(ws), "--dir", str(ws.parent / "transcripts")]),
    "learnings --store": (lambda ws: ws / "learnings.jsonl",
                          lambda ws: ["evolve", "prune", "--apply", "--repo", str(ws), "--store", str(ws / "learnings.jsonl")]),
}


def _plant(ws: Path, place: str, kind: str) -> Path:
    path = PLACES[place][0](ws)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    KINDS[kind](path)
    return path


SPECIAL = adversarial_cases([pytest.param(place, kind, id=f"{place}-{kind}") for place in PLACES for kind in KINDS],
                            fast=10)


@pytest.mark.parametrize(("place", "kind"), SPECIAL)
def test_a_special_file_where_state_should_be_is_named_never_hung_on(ws: Path, capfd, place: str, kind: str) -> None:
    path = _plant(ws, place, kind)
    before = state_snapshot(ws)
    code, text = cli(capfd, *PLACES[place][1](ws))
    assert code != 0, text
    assert str(path) in text, text
    after = state_snapshot(ws)
    assert after["tree"] == before["tree"] and after["stages"] == before["stages"]
    if place != "trace.jsonl":
        assert after["trace"] == before["trace"]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_special_file_as_a_journal_is_moved_aside_and_named(ws: Path, capfd, kind: str) -> None:
    journal = ws / ".artifacts" / "mining" / "journal"
    journal.mkdir(parents=True)
    path = journal / f"{WORLD}.json"
    KINDS[kind](path)
    tree = snapshot(ws)
    code, text = cli(capfd, "proposals", "--repo", str(ws))
    assert code == 0 and "refused an apply journal" in text and str(path) in text, text
    assert snapshot(ws) == tree
    assert not path.exists() and not path.is_symlink(), "the refused journal is still in the way"


@pytest.mark.parametrize("kind", ["file", "fifo", "dev-zero-link"])
def test_a_state_folder_that_is_not_a_folder_is_named(ws: Path, capfd, kind: str) -> None:
    folder = ws / ".artifacts" / "mining" / "state"
    shutil.rmtree(folder)
    {"file": lambda p: p.write_bytes(b"x"), "fifo": _fifo, "dev-zero-link": _dev_zero}[kind](folder)
    code, text = cli(capfd, "mine", "--repo", str(ws), "--dir", str(ws.parent / "transcripts"))
    assert code != 0 and str(folder) in text, text


# ── a damaged recipes.json ────────────────────────────────────────────────────────────────────


def _recipes(ws: Path) -> bytes:
    return recipes_path(ws).read_bytes()


def _first_recipe_with(ws: Path, **fields) -> bytes:
    data = orjson.loads(_recipes(ws))
    data["recipes"][0].update(fields)
    return orjson.dumps(data)


DAMAGE = {
    "truncated": (lambda ws: _recipes(ws)[: len(_recipes(ws)) // 2], "not valid JSON"),
    "garbage": (lambda ws: b"\x00\xff garbage {{{", "not valid JSON"),
    "empty": (lambda ws: b"", "not valid JSON"),
    "a list": (lambda ws: b"[]", "(top)"),
    "null": (lambda ws: b"null", "(top)"),
    "recipes not a list": (lambda ws: b'{"recipes": "x"}', "recipes"),
    "deep nesting": (lambda ws: b'{"recipes": ' + b"[" * 5000 + b"]" * 5000 + b"}", "recipes.json"),
    "NaN priority": (lambda ws: _recipes(ws).replace(b'"priority": ', b'"priority": NaN, "x": ', 1), "not valid JSON"),
    "1e400 priority": (lambda ws: _recipes(ws).replace(b'"priority": ', b'"priority": 1e400, "x": ', 1), "not valid JSON"),
    "negative priority": (lambda ws: _first_recipe_with(ws, priority=-1.0), "recipes[0].priority"),
    "string priority": (lambda ws: _first_recipe_with(ws, priority="high"), "recipes[0].priority"),
    "id of the wrong type": (lambda ws: _first_recipe_with(ws, id=5), "recipes[0].id"),
    "unknown kind": (lambda ws: _first_recipe_with(ws, kind="rootkit"), "recipes[0].kind"),
    "instances not a list": (lambda ws: _first_recipe_with(ws, instances={"a": 1}), "recipes[0].instances"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_recipes_json_is_named_with_its_field_and_nothing_is_staged(ws: Path, capfd, damage: str) -> None:
    make, field = DAMAGE[damage]
    for stage in [p for p in (ws / ".artifacts" / "mining").iterdir() if p.is_dir() and len(p.name) == 16]:
        shutil.rmtree(stage)  # so a half-used recipes.json would show as a new stage folder
    recipes_path(ws).write_bytes(make(ws))
    before = state_snapshot(ws)
    code, text = cli(capfd, "propose", "--repo", str(ws))
    assert code != 0 and str(recipes_path(ws)) in text and field in text, text
    assert state_snapshot(ws) == before


# ── a damaged proposal.json ───────────────────────────────────────────────────────────────────

PROPOSAL_DAMAGE = {
    "truncated": lambda raw: raw[: len(raw) // 2],
    "garbage": lambda raw: b"not json at all",
    "unsigned": lambda raw: raw.rsplit(b',\n  "mac"', 1)[0] + b"\n}\n",
    "one byte changed": lambda raw: raw.replace(b'"priority": ', b'"priority": 1', 1),
    "empty": lambda raw: b"",
}


@pytest.mark.parametrize("damage", sorted(PROPOSAL_DAMAGE))
def test_a_damaged_proposal_json_is_named_not_reported_as_no_open_proposal(ws: Path, capfd, damage: str) -> None:
    path = stage_dir(ws, WORLD) / "proposal.json"
    path.write_bytes(PROPOSAL_DAMAGE[damage](path.read_bytes()))
    before = state_snapshot(ws)
    code, text = cli(capfd, "accept", WORLD, "--repo", str(ws))
    assert code != 0 and str(path) in text and "no open proposal" not in text, text
    assert state_snapshot(ws) == before


# ── miner: settings that would make every accept misbehave ────────────────────────────────────

SETTINGS = {
    "timeout 0s": ("  flow_gate:\n    timeout: 0s\n", "miner.flow_gate.timeout"),
    "timeout -1s": ("  flow_gate:\n    timeout: -1s\n", "miner.flow_gate.timeout"),
    "timeout not a duration": ("  flow_gate:\n    timeout: soon\n", "miner.flow_gate.timeout"),
    "typo comand": ("  flow_gate:\n    kind: command\n    comand: [make, test]\n", "miner.flow_gate.comand"),
    "command kind without a command": ("  flow_gate:\n    kind: command\n", "miner.flow_gate"),
    "empty command": ("  flow_gate:\n    command: []\n", "miner.flow_gate.command"),
    "unknown block": ("  flow_gte:\n    kind: builtin\n", "miner.flow_gte"),
    "unknown kind": ("  flow_gate:\n    kind: magic\n", "miner.flow_gate.kind"),
}


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_a_bad_miner_setting_is_an_error_naming_the_key_and_the_file(ws: Path, capfd, setting: str) -> None:
    block, key = SETTINGS[setting]
    config = ws / ".kitsoki.yaml"
    text = config.read_bytes()  # into the demo's own miner: block (a second one is a duplicate key)
    config.write_bytes(text.replace(b"\nminer:\n", b"\nminer:\n" + block.encode(), 1) if b"\nminer:\n" in text
                       else text + b"miner:\n" + block.encode())
    before = state_snapshot(ws)
    code, text = cli(capfd, "accept", WORLD, "--repo", str(ws))
    assert code != 0 and key in text and ".kitsoki.yaml" in text, text
    assert state_snapshot(ws) == before
