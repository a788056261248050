"""The demo: the whole loop on an embedded workspace, for a machine with no transcripts of its own.

Lays out `release-desk` (a small kitsoki project: `.kitsoki.yaml`, a story with intents, states
and rooms, flow fixtures) and four weeks of Claude Code and Pi transcripts about it, then runs the
same core calls the CLI and the language server make: a seed mining pass, the proposer, and two
accepts through the apply gate with the built-in flow runner: one whose flows go red (every byte
restored) and one that stays green (kept). Every step is reported through `say`.
"""

from __future__ import annotations

import difflib
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from core.apply import recover
from core.kitsoki.config import load_config
from core.mining.passes import run_pass
from core.mining.recipes import Recipe
from core.mining.service import record_pass, trace_path
from core.proposals.decide import Decision, accept
from core.proposals.inbox import inbox
from core.proposals.model import Proposal
from core.proposals.proposer import ProposerReport, run_proposer
from core.trace import Trace

_HERE = Path(__file__).resolve().parent
WORKSPACE = _HERE / "workspace"
TRANSCRIPTS = _HERE / "workspace_transcripts"
PROJECT = "release-desk"
RECORDED_IN = "/home/dev/release-desk"
"""Where the demo's sessions ran (core/demo/make_transcripts.py writes it as their cwd)."""


class DemoError(RuntimeError):
    pass


class DemoResult(BaseModel):
    root: Path
    workspace: Path
    recipes: list[Recipe] = Field(default_factory=list)
    proposer: ProposerReport | None = None
    proposals: list[Proposal] = Field(default_factory=list)
    decisions: list[Decision] = Field(default_factory=list)
    trace_lines: list[str] = Field(default_factory=list)
    kept_diff: str = ""


def lay_out(into: Path | None = None) -> tuple[Path, Path, Path]:
    """Copy the demo workspace and transcripts into `into` (a new temp folder by default).
    Returns (root, workspace, transcripts). Refuses a folder that already has files in it."""
    if into is None:
        root = Path(tempfile.mkdtemp(prefix="kitsoki-miner-demo-"))
    else:
        root = Path(into).expanduser().absolute()
        if root.exists() and (not root.is_dir() or any(root.iterdir())):
            raise DemoError(f"{root} is not an empty folder; pick a new one (the demo never writes over files)")
        root.mkdir(parents=True, exist_ok=True)
    workspace = root / PROJECT
    transcripts = root / "transcripts"
    shutil.copytree(WORKSPACE, workspace, ignore=shutil.ignore_patterns("__pycache__", ".artifacts"))
    shutil.copytree(TRANSCRIPTS, transcripts)
    _recorded_here(transcripts, workspace)
    return root, workspace, transcripts


def _recorded_here(transcripts: Path, workspace: Path) -> None:
    """The demo's sessions were recorded in its author's checkout (RECORDED_IN); laid out, they name
    this copy of the workspace instead, so that they are its sessions (a pass reads only those)."""
    here = json.dumps(str(workspace), ensure_ascii=False)[1:-1].encode()
    for path in sorted(transcripts.rglob("*.jsonl")):
        path.write_bytes(path.read_bytes().replace(RECORDED_IN.encode(), here))


def _tree_text(folder: Path) -> dict[str, list[str]]:
    return {p.relative_to(folder).as_posix(): p.read_text().splitlines(keepends=True)
            for p in sorted(folder.rglob("*")) if p.is_file() and ".artifacts" not in p.parts}


def seed_pass(workspace: Path, transcripts: Path):
    """The demo's first mining pass over its laid-out transcripts (the workspace's mining.project_paths
    honoured, as the CLI does)."""
    return run_pass(workspace, repo=workspace, dirs=[transcripts], trigger="seed", workers=1,
                    project_paths=load_config(workspace).mining.project_paths)


def run_demo(into: Path | None = None, say: Callable[[str], None] = print) -> DemoResult:
    root, workspace, transcripts = lay_out(into)
    before = _tree_text(workspace)
    result = DemoResult(root=root, workspace=workspace)
    say(f"Demo workspace: {workspace}\nTranscripts:    {transcripts} (3 Claude Code sessions, 1 Pi session)")
    recover(workspace, Trace(trace_path(workspace)))

    report, recipes = seed_pass(workspace, transcripts)
    record_pass(Trace(trace_path(workspace)), report)
    result.recipes = recipes
    say(f"\n1. Mined {report.sessions} sessions into {len(recipes)} recipes:")
    for recipe in recipes:
        say(f"   {recipe.priority:5.2f}  {recipe.kind:<8} {recipe.title}  ({recipe.sessions} sessions)")

    result.proposer = run_proposer(workspace, recipes)
    say("\n2. The proposer mapped each recipe against what the project already models:")
    for outcome in result.proposer.outcomes:
        say(f"   {outcome.result:<16} {outcome.title}: {outcome.reason}")
    result.proposals = inbox(workspace)
    if len(result.proposals) < 2:
        raise DemoError(f"expected at least two proposals, got {len(result.proposals)}")
    for proposal in result.proposals:
        say(f"\n   proposal {proposal.recipe_id} (rung {proposal.rung}, {proposal.mapping.classification}): "
            f"{proposal.title}\n" + _indent(proposal.diff))

    say("\n3. Accepting each, in priority order, through the apply gate (built-in flow runner):")
    for recipe_id in [p.recipe_id for p in inbox(workspace)]:
        current = next((p for p in inbox(workspace) if p.recipe_id == recipe_id), None)
        if current is not None and current.status == "stale":
            # An earlier accept changed its file: re-draft against the new bytes, never apply blind.
            say(f"   (re-drafting {current.title}: its target changed since it was drafted)")
            run_proposer(workspace, recipes)
            current = next((p for p in inbox(workspace) if p.recipe_id == recipe_id), None)
        if current is None or current.status != "pending":
            continue
        decision = accept(workspace, current.recipe_id, gate_kind="builtin")
        result.decisions.append(decision)
        if decision.flows_green:
            say(f"   KEPT     {current.title}: {decision.gate.summary if decision.gate else 'flows green'}")
        else:
            say(f"   REVERTED {current.title}: {decision.failure}")
            for failure in (decision.gate.failures if decision.gate else [])[:4]:
                say(f"            {failure}")
    if not any(d.flows_green for d in result.decisions) or not any(d.reverted for d in result.decisions):
        raise DemoError("the demo expects one accept that keeps and one that reverts")

    result.trace_lines = [line for line in trace_path(workspace).read_text().splitlines()
                          if '"mining.' in line]
    say("\n4. The trace (.artifacts/mining/trace.jsonl):")
    for line in result.trace_lines:
        say(f"   {line}")
    after = _tree_text(workspace)
    diff = []
    for path in sorted(set(before) | set(after)):
        diff.extend(difflib.unified_diff(before.get(path, []), after.get(path, []), f"a/{path}", f"b/{path}"))
    result.kept_diff = "".join(diff)
    say("\n5. What stayed in the workspace:\n" + _indent(result.kept_diff or "(nothing)"))
    held = [p for p in inbox(workspace) if p.status == "held"]
    if held:
        say("\nHeld for a person (accept again after fixing, refine, or reject): "
            + ", ".join(f"{p.recipe_id} ({p.failure})" for p in held))
    return result


def _indent(text: str) -> str:
    return "".join(f"      {line}\n" for line in text.rstrip("\n").splitlines())
