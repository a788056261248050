"""Fail-fast validation of a draft before anyone sees it.

In order: every path stays inside the workspace (relative, no `..`, no symlink on the way, nothing
under `.git/` or `.artifacts/`); the author artifact matches kitsoki's schema; the staged tree (the
live tree with the draft's bytes standing in for its files, nothing copied) loads with the same
loader the apply gate reloads with; and the draft does what it says (the phrasings it adds route to its intent). A draft
that fails any of these is never surfaced.
"""

from __future__ import annotations

import hashlib

import os
import stat
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from core.kitsoki.config import CONFIG_FILE, LOCAL_CONFIG_FILE, ConfigError
from core.kitsoki.story import MATERIALIZED_DIR, Workspace, load_workspace, relative

AUTHOR_ARTIFACT_SCHEMA: dict = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "$comment": "kitsoki's author artifact schema (stories/dev-story-mining/schemas/author_artifact.json, "
                "constructorfabric/Kitsoki HEAD 1f4abf0e); not generated: kept as kitsoki has it.",
    "title": "author_artifact",
    "type": "object",
    "required": ["files_changed", "flows_green", "summary_markdown"],
    "properties": {
        "files_changed": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "flows_green": {"type": "boolean"},
        "flow_files": {"type": "array", "items": {"type": "string"}},
        "summary_markdown": {"type": "string", "minLength": 40},
    },
    "additionalProperties": True,
}
"""Also committed as schemas/author_artifact.json; a test keeps the two equal."""

MAX_DRAFT_FILE_BYTES = 1 << 20
_FORBIDDEN_TOP = frozenset({".git", ".artifacts"})


class DraftInvalid(ValueError):
    """A draft that must not be surfaced; the message names what is wrong and where."""


def check_path(workspace: Path, rel: str) -> Path:
    """The absolute path of a draft file, or DraftInvalid when it would leave the workspace."""
    if not rel or "\\" in rel or "\0" in rel:
        raise DraftInvalid(f"{rel!r} is not a workspace-relative path")
    posix = PurePosixPath(rel)
    if posix.is_absolute() or os.path.isabs(rel):
        raise DraftInvalid(f"{rel}: absolute paths are refused; drafts stay inside the workspace")
    if ".." in posix.parts or "." in posix.parts or rel != posix.as_posix():
        raise DraftInvalid(f"{rel}: '..' and '.' segments are refused; drafts stay inside the workspace")
    if posix.parts[0] in _FORBIDDEN_TOP:
        raise DraftInvalid(f"{rel}: drafts never write under {posix.parts[0]}/")
    root = Path(workspace)
    current = root
    for part in posix.parts:
        current = current / part
        try:
            info = current.lstat()
        except FileNotFoundError:
            break  # the rest is created by the draft
        if stat.S_ISLNK(info.st_mode):
            raise DraftInvalid(f"{rel}: {relative(root, current)} is a symlink; drafts never write through one")
    resolved = (root / posix).resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise DraftInvalid(f"{rel}: resolves outside the workspace")
    return root / posix


def check_artifact(artifact: Mapping) -> None:
    import jsonschema  # here: a process that never checks an artifact does not load it

    try:
        jsonschema.validate(dict(artifact), AUTHOR_ARTIFACT_SCHEMA)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top)"
        raise DraftInvalid(f"author_artifact.json {where}: {exc.message}") from None


_STAGED: dict[tuple, Workspace] = {}
"""The last few staged trees, by live model and draft bytes: the impact replay reads the tree the checks
just loaded (core.proposals.impact) instead of loading it again."""


def staged_load(workspace: Workspace, files: Mapping[str, bytes]) -> Workspace:
    """Load the live tree with `files` (workspace-relative path -> bytes) standing in for what is
    on disk; raise DraftInvalid with the loader's problems, their paths relative to the workspace.

    Nothing is copied: the draft's bytes overlay the cached tree, so only the stories that read a
    changed file are loaded again."""
    key = (id(workspace), tuple(sorted((rel, hashlib.sha256(data).digest()) for rel, data in files.items())))
    hit = _STAGED.get(key)
    if hit is not None and hit[0] is workspace:
        return hit[1]
    staged = _staged_load(workspace, files)
    if len(_STAGED) >= 4:
        _STAGED.pop(next(iter(_STAGED)))
    _STAGED[key] = (workspace, staged)
    return staged


def _staged_load(workspace: Workspace, files: Mapping[str, bytes]) -> Workspace:
    root = workspace.path
    overlay = {str(Path(os.path.abspath(root / rel))): data for rel, data in files.items()}
    try:
        staged = load_workspace(root, overlay=overlay)
    except ConfigError as exc:
        raise DraftInvalid(f"the staged tree does not load: {_problems(root, exc.issues)}") from None
    # A story that did not load before stays refused alone (kitsoki skips it too); one the draft
    # breaks, or a story the draft writes that does not load, refuses the draft.
    broken = staged.newly_refused(workspace, [root / rel for rel in files])
    if broken:
        issues = [issue for refusal in broken for issue in refusal.issues]
        raise DraftInvalid(f"the staged tree does not load: {_problems(root, issues)}")
    return staged


def _problems(root: Path, issues: list) -> str:
    return "; ".join(f"{relative(root, issue.file)}:{issue.line}:{issue.column}: "
                     f"{issue.key + ': ' if issue.key else ''}{issue.message}" for issue in issues[:5])


