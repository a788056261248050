"""Staging: `.artifacts/mining/<recipe_id>/` holds a proposal's draft files by workspace-relative
path, kitsoki's `author_artifact.json` and our `proposal.json` (diff, evidence, classification).

A stage is written whole or not at all: into a scratch folder beside it, then renamed into place.
`proposal.json` is signed (core.authn): it says what an accept writes and what it was checked
against, and anyone can plant a file there. Reading a stage back trusts nothing: the recipe id must
have the one id shape before it becomes a folder name, the signature must verify for exactly that
folder, and every file is reached without a link and read only if it is a regular file within its
cap. The draft files themselves are not signed (a person refines them by hand); an accept checks
them again (core.proposals.decide).
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import hashlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from core import statefs
from core.apply.journal import is_safe_relpath
from core.authn import KeyUnavailable, NotAuthentic, seal, unseal
from core.ids import BadRecipeId, require_recipe_id
from core.proposals.model import AuthorArtifact, FileChange, Proposal

log = logging.getLogger(__name__)

MINING_DIR = Path(".artifacts") / "mining"
PROPOSAL_FILE = "proposal.json"
ARTIFACT_FILE = "author_artifact.json"
PROPOSAL_PURPOSE = "staged proposal"
MAX_PROPOSAL_BYTES = 64 << 20
MAX_ARTIFACT_BYTES = 4 << 20
_OWN_FILES = frozenset({PROPOSAL_FILE, ARTIFACT_FILE})


class StagedStateError(ValueError):
    """A stage that cannot be used (missing, planted, changed, unreadable); the message names the file."""


def stage_rel(recipe_id: str) -> str:
    return f"{MINING_DIR.as_posix()}/{require_recipe_id(recipe_id, 'stage folder')}"


def stage_dir(workspace: Path, recipe_id: str) -> Path:
    return Path(workspace) / stage_rel(recipe_id)


def proposal_path(workspace: Path, recipe_id: str) -> Path:
    return stage_dir(workspace, recipe_id) / PROPOSAL_FILE


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


def _draft_rel(rel: str) -> str:
    if not is_safe_relpath(rel) or rel in _OWN_FILES:
        raise StagedStateError(f"{rel!r} cannot be a staged draft file (a workspace-relative path outside "
                               ".git/ and .artifacts/ is needed)")
    return rel


def _proposal_bytes(workspace: Path, proposal: Proposal) -> bytes:
    rel = f"{stage_rel(proposal.recipe_id)}/{PROPOSAL_FILE}"
    return seal(proposal.model_dump(mode="json"), purpose=PROPOSAL_PURPOSE, rel=rel, workspace=workspace)


def write_stage(workspace: Path, proposal: Proposal, files: Mapping[str, bytes], artifact: AuthorArtifact | None) -> Path:
    """Write the whole stage atomically (replacing an older stage of the same recipe). A link or a
    file planted where the stage, its scratch folder or `.artifacts/mining` goes is refused or
    replaced, never written through."""
    workspace = Path(workspace)
    final = stage_dir(workspace, proposal.recipe_id)
    statefs.ensure_dir(final.parent)
    scratch = final.with_name(f".{final.name}.staging-{os.getpid()}")
    old = final.with_name(f".{final.name}.old-{os.getpid()}")
    statefs.remove_tree(scratch)
    signed = _proposal_bytes(workspace, proposal)  # before any write: no key, no stage
    contents = [(_draft_rel(rel), data) for rel, data in files.items()]
    if artifact is not None:
        contents.append((ARTIFACT_FILE, orjson.dumps(artifact.model_dump(mode="json"), option=orjson.OPT_INDENT_2)))
    contents.append((PROPOSAL_FILE, signed))
    _write_scratch(scratch, contents)
    dir_fd = statefs.open_dir(final.parent)
    try:
        statefs.remove_tree(old)
        try:
            os.rename(final.name, old.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)  # a planted link moves too
        except FileNotFoundError:
            pass
        os.rename(scratch.name, final.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    statefs.remove_tree(old)
    return final


def _write_scratch(scratch: Path, contents: list[tuple[str, bytes]]) -> None:
    """Write a new stage's files into its scratch folder, made fresh here (no one else reads it before
    it is renamed into place): each file created (never through a link, never over one planted there)
    and written, then all of them fsynced, then every folder of it once, before the rename publishes it
    whole. (A file written atomically on its own costs a rename and two fsyncs, each folder one more,
    and fsyncing each file as it is written commits the journal once per file.)"""
    root = statefs.open_dir(scratch, create=True)
    folders: dict[str, int] = {"": root}
    written: list[int] = []  # fsynced together once all are written: the first commit carries them all
    try:
        for rel, data in contents:
            parent, _, name = rel.rpartition("/")
            dir_fd = _scratch_dir(folders, parent, scratch)
            try:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                             dir_fd=dir_fd)
            except OSError as exc:
                raise statefs.UnsafeFile(scratch / rel, f"the staged draft cannot be created ({exc.strerror})",
                                         exc.errno or errno.EIO) from None
            written.append(fd)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if len(written) >= 32:
                _sync_all(written)
        _sync_all(written)
        for fd in folders.values():
            os.fsync(fd)
    finally:
        for fd in [*written, *folders.values()]:
            os.close(fd)


def _sync_all(fds: list[int]) -> None:
    for fd in fds:
        os.fsync(fd)
    while fds:
        os.close(fds.pop())


def _scratch_dir(folders: dict[str, int], rel: str, scratch: Path) -> int:
    """The descriptor of the scratch folder's `rel` subfolder, made (no link followed) the first time."""
    fd = folders.get(rel)
    if fd is not None:
        return fd
    parent, _, name = rel.rpartition("/")
    parent_fd = _scratch_dir(folders, parent, scratch)
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o777, dir_fd=parent_fd)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent_fd)
    except OSError as exc:
        raise statefs.UnsafeFile(scratch / rel, f"the stage's folder cannot be made ({exc.strerror})",
                                 exc.errno or errno.EIO) from None
    folders[rel] = fd
    return fd


