"""Staging: `.artifacts/mining/<recipe_id>/` holds a proposal's draft files by workspace-relative
path, kitsoki's `author_artifact.json` and our `proposal.json` (diff, evidence, classification).

A stage is written whole or not at all: into a scratch folder beside it, then renamed into place.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

import orjson

from core.proposals.model import AuthorArtifact, FileChange, Proposal

MINING_DIR = Path(".artifacts") / "mining"
PROPOSAL_FILE = "proposal.json"
ARTIFACT_FILE = "author_artifact.json"
_OWN_FILES = frozenset({PROPOSAL_FILE, ARTIFACT_FILE})


def stage_dir(workspace: Path, recipe_id: str) -> Path:
    return Path(workspace) / MINING_DIR / recipe_id


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_change(path: str, before: bytes | None, after: bytes) -> FileChange:
    old = before.decode("utf-8", "replace").splitlines(keepends=True) if before is not None else []
    new = after.decode("utf-8", "replace").splitlines(keepends=True)
    diff = "".join(difflib.unified_diff(old, new, fromfile=f"a/{path}" if before is not None else "/dev/null",
                                        tofile=f"b/{path}", n=3))
    if diff and not diff.endswith("\n"):
        diff += "\n\\ No newline at end of file\n"
    changed: list[int] = []
    added: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        changed.extend(range(i1 + 1, i2 + 1) if i2 > i1 else [max(i1, 1)])
        added.extend(line.rstrip("\r\n") for line in new[j1:j2])
    return FileChange(path=path, before_sha256=sha256(before) if before is not None else None,
                      after_sha256=sha256(after), changed_lines=sorted(set(changed)), added=added, diff=diff)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def write_stage(workspace: Path, proposal: Proposal, files: Mapping[str, bytes], artifact: AuthorArtifact | None) -> Path:
    """Write the whole stage atomically (replacing an older stage of the same recipe)."""
    final = stage_dir(workspace, proposal.recipe_id)
    scratch = final.with_name(f".{final.name}.staging-{os.getpid()}")
    shutil.rmtree(scratch, ignore_errors=True)
    for rel, data in files.items():
        _write(scratch / rel, data)
    if artifact is not None:
        _write(scratch / ARTIFACT_FILE, orjson.dumps(artifact.model_dump(mode="json"), option=orjson.OPT_INDENT_2))
    save_proposal(scratch, proposal)
    old = final.with_name(f".{final.name}.old-{os.getpid()}")
    if final.exists():
        os.replace(final, old)
    os.replace(scratch, final)
    shutil.rmtree(old, ignore_errors=True)
    return final


def save_proposal(folder: Path, proposal: Proposal) -> None:
    data = orjson.dumps(proposal.model_dump(mode="json"), option=orjson.OPT_INDENT_2) + b"\n"
    tmp = folder / f".{PROPOSAL_FILE}.tmp"
    _write(tmp, data)
    os.replace(tmp, folder / PROPOSAL_FILE)


def load_proposal(workspace: Path, recipe_id: str) -> Proposal | None:
    try:
        raw = (stage_dir(workspace, recipe_id) / PROPOSAL_FILE).read_bytes()
    except OSError:
        return None
    try:
        return Proposal.model_validate_json(raw)
    except ValueError:
        return None


def staged_files(workspace: Path, proposal: Proposal) -> dict[str, bytes]:
    """The draft's files as they are staged now (a person may have refined them)."""
    folder = stage_dir(workspace, proposal.recipe_id)
    return {change.path: (folder / change.path).read_bytes() for change in proposal.files}
