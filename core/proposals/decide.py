"""A person's verdict on a proposal: accept (through the apply gate), refine, or reject.

Every verdict is recorded as kitsoki's `mining.proposal_decided` (by: human). Accept runs the
staged draft through core.apply: kept on green, restored byte for byte otherwise, and the
proposal is then held with the failure attached. A refined draft (a person edited the staged
files) is re-validated before it is applied. A suggestion for dev-story is never applied. A
refusal (unknown id, stale target, unsaved edits, busy workspace) records nothing and writes
nothing: the person can act on the message and try again.

The stage is read back as untrusted: `proposal.json` must carry kitsoki-miner's signature (for
this workspace), every file it names is checked again with the rules of a fresh draft
(core.proposals.targets: only `.kitsoki.yaml` and story YAML, never `.git/`, `.artifacts/` or a flow
fixture, no link on the way), and the staged bytes are read without following a link. An accept
applies exactly the bytes the card shows (core.proposals.shown): a draft changed behind its card,
or a refined draft not yet shown, is refused.

One verdict per proposal: accept checks again, under the workspace lock that every verdict takes,
that the proposal is still open and still the one it read (a reject or another accept that won the
race is not followed by a second verdict). The verdict an accept records carries its apply's id as
the trace event's `call_id`, which is what makes its journal single-use (core.apply.journal).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from core.apply import ApplyRefused, Gate, GateResult, apply_delta, choose_gate
from core.apply.journal import pending_journals
from core.kitsoki.story import load_workspace
from core.locks import workspace_lock
from core.trace import trace_path
from core.safeio import read_regular
from core.proposals.inbox import MAX_TARGET_BYTES, find, history
from core.proposals.model import Proposal
from core.proposals.settings import SettingsError, gate_settings
from core.proposals.shown import NotShown, check_shown
from core.proposals.staging import (
    PROPOSAL_FILE,
    StagedStateError,
    read_artifact,
    save_proposal,
    stage_dir,
    staged_files,
    write_artifact,
)
from core.proposals.targets import check_target
from core.proposals.validate import DraftInvalid
from core.trace import Trace

Verdict = Literal["accept", "refine", "reject"]
VERDICT_LOCK_TIMEOUT = 30.0
"""refine and reject wait this long for a proposer's staging to finish."""
VERDICT_ALIASES = {"accept": "accept", "refine": "refine", "reject": "reject", "dismiss": "reject"}
"""kitsoki's UI says dismiss where the trace says reject (reference §6)."""


class Decision(BaseModel):
    recipe_id: str
    verdict: Verdict
    title: str = ""
    """The proposal's title (it leaves the inbox once decided)."""
    flows_green: bool = False
    reverted: bool = False
    failure: str | None = None
    draft_path: str | None = None
    """refine: the staged draft to edit (its first file)."""
    files: list[str] = []
    kept_edits: list[str] = []
    """accept, unresolved: files someone changed while the accept ran, kept as they were instead of restored."""
    unresolved: bool = False
    """accept: neither kept nor reverted (a person's edit during the accept could not be restored
    without losing it). No verdict is recorded; `kitsoki-miner resolve` settles it."""
    accept_id: str = ""
    note: str | None = None
    """accept: something the person should know that is not a failure (a verdict recorded late)."""
    gate: GateResult | None = None
    gated: bool = True
    """accept: False when no flow judged the change (held, or kept under `miner.ungated: allow`)."""
    held: bool = False
    """accept: not kept because nothing judged it (no flow exercises it, or none of those that do could
    run); `failure` says what would. The tree is as it was."""
    proof: str | None = None
    """accept: the proposal's own proof fixture (it ran with the rest; `proof_status` says how)."""

    def proof_status(self) -> str | None:
        """passed, failed or `not run: <why>` for the proof fixture, from the gate's runs."""
        if self.proof is None or self.gate is None:
            return None
        for run in self.gate.runs:
            if self.proof in run.passed:
                return "passed"
            if self.proof in run.failed:
                return "failed"
            for line in run.not_run:
                if line.startswith(f"{self.proof}:"):
                    return "not run:" + line[len(self.proof) + 1:]
        return "not run"

    def flows(self) -> list[dict[str, Any]]:
        """Per app the gate reached: which flows passed, failed, or did not run and why."""
        if self.gate is None:
            return []
        return [{"app": run.app, "why": run.why, "status": run.status, "passed": run.passed, "failed": run.failed,
                 "not_run": run.not_run, "summary": run.summary} for run in self.gate.runs]

    def ran_lines(self, limit: int = 5) -> list[str]:
        """What the gate ran, a line per app (and per flow that did not run, up to `limit` per app)."""
        if self.gate is None:
            return []
        lines = []
        for run in self.gate.runs:
            counts = ", ".join(f"{len(names)} {word}" for names, word in
                               ((run.passed, "passed"), (run.failed, "failed"), (run.not_run, "not run")) if names)
            lines.append(f"{run.app} ({run.why}): {run.status}" + (f", {counts}" if counts else
                                                                   f": {run.summary.split(': ', 1)[-1]}"))
            lines.extend(f"    not run: {line}" for line in run.not_run[:limit])
            if len(run.not_run) > limit:
                lines.append(f"    ... and {len(run.not_run) - limit} more not run")
        lines.extend(f"not gated: {line}" for line in self.gate.skipped)
        return lines

    def answer(self) -> dict[str, Any]:
        """The CLI's and the protocol's short answer."""
        out = {"recipe_id": self.recipe_id, "verdict": self.verdict, "flows_green": self.flows_green,
               "reverted": self.reverted, "failure": self.failure}
        if self.verdict == "accept":
            out |= {"gated": self.gated, "held": self.held, "flows": self.flows(),
                    "skipped": list(self.gate.skipped) if self.gate else [],
                    "proof": {"path": self.proof, "status": self.proof_status()} if self.proof else None,
                    "dev_story": self.gate.dev_story if self.gate else "",
                    "unprovable": list(self.gate.unprovable) if self.gate else []}
            if self.unresolved:
                out |= {"unresolved": True, "kept_edits": list(self.kept_edits)}
            if self.note:
                out["note"] = self.note
        return out