def save_proposal(workspace: Path, proposal: Proposal) -> None:
    """Rewrite a stage's `proposal.json` (status, failure), signed, atomically."""
    statefs.write_atomic(proposal_path(workspace, proposal.recipe_id), _proposal_bytes(workspace, proposal),
                         what=PROPOSAL_FILE)


def read_proposal(workspace: Path, recipe_id: str) -> Proposal:
    """The staged proposal of `recipe_id`, or StagedStateError naming the file and what is wrong."""
    try:
        path = proposal_path(workspace, recipe_id)
    except BadRecipeId as exc:
        raise StagedStateError(str(exc)) from None
    try:
        raw = statefs.read_bytes(path, MAX_PROPOSAL_BYTES, what=PROPOSAL_FILE)
    except FileNotFoundError:
        raise StagedStateError(f"{path}: there is no staged proposal (run `kitsoki-miner propose`)") from None
    except OSError as exc:
        raise StagedStateError(str(exc)) from None
    try:
        body = unseal(raw, purpose=PROPOSAL_PURPOSE, rel=f"{stage_rel(recipe_id)}/{PROPOSAL_FILE}", path=path,
                      what=PROPOSAL_FILE, workspace=workspace)
    except NotAuthentic as exc:
        raise StagedStateError(f"{exc}; `kitsoki-miner propose` drafts it again") from None
    except (KeyUnavailable, orjson.JSONDecodeError) as exc:
        raise StagedStateError(f"{path}: {exc}") from None
    try:
        proposal = Proposal.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise StagedStateError(f"{path}: {where}: {first['msg']}") from None
    if proposal.recipe_id != recipe_id:
        raise StagedStateError(f"{path}: it is the proposal of {proposal.recipe_id!r}, not of {recipe_id}")
    for change in proposal.files:
        try:
            _draft_rel(change.path)
        except StagedStateError as exc:
            raise StagedStateError(f"{path}: files: {exc}") from None
    return proposal


def load_proposal(workspace: Path, recipe_id: str) -> Proposal | None:
    """`read_proposal`, or None (logged) when it cannot be used: the inbox never shows such a stage."""
    try:
        return read_proposal(workspace, recipe_id)
    except StagedStateError as exc:
        log.info("staged proposal not used: %s", exc)
        return None


def staged_files(workspace: Path, proposal: Proposal) -> dict[str, bytes]:
    """The draft's files as they are staged now (a person may have refined them). Each is reached
    without following a link and read only if it is a regular file of at most 1 MiB; raises
    StagedStateError naming the file otherwise."""
    from core.proposals.validate import MAX_DRAFT_FILE_BYTES  # imported here: validation is not loaded to read a proposal

    folder = stage_dir(workspace, proposal.recipe_id)
    out = {}
    for change in proposal.files:
        path = folder / _draft_rel(change.path)
        try:
            out[change.path] = statefs.read_bytes(path, MAX_DRAFT_FILE_BYTES, what="the staged draft")
        except FileNotFoundError:
            raise StagedStateError(f"{path}: the staged draft is missing") from None
        except OSError as exc:
            raise StagedStateError(str(exc)) from None
    return out


def staged_text(workspace: Path, recipe_id: str, rel: str) -> str:
    """One staged draft file as text, reached and read as staged_files reads them (no link followed,
    a regular file of at most 1 MiB); StagedStateError names the file otherwise."""
    from core.proposals.validate import MAX_DRAFT_FILE_BYTES  # imported here: validation is not loaded to read a proposal

    path = stage_dir(workspace, recipe_id) / _draft_rel(rel)
    try:
        return statefs.read_bytes(path, MAX_DRAFT_FILE_BYTES, what="the staged draft").decode("utf-8")
    except FileNotFoundError:
        raise StagedStateError(f"{path}: the staged draft is missing") from None
    except UnicodeDecodeError:
        raise StagedStateError(f"{path}: the staged draft is not UTF-8") from None
    except OSError as exc:
        raise StagedStateError(str(exc)) from None


def read_artifact(workspace: Path, proposal: Proposal) -> dict[str, Any]:
    """The stage's author_artifact.json, or one rebuilt from the proposal when it is absent or unusable."""
    try:
        value = orjson.loads(statefs.read_bytes(stage_dir(workspace, proposal.recipe_id) / ARTIFACT_FILE,
                                                MAX_ARTIFACT_BYTES, what=ARTIFACT_FILE))
        if type(value) is dict:
            return value
    except (OSError, orjson.JSONDecodeError):
        pass
    return AuthorArtifact(files_changed=[c.path for c in proposal.files],
                          summary_markdown=proposal.summary_markdown).model_dump(mode="json")


def write_artifact(workspace: Path, proposal: Proposal, artifact: dict[str, Any]) -> None:
    statefs.write_atomic(stage_dir(workspace, proposal.recipe_id) / ARTIFACT_FILE,
                         orjson.dumps(artifact, option=orjson.OPT_INDENT_2), what=ARTIFACT_FILE)
