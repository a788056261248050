"""Which flows gate a change: the apps the files of a delta reach, computed on the tree after the edit.

One function, `compute_scope`, answers it for the gate (core.apply.scoped_gate, which runs what it
returns) and for the question asked before an accept (`gate_preview`), so what a person is told
before accepting is exactly what runs.

Rung 2 (a story's files). A changed file belongs to the stories that read it as one of their own
files; those apps are gated (a newly materialised story included: the scope is computed after the
edit). With `miner.gate_scope: importers` (the default) so are the apps that import them, directly
or transitively, since a change to an imported story changes them too (they read the file through
their imports). Each app runs its own fixtures: `<app dir>/flows/*.yaml`, or the app's glob from
`miner.flow_gate.flows`. Apps in `miner.flow_gate.skip` are not gated, and the answer says so.

Rung 1 (`root.overrides` in `.kitsoki.yaml`). `kitsoki test flows` never reads `.kitsoki.yaml`, so
a story's flows do not see a root override. What exercises the root instance: the project's root
flows (`flows/*.yaml` beside `.kitsoki.yaml`, run against the synthesized root), and the flows of
the stories that import dev-story and read the overridden world key (`<alias>__<key>`, or a
`world_in` entry for it) or the overridden binding (a `host_bindings` entry, or `iface.<name>`):
they run the dev-story code that reads it. Root synonyms route only the root instance: only root
flows exercise them.

When nothing exercises a change, `would_exercise` names what would.
"""

from __future__ import annotations

import glob as globlib
import os
import re
from functools import lru_cache
from pathlib import Path
from types import EllipsisType
from typing import Any

from pydantic import BaseModel

from core.apply.gates import ROOT_APP, GateSettings
from core.kitsoki.config import CONFIG_FILE, DEV_STORY, ConfigError, KitsokiConfig, load_config
from core.kitsoki.model import Story, Workspace

DEFAULT_FLOWS = "flows/*.yaml"
"""kitsoki's default fixture glob, relative to an app's folder (and, for root flows, to the project)."""
ROOT_KEY = "."
"""The key of `miner.flow_gate.flows` (mapping form) that sets the root flows' glob."""


class AppInScope(BaseModel):
    app: str
    """Workspace-relative app.yaml, or ROOT_APP for the root flows."""
    path: Path | None = None
    """The absolute app.yaml (None for the root flows)."""
    why: str
    flows: str
    """The fixture glob, workspace-relative."""
    files: list[str] = []
    """The fixture files it matches now, workspace-relative, sorted."""


class RootChange(BaseModel):
    """What a `.kitsoki.yaml` edit changes in `root.overrides`."""

    world: list[str] = []
    bindings: list[str] = []
    synonyms: list[str] = []
    other: bool = False
    """Something other than root.overrides changed too."""

    def entries(self) -> list[str]:
        return ([f"root.overrides.world.{k}" for k in self.world] + [f"root.overrides.bindings.{b}" for b in self.bindings]
                + [f"root.overrides.synonyms.{s}" for s in self.synonyms])


class GateScope(BaseModel):
    apps: list[AppInScope] = []
    """In the order they run: the edited apps, their importers, then the root flows."""
    skipped: list[str] = []
    """`<app.yaml>: <why>` for apps the change reaches that miner.flow_gate.skip leaves ungated."""
    unowned: list[str] = []
    """Changed files no story reads."""
    root: RootChange | None = None
    would_exercise: list[str] = []
    """What would exercise the change, when nothing that exists does."""

    @property
    def flow_files(self) -> list[str]:
        return [file for app in self.apps for file in app.files]

    @property
    def exercised(self) -> bool:
        return bool(self.flow_files)


def _real(path: Path | str) -> str:
    return os.path.realpath(path)


def _rel(workspace: Path, path: Path | str) -> str:
    try:
        return Path(os.path.normpath(os.path.abspath(path))).relative_to(
            Path(os.path.normpath(os.path.abspath(workspace)))).as_posix()
    except ValueError:
        return str(path)


