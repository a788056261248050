"""The proposer: for each recipe, in order, threshold gate → mapper → rung → draft → validate →
stage → record (`mining.proposal_raised`). Reference/kitsoki-formats.md §4, "Proposer order".

It never touches the live tree: drafts go to `.artifacts/mining/<recipe_id>/` only. The inventory
it maps against is rebuilt from the live tree on every pass. A recipe already decided (accepted
and kept, or rejected) is never raised again; one still open is left alone unless its targets
changed since drafting (stale), in which case it is re-drafted against the new bytes, or withdrawn
when it no longer drafts. Staging holds the workspace lock, so it never interleaves with an accept.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from core.kitsoki.config import load_config
from core.kitsoki.yamlread import ConfigError, ConfigIssue
from core.kitsoki.model import RefusedStory, WorkspaceError
from core.kitsoki.story import Workspace, load_workspace
from core.locks import workspace_lock
from core.mining.passes import read_recipes
from core.mining.recipes import Recipe
from core.trace import trace_path
from core.proposals import memo
from core.proposals.inbox import OPEN, WITHDRAWN, history, live_sha, stale_files
from core.proposals.loaded import stories_being_edited
from core.proposals.model import AuthorArtifact, Cite, Evidence, Mapping, ProofInfo, Proposal
from core.proposals.same_target import group_same_targets, merge, target
from core.proposals.staging import load_proposal
from core.trace import Trace

if TYPE_CHECKING:
    from core.kitsoki.inventory import Inventory
    from core.proposals.drafter import Draft, Reader
    from core.proposals.mapper import Routers

# Drafting (the drafter, the mapper's routers, validation, proofs, the impact replay) is imported where a
# recipe is mapped or drafted: a pass with nothing to draft answers from the memo (core.proposals.memo)
# without loading any of it.

log = logging.getLogger("kitsoki_miner.proposer")

Drafter = Callable[[Recipe, Mapping, Workspace, "Inventory", "Reader"], "Draft"]
STAGE_LOCK_TIMEOUT = 30.0
MIN_PREMAP = 16
"""Recipes to map before mapping them on every core pays (a mapping takes about 10 ms; a helper's fork more)."""


class Outcome(BaseModel):
    recipe_id: str
    title: str
    kind: str
    result: str
    """raised, redrafted, already-modeled, below-threshold, decided, open, waiting (a story that
    loaded before does not load now), failed, withdrawn, merged (drafts the same intent, state or
    setting as a higher-priority recipe, whose card carries its evidence)."""
    reason: str = ""
    classification: str | None = None
    score: float | None = None


class ProposerReport(BaseModel):
    workspace: str
    recipes: int
    raised: list[str] = Field(default_factory=list)
    outcomes: list[Outcome] = Field(default_factory=list)
    problems: list[ConfigIssue] = Field(default_factory=list)
    """Why stories were refused (kitsoki skips them): file:line:col, for editors to publish."""

    def count(self, result: str) -> int:
        return sum(1 for outcome in self.outcomes if outcome.result == result)


def refused_story(model: Workspace, workspace: Path, proposal: Proposal) -> RefusedStory | None:
    """The refused story (it does not load) that one of the proposal's targets belongs to."""
    targets = {os.path.realpath(workspace / change.path) for change in proposal.files}
    return next((refusal for refusal in model.refused
                 if targets & {os.path.realpath(f) for f in (refusal.app, *refusal.files)}), None)


def _relative_app(workspace: Path, refusal: RefusedStory) -> str:
    try:
        return Path(refusal.app).resolve().relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return str(refusal.app)


def load_recipes(workspace: Path) -> list[Recipe]:
    return read_recipes(workspace)  # RecipesFileError names the file and field; nothing is staged


def reader_for(workspace: Path) -> Reader:
    from core.proposals.drafter import DraftError

    def read(rel: str) -> bytes | None:
        try:
            return (workspace / rel).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:  # a folder where a file should be, no permission: this recipe fails
            raise DraftError(f"{rel}: cannot be read ({exc.strerror or exc})") from None
    return read


def evidence_of(recipe: Recipe) -> Evidence:
    return Evidence(
        sessions=recipe.sessions, phrasings=[(p.text, p.count) for p in recipe.phrasings[:10]],
        action_signature=recipe.action_signature[:20],
        cites=[Cite(session=i.session, path=i.path, line_start=i.line_start, line_end=i.line_end)
               for i in recipe.instances[:20]],
        first_seen=recipe.first_seen, last_seen=recipe.last_seen, tool_calls=recipe.tool_calls,
        edit_rerun_cycles=recipe.edit_rerun_cycles, retries=recipe.retries, value=recipe.value)


def build_proposal(workspace: Workspace, inventory: Inventory, recipe: Recipe, mapping: Mapping,
                   draft_fn: Drafter, drafter_name: str = "builtin",
                   ) -> tuple[Proposal, dict[str, bytes], AuthorArtifact | None]:
    """Draft and validate one mapped recipe; raises DraftError or DraftInvalid."""
    from core.proposals import drafter as builtin
    from core.proposals.proofs import Proof, proof_markdown
    from core.proposals.shown import command_changes
    from core.proposals.staging import file_change
    from core.proposals.validate import DraftInvalid, check_draft, settle_proof

    read = reader_for(workspace.path)
    if recipe.other_projects:
        # It recurs only with other projects' sessions counted (mining.other_projects): its evidence is
        # not this project's, so it is a suggestion, whichever drafter, never a change to this project.
        draft = builtin.other_projects_suggestion(recipe, mapping)
    else:
        draft = draft_fn(recipe, mapping, workspace, inventory, read)
    artifact = None  # kitsoki's author artifact needs files_changed: a suggestion has none
    if draft.suggestion_only:
        if draft.files:
            raise DraftInvalid("a suggestion for dev-story must not change files")
        if len(draft.summary_markdown) < 40:
            raise DraftInvalid("a suggestion needs a summary of at least 40 characters citing the evidence")
    else:
        for rel, data in draft.files.items():  # whatever the drafter: no placeholder of a secret becomes YAML
            before = read(rel) or b""
            if data.count(b"[REDACTED:") > before.count(b"[REDACTED:"):
                raise DraftInvalid(f"{rel}: the draft writes a redaction placeholder ([REDACTED:...]); a phrase "
                                   "that held a secret is never drafted")
        artifact = AuthorArtifact(files_changed=sorted(draft.files), flows_green=False,
                                  summary_markdown=draft.summary_markdown)
        staged = check_draft(workspace, draft.files, artifact.model_dump(mode="json"), draft.expect_routes,
                             recipe_id=recipe.id, keep_routes=draft.keep_routes)
        proof = draft.proof_later(workspace, staged) if draft.proof_later is not None else draft.proof
        proof = settle_proof(proof, workspace, staged, recipe.id)
        if proof is None:
            proof = Proof(unprovable=[f"the {drafter_name} drafter's draft carries no proof"])
        if proof.path is not None:
            draft.files[proof.path] = proof.text.encode()
        draft.summary_markdown += proof_markdown(proof)
        artifact = AuthorArtifact(files_changed=sorted(draft.files), flows_green=False,
                                  flow_files=[proof.path] if proof.path else [], summary_markdown=draft.summary_markdown)
    changes = [file_change(rel, read(rel), data) for rel, data in sorted(draft.files.items())]
    proposal = Proposal(
        recipe_id=recipe.id, kind=draft.kind, target=draft.target, rung=draft.rung, priority=recipe.priority,
        title=draft.title, mapping=mapping, files=changes, diff="".join(c.diff for c in changes),
        evidence=evidence_of(recipe), summary_markdown=draft.summary_markdown, drafter=drafter_name,
        suggestion_only=draft.suggestion_only, drafted_at=datetime.now(timezone.utc),
        proof=None if draft.suggestion_only else ProofInfo(path=proof.path, app=proof.app, claims=proof.claims,
                                                            unprovable=proof.unprovable, verified=proof.verified),
        runs_commands=[key for rel, data in sorted(draft.files.items()) for key in command_changes(rel, read(rel), data)])
    return proposal, dict(draft.files), artifact


def run_proposer(workspace: Path, recipes: list[Recipe] | None = None, *, threshold: float | None = None,
                 drafter: Drafter | None = None, drafter_name: str | None = None,
                 lock_timeout: float = STAGE_LOCK_TIMEOUT) -> ProposerReport:
    """One proposer pass over `recipes` (default: the latest recipes.json). Raises WorkspaceError
    when the live tree does not load (nothing can be mapped against it) and WorkspaceBusy when an
    accept holds the workspace longer than `lock_timeout`.

    Drafting happens before the workspace lock is taken (an agent drafter may take minutes and must
    not block an accept); staging happens under it, and only for drafts whose targets still hold
    the bytes they were drafted against and whose recipe was not decided in the meantime.
    """
    workspace = Path(workspace)
    tree = _Tree(workspace)
    recipes = load_recipes(workspace) if recipes is None else recipes
    threshold = tree.config.mining.priority_threshold if threshold is None else threshold
    draft_fn = drafter or _builtin_draft
    name = drafter_name or ("builtin" if drafter is None else "agent")
    trace = Trace(trace_path(workspace))
    facts = tree.facts
    report = ProposerReport(workspace=str(workspace), recipes=len(recipes),
                            problems=[issue for refusal in facts.refused for issue in refusal.issues])
    states = history(trace)
    editing = stories_being_edited(workspace, facts)
    map_recipe = tree.map
    ready: list[tuple[Outcome, Proposal, dict[str, bytes], AuthorArtifact | None, bool]] = []
    withdrawals: list[tuple[Outcome, str]] = []
    to_draft: list[tuple[Outcome, Recipe, Mapping, bool, tuple]] = []
    jobs: list[tuple[Outcome, Recipe, Mapping, bool]] = []
    """(outcome, recipe, mapping, stale) of each draft: built all at once (core.proposals.draft_pool)."""
    anchors: list[tuple[Recipe, str]] = []

    if not editing:  # the recipes the pass will map: every one but those below the threshold, and decided or open ones
        tree.premap([recipe for recipe in recipes if recipe.priority >= threshold or states.get(recipe.id) in
                     ("accepted", "rejected", *OPEN)])
    for recipe in recipes:
        outcome = Outcome(recipe_id=recipe.id, title=recipe.title, kind=recipe.kind, result="")
        report.outcomes.append(outcome)
        state = states.get(recipe.id)
        if state in ("accepted", "rejected"):
            outcome.result, outcome.reason = "decided", f"already {state}; not raised again"
            anchors.append((recipe, f"was {state}"))
            continue
        stale = False
        if state in OPEN:
            staged = load_proposal(workspace, recipe.id)
            stale = staged is not None and bool(stale_files(workspace, staged))
            if staged is not None and (not stale or state == "refining"):
                outcome.result, outcome.reason = "open", f"{state}, waiting for a verdict"
                anchors.append((recipe, "is open"))
                continue
            waiting = refused_story(facts, workspace, staged) if stale and staged is not None else None
            if stale and waiting is not None:
                # its story does not load (kitsoki skips it): re-drafted once it loads, never withdrawn for it
                outcome.result, outcome.reason = "open", f"stale, waiting: {waiting.reason()}"
                anchors.append((recipe, "is open"))
                continue
        if editing:
            # a story that loaded before does not now: its intents are missing from the inventory,
            # so nothing is mapped, drafted or withdrawn until it loads again
            outcome.result = "waiting"
            outcome.reason = f"{_relative_app(workspace, editing[0])} does not load: {editing[0].reason(1)}"
            continue
        if recipe.priority < threshold:
            outcome.result = "below-threshold"
            outcome.reason = f"priority {recipe.priority:g} < threshold {threshold:g}"
            if stale:
                withdrawals.append((outcome, "its targets changed and it is now below the threshold"))
            continue
        mapping = map_recipe(recipe)
        outcome.classification, outcome.score = mapping.classification, mapping.score
        if mapping.classification == "ALREADY-MODELED":
            outcome.result, outcome.reason = "already-modeled", mapping.reason
            if stale:
                withdrawals.append((outcome, f"its targets changed and it is now modeled: {mapping.reason}"))
            continue
        to_draft.append((outcome, recipe, mapping, stale, _target(recipe, mapping)))

    # Two proposals that would draft the same intent, state or setting are one; a card already open (or
    # decided) for that target takes the new recipe's place.
    settled = []
    for recipe, why in anchors:
        mapping = map_recipe(recipe)
        if mapping.classification != "ALREADY-MODELED":
            settled.append((recipe, mapping, _target(recipe, mapping), why))
    entries = [(r, m, key) for r, m, key, _ in settled] + [(r, m, key) for _, r, m, _, key in to_draft]
    for members in group_same_targets(entries):
        if members[0] < len(settled):
            lead, _, _, why = settled[members[0]]
            for n in members[1:]:
                if n >= len(settled):
                    outcome, _, _, other_stale, _ = to_draft[n - len(settled)]
                    outcome.result = "merged"
                    outcome.reason = f"drafts the same thing as {lead.id} ({lead.title}), which {why}"
                    if other_stale:
                        withdrawals.append((outcome, outcome.reason))
            continue
        members = [n - len(settled) for n in members]
        lead_outcome, lead, mapping, stale, _ = to_draft[members[0]]
        recipe = merge([to_draft[n][1] for n in members])
        for n in members[1:]:
            outcome, other, _, other_stale, _ = to_draft[n]
            outcome.result = "merged"
            outcome.reason = f"drafts the same thing as {lead.id} ({lead.title}); its evidence is on that card"
            if other_stale:
                withdrawals.append((outcome, outcome.reason))
        jobs.append((lead_outcome, recipe, mapping, stale))
        if stale:  # its place among the withdrawals, should it no longer draft
            withdrawals.append((lead_outcome, ""))

    if jobs:
        try:  # loaded before the drafts are shared out, so every process drafts against this one load
            tree.model, tree.inventory, tree.routers
        except Exception:  # noqa: BLE001 - each draft meets the same failure and records it
            pass
        build = _Build(tree, draft_fn, name)
        from core.proposals.draft_pool import build_all

        failed: dict[int, str] = {}
        for (outcome, recipe, _, stale), (built, reason) in zip(jobs, build_all(jobs, build)):
            if built is None:
                outcome.result, outcome.reason = "failed", reason
                failed[id(outcome)] = f"its targets changed and it no longer drafts: {reason}"
                continue
            ready.append((outcome, *built, stale))
        withdrawals = [(outcome, why or failed[id(outcome)]) for outcome, why in withdrawals
                       if why or id(outcome) in failed]

    from core.proposals.staging import write_stage

    with workspace_lock(workspace, lock_timeout):
        now = history(trace)
        for outcome, why in withdrawals:
            if now.get(outcome.recipe_id) == states.get(outcome.recipe_id):
                _withdraw(trace, outcome.recipe_id, outcome, why)
        for outcome, proposal, files, artifact, stale in ready:
            if now.get(proposal.recipe_id) != states.get(proposal.recipe_id):
                outcome.result, outcome.reason = "open", "a verdict landed while it was drafted"
                continue
            moved = [c.path for c in proposal.files if live_sha(workspace, c.path) != c.before_sha256]
            if moved:
                outcome.result = "failed"
                outcome.reason = f"{', '.join(moved)} changed while it was drafted; the next pass drafts it again"
                continue
            write_stage(workspace, proposal, files, artifact)
            trace.proposal_raised(recipe_id=proposal.recipe_id, kind=proposal.kind, target=proposal.target,
                                  priority=proposal.priority, rung=proposal.rung, draft_path=proposal.draft_path)
            outcome.result = "redrafted" if stale else "raised"
            outcome.reason = proposal.title
            report.raised.append(proposal.recipe_id)
    tree.remember()
    return report


class _Build:
    """One draft of a pass: drafted, validated and weighed against the live tree (in whichever process
    core.proposals.draft_pool gives it to). ((proposal, files, artifact), "") or (None, why it failed)."""

    def __init__(self, tree: _Tree, draft_fn: Drafter, name: str) -> None:
        self.tree, self.draft_fn, self.name = tree, draft_fn, name

    def __call__(self, job: tuple[Outcome, Recipe, Mapping, bool]) -> tuple[tuple | None, str]:
        from core.proposals.drafter import DraftError
        from core.proposals.impact.assess import weigh
        from core.proposals.validate import DraftInvalid

        _, recipe, mapping, _ = job
        tree, draft_fn, name = self.tree, self.draft_fn, self.name
        try:
            model, inventory = tree.model, tree.inventory
            return weigh(  # what it would have done to past prompts and fixtures
                model, inventory, tree.routers, recipe, mapping,
                build_proposal(model, inventory, recipe, mapping, draft_fn, name),
                lambda narrower: build_proposal(model, inventory, narrower, mapping, draft_fn, name)), ""
        except Exception as exc:  # noqa: BLE001 - one recipe that does not draft never stops the pass
            reason = str(exc) if isinstance(exc, (DraftError, DraftInvalid, ValueError)) \
                else f"the drafter failed: {type(exc).__name__}: {exc}"
            log.warning("recipe %s (%s) not proposed: %s", recipe.id, recipe.title, reason,
                        exc_info=not isinstance(exc, (DraftError, DraftInvalid, ValueError)))
            return None, reason


class _Tree:
    """The live tree as a pass needs it: its config always; its facts and the recipes' mappings from
    the memo (core.proposals.memo) when nothing it was made from changed; the loaded model, its
    inventory and routers only when something must be drafted or mapped anew."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self._model: Workspace | None = None
        self._inventory: Inventory | None = None
        self._routers: Routers | None = None
        self._memo: memo.Facts | None = None
        self._mapped: dict[str, Mapping] = {}
        self._premapped: dict[str, Mapping] = {}
        self._new = False
        try:
            self.config = load_config(workspace)
        except ConfigError as exc:
            raise WorkspaceError(exc.issues) from None
        self._memo = memo.load(workspace, self.config)

    @property
    def model(self) -> Workspace:
        if self._model is None:
            self._model = load_workspace(self.workspace)
        return self._model

    @property
    def inventory(self) -> Inventory:
        from core.kitsoki.inventory import build_inventory

        if self._inventory is None:
            self._inventory = build_inventory(self.model)
        return self._inventory

    @property
    def facts(self) -> memo.Facts:
        return self._memo if self._memo is not None else memo.facts_of(self.model)

    @property
    def routers(self) -> Routers:
        from core.proposals.mapper import Routers

        if self._routers is None:
            self._routers = Routers.build(self.inventory)
        return self._routers

    def premap(self, recipes: list[Recipe]) -> None:
        """Map, on every core (core.proposals.draft_pool), the recipes neither this pass nor the memo has
        mapped; `map` takes each from here when the pass asks for it (one it never asks for is dropped, so
        what the memo keeps is what mapping one by one keeps)."""
        from core.proposals.draft_pool import build_all, workers

        known = self._memo.mappings if self._memo is not None else {}
        missing = list({key: recipe for recipe in recipes
                        if (key := memo.recipe_key(recipe)) not in self._mapped and key not in known}.items())
        if len(missing) < MIN_PREMAP or workers() < 2:
            return
        from core.proposals.mapper import map_recipe

        try:
            routers = self.routers
        except Exception:  # noqa: BLE001 - `map` meets the same failure where the pass asks
            return

        def one(item: tuple[str, Recipe]) -> Mapping | None:
            try:
                return map_recipe(item[1], routers)
            except Exception:  # noqa: BLE001 - mapped again by `map`, which raises where the pass asks
                return None

        for (key, _), mapping in zip(missing, build_all(missing, one)):
            if mapping is not None:
                self._premapped[key] = mapping

    def map(self, recipe: Recipe) -> Mapping:
        key = memo.recipe_key(recipe)
        mapping = self._mapped.get(key) or (self._memo.mappings.get(key) if self._memo is not None else None)
        if mapping is None:
            mapping = self._premapped.pop(key, None)
            if mapping is None:
                from core.proposals.mapper import map_recipe

                mapping = map_recipe(recipe, self.routers)
            self._new = True
        self._mapped[key] = mapping
        return mapping.model_copy(deep=True)

    def remember(self) -> None:
        """Write the memo when this pass loaded the tree or mapped something new."""
        if self._model is None or not (self._new or self._memo is None):
            return
        memo.save(self.workspace, self._model, self._mapped)  # the mappings of this pass's recipes only


def _builtin_draft(recipe: Recipe, mapping: Mapping, workspace: Workspace, inventory: Inventory, read: Reader) -> Draft:
    """core.proposals.drafter.draft, imported when something is drafted."""
    from core.proposals import drafter

    return drafter.draft(recipe, mapping, workspace, inventory, read)


def _target(recipe: Recipe, mapping: Mapping) -> tuple:
    if recipe.kind != "intent":
        return target(recipe, mapping, None)
    from core.proposals.drafter import intent_name_for

    return target(recipe, mapping, intent_name_for(recipe, set()))


def _withdraw(trace: Trace, recipe_id: str, outcome: Outcome, why: str) -> None:
    trace.append(WITHDRAWN, {"recipe_id": recipe_id, "reason": why})
    outcome.result, outcome.reason = "withdrawn", why
