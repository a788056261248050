"""Shared pieces of the state-file groups (crash, concurrency, paths, bad-inputs, learnings).

A real workspace: the demo project mined from its real transcripts and proposed (three pending
proposals, signed stages), plus a `.git/` folder with a config and a hook, and an `outside/`
folder beside the workspace. The pass rules every case checks are here too: the workspace's bytes
are exactly before or exactly after, nothing outside the workspace or under `.git/` changed.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]
CRASHKIT = Path(__file__).with_name("crashkit.py")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def snapshot(root: Path, *, skip_state: bool = True) -> dict[str, object]:
    """Every file (sha256, mode), folder and link under root; `.artifacts/` left out when asked."""
    out: dict[str, object] = {}
    if not root.exists():
        return out
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if skip_state and (rel == ".artifacts" or rel.startswith(".artifacts/")):
            continue
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            out[rel] = f"-> {os.readlink(path)}"
        elif stat.S_ISDIR(info.st_mode):
            out[rel] = "dir"
        elif stat.S_ISREG(info.st_mode):
            out[rel] = (sha(path.read_bytes()), stat.S_IMODE(info.st_mode))
        else:
            out[rel] = "special"
    return out


def untouched(ws: Path, outside: Path, ws_before: dict, outside_before: dict) -> None:
    """The pass rule of a refusal: nothing in the workspace, nothing outside it, changed."""
    assert snapshot(outside) == outside_before, "something outside the workspace changed"
    now = snapshot(ws)
    assert now == ws_before, "a workspace file changed: " + repr(
        {k for k in set(ws_before) | set(now) if ws_before.get(k) != now.get(k)})


def git_and_outside(root: Path, workspace: Path) -> Path:
    """A `.git/` in the workspace and an `outside/` folder beside it, for the pass rules."""
    git = workspace / ".git"
    (git / "hooks").mkdir(parents=True, exist_ok=True)
    (git / "config").write_bytes(b"[core]\n\trepositoryformatversion = 0\n")
    (git / "HEAD").write_bytes(b"ref: refs/heads/main\n")
    outside = root / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "notes.txt").write_bytes(b"the user's own file outside the workspace\n")
    return outside


def build_template(into: Path) -> dict:
    """The demo workspace mined and proposed, once; cases copy it. Returns what the cases need."""
    from core.demo.walkthrough import lay_out, seed_pass
    from core.proposals.inbox import inbox
    from core.proposals.proposer import run_proposer

    root, ws, transcripts = lay_out(into)
    _, recipes = seed_pass(ws, transcripts)
    run_proposer(ws, recipes)
    git_and_outside(root, ws)
    cards = {p.kind: p for p in inbox(ws)}
    return {"root": root, "workspace": ws, "cards": {k: v.recipe_id for k, v in cards.items()},
            "proposals": cards}


def copy_case(template: dict, into: Path) -> tuple[Path, Path]:
    """(workspace, outside) copied from the template (symlinks kept as links). Signatures name their
    workspace, so the copy's stages are signed again for it, as if they had been proposed there."""
    root = into / "case"
    shutil.copytree(template["root"], root, symlinks=True)
    ws = root / template["workspace"].name
    rebind_stages(ws)
    return ws, root / "outside"


def rebind_stages(ws: Path) -> None:
    """Sign every staged proposal.json of a copied workspace again, for the copy."""
    from core.authn import seal, unsigned_body
    from core.proposals.staging import PROPOSAL_FILE, PROPOSAL_PURPOSE, stage_rel

    for path in sorted((ws / ".artifacts" / "mining").glob(f"*/{PROPOSAL_FILE}")):
        body = unsigned_body(path.read_bytes())
        if body and isinstance(body.get("recipe_id"), str):
            rel = f"{stage_rel(body['recipe_id'])}/{PROPOSAL_FILE}"
            path.write_bytes(seal(body, purpose=PROPOSAL_PURPOSE, rel=rel, workspace=ws))


def after_bytes(template: dict, kind: str) -> dict[str, bytes]:
    """The files an accept of the template's `kind` proposal writes, from its staged draft."""
    from core.proposals.staging import stage_dir

    proposal = template["proposals"][kind]
    folder = stage_dir(template["workspace"], proposal.recipe_id)
    return {c.path: (folder / c.path).read_bytes() for c in proposal.files}


class Crasher:
    """A crashkit fork server for a test session: `run(spec)` forks one child per case."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, str(CRASHKIT), str(ROOT)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=ROOT)

    def run(self, spec: dict, scratch: Path) -> dict:
        scratch.mkdir(parents=True, exist_ok=True)
        spec = {**spec, "log": str(scratch / "child.log"), "result": str(scratch / "child.calls")}
        self.proc.stdin.write(orjson.dumps(spec).decode() + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the crashkit server died"
        answer = orjson.loads(line)
        answer["log"] = (scratch / "child.log").read_text(errors="replace") if (scratch / "child.log").exists() else ""
        return answer

    def count(self, spec: dict, scratch: Path) -> int:
        answer = self.run({**spec, "kill_at": 0}, scratch)
        assert answer["code"] == 0, answer["log"][-3000:]
        return answer["calls"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def decisions(workspace: Path, recipe_id: str) -> list[dict]:
    from core.mining.service import trace_path
    from core.trace import Trace

    return [e.payload for e in Trace(trace_path(workspace)).events("mining.proposal_decided")
            if e.payload.get("recipe_id") == recipe_id]


def no_journal_left(workspace: Path) -> bool:
    from core.apply.journal import journal_dir

    jd = journal_dir(workspace)
    return not jd.exists() or [n for n in os.listdir(jd) if n.endswith(".json")] == []


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


from conftest import adversarial_cases  # noqa: E402,F401 - re-exported for the suite's modules
