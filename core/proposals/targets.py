"""Which workspace files a proposal may change: one rule for a fresh draft, a refined one and an accept.

A draft, and later a staged draft read back from `.artifacts/` (where anything can be planted),
may change a file only when:

- its path is workspace-relative POSIX, inside the tree, with no symbolic link anywhere on it
  and nothing under `.git/` (at any depth) or `.artifacts/` (core.proposals.validate.check_path);
- it is `.kitsoki.yaml` or a YAML file of a story folder (a configured story dir, or the
  materialized `.kitsoki/stories/`);
- it is not a flow fixture: not in a `flows/` folder, not matched by an app's glob in `miner.flow_gate.flows`.
  A draft that rewrote the fixture gating it could turn a red change green;
- its new bytes are UTF-8 and at most 1 MiB.

An accept calls `check_target` on every file its stored proposal names, whatever the signature
says, so a rule added here holds for proposals staged before it.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path, PurePosixPath

from core.kitsoki.config import CONFIG_FILE
from core.kitsoki.story import Workspace
from core.proposals import validate
from core.proposals.validate import MAX_DRAFT_FILE_BYTES, DraftInvalid

FLOWS_DIR = "flows"


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


def check_target(workspace: Workspace, rel: str, data: bytes | None = None) -> None:
    """DraftInvalid naming `rel` when a proposal may not change it (the module docstring's rules)."""
    if not isinstance(rel, str):
        raise DraftInvalid(f"{rel!r} is not a workspace-relative path")
    validate.check_path(workspace.path, rel)
    parts = PurePosixPath(rel).parts
    if ".git" in parts:
        raise DraftInvalid(f"{rel}: drafts never write under .git/")
    if not rel.endswith((".yaml", ".yml")):
        raise DraftInvalid(f"{rel}: drafts only change YAML files")
    if rel != CONFIG_FILE and not validate._in_a_story_dir(workspace, rel):
        raise DraftInvalid(f"{rel}: is neither {CONFIG_FILE} nor a file of a story folder")
    if is_flow_fixture(workspace, rel):
        raise DraftInvalid(f"{rel}: is a flow fixture; a proposal never changes the flows that gate it")
    if data is not None:
        if len(data) > MAX_DRAFT_FILE_BYTES:
            raise DraftInvalid(f"{rel}: {len(data)} bytes; a draft file over 1 MiB is refused")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise DraftInvalid(f"{rel}: the draft is not UTF-8") from None