def app_glob(settings: GateSettings, app_dir: str) -> str:
    """The workspace-relative fixture glob of the app in `app_dir` (workspace-relative; "." = root)."""
    flows = settings.flows
    if isinstance(flows, dict):
        glob = flows.get(app_dir) or flows.get(app_dir.rstrip("/") + "/") or DEFAULT_FLOWS
    else:
        glob = flows or DEFAULT_FLOWS
    if os.path.isabs(glob):
        return glob
    return glob if app_dir in (".", "") else f"{app_dir}/{glob}"


def fixture_patterns(settings: GateSettings) -> list[str]:
    """fnmatch patterns (workspace-relative) of every file the gate may run as a fixture, for the
    rule that a proposal never rewrites what gates it (core.proposals.targets)."""
    flows = settings.flows
    if isinstance(flows, dict):
        return [app_glob(settings, folder) for folder in flows]
    return [flows, f"*/{flows}"] if flows else []


def matched(workspace: Path, glob: str) -> list[str]:
    """The regular files `glob` matches (as kitsoki's filepath.Glob would), workspace-relative, sorted."""
    pattern = glob if os.path.isabs(glob) else str(Path(workspace) / glob)
    return sorted(_rel(workspace, match) for match in globlib.glob(pattern) if os.path.isfile(match))


def _skip_reason(settings: GateSettings, workspace: Path, story: Story) -> str | None:
    folder = _rel(workspace, story.dir)
    for entry in settings.skip:
        name = entry.strip().rstrip("/")
        if name in (story.slug, folder, _rel(workspace, story.path)) or folder.endswith("/" + name):
            return f"miner.flow_gate.skip lists {entry}"
    return None


def root_change(workspace: Path, after: KitsokiConfig, before_bytes: bytes | None | EllipsisType) -> RootChange:
    """What changed in root.overrides between `before_bytes` (the file before the edit; None: it did
    not exist; ...: unknown, so every override counts as changed) and `after`."""
    new = _overrides(after)
    if before_bytes is ...:
        old: dict[str, dict[str, Any]] = {"world": {}, "bindings": {}, "synonyms": {}}
        other = True
    else:
        try:
            before = (load_config(workspace, overlay={str(Path(workspace) / CONFIG_FILE): before_bytes})
                      if before_bytes is not None else None)
        except ConfigError:
            before = None
        old = _overrides(before) if before is not None else {"world": {}, "bindings": {}, "synonyms": {}}
        other = before is None or _outside_root(before) != _outside_root(after)
    diff = {block: sorted(k for k in set(old[block]) | set(new[block]) if old[block].get(k) != new[block].get(k))
            for block in ("world", "bindings", "synonyms")}
    return RootChange(**diff, other=other and not any(diff.values()))


def _overrides(config: KitsokiConfig) -> dict[str, dict[str, Any]]:
    overrides = config.root.overrides if config.root is not None else None
    if overrides is None:
        return {"world": {}, "bindings": {}, "synonyms": {}}
    return {"world": dict(overrides.world), "bindings": dict(overrides.bindings), "synonyms": dict(overrides.synonyms)}


def _outside_root(config: KitsokiConfig) -> Any:
    return config.model_dump(exclude={"root", "source_files", "warnings"}, mode="json")


def _is_dev_story(source: Path) -> bool:
    return (source.name == "app.yaml" and source.parent.name == DEV_STORY) or source.name == f"{DEV_STORY}.json"


@lru_cache(maxsize=512)
def _text_of(path: str, mtime_ns: int, size: int) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(4 << 20)
    except OSError:
        return ""


