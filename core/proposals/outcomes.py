"""Outcome after accept: whether each decided proposal stuck.

Live passes follow every kept proposal through this project's later sessions (people's, not
programs'), read from the mining store:

- intent (a phrasing, a new room): **uses** are later prompts the live router sends to the intent it
  added to (kitsoki would now route them); **free-form asks** are later asks of the same signature
  (the recipe's actions seen again) whose prompt does not route there: people still asked the agent;
- world / binding: **uses** are later episodes whose actions show the setting's value in use (the
  recipe's action signature seen again); a setting is never "asked" free-form;
- gate (`decider: human`, a review state): **uses** are later runs of the gated action (each now a
  person's decision); **free-form asks** are later times a person still stopped the agent at it by hand.

Status: `in use`, `still asked free-form` (asked, never routed), `not used` (nothing since, for at
least the window), `watching` (nothing yet, inside the window), `rejected`. A kept change that was not
used (or only asked free-form) for the whole window is offered for revert: a new proposal whose draft
puts back the bytes from before the accept (core.proposals.reversal's signed record), staged and raised
like any other, so it goes through the same gate on accept; nothing is ever reverted silently. The
window is `miner.outcome_window` (a Go duration or `<n>d`, default 30d).

A change that did not stick lowers the priority of similar recipes (the same target, or the same ask:
core.mining's similarity) by DID_NOT_STICK_FACTOR at the next pass, as Lore weighs outcomes.

Records live in `.artifacts/mining/outcomes.json`, signed like the rest (core.authn), written
atomically, and read back after a restart; kitsoki's own trace events are untouched.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Literal

import orjson
from pydantic import BaseModel, Field, ValidationError

from core import statefs
from core.authn import KeyUnavailable, NotAuthentic, seal, unseal
from core.ids import is_recipe_id
from core.proposals.staging import MINING_DIR

log = logging.getLogger(__name__)

OUTCOMES_FILE = MINING_DIR / "outcomes.json"
PURPOSE = "outcomes"
MAX_BYTES = 32 << 20
DEFAULT_WINDOW = timedelta(days=30)
DID_NOT_STICK_FACTOR = 0.5
"""A similar recipe's priority is multiplied by this while an accepted change like it did not stick."""
REVERT_TITLE = "Revert "

Status = Literal["in use", "still asked free-form", "not used", "watching", "rejected", "reverted"]


class Outcome(BaseModel):
    recipe_id: str
    title: str
    kind: str
    verdict: Literal["accept", "reject"]
    decided_at: str
    """RFC3339, the trace's timestamp of the verdict."""
    target: str = ""
    """What it added to: `story:intent`, `world.key`, `bindings.iface`, `story:state`."""
    uses: int = 0
    free_form: int = 0
    last_used: str | None = None
    status: Status = "watching"
    revert_offer: str | None = None
    """The id of the revert proposal offered for it (when unused for the window)."""
    note: str = ""
    followed_through: str = ""
    """The newest prompt's timestamp this record has seen."""


class OutcomesFile(BaseModel):
    window_days: float = 30.0
    followed_at: str = ""
    outcomes: list[Outcome] = Field(default_factory=list)


class OutcomesError(ValueError):
    """The outcomes file is damaged or planted; it names the file."""


# --- storage ---------------------------------------------------------------------------------------------


def read_outcomes(workspace: Path) -> OutcomesFile:
    path = Path(workspace) / OUTCOMES_FILE
    try:
        raw = statefs.read_bytes(path, MAX_BYTES, what="the outcomes file")
    except FileNotFoundError:
        return OutcomesFile()
    try:
        body = unseal(raw, purpose=PURPOSE, rel=OUTCOMES_FILE.as_posix(), path=path, what="the outcomes file",
                      workspace=Path(workspace))
        return OutcomesFile.model_validate(body)
    except (NotAuthentic, KeyUnavailable, orjson.JSONDecodeError, ValidationError) as exc:
        raise OutcomesError(f"{path}: {exc}; delete it and the next pass follows the decisions again") from None


