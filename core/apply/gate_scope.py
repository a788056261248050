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

Rung 1 (`.kitsoki.yaml`). What reads `.kitsoki.yaml` in kitsoki (1f4abf0e): `webconfig.Load`,
called by the run/TUI root command (cmd/kitsoki/main.go:282, which synthesizes the root from
`root:` when no app is named, main.go:306-327), `materialize` (materialize.go:75), `drive`, `hook`,
`intercept`, `mcp`, `web`, `tour` and `test intents --profile`. `kitsoki test flows <app.yaml>`
does not: it loads the app path it is given (cmd/kitsoki/test_flows.go:49-75,
internal/testrunner/flows.go:959-969) and its persistent pre-run reads only KITSOKI_REPO
(main.go:77-102). So no story's flows can see a root override, whatever they import (an importer
of dev-story folds dev-story's own defaults, never the root's overrides, synthesis.go:141-170).
What can: a flow run against the synthesized root itself, which is exactly the app
`kitsoki materialize` writes (its contract: `app.Load(emit(spec))` deep-equals
`app.SynthesizeRoot(spec)`, materialize.go:176). Those are the project's root flows
(`flows/*.yaml` beside `.kitsoki.yaml`), run against the root written that way. They can see a
world override (the root's world holds it) and a binding (it rewrites the root's `iface.<name>`
invocations); a synonym they cannot: a flow turn names an intent (`intent:`), and an `input:`
turn resolves only through a recording, never through phrasings (flows.go:1149-1167, :1544-1550).
A change outside `root.overrides` reaches no flow at all.

When nothing exercises a change, `would_exercise` names what would.
"""

from __future__ import annotations

import glob as globlib
import os
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
    unprovable: list[str] = []
    """Parts of the change no flow can exercise under kitsoki's rules, and why (a root synonym, a
    `.kitsoki.yaml` key outside root.overrides)."""

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
        root_glob = app_glob(settings, ROOT_KEY)
        if change.world or change.bindings:
            # Only a flow run against the synthesized root sees the overrides (module docstring).
            scope.apps.append(AppInScope(app=ROOT_APP, why=f"the root instance ({what})", flows=root_glob,
                                         files=matched(workspace, root_glob)))
            if not scope.exercised:
                scope.would_exercise.append(f"a root flow ({root_glob} beside {CONFIG_FILE}, run against the "
                                            f"synthesized root) that exercises {what}")
        elif change.synonyms:
            scope.unprovable.append(f"{what}: no kitsoki flow can exercise a phrasing (a turn names its intent; an "
                                    "input: turn resolves only through a recording), and `kitsoki test flows` never "
                                    f"reads {CONFIG_FILE}")
        else:
            scope.unprovable.append(f"{what}: nothing `kitsoki test flows` runs reads {CONFIG_FILE} outside the "
                                    "root instance's overrides")
    if not scope.exercised:
        for app in scope.apps:
            if app.app != ROOT_APP and not app.files:
                scope.would_exercise.append(f"a flow in {app.flows} ({app.why})")
        for rel in scope.unowned:
            scope.would_exercise.append(f"a story that reads {rel} (no story loads it now)")
        if scope.skipped and not scope.apps:
            scope.would_exercise.append("taking the story out of miner.flow_gate.skip")
    return scope