def _read(path: Path | str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return ""
    return _text_of(str(path), st.st_mtime_ns, st.st_size)


def _reads_override(workspace: Path, story: Story, change: RootChange, settings: GateSettings) -> str | None:
    """Why `story` reaches a root override (it imports dev-story and reads what changed), or None."""
    written = story.imports if isinstance(story.imports, dict) else {}
    for alias, info in story.folded.items():
        if not _is_dev_story(Path(info.source)):
            continue
        spec = written.get(alias) if isinstance(written.get(alias), dict) else {}
        texts = [_read(f) for f in story.files]
        texts += [_read(Path(workspace) / f) for f in matched(workspace, app_glob(settings, _rel(workspace, story.dir)))]
        blob = "\n".join(texts)
        for key in change.world:
            if key in (spec.get("world_in") or {}) or re.search(rf"\b{re.escape(alias)}__{re.escape(key)}\b", blob):
                return f"imports dev-story as {alias} and reads world.{key}"
        for iface in change.bindings:
            if iface in (spec.get("host_bindings") or {}) or re.search(rf"\biface\.{re.escape(iface)}\b", blob):
                return f"imports dev-story as {alias} and binds the {iface} interface"
    return None


def compute_scope(model: Workspace, changed: list[str], settings: GateSettings,
                  before: dict[str, bytes | None] | None = None) -> GateScope:
    """The apps and flows that gate a change to `changed` (workspace-relative), on `model`, the tree
    after the edit. `before` holds the files' bytes before it (for the rung-1 diff)."""
    workspace = Path(model.path)
    before = before or {}
    scope = GateScope()
    chosen: dict[str, AppInScope] = {}

    def add(story: Story, why: str) -> None:
        rel = _rel(workspace, story.path)
        if rel in chosen or any(s.startswith(f"{rel}:") for s in scope.skipped):
            return
        reason = _skip_reason(settings, workspace, story)
        if reason is not None:
            scope.skipped.append(f"{rel}: {reason} ({why})")
            return
        glob = app_glob(settings, _rel(workspace, story.dir))
        chosen[rel] = AppInScope(app=rel, path=story.path, why=why, flows=glob, files=matched(workspace, glob))

    edited: list[tuple[Story, str]] = []
    for rel in changed:
        if rel == CONFIG_FILE:
            continue
        target = _real(workspace / rel)
        owners = [s for s in model.stories if target in {_real(f) for f in s.files}]
        if not owners:
            readers = [s for s in model.stories if target in {_real(f) for f in s.import_files}]
            if not readers:
                scope.unowned.append(rel)
            for story in readers:  # a file no story owns but some import (e.g. a shared room)
                edited.append((story, f"reads {rel} through its imports"))
            continue
        for story in owners:
            is_new = rel in before and before[rel] is None and _real(story.path) == target
            own_app = _real(story.path) == target
            edited.append((story, "new story" if is_new else "edited" if own_app else f"edited {rel}"))
    for story, why in edited:
        add(story, why)
    if settings.scope == "importers":
        for story, _ in edited:
            for importer in model.importers_of(story):
                direct = any(_real(info.source) == _real(story.path) for info in importer.folded.values())
                add(importer, f"imports {_rel(workspace, story.path)}" + ("" if direct else " (through its imports)"))
    scope.apps = list(chosen.values())

    if CONFIG_FILE in changed:
        change = root_change(workspace, model.config, before.get(CONFIG_FILE, ...))
        scope.root = change
        what = ", ".join(change.entries()) or (f"{CONFIG_FILE} outside root.overrides" if change.other
                                                else "root.overrides")
        if change.world or change.bindings:
            for story in model.stories:
                why = _reads_override(workspace, story, change, settings)
                if why is not None:
                    add(story, why)
            scope.apps = list(chosen.values())
        root_glob = app_glob(settings, ROOT_KEY)
        scope.apps.append(AppInScope(app=ROOT_APP, why=f"the root instance ({what})", flows=root_glob,
                                     files=matched(workspace, root_glob)))
        if not scope.exercised:
            scope.would_exercise.append(f"a root flow ({root_glob} beside {CONFIG_FILE}, run against the "
                                        f"synthesized root) that exercises {what}")
            if change.world or change.bindings:
                scope.would_exercise.append(
                    "a flow of a story that imports dev-story and reads "
                    + ", ".join([f"world.{k}" for k in change.world] + [f"the {b} binding" for b in change.bindings])
                    + " (none here does)")
    if not scope.exercised:
        for app in scope.apps:
            if app.app != ROOT_APP and not app.files:
                scope.would_exercise.append(f"a flow in {app.flows} ({app.why})")
        for rel in scope.unowned:
            scope.would_exercise.append(f"a story that reads {rel} (no story loads it now)")
        if scope.skipped and not scope.apps:
            scope.would_exercise.append("taking the story out of miner.flow_gate.skip")
    return scope