def write_outcomes(workspace: Path, data: OutcomesFile) -> None:
    statefs.write_atomic(Path(workspace) / OUTCOMES_FILE,
                         seal(data.model_dump(mode="json"), purpose=PURPOSE, rel=OUTCOMES_FILE.as_posix(),
                              workspace=Path(workspace)), what="the outcomes file")


# --- following -------------------------------------------------------------------------------------------


def window_of(workspace: Path) -> timedelta:
    from core.kitsoki.config import load_config
    from core.proposals.settings import outcome_window

    return outcome_window(load_config(workspace)) or DEFAULT_WINDOW


def _when(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _later_episodes(workspace: Path):
    from core.mining.watermark import kitsoki_slug, load_state

    state = load_state(workspace, kitsoki_slug(workspace))
    if state is None:
        return []
    return [ep for ep in state.all_episodes() if not ep.agent_session and ep.timestamp is not None]


def _target_of(proposal) -> str:
    impact = proposal.impact
    if proposal.kind == "intent" and impact is not None and impact.gained:
        return impact.gained[0].to
    return proposal.mapping.near or ""


def _steps(signature) -> set[str]:
    # Claude Code says `Bash`, Pi `bash`: the same step
    return {step.lower() for step in signature}


def _signature_seen(episode, signature: list[str], *, every: bool = True) -> bool:
    """The recipe's actions seen again in `episode`: all of them (an ask, a gated action), or any (a
    setting's evidence: one command that shows the value in use)."""
    wanted = _steps(signature)
    if not wanted:
        return False
    mine = _steps(episode.signature)
    return wanted <= mine if every else bool(wanted & mine)


def _decided_by_hand(episode, signature: list[str]) -> bool:
    wanted = _steps(signature)
    return any(a.signature.lower() in wanted and (a.rejected or a.interrupted) for a in episode.actions)


def follow(workspace: Path, *, now: datetime | None = None, offer_reverts: bool = True) -> OutcomesFile:
    """Follow every decided proposal through the sessions mined since; record, sign and return."""
    from core.proposals.reversal import _staged, decided

    workspace = Path(workspace)
    now = now or datetime.now(timezone.utc)
    window = window_of(workspace)
    try:
        previous = {o.recipe_id: o for o in read_outcomes(workspace).outcomes}
    except OutcomesError as exc:
        log.warning("%s", exc)
        previous = {}
    episodes = _later_episodes(workspace)
    routers = None
    from core.trace import trace_path
    from core.proposals.inbox import history
    from core.trace import Trace

    states = history(Trace(trace_path(workspace)))
    out = OutcomesFile(window_days=window.total_seconds() / 86400, followed_at=now.isoformat())
    for item in decided(workspace):
        proposal = _staged(workspace, item.recipe_id)
        record = Outcome(recipe_id=item.recipe_id, title=item.title, kind=item.kind,
                         verdict="accept" if item.state == "accepted" else "reject", decided_at=item.decided_at)
        old = previous.get(item.recipe_id)
        if old is not None:
            record.revert_offer = old.revert_offer
        if item.state == "rejected":
            record.status, record.note = "rejected", "not raised again"
            out.outcomes.append(record)
            continue
        if proposal is None:
            record.note = "its staged proposal is gone: nothing to follow it by"
            out.outcomes.append(record)
            continue
        if proposal.title.startswith(REVERT_TITLE) and proposal.mapping.near and is_recipe_id(proposal.mapping.near):
            record.status, record.note = "in use", f"took back {proposal.mapping.near}"
            out.outcomes.append(record)
            continue
        record.target = _target_of(proposal)
        since = _when(item.decided_at)
        later = [ep for ep in episodes if since is None or ep.timestamp > since]
        signature = list(proposal.evidence.action_signature)
        used: list[datetime] = []
        if proposal.kind == "intent" and ":" in record.target:
            if routers is None:
                routers = _routers(workspace)
            story, intent = record.target.split(":", 1)
            router = routers.get(story)
            for ep in later:
                text = " ".join((ep.phrasing or ep.prompt or "").split())
                verdict = router.route(text) if router is not None and text else None
                if verdict is not None and verdict.intent == intent and verdict.confidence >= 0.65:
                    used.append(ep.timestamp)
                elif _signature_seen(ep, signature):
                    record.free_form += 1
        elif proposal.kind == "gate":
            for ep in later:
                if _decided_by_hand(ep, signature):
                    record.free_form += 1
                elif _signature_seen(ep, signature):
                    used.append(ep.timestamp)
        else:
            used = [ep.timestamp for ep in later if _signature_seen(ep, signature, every=False)]
        record.uses = len(used)
        record.last_used = max(used).isoformat() if used else None
        record.followed_through = max((ep.timestamp for ep in later), default=since or now).isoformat()
        age = now - since if since is not None else timedelta(0)
        if used:
            record.status = "in use"
        elif record.free_form:
            record.status = "still asked free-form"
        elif age >= window:
            record.status = "not used"
        else:
            record.status = "watching"
        if record.revert_offer and states.get(record.revert_offer) == "accepted":
            record.status, record.note = "reverted", f"reverted through the gate by {record.revert_offer}"
        elif record.status in ("not used", "still asked free-form") and age >= window and offer_reverts:
            record.revert_offer = offer_revert(workspace, proposal, record) or record.revert_offer
        out.outcomes.append(record)
    write_outcomes(workspace, out)
    return out


def _routers(workspace: Path) -> dict:
    from core.kitsoki.inventory import build_inventory
    from core.kitsoki.story import load_workspace
    from core.proposals.mapper import Routers

    try:
        return Routers.build(build_inventory(load_workspace(workspace))).by_story
    except Exception as exc:  # noqa: BLE001 - a tree that does not load routes nothing; said in the log
        log.warning("outcomes: the workspace does not load, so no prompt is routed: %s", exc)
        return {}


def did_not_stick(record: Outcome, window_days: float, now: datetime | None = None) -> bool:
    """Kept, and unused (or only asked free-form) for the whole window, as of the follow-up (`now`)."""
    since = _when(record.decided_at)
    now = now or datetime.now(timezone.utc)
    return (record.verdict == "accept" and record.status in ("not used", "still asked free-form", "reverted")
            and since is not None and now - since >= timedelta(days=window_days))


# --- revert offers ---------------------------------------------------------------------------------------


def revert_id(recipe_id: str) -> str:
    return hashlib.sha256(f"revert:{recipe_id}".encode()).hexdigest()[:16]


def offer_revert(workspace: Path, proposal, record: Outcome) -> str | None:
    """Stage a proposal that puts back what the accept of `proposal` replaced; raised like any other,
    accepted only through the gate. None (with the reason in `record.note`) when it cannot be."""
    from core.locks import workspace_lock
    from core.trace import trace_path
    from core.proposals.inbox import history
    from core.proposals.model import AuthorArtifact, Mapping, Proposal
    from core.proposals.reversal import ReversalRefused, _before_bytes, _live, read_kept
    from core.proposals.staging import file_change, write_stage
    from core.trace import Trace

    rid = revert_id(proposal.recipe_id)
    trace = Trace(trace_path(workspace))
    state = history(trace).get(rid)
    if state is not None:
        record.note = f"revert offered as {rid} ({state})"
        return rid
    try:
        kept = read_kept(workspace, proposal.recipe_id)
    except ReversalRefused as exc:
        record.note = f"cannot offer a revert: {exc}"
        return None
    files: dict[str, bytes] = {}
    changes = []
    for item in kept.files:
        if item.before_sha256 is None:
            record.note = (f"cannot offer a revert as a proposal: the accept created {item.path}, and a draft only "
                           f"writes files; `kitsoki-miner undo {proposal.recipe_id[:12]}` takes it back")
            return None
        live, _ = _live(workspace, item.path)
        if live is None or hashlib.sha256(live).hexdigest() != item.after_sha256:
            record.note = f"cannot offer a revert: {item.path} changed since the accept wrote it"
            return None
        before = _before_bytes(workspace, proposal.recipe_id, item)
        if before is None:
            record.note = f"cannot offer a revert: the bytes of {item.path} before the accept are gone"
            return None
        files[item.path] = before
        changes.append(file_change(item.path, live, before))
    why = (f"accepted {record.decided_at[:10]}, and in the {record.uses} uses since none routed to it" if record.uses
           else f"accepted {record.decided_at[:10]}; no later prompt used it"
           + (f", and people still asked the agent free-form {record.free_form} times" if record.free_form else ""))
    title = f"{REVERT_TITLE}\"{proposal.title}\" (not used)"
    summary = (f"**{title}**\n\n{why}. Accepting puts back the bytes from before that accept "
               f"({', '.join(files)}), through the same flow gate; rejecting keeps the change and stops this offer.")
    revert = Proposal(
        recipe_id=rid, kind=proposal.kind, target=proposal.target, rung=proposal.rung, priority=proposal.priority,
        title=title, mapping=Mapping(classification="ALREADY-MODELED", score=1.0, near=proposal.recipe_id,
                                     reason=f"it undoes the accepted proposal {proposal.recipe_id}, {why}"),
        files=changes, diff="".join(c.diff for c in changes), evidence=proposal.evidence, summary_markdown=summary,
        drafted_at=datetime.now(timezone.utc))
    artifact = AuthorArtifact(files_changed=sorted(files), summary_markdown=summary)
    with workspace_lock(workspace, 30.0):
        write_stage(workspace, revert, files, artifact)
        trace.proposal_raised(recipe_id=rid, kind=revert.kind, target=revert.target, priority=revert.priority,
                              rung=revert.rung, draft_path=revert.draft_path)
    record.note = f"revert offered as {rid}"
    return rid


# --- scoring feedback ------------------------------------------------------------------------------------


def weigh_recipes(workspace: Path, recipes: list, threshold: float | None = None) -> list:
    """Recipes like an accepted change that did not stick, at DID_NOT_STICK_FACTOR of their priority."""
    try:
        data = read_outcomes(workspace)
    except (OutcomesError, OSError) as exc:
        log.warning("%s", exc)
        return recipes
    followed = _when(data.followed_at)
    failed = [o for o in data.outcomes if did_not_stick(o, data.window_days, followed)]
    if not failed:
        return recipes
    from core.proposals.reversal import _staged

    unstuck = [(o, _staged(workspace, o.recipe_id)) for o in failed]
    out = []
    for recipe in recipes:
        if any(_similar(recipe, o, p) for o, p in unstuck if p is not None) and not any(
                recipe.id == o.recipe_id for o, _ in unstuck):
            priority = round(recipe.priority * DID_NOT_STICK_FACTOR, 3)
            recipe = recipe.model_copy(update={"priority": priority, "below_threshold": threshold is not None
                                               and priority < threshold})
        out.append(recipe)
    return sorted(out, key=lambda r: (-r.priority, r.id))


def _similar(recipe, outcome: Outcome, proposal) -> bool:
    if recipe.kind != proposal.kind:
        return False
    if recipe.kind in ("world", "binding"):
        return bool(proposal.mapping.near) and proposal.mapping.near.endswith(f".{recipe.iface}")
    signature = set(proposal.evidence.action_signature)
    if signature and signature <= set(recipe.action_signature):
        return True
    from core.kitsoki.routing import content_stems

    mine = set().union(*(content_stems(p.text) for p in recipe.phrasings)) if recipe.phrasings else set()
    theirs = set().union(*(content_stems(t) for t, _ in proposal.evidence.phrasings)) if proposal.evidence.phrasings \
        else set()
    return bool(mine and theirs) and 2 * len(mine & theirs) / (len(mine) + len(theirs)) >= 0.6


def status_line(data: OutcomesFile) -> str:
    """A few words for a status tooltip: `2 in use, 1 not used (revert offered)`."""
    counts: dict[str, int] = {}
    for o in data.outcomes:
        if o.verdict == "accept":
            counts[o.status] = counts.get(o.status, 0) + 1
    if not counts:
        return "no accepted change to follow yet"
    offered = sum(1 for o in data.outcomes if o.revert_offer)
    parts = [f"{n} {status}" for status, n in sorted(counts.items())]
    return ", ".join(parts) + (f" ({offered} revert offered)" if offered else "")
