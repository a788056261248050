"""The proposer's memo: what a pass learned about the live tree, kept across processes.

Every `kitsoki-miner propose` is a new process, and loading a big workspace (kitsoki's own: 50
stories, their imports, dev-story) and building the router tables it maps against takes seconds.
When nothing the load read has changed, a pass needs only what it concluded: which stories load and
which are refused (with why), and how each recipe maps. The memo keeps exactly that, in
`.artifacts/cache/proposer-memo.json`, and a pass loads the tree only when it must draft something
or map a recipe the memo has not seen.

The memo is trusted only when everything it was made from still holds:

- it is signed like every state file the tool acts on (core.authn, under the per-user key kept
  outside the workspace) and read through core.statefs (no link followed, a regular file);
- the same code (every source file of `core/` and the library we carry, by size and mtime) and the
  same import sources (KITSOKI_REPO, ~/.kitsoki/repo, the checkout around the workspace);
- every environment variable the load asked about has the value it saw (set or unset), and every
  path whose existence it tested gives the same answer (core.kitsoki.probed): a shell or a
  terminal that differs only in variables the load never read uses the memo;
- the same story folders (the list of app.yaml files, and the names in every folder of each story
  and in every folder the load read from: an `include:` glob may pick up a new file) and config files;
- every file the load read: the same size, mtime and inode, and the same content (sha256 of the
  bytes, read again: a file rewritten within one mtime tick is caught); one that was missing is
  still missing.

Anything else (no key, a bad signature, a changed file, a new story) and the pass loads the tree
as before and writes a fresh memo. A memo only ever saves time: its answers are the ones the
loaded tree gives (tests/test_nothing_lost.py compares the two).
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson

from core import authn, statefs
from core.kitsoki import probed
from core.kitsoki.checked import code_digest
from core.kitsoki.model import RefusedStory, Workspace
from core.kitsoki.parse import RACY_SECONDS
from core.proposals.model import Mapping

log = logging.getLogger("kitsoki_miner.proposals")

MEMO_FILE = Path(".artifacts") / "cache" / "proposer-memo.json"
PURPOSE = "proposer-memo"
VERSION = 2
MAX_BYTES = 32 << 20


def _file_fact(path: str) -> list | None:
    """[size, mtime_ns, inode, sha256] of a file as it is now, None when it does not exist."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    try:
        info = os.fstat(fd)
        h = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        return [info.st_size, info.st_mtime_ns, info.st_ino, h.hexdigest()]
    finally:
        os.close(fd)


def _context(workspace: Path, config: Any) -> dict:
    """What the load depends on besides the files it read: story folders, config files, sources."""
    from core.kitsoki.workspace import dev_story_source, story_app_files, workspace_sources

    sources = workspace_sources(workspace, config)
    return {"version": VERSION, "code": code_digest(), "workspace": str(workspace),
            "apps": [[str(app), materialized] for app, materialized in story_app_files(workspace, config, {})],
            "config": {str(path): _file_fact(str(path)) for path in config.source_files},
            "sources": repr(sources), "dev_story": repr(dev_story_source(workspace, sources))}


def _listings(apps: list, files: Any) -> str:
    """The names in every folder of each story (an `include:` glob may pick up a new room file) and
    in every folder the load read a file from (imports)."""
    h = hashlib.sha256()
    folders = {os.path.dirname(str(file)) for file in files}
    for app, _ in apps:
        for folder, dirs, names in os.walk(os.path.dirname(str(app))):
            dirs.sort()
            folders.discard(folder)
            h.update(f"{folder}\0{sorted(names + dirs)}\n".encode())
    for folder in sorted(folders):
        try:
            names = sorted(os.listdir(folder))
        except OSError as exc:
            names = [f"<{exc.errno}>"]
        h.update(f"{folder}\0{names}\n".encode())
    return h.hexdigest()


@dataclass
class Facts:
    """What the proposer needs of a loaded tree without the tree: the stories that load (their app
    files), the refused ones, and the mappings known for it."""

    stories: list[Any]
    """Objects with `.path` (the app.yaml), as Workspace.stories."""
    refused: list[RefusedStory]
    mappings: dict[str, Mapping] = field(default_factory=dict)


def recipe_key(recipe: Any) -> str:
    return hashlib.sha256(orjson.dumps(recipe.as_json(), option=orjson.OPT_SORT_KEYS)).hexdigest()


def _path(workspace: Path) -> Path:
    return Path(workspace) / MEMO_FILE


def load(workspace: Path, config: Any) -> Facts | None:
    """The memo's facts when every check in the module's docstring holds; None otherwise."""
    workspace = Path(workspace)
    path = _path(workspace)
    try:
        raw = statefs.read_bytes(path, MAX_BYTES, what=MEMO_FILE.name)
        memo = authn.unseal(raw, purpose=PURPOSE, rel=MEMO_FILE.as_posix(), path=path, what=MEMO_FILE.name,
                            workspace=workspace)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # unsigned, planted, another key, no key: never used
        log.info("%s not used: %s", path, exc)
        return None
    try:
        context = _context(workspace, config)
        if memo.get("context") != context or memo.get("listings") != _listings(context["apps"], memo["files"]):
            return None
        if not probed.still(memo["probes"]):
            return None
        for file, fact in memo["files"].items():
            if _file_fact(file) != fact:
                return None
        return Facts(stories=[SimpleNamespace(path=Path(p)) for p in memo["stories"]],
                     refused=[RefusedStory.model_validate(r) for r in memo["refused"]],
                     mappings={k: Mapping.model_validate(v) for k, v in memo["mappings"].items()})
    except (KeyError, TypeError, AttributeError, ValueError) as exc:  # signed by us, but another shape
        log.info("%s not used: %s", path, exc)
        return None


def facts_of(model: Workspace) -> Facts:
    return Facts(stories=list(model.stories), refused=list(model.refused))


def save(workspace: Path, model: Workspace, mappings: dict[str, Mapping]) -> None:
    """Remember what `model` (a live load, no overlay) concluded; a failure only costs time later."""
    workspace = Path(workspace)
    try:
        files = {}
        now = time.time()
        for file, sig in model._read.items():
            fact = _file_fact(file)
            if (fact is None) != (sig is None) or (fact is not None and (fact[0], fact[1], fact[2]) !=
                                                   (sig.size, sig.mtime_ns, sig.inode)):
                return  # changed while it was loaded: the next pass loads it again
            if fact is not None and now - fact[1] / 1e9 < RACY_SECONDS:
                return  # it may change again within the same mtime tick, unseen by its signature
            files[file] = fact
        context = _context(workspace, model.config)
        probes = model._probes.snapshot() if model._probes is not None else None
        if probes is None:
            return  # too much to keep, or a variable or a path changed under the load
        memo = {"context": context, "files": files, "probes": probes, "listings": _listings(context["apps"], files),
                "stories": [str(story.path) for story in model.stories],
                "refused": [refusal.model_dump(mode="json") for refusal in model.refused],
                "mappings": {key: mapping.model_dump(mode="json") for key, mapping in mappings.items()}}
        data = authn.seal(memo, purpose=PURPOSE, rel=MEMO_FILE.as_posix(), workspace=workspace)
        statefs.ensure_dir(_path(workspace).parent)
        statefs.write_atomic(_path(workspace), data, what=MEMO_FILE.name)
    except (OSError, ValueError) as exc:
        log.info("the proposer's memo was not written: %s", exc)