def check_draft(workspace: Workspace, files: Mapping[str, bytes], artifact: Mapping,
                expect_routes: list[tuple[str, str, str]], recipe_id: str | None = None,
                keep_routes: list[tuple[str, str, str]] = ()) -> Workspace:
    """Every check above, in order; raises DraftInvalid on the first failure. Returns the staged
    tree. `keep_routes` are a neighbour intent's phrasings that must still route to it."""
    if not files:
        raise DraftInvalid("the draft changes no file")
    for rel, data in files.items():
        _check_target(workspace, rel, data, recipe_id)  # core.proposals.targets: the rule an accept re-checks
        check_path(workspace.path, rel)
        if len(data) > MAX_DRAFT_FILE_BYTES:
            raise DraftInvalid(f"{rel}: {len(data)} bytes; a draft file over 1 MiB is refused")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise DraftInvalid(f"{rel}: the draft is not UTF-8") from None
    check_artifact(artifact)
    staged = staged_load(workspace, files)
    if expect_routes or keep_routes:
        from core.kitsoki.inventory import intent_rows  # here: an accept checks targets without routing
        from core.kitsoki.routing import Router

        rows_of: dict[str, list] = {}
        for story, phrase, intent in [*expect_routes, *keep_routes]:
            if story not in rows_of:  # only the routed story's rows (as build_inventory lists them)
                rows_of[story] = intent_rows(staged, story)
            rows = rows_of[story]
            verdict = Router(rows, strict=False).route(phrase)
            if verdict.intent != intent:
                got = verdict.intent or (f"a tie ({', '.join(verdict.candidates)})" if verdict.candidates else "nothing")
                what = "" if (story, phrase, intent) in expect_routes else f" (a phrasing of the neighbour {intent})"
                raise DraftInvalid(f'after the draft, "{phrase}"{what} would route to {got}, not {intent}')
    return staged


def _kitsoki_will_run_it(live: Workspace) -> bool:
    """The flow gate of this workspace is, or can fall back to, the real kitsoki."""
    import shutil

    from core.apply.gates import resolved_kind
    from core.proposals.settings import SettingsError, gate_settings

    try:
        settings = gate_settings(live.config)
    except SettingsError:
        return False
    return resolved_kind(settings) == "kitsoki" or (resolved_kind(settings) == "builtin"
                                                    and shutil.which(settings.kitsoki) is not None)


def settle_proof(proof, live: Workspace, staged: Workspace, recipe_id: str):
    """Check a proposal's proof (core.proposals.proofs) before anyone sees it: its fixture is a new
    file the proposal may add; with the built-in runner, it must pass on the staged tree (else the
    draft does not do what it says: DraftInvalid) and fail on the live tree (else it proves
    nothing and is dropped, the card saying so). A fixture the runner cannot run is kept (the flow
    gate runs it: with kitsoki, or it holds the change) and says so."""
    from core.proposals.proofs import run_proof  # proofs import the gates and the runner

    if proof is None or proof.path is None:
        return proof
    _check_target(live, proof.path, proof.text.encode(), recipe_id)
    status, failures = run_proof(proof, staged)
    if status == "failed" and proof.required:
        raise DraftInvalid(f"the proposal's proof {proof.path} fails on the staged tree: {'; '.join(failures[:3])}")
    if status == "failed":
        proof.unprovable.append("; ".join(proof.claims) + f": the flow that would show it fails here before reaching "
                                f"it ({failures[0] if failures else 'no reason given'}), so no fixture is added")
        proof.path, proof.text, proof.claims = None, "", []
        return proof
    if status == "not run":
        if _kitsoki_will_run_it(live):
            proof.verified = f"not run here before it was shown (the kitsoki gate runs it): {'; '.join(failures[:2])}"
            return proof
        # Nothing here could run it, so it would hold every accept: say what would prove it instead.
        proof.unprovable.append("; ".join(proof.claims) + f": a flow asserting it ({proof.path}) cannot run here "
                                f"({'; '.join(failures[:1])}) and kitsoki is not here either, so no fixture is added")
        proof.path, proof.text, proof.claims = None, "", []
        return proof
    before, _ = run_proof(proof, live)
    if before == "passed":
        proof.unprovable.append("; ".join(proof.claims) + ": a flow asserting it passes with and without the change, "
                                "so it would prove nothing (no fixture added)")
        proof.path, proof.text, proof.claims = None, "", []
        proof.verified = ""
        return proof
    proof.verified = ("passes with the change and fails without it (built-in runner)" if before == "failed" else
                      "passes with the change (built-in runner; without it the flow could not run here)")
    return proof


def _check_target(workspace: Workspace, rel: str, data: bytes, recipe_id: str | None) -> None:
    from core.proposals.targets import check_target  # targets builds on this module's rules

    check_target(workspace, rel, data, recipe_id=recipe_id)


def _in_a_story_dir(workspace: Workspace, rel: str) -> bool:
    if rel.startswith(MATERIALIZED_DIR + "/"):
        return True
    for entry in workspace.config.story_dirs:
        folder = relative(workspace.path, Path(os.path.normpath(workspace.path / entry)))
        if folder == "." or rel.startswith(folder.rstrip("/") + "/"):
            return True
    return False
