"""Which workspace files a proposal may change: one rule for a fresh draft, a refined one and an accept.

A draft, and later a staged draft read back from `.artifacts/` (where anything can be planted),
may change a file only when:

- its path is workspace-relative POSIX, inside the tree, with no symbolic link anywhere on it
  and nothing under `.git/` (at any depth) or `.artifacts/` (core.proposals.validate.check_path);
- it is `.kitsoki.yaml` or a YAML file of a story folder (a configured story dir, or the
  materialized `.kitsoki/stories/`);
- it is not a flow fixture: not in a `flows/` folder, not matched by an app's glob in `miner.flow_gate.flows`.
  A draft that rewrote the fixture gating it could turn a red change green. One exception: the
  proposal's own proof, a NEW file named for it, `<app folder>/flows/mined-<recipe id>.yaml` (or
  `flows/mined-<recipe id>.yaml` beside `.kitsoki.yaml` for the root instance), which must not
  exist yet: a proposal adds its regression test, it never edits one;
- the only file that is not YAML a draft may write is a NEW acceptance schema for the room it adds,
  `<story folder>/schemas/<name>.json`, a JSON object of at most 64 KiB (kitsoki's
  `host.agent.task` needs one);
- its new bytes are UTF-8 and at most 1 MiB.

An accept calls `check_target` on every file its stored proposal names, whatever the signature
says, so a rule added here holds for proposals staged before it.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path, PurePosixPath

from core.kitsoki.config import CONFIG_FILE
from core.kitsoki.story import MATERIALIZED_DIR, Workspace, relative
from core.proposals import validate
from core.proposals.validate import MAX_DRAFT_FILE_BYTES, DraftInvalid

FLOWS_DIR = "flows"
PROOF_PREFIX = "mined-"
SCHEMAS_DIR = "schemas"
MAX_SCHEMA_BYTES = 64 << 10
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,80}$")


def proof_fixture_path(app_dir: str, recipe_id: str) -> str:
    """Where a proposal's proof fixture goes: beside the app's flows (app_dir "." for the root)."""
    folder = "" if app_dir in (".", "") else app_dir.rstrip("/") + "/"
    return f"{folder}{FLOWS_DIR}/{PROOF_PREFIX}{recipe_id}.yaml"


def _exists(workspace: Workspace, rel: str) -> bool:
    return os.path.lexists(os.path.join(workspace.path, rel))


def is_proof_fixture(workspace: Workspace, rel: str, recipe_id: str | None) -> bool:
    """`rel` is the proof fixture of proposal `recipe_id`: its name, in the flows folder of a story
    or of the project, and not on disk yet."""
    if not recipe_id:
        return False
    posix = PurePosixPath(rel)
    if posix.name != f"{PROOF_PREFIX}{recipe_id}.yaml" or posix.parent.name != FLOWS_DIR:
        return False
    folder = posix.parent.parent.as_posix()
    apps = {PurePosixPath(relative(workspace.path, s.path)).parent.as_posix() for s in workspace.stories}
    materialized = PurePosixPath(folder).parent.as_posix() == MATERIALIZED_DIR  # a story the proposal creates
    return (folder in apps or folder == "." or materialized) and not _exists(workspace, rel)


def is_acceptance_schema(workspace: Workspace, rel: str) -> bool:
    """`rel` is a new JSON acceptance schema in a story folder's schemas/."""
    posix = PurePosixPath(rel)
    return (posix.suffix == ".json" and posix.parent.name == SCHEMAS_DIR and bool(_NAME.match(posix.stem))
            and rel != CONFIG_FILE and validate._in_a_story_dir(workspace, rel) and not _exists(workspace, rel))


def _fixture_globs(workspace: Workspace) -> list[str]:
    from core.apply.gate_scope import fixture_patterns
    from core.proposals.settings import SettingsError, gate_settings  # settings import the gates

    try:
        return fixture_patterns(gate_settings(workspace.config))
    except SettingsError:
        return []  # reported where the gate is chosen; the folder rule still holds


def is_flow_fixture(workspace: Workspace, rel: str) -> bool:
    if FLOWS_DIR in PurePosixPath(rel).parts[:-1]:
        return True
    for glob in _fixture_globs(workspace):
        if Path(glob).is_absolute():
            if not Path(glob).is_relative_to(workspace.path):
                continue
            glob = Path(glob).relative_to(workspace.path).as_posix()
        if fnmatch.fnmatchcase(rel, glob):  # `*` crosses folders here, so it matches at least the glob's files
            return True
    return False


def check_target(workspace: Workspace, rel: str, data: bytes | None = None, *, recipe_id: str | None = None) -> None:
    """DraftInvalid naming `rel` when a proposal (`recipe_id`, for its own proof fixture) may not
    change it (the module docstring's rules)."""
    if not isinstance(rel, str):
        raise DraftInvalid(f"{rel!r} is not a workspace-relative path")
    validate.check_path(workspace.path, rel)
    parts = PurePosixPath(rel).parts
    if ".git" in parts:
        raise DraftInvalid(f"{rel}: drafts never write under .git/")
    if rel.endswith(".json") and is_acceptance_schema(workspace, rel):
        _check_schema(rel, data)
    elif not rel.endswith((".yaml", ".yml")):
        raise DraftInvalid(f"{rel}: drafts only change YAML files (and add a new acceptance schema under a story's "
                           f"{SCHEMAS_DIR}/)")
    elif is_flow_fixture(workspace, rel):
        if not is_proof_fixture(workspace, rel, recipe_id):
            raise DraftInvalid(f"{rel}: is a flow fixture; a proposal never changes the flows that gate it (it may "
                               f"only add its own proof, a new "
                               f"{proof_fixture_path('<app folder>', recipe_id or '<recipe id>')})")
    elif rel != CONFIG_FILE and not validate._in_a_story_dir(workspace, rel):
        raise DraftInvalid(f"{rel}: is neither {CONFIG_FILE} nor a file of a story folder")
    if data is not None:
        if len(data) > MAX_DRAFT_FILE_BYTES:
            raise DraftInvalid(f"{rel}: {len(data)} bytes; a draft file over 1 MiB is refused")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise DraftInvalid(f"{rel}: the draft is not UTF-8") from None


def _check_schema(rel: str, data: bytes | None) -> None:
    if data is None:
        return
    if len(data) > MAX_SCHEMA_BYTES:
        raise DraftInvalid(f"{rel}: {len(data)} bytes; an acceptance schema over 64 KiB is refused")
    import orjson

    try:
        schema = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DraftInvalid(f"{rel}: not JSON ({exc})") from None
    if not isinstance(schema, dict):
        raise DraftInvalid(f"{rel}: an acceptance schema is a JSON object")
