"""What a card shows is what an accept applies.

A staged draft lives in the workspace (`.artifacts/mining/<recipe_id>/`), beside its signed
`proposal.json`, and anyone can change it there. The signature covers the proposal, which names
each draft file's bytes (`after_sha256`) and the diff the card displays, so an accept applies a
draft file only while its bytes are exactly those, and re-derives the diff from the live file and
the staged bytes and compares it with the one the card shows (`check_shown`). A draft changed
behind its card is refused by name; it is never applied with the old diff on screen.

A person refining a draft changes those bytes on purpose. Their new draft is shown before it can
be accepted: listing the proposals (`kitsoki-miner proposals`, the editors' cards) validates the
refined draft and, when it validates, signs the proposal again with the new bytes and their diff
(`show_refined`); an accept of a refined draft that has not been shown yet is refused and says so.

Nothing a draft writes may change how kitsoki-miner itself runs commands (the `miner:` gate and
drafter commands, kitsoki's `harness_profiles`, `intercept`, `default_profile`) unless the card says
so: `runs_commands` lists the keys such a draft changes, it is part of the signed proposal, the
card shows it as a warning, and an accept re-derives it and refuses on any difference.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from core.kitsoki.config import CONFIG_FILE
from core.locks import WorkspaceBusy, workspace_lock
from core.proposals.model import Proposal
from core.proposals.staging import StagedStateError, file_change, read_artifact, save_proposal, sha256, staged_files
from core.safeio import read_regular

log = logging.getLogger(__name__)

COMMAND_KEYS = ("miner", "harness_profiles", "intercept", "default_profile")
"""Top-level `.kitsoki.yaml` keys that decide which commands kitsoki-miner (or kitsoki under its gate) runs."""
MAX_TARGET_BYTES = 64 << 20
_MAX_DEPTH = 64
"""Deeper YAML is not compared key by key (the whole section is then named as changed)."""


class NotShown(ValueError):
    """The bytes an accept would write are not the ones the card shows; the message says which and why."""


def _load(data: bytes | None) -> Any:
    from core.flows.yaml12 import Yaml12Loader  # here: importing core.flows loads the runner

    if data is None:
        return {}
    try:
        loader = Yaml12Loader(data)  # bounded depth: never composed deeper than the C stack takes
    except yaml.YAMLError:
        return None
    try:
        return loader.get_single_data()
    except (yaml.YAMLError, RecursionError, ValueError, TypeError):
        return None
    finally:
        loader.dispose()


def _depth(value: Any, limit: int = _MAX_DEPTH) -> int:
    stack = [(value, 1)]
    deepest = 0
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return deepest


def command_changes(rel: str, before: bytes | None, after: bytes) -> list[str]:
    """The command-running keys of `.kitsoki.yaml` a change of `rel` touches (`miner.flow_gate`,
    `harness_profiles.claude-native`, ...); [] for any other file."""
    if rel != CONFIG_FILE:
        return []
    old, new = _load(before), _load(after)
    if not isinstance(old, dict) or not isinstance(new, dict):
        return [f"{CONFIG_FILE} (it could not be compared)"] if old != new else []
    out = []
    for key in COMMAND_KEYS:
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if isinstance(a, dict) or isinstance(b, dict):
            a = a if isinstance(a, dict) else {}
            b = b if isinstance(b, dict) else {}
            if _depth(a) > _MAX_DEPTH or _depth(b) > _MAX_DEPTH:
                out.append(key)
                continue
            out.extend(f"{key}.{sub}" for sub in sorted({*a, *b}, key=str) if a.get(sub) != b.get(sub))
        else:
            out.append(key)
    return out


def _live(workspace: Path, rel: str) -> bytes | None:
    try:
        return read_regular(Path(workspace) / rel, MAX_TARGET_BYTES, what=rel, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None


def check_shown(workspace: Path, proposal: Proposal, files: Mapping[str, bytes]) -> None:
    """Raise NotShown unless `files` are exactly the draft the signed card shows: every file's
    bytes, the diff re-derived from the live file, and the command keys it changes."""
    changed = [c.path for c in proposal.files if sha256(files[c.path]) != c.after_sha256]
    if changed:
        if proposal.status == "refining":
            if proposal.failure:  # shown, and it did not validate then
                raise NotShown(f"{proposal.failure} (fix the draft, list the proposals to see it again, then accept)")
            raise NotShown(f"the refined draft of {proposal.recipe_id} ({', '.join(changed)}) has not been shown yet: "
                           "list the proposals (`kitsoki-miner proposals`, or refresh the editor's card) to see its "
                           "diff, then accept again")
        raise NotShown(f"the staged draft of {proposal.recipe_id} was changed after it was proposed "
                       f"({', '.join(changed)}: its bytes are not the ones the card shows), so nothing is applied. "
                       f"`kitsoki-miner refine {proposal.recipe_id}` to edit a draft on purpose, or "
                       "`kitsoki-miner propose` to draft it again")
    runs: list[str] = []
    for change in proposal.files:
        live = _live(workspace, change.path)
        if live is not None and sha256(live) != change.before_sha256 or live is None and change.before_sha256:
            continue  # stale: the applier refuses it by name
        derived = file_change(change.path, live, files[change.path])
        if derived.diff != change.diff:
            raise NotShown(f"{change.path}: the diff the card of {proposal.recipe_id} shows is not the change its "
                           "draft makes, so nothing is applied; `kitsoki-miner propose` drafts it again")
        runs.extend(command_changes(change.path, live, files[change.path]))
    if sorted(runs) != sorted(proposal.runs_commands):
        raise NotShown(f"the draft of {proposal.recipe_id} changes how kitsoki-miner runs commands "
                       f"({', '.join(runs) or 'no longer'}) but its card says "
                       f"{', '.join(proposal.runs_commands) or 'nothing of it'}; nothing is applied")


def show_refined(workspace: Path, proposal: Proposal, *, lock_timeout: float = 2.0,
                 seen: Mapping[str, bytes] | None = None) -> Proposal:
    """A refining proposal whose draft was edited: validated, and signed again with the new bytes
    and their diff so the card shows them (or, when it does not validate, the card says why and an
    accept stays refused). The proposal as the card should show it.

    `seen` (draft path -> bytes): what the person has in front of them (the editor's saved text of
    the staged files). Given, the draft is shown only when every file the refine changed is there
    with exactly the bytes read here, which are the bytes signed."""
    from core.kitsoki.story import load_workspace
    from core.proposals.validate import DraftInvalid, check_draft

    try:
        files = staged_files(workspace, proposal)
    except StagedStateError as exc:
        return proposal.model_copy(update={"failure": str(exc)})
    changed = [c.path for c in proposal.files if sha256(files[c.path]) != c.after_sha256]
    if not changed:
        return proposal
    if seen is not None and any(seen.get(path) != files[path] for path in changed):
        return proposal  # not all of it is in front of the person: the card or the proposals list shows it
    try:
        with workspace_lock(workspace, lock_timeout):
            changes = [file_change(c.path, _live(workspace, c.path), files[c.path]) for c in proposal.files]
            try:
                check_draft(load_workspace(workspace), files, read_artifact(workspace, proposal), [],
                            recipe_id=proposal.recipe_id)
            except (DraftInvalid, ValueError) as exc:
                failure = f"the refined draft does not validate, so it cannot be accepted: {exc}"
                if proposal.failure != failure:
                    proposal = proposal.model_copy(update={"failure": failure})
                    save_proposal(workspace, proposal)
                return proposal
            runs = [key for change in changes
                    for key in command_changes(change.path, _live(workspace, change.path), files[change.path])]
            proposal = proposal.model_copy(update={"files": changes, "diff": "".join(c.diff for c in changes),
                                                   "runs_commands": runs, "failure": None})
            save_proposal(workspace, proposal)
            log.info("refined draft of %s shown and signed again", proposal.recipe_id)
    except WorkspaceBusy:
        return proposal.model_copy(update={"failure": "the refined draft will be shown once the running accept or "
                                                      "proposer finishes"})
    return proposal
