"""Which sessions belong to a workspace.

A session belongs to a workspace when the folder it recorded (`cwd`) is the workspace or inside it, or
the same place in another checkout of the workspace's git repository: its main worktree and every
linked worktree (`git worktree add`, Claude Code's own `.claude/worktrees/<name>`, which sit inside it
anyway). The checkouts are read from the repository's files the way `git worktree list` reads them:
`.git` (a folder, or a file `gitdir: <path>` in a linked worktree), the common folder's `worktrees/*/gitdir`
(each naming `<worktree>/.git`) and `commondir`. A worktree since removed is still a checkout of the
project: sessions recorded in it are the project's.

A session whose `cwd` is unknown belongs when its file sits in the folder Claude Code or Pi named after
one of those checkouts. Everything else is another project's: left out and counted, unless the
workspace opts in to reading other projects (`mining.other_projects`, `--other-projects`), and even
then only a dev-story-enrich suggestion may come of their evidence (core/mining/passes.py).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from core.transcripts.discover import SessionFiles, claude_slugs, codex_meta, first_field, pi_dirname
from core.transcripts.display import display_path

_WINDOWS = re.compile(r"^[A-Za-z]:[\\/]")
_MAX_WORKTREES = 4096
UNKNOWN = object()
"""A project not looked up yet (split_by_scope reads the file's head)."""


def _windows_key(path: str) -> str:
    return path.replace("/", "\\").rstrip("\\").casefold()


def within(cwd: str, root: str) -> bool:
    """Whether the folder `cwd` is `root` or inside it (a Windows path compares case-blind, with either
    slash; a POSIX path exactly, `..` and `.` folded)."""
    if _WINDOWS.match(cwd) or _WINDOWS.match(root):
        if not (_WINDOWS.match(cwd) and _WINDOWS.match(root)):
            return False
        a, b = _windows_key(cwd), _windows_key(root)
        return a == b or a.startswith(b + "\\")
    a, b = os.path.normpath(cwd), os.path.normpath(root)
    if b == "/":
        return a.startswith("/")
    return a == b or a.startswith(b + "/")


def _read_text(path: Path, limit: int = 64 * 1024) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", "replace").strip()
    except OSError:
        return None


def _git_anchor(folder: Path) -> tuple[Path, Path] | None:
    """(the checkout's top folder, its `.git`) for the nearest `.git` at or above `folder`."""
    for top in (folder, *folder.parents):
        dot_git = top / ".git"
        if os.path.lexists(dot_git):
            return top, dot_git
    return None


def _common_dir(dot_git: Path) -> Path | None:
    """The repository's common folder (what `git rev-parse --git-common-dir` says) from a `.git`."""
    if dot_git.is_dir():
        return dot_git
    text = _read_text(dot_git)
    if not text or not text.startswith("gitdir:"):
        return None
    gitdir = Path(text[len("gitdir:"):].strip())
    if not gitdir.is_absolute():
        gitdir = dot_git.parent / gitdir
    common = _read_text(gitdir / "commondir")
    if common:
        path = Path(common)
        return (path if path.is_absolute() else gitdir / path).resolve()
    return gitdir.resolve()


def checkouts(workspace: Path) -> list[Path]:
    """The workspace and the same folder in every other checkout of its repository (the main
    worktree first, then the linked ones, as `git worktree list` orders them); the workspace alone
    outside a repository."""
    workspace = Path(workspace)
    found = _git_anchor(workspace)
    if found is None:
        return [workspace]
    top, dot_git = found
    relative = workspace.relative_to(top)
    common = _common_dir(dot_git)
    if common is None:
        return [workspace]
    tops: list[Path] = []
    if common.name == ".git":
        tops.append(common.parent)  # the main worktree (a bare repository has none)
    try:
        with os.scandir(common / "worktrees") as found:
            entries = sorted(Path(e.path) for e in found if e.is_dir(follow_symlinks=False))
    except OSError:
        entries = []
    for entry in entries[:_MAX_WORKTREES]:
        text = _read_text(entry / "gitdir")
        if text:
            gitfile = Path(text)
            if not gitfile.is_absolute():
                gitfile = entry / gitfile
            tops.append(Path(os.path.normpath(gitfile)).parent)
    out = [workspace]
    for checkout in tops:
        place = checkout / relative
        if place not in out:
            out.append(place)
    return out


@dataclass(frozen=True)
class Scope:
    """The folders whose sessions are a workspace's, and whether other projects are read too."""

    roots: tuple[str, ...]
    other_projects: bool = False
    claude_folders: frozenset[str] = field(default=frozenset(), compare=False)
    pi_folders: frozenset[str] = field(default=frozenset(), compare=False)

    @property
    def key(self) -> str:
        """Names this scope in the mining state (a change re-sorts what was read)."""
        text = "\n".join([*self.roots, "other-projects" if self.other_projects else "own"])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def owns(self, project: str | None, path: Path | None = None) -> bool:
        """A session recorded in `project` (its file at `path`) is this workspace's own."""
        if project is not None:
            return any(within(project, root) for root in self.roots)
        if path is None:
            return False
        folder = path.parent.name if path.parent.name != "subagents" else path.parent.parent.parent.name
        return folder in self.claude_folders or folder in self.pi_folders

    def holds(self, project: str | None, path: Path | None = None) -> bool:
        """A session this workspace's passes read: its own, or any when other projects are opted in."""
        return self.other_projects or self.owns(project, path)

    def everything(self) -> bool:
        return self.other_projects


def workspace_scope(workspace: Path | str, *, other_projects: bool = False,
                    project_paths: Iterable[str] = ()) -> Scope:
    """The scope of a workspace: itself and its checkouts, as given and with links resolved (a session
    records the folder as its process saw it), and the folders `project_paths` names (mining.project_paths:
    where else this project was worked in, e.g. an earlier checkout or a container's mount)."""
    places: list[str] = []
    for text in [str(workspace), *project_paths]:
        if _WINDOWS.match(text):
            if text not in places:
                places.append(text)
            continue
        given = Path(text).expanduser().absolute()
        for place in checkouts(given.resolve()) + [given]:
            for variant in (str(place), os.path.realpath(place)):
                if variant not in places:
                    places.append(variant)
    claude = {slug for p in places for slug in claude_slugs(p)}
    from core.transcripts.redact import redact_text

    # A session's project as the readers hand it on (and the mining state keeps it) is redacted: a
    # workspace in a folder named by a secret owns its sessions by that form too.
    recorded = [shown for p in places if (shown := redact_text(p)) != p and shown not in places]
    return Scope(roots=tuple(places + recorded), other_projects=other_projects, claude_folders=frozenset(claude),
                 pi_folders=frozenset(pi_dirname(p) for p in places))


def session_project(fmt: str, path: Path) -> str | None:
    """The folder a session recorded, from the first lines of its file (a Codex rollout's session_meta,
    the first Claude or Pi record with a `cwd`)."""
    if fmt == "codex":
        cwd = codex_meta(path).get("cwd")
        return cwd if type(cwd) is str else None
    return first_field(path, "cwd")


@dataclass
class Split:
    """Sessions sorted by scope: `kept` are read, `other` belong to other projects."""

    kept: list[SessionFiles] = field(default_factory=list)
    other: list[SessionFiles] = field(default_factory=list)
    projects: dict[str, str | None] = field(default_factory=dict)
    """The project of every session looked at, by its trunk's path (for the state to remember)."""


def split_by_scope(units: Iterable[SessionFiles], scope: Scope,
                   known: Mapping[str, str | None] | None = None) -> Split:
    """Sort sessions into the workspace's and other projects'. `known` gives projects already read
    (a mining state's): only the other files' first lines are read. A session of subagent files alone
    (its trunk gone) goes by the first of them."""
    known = known or {}
    out = Split()
    for unit in units:
        head = unit.trunk or (unit.subagents[0] if unit.subagents else None)
        if head is None:
            continue
        key = display_path(head)  # the state's key for the file (core/transcripts/display.py)
        project = known.get(key, UNKNOWN)
        if project is UNKNOWN:
            project = session_project(unit.format, head)
        out.projects[key] = project
        (out.kept if scope.holds(project, head) else out.other).append(unit)
    return out
