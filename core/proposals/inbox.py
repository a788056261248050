"""The inbox: proposals waiting for a person, rebuilt from the trace and the staged files.

A recipe's state is the last mining event about it: raised → pending; decided refine → refining
(a person is editing the staged draft); decided accept that reverted → held (with the failure);
decided accept that kept, or reject → closed; withdrawn (its draft no longer applies and could not
be re-drafted) → closed. Open proposals whose staged `proposal.json` is missing, unreadable or not
signed by kitsoki-miner are not shown (fail closed; `unusable` says why). A proposal whose target
bytes changed since drafting is stale. A trace event whose `recipe_id` is not a recipe id is
ignored: it never becomes a folder name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from core.ids import is_recipe_id
from core.trace import trace_path
from core.proposals.model import Proposal
from core.proposals.staging import StagedStateError, read_proposal, sha256
from core.safeio import read_regular
from core.trace import PROPOSAL_DECIDED, PROPOSAL_RAISED, Trace

WITHDRAWN = "mining.proposal_withdrawn"
History = Literal["pending", "refining", "held", "accepted", "rejected", "withdrawn"]
OPEN: frozenset[str] = frozenset({"pending", "refining", "held"})


def history(trace: Trace) -> dict[str, History]:
    """recipe_id -> where it stands, from every mining proposal event, in trace order."""
    states: dict[str, History] = {}
    for event in trace.events(kinds=(PROPOSAL_RAISED, PROPOSAL_DECIDED, WITHDRAWN)):
        recipe_id = event.payload.get("recipe_id")
        if not is_recipe_id(recipe_id):
            continue
        if event.kind == PROPOSAL_RAISED:
            states[recipe_id] = "pending"
        elif event.kind == WITHDRAWN:
            states[recipe_id] = "withdrawn"
        else:
            verdict = event.payload.get("verdict")
            if verdict == "reject":
                states[recipe_id] = "rejected"
            elif verdict == "refine":
                states[recipe_id] = "refining"
            elif verdict == "accept":
                states[recipe_id] = "held" if event.payload.get("reverted") else "accepted"
    return states


MAX_TARGET_BYTES = 64 << 20
UNREADABLE = "unreadable"
"""live_sha of a target that is not a regular file within the cap (a link, a FIFO): never a draft's."""


def live_sha(workspace: Path, rel: str) -> str | None:
    try:
        return sha256(read_regular(Path(workspace) / rel, MAX_TARGET_BYTES, what=rel, follow_symlinks=False))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return UNREADABLE


def stale_files(workspace: Path, proposal: Proposal) -> list[str]:
    """Targets whose live bytes are no longer what the draft was made against."""
    return [change.path for change in proposal.files if live_sha(workspace, change.path) != change.before_sha256]


def inbox(workspace: Path, *, path: str | None = None, include_stale: bool = True,
          unusable: dict[str, str] | None = None, show: bool = False) -> list[Proposal]:
    """Open proposals, highest priority first; `path` keeps those that change that file.
    `unusable` (when given) collects recipe_id -> why for open proposals whose stage is not used.
    `show`: the cards are about to be shown to a person, so a refined draft is validated and its
    new diff signed to be shown (core.proposals.shown.show_refined); never on an accept's path.
    Raises KeyUnavailable when the signing key cannot be used: no card can be trusted, and an
    empty inbox would hide why."""
    from core.authn import load_key
    from core.proposals.shown import show_refined

    workspace = Path(workspace)
    load_key(workspace)
    out = []
    for recipe_id, state in history(Trace(trace_path(workspace))).items():
        if state not in OPEN:
            continue
        try:
            proposal = read_proposal(workspace, recipe_id)
        except StagedStateError as exc:
            if unusable is not None:
                unusable[recipe_id] = str(exc)
            continue
        if show and state == "refining":
            proposal = show_refined(workspace, proposal)
        status = state
        if stale_files(workspace, proposal):
            status = "stale"
        if status == "stale" and not include_stale:
            continue
        proposal.status = status  # type: ignore[assignment]
        if path is not None and path not in {change.path for change in proposal.files}:
            continue
        out.append(proposal)
    # A card that moves routes someone relied on is ranked below those that do not (its impact says which).
    out.sort(key=lambda p: (bool(p.impact and p.impact.moved), -p.priority, p.recipe_id))
    return out


def find(workspace: Path, recipe_id: str, unusable: dict[str, str] | None = None) -> Proposal | None:
    """An open proposal by id (or by a unique id prefix, as people type them)."""
    cards = inbox(workspace, unusable=unusable)
    matches = [p for p in cards if p.recipe_id == recipe_id]
    if not matches and len(recipe_id) >= 4:
        matches = [p for p in cards if p.recipe_id.startswith(recipe_id)]
    return matches[0] if len(matches) == 1 else None