class DecisionRefused(ValueError):
    """Nothing was recorded or written; `reason` is a stable word, the message says what to do."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(message)


def _open(workspace: Path, recipe_id: str) -> Proposal:
    unusable: dict[str, str] = {}
    proposal = find(workspace, recipe_id, unusable)
    if proposal is None:
        state = history(Trace(trace_path(workspace))).get(recipe_id)
        if state in ("accepted", "rejected", "withdrawn"):
            raise DecisionRefused("closed", f"proposal {recipe_id} is already {state}")
        why = unusable.get(recipe_id) or next(
            (text for rid, text in unusable.items() if len(recipe_id) >= 4 and rid.startswith(recipe_id)), None)
        if why is not None:
            raise DecisionRefused("staged", f"the staged proposal {recipe_id} cannot be used: {why}")
        raise DecisionRefused("unknown", f"no open proposal {recipe_id} in {workspace} "
                                         f"(`kitsoki-miner proposals` lists them)")
    return proposal


def _record(workspace: Path, decision: Decision, call_id: str | None = None) -> None:
    Trace(trace_path(workspace)).proposal_decided(recipe_id=decision.recipe_id, verdict=decision.verdict, by="human",
                                                  flows_green=decision.flows_green, reverted=decision.reverted,
                                                  call_id=call_id)


def _still_the_same(workspace: Path, proposal: Proposal) -> None:
    """Under the workspace lock, just before an accept writes: the proposal is still open and still
    the one that was read (no verdict, no re-draft in between). DecisionRefused otherwise."""
    state = history(Trace(trace_path(workspace))).get(proposal.recipe_id)
    if state not in ("pending", "refining", "held"):
        raise DecisionRefused("closed", f"proposal {proposal.recipe_id} was {state} while this accept waited; "
                                        "nothing was applied")
    unusable: dict[str, str] = {}
    now = find(workspace, proposal.recipe_id, unusable)
    if now is None or [c.model_dump() for c in now.files] != [c.model_dump() for c in proposal.files]:
        raise DecisionRefused("staged", f"proposal {proposal.recipe_id} was drafted again while this accept "
                                        "waited; nothing was applied (look at its card again)")


def _live_bytes(workspace: Path, paths: Iterable[str]) -> dict[str, bytes | None]:
    """The files as they are before the edit (for the gate's rung-1 diff; staleness is the applier's)."""
    out: dict[str, bytes | None] = {}
    for rel in paths:
        try:
            out[rel] = read_regular(workspace / rel, MAX_TARGET_BYTES, what=rel, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            out[rel] = None
        except (OSError, ValueError):
            continue  # unreadable: the applier refuses it by name
    return out


def reload_refusing(before: Any, changed: list[Path],
                    pre_edit: dict[str, bytes | None] | None = None) -> Callable[[Path], object]:
    """The applier's reload after an edit: the workspace loads, and no story that loaded before the
    edit (nor one reading a changed file) is now refused; else WorkspaceError naming why (red).

    `pre_edit` (workspace-relative path -> the bytes `before` was loaded with, None: absent): when
    every one of those files holds exactly them again (the reload after a revert), the tree the
    accept touched is the one `before` is, and `before` is handed back without loading it again."""
    from core.kitsoki.model import WorkspaceError

    def reload(workspace: Path) -> object:
        if pre_edit and _live_bytes(workspace, pre_edit) == pre_edit:
            return before
        model = load_workspace(workspace)
        broken = model.newly_refused(before, changed)
        if broken:
            raise WorkspaceError([issue for refusal in broken for issue in refusal.issues])
        return model

    return reload


def _modes(workspace: Path, paths: Iterable[str]) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for rel in paths:
        try:
            out[rel] = stat.S_IMODE(os.lstat(workspace / rel).st_mode)
        except OSError:
            out[rel] = None
    return out


def accept(workspace: Path, recipe_id: str, *, unsaved: Iterable[str] = (), gate: Gate | None = None,
           gate_kind: str | None = None, lock_timeout: float = 0.0,
           hook: Callable[[str], None] | None = None) -> Decision:
    """`gate_kind` (auto, kitsoki, builtin, command) overrides `miner.flow_gate.kind` for this accept
    (the demo runs the built-in runner whatever is on PATH); `gate` replaces the gate whole."""
    workspace = Path(workspace)
    proposal = _open(workspace, recipe_id)
    if proposal.suggestion_only:
        raise DecisionRefused("suggestion", f"{proposal.recipe_id} is a suggestion for dev-story itself; there is "
                                            f"nothing to apply here (reject it to dismiss it)")
    try:
        model = load_workspace(workspace)
    except ValueError as exc:
        raise DecisionRefused("workspace", f"the workspace does not load, so nothing is applied: {exc}") from None
    if not proposal.files:
        raise DecisionRefused("staged", f"the staged proposal {proposal.recipe_id} changes no file")
    for change in proposal.files:  # the stored paths, held to a fresh draft's rules again
        try:
            check_target(model, change.path, recipe_id=proposal.recipe_id)
        except DraftInvalid as exc:
            raise DecisionRefused("invalid", f"the staged proposal {proposal.recipe_id} names a file it may not "
                                             f"change, so nothing is applied: {exc}") from None
    try:
        files = staged_files(workspace, proposal)
    except StagedStateError as exc:
        raise DecisionRefused("staged", f"the staged draft of {proposal.recipe_id} cannot be used: {exc}") from None
    try:
        check_shown(workspace, proposal, files)
    except NotShown as exc:
        raise DecisionRefused("not-shown", str(exc)) from None
    if proposal.status == "refining":
        from core.proposals.validate import check_draft

        artifact = read_artifact(workspace, proposal)
        try:
            check_draft(model, files, artifact, [], recipe_id=proposal.recipe_id)
        except DraftInvalid as exc:
            raise DecisionRefused("invalid", f"the refined draft of {proposal.recipe_id} does not validate: {exc}") \
                from None
    changed = [change.path for change in proposal.files]
    before = _live_bytes(workspace, changed)  # the gate's rung-1 diff, and what an undo puts back
    if gate is None:
        # The scope (which apps, which flows) is computed by the gate itself, on the tree after the edit.
        try:
            settings = gate_settings(model.config)
        except SettingsError as exc:
            raise DecisionRefused("config", str(exc)) from None
        if gate_kind is not None:
            settings = settings.model_copy(update={"kind": gate_kind})
        gate = choose_gate(workspace, settings, changed=changed, before=before)
    expected = {change.path: change.before_sha256 for change in proposal.files}

    def decision_of(outcome) -> Decision:
        result = outcome.gate
        return Decision(recipe_id=proposal.recipe_id, verdict="accept", title=proposal.title,
                        flows_green=outcome.flows_green, reverted=outcome.reverted, failure=outcome.failure,
                        files=outcome.written, kept_edits=outcome.kept_edits, gate=result,
                        proof=proposal.proof.path if proposal.proof is not None else None,
                        gated=result.gated if result is not None else True,
                        held=bool(result is not None and result.held and outcome.reverted),
                        unresolved=outcome.unresolved, accept_id=outcome.accept_id)

    def record(outcome) -> None:  # runs under the workspace lock: no proposer stages, no verdict, in between
        result = outcome.gate
        decision = decision_of(outcome)
        _record(workspace, decision, outcome.call_id)  # kitsoki's shape; what ran goes below
        if outcome.reverted:
            proposal.status, proposal.failure = "held", outcome.failure
            save_proposal(workspace, proposal)
        else:  # kept: what it replaced, for an undo (core.proposals.reversal)
            from core.proposals.reversal import remember_kept

            remember_kept(workspace, proposal, before, files, _modes(workspace, changed))
        artifact = read_artifact(workspace, proposal)
        artifact["flows_green"] = outcome.flows_green
        if result is not None:
            artifact["flow_files"] = [flow for run in result.runs for flow in (*run.passed, *run.failed)]
            artifact["gate"] = {"kind": result.gate, "summary": result.summary, "gated": result.gated,
                                "held": decision.held, "flows": decision.flows(), "skipped": result.skipped,
                                "would_exercise": result.would_exercise, "checks": result.checks}
        write_artifact(workspace, proposal, artifact)

    try:
        outcome = apply_delta(workspace, proposal.recipe_id, files, expected, gate=gate,
                              reload=reload_refusing(model, [workspace / rel for rel in files], before),
                              unsaved=unsaved, lock_timeout=lock_timeout, hook=hook, on_outcome=record,
                              still_open=lambda: _still_the_same(workspace, proposal))
    except ApplyRefused as exc:
        raise DecisionRefused(exc.reason, exc.message) from None
    decision = decision_of(outcome)
    if outcome.unresolved:
        decision.failure = (f"{outcome.failure}. The accept is not settled: `kitsoki-miner resolve "
                            f"{proposal.recipe_id}` shows what is in the tree and settles it (restore or keep)")
    if outcome.unrecorded:
        decision.note = (f"the verdict could not be recorded yet ({outcome.unrecorded}); the change is "
                         f"{'kept' if outcome.flows_green else 'reverted'} and the next command records it")
    return decision


def _not_unsettled(workspace: Path, proposal: Proposal) -> None:
    """An accept of this proposal that is not settled (its journal is still there) takes no other verdict."""
    if any(path.stem == proposal.recipe_id for path in pending_journals(workspace)):
        raise DecisionRefused("unresolved", f"an accept of {proposal.recipe_id} is not settled yet; "
                                            f"`kitsoki-miner resolve {proposal.recipe_id}` settles it first")


def refine(workspace: Path, recipe_id: str, *, lock_timeout: float = VERDICT_LOCK_TIMEOUT) -> Decision:
    """Record the verdict and hand back the staged draft to edit; a later accept shows the edited
    draft's diff before it can apply it (core.proposals.shown)."""
    workspace = Path(workspace)
    with workspace_lock(workspace, lock_timeout):  # never between a proposer's check and its raise
        proposal = _open(workspace, recipe_id)
        _not_unsettled(workspace, proposal)
        folder = stage_dir(workspace, proposal.recipe_id)
        first = folder / proposal.files[0].path if proposal.files else folder / PROPOSAL_FILE
        decision = Decision(recipe_id=proposal.recipe_id, verdict="refine", title=proposal.title,
                            draft_path=str(first),
                            files=[c.path for c in proposal.files])
        _record(workspace, decision)
        proposal.status, proposal.failure = "refining", None  # a failure shown now is the refined draft's
        save_proposal(workspace, proposal)
    return decision


def reject(workspace: Path, recipe_id: str, *, lock_timeout: float = VERDICT_LOCK_TIMEOUT) -> Decision:
    """Record the verdict; the recipe is never raised again."""
    workspace = Path(workspace)
    with workspace_lock(workspace, lock_timeout):
        proposal = _open(workspace, recipe_id)
        _not_unsettled(workspace, proposal)
        decision = Decision(recipe_id=proposal.recipe_id, verdict="reject", title=proposal.title,
                            files=[c.path for c in proposal.files])
        _record(workspace, decision)
    return decision


def decide(workspace: Path, recipe_id: str, verdict: str, **kwargs: Any) -> Decision:
    """One entry point for every face (CLI, server): accept | refine | reject | dismiss."""
    canonical = VERDICT_ALIASES.get(verdict)
    if canonical is None:
        raise DecisionRefused("verdict", f'"{verdict}" is not a verdict (accept, refine, reject or dismiss)')
    if canonical == "accept":
        return accept(workspace, recipe_id, **kwargs)
    return refine(workspace, recipe_id) if canonical == "refine" else reject(workspace, recipe_id)
