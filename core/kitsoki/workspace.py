"""A kitsoki workspace as kitsoki reads it: `.kitsoki.yaml`, every story it discovers, the root instance.

Discovery is kitsoki's DiscoverStories: every file named `app.yaml` under each `story_dirs`
entry, recursively (so `stories/x/app/app.yaml` is a story), plus `.kitsoki/stories/` where
`kitsoki materialize` writes rung-2 stories. Each story is loaded through the whole pipeline
(core.kitsoki.loader). The root instance is what `kitsoki run` with no app synthesizes: an app
importing `@kitsoki/dev-story` under the alias `root` (entry `landing`), with `root.overrides`
(and the project profile) folded in: bindings as the import's host_bindings, world values as
instance defaults projected through world_in, synonyms appended to the intents they name.

Loads are cached: a story is loaded again only when one of the files it read changed (or an
overlay stands in for one), so a second load of an unchanged workspace costs a stat per file.
"""

from __future__ import annotations

import gc
import hashlib
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from core.kitsoki import probed
from core.kitsoki.build import build_story
from core.kitsoki.checked import memo_for as checked_memo
from core.kitsoki.config import DEV_STORY, KitsokiConfig, load_config
from core.kitsoki.imports import KITSOKI_PREFIX, Sources, SourceError, resolve_source
from core.kitsoki.library import describe as describe_library
from core.kitsoki.loadcache import memo_for as load_memo
from core.kitsoki.loadcache import story_of
from core.kitsoki.loader import LoadSession
from core.kitsoki.model import APP_FILE, MATERIALIZED_DIR, RefusedStory, Story, Workspace, WorkspaceError
from core.kitsoki.parse import LMap, LSeq, Signature, signature
from core.kitsoki.yamlread import ConfigError, ConfigIssue

ROOT_ALIAS = "root"
ROOT_ENTRY = "landing"
SYNTHESIZED_ROOT = "<synthesized-root>"
ROOT_HOSTS = (
    "host.local_files.ticket", "host.gh.ticket", "host.git", "host.local", "host.git_worktree", "host.append_to_file",
    "host.inbox.add", "host.agent.ask", "host.agent.decide", "host.agent.task", "host.run", "host.agent.search",
    "host.artifacts_dir", "host.ide.open_file", "host.ide.open_diff", "host.agent.converse", "host.chat.resolve",
    "host.diff.open", "host.starlark.run",
)
"""The allow-list kitsoki gives the synthesized root (synthesis.go)."""


class DevStorySource(BaseModel):
    """Where the root instance's dev-story came from."""

    kind: str
    """kitsoki-repo (KITSOKI_REPO or ~/.kitsoki/repo), checkout (a kitsoki checkout around the
    workspace), library (the summary we carry) or missing."""
    path: str = ""
    kitsoki_commit: str = ""
    """For the library: the kitsoki commit it was summarised from."""
    message: str = ""


def story_app_files(workspace: Path, config: KitsokiConfig,
                    overlay: dict[str, bytes] | None = None) -> list[tuple[Path, bool]]:
    """(app.yaml, materialized) for each story the workspace has, in story_dirs order, no repeats.

    Entries named app.yaml that are not regular files are listed too: the loader refuses them by
    name (a FIFO would hang kitsoki; a folder it would skip silently)."""
    seen: set[str] = set()
    out: list[tuple[Path, bool]] = []
    materialized_root = os.path.normpath(os.path.abspath(workspace / MATERIALIZED_DIR))
    roots = [os.path.normpath(os.path.abspath(workspace / entry)) for entry in config.story_dirs]
    if materialized_root not in roots:
        roots.append(materialized_root)
    workspace_root = os.path.normpath(os.path.abspath(workspace))
    for root in roots:
        if root != workspace_root and not root.startswith(workspace_root + os.sep):
            continue  # story_dirs may point anywhere in kitsoki; we only model the workspace's own
        is_materialized = root == materialized_root or root.startswith(materialized_root + os.sep)
        for folder, dirs, files in os.walk(root):
            dirs.sort()
            names = files + [name for name in dirs if name == APP_FILE]
            if APP_FILE not in names:
                continue
            app = os.path.join(folder, APP_FILE)
            if app in seen:
                continue
            seen.add(app)
            out.append((Path(app), is_materialized or folder.startswith(materialized_root + os.sep)))
        for staged in sorted(overlay or ()):  # a draft's new story exists only in the overlay
            if staged not in seen and os.path.basename(staged) == APP_FILE and staged.startswith(root + os.sep):
                seen.add(staged)
                out.append((Path(staged), is_materialized))
    return out


@dataclass
class _StoryEntry:
    story: Story | None
    issues: list[ConfigIssue]
    signatures: dict[str, Signature | None]
    probes: dict[str, Any] | None = None
    """What the story's load looked at besides its files (core.kitsoki.probed)."""


_STORIES: dict[tuple[str, Sources], _StoryEntry] = {}
_ROOTS: dict[tuple[str, Sources, str], _StoryEntry] = {}
_LOCK = threading.Lock()


def _valid(entry: _StoryEntry, overlay: dict[str, bytes], seen: dict[str, bool]) -> bool:
    """Whether a kept entry still holds (every file the same, every probe answering the same); when
    it does, its probes become the current load's own."""
    for file, sig in entry.signatures.items():
        if file in overlay or sig is None:
            return False
        known = seen.get(file)
        if known is None:
            known = seen[file] = signature(file) == sig
        if not known:
            return False
    if not probed.still(entry.probes):
        return False
    probed.replay(entry.probes)
    return True


def _slug(workspace: Path, app: Path) -> str:
    """The story's name: its folder, or the folder above a nested `app/app.yaml`."""
    folder = app.parent
    return folder.name


def load_story_at(session: LoadSession, app: Path, materialized: bool, seen: dict[str, bool],
                  use_cache: bool = True) -> _StoryEntry:
    key = (os.path.abspath(app), session.sources)
    if use_cache:
        with _LOCK:
            cached = _STORIES.get(key)
        if cached is not None and _valid(cached, session.overlay, seen):
            return cached
        if session.loads is not None:
            entry = _remembered(session, app, materialized)
            if entry is not None:
                with _LOCK:
                    _STORIES[key] = entry
                return entry
    with probed.recording() as looked:
        loaded = session.load(app)
    signatures = dict(loaded.signatures)
    if loaded.issues or loaded.definition is None:
        entry = _StoryEntry(None, loaded.issues, signatures, looked.frozen())
    else:
        as_written = _as_written(session, str(app))
        story = build_story(loaded, slug=_slug(session.story_root or app.parent, app), materialized=materialized,
                            own_files=loaded.own_files, as_written=as_written)
        entry = _StoryEntry(story, [], signatures, looked.frozen())
    if use_cache and not any(file in session.overlay for file in signatures):
        with _LOCK:
            _STORIES[key] = entry
        if session.loads is not None and entry.probes is not None:
            session.loads.put(str(app), materialized, session.sources, entry.story, entry.issues, signatures,
                              loaded.asked, entry.probes)
    return entry


def _remembered(session: LoadSession, app: Path, materialized: bool) -> _StoryEntry | None:
    """The story's load from the workspace's load memo (core.kitsoki.loadcache), when nothing it
    looked at changed: refused with the same issues, or a story known by its outline that loads
    for real on the first read of its definition or tables."""
    found = session.loads.get(str(app), materialized, session.sources, session.overlay)
    if found is None:
        return None
    data, issues, signatures, probes = found
    try:
        if data is None:
            entry = _StoryEntry(None, [ConfigIssue.model_validate(issue) for issue in issues], signatures, probes)
        elif not issues:
            story = story_of(data)
            story._realize = _Realizer(app, materialized, session.sources, session.story_root, session.checked)
            entry = _StoryEntry(story, [], signatures, probes)
        else:
            return None
    except (KeyError, TypeError, ValueError):
        return None
    probed.replay(probes)  # what the load looked at joins this load's record, as a kept story's does
    return entry


class _Realizer:
    """Loads a story known by its outline for real, once, and makes it whole in place."""

    _lock = threading.RLock()

    def __init__(self, app: Path, materialized: bool, sources: Sources, story_root: Path | None, checked: Any):
        self.app, self.materialized, self.sources = app, materialized, sources
        self.story_root, self.checked = story_root, checked

    def _load(self, session: LoadSession) -> _StoryEntry:
        return load_story_at(session, self.app, self.materialized, {}, use_cache=False)

    def __call__(self, story: Story) -> None:
        with self._lock, gc_paused():
            private = object.__getattribute__(story, "__pydantic_private__")
            if private.get("_realize") is not self:
                return
            session = LoadSession(sources=self.sources, story_root=self.story_root)
            session.checked = self.checked
            entry = self._load(session)
            if entry.story is None:  # what it reads changed since the workspace loaded, and it no longer loads
                raise WorkspaceError(entry.issues)
            whole = entry.story
            story.__dict__.update({k: v for k, v in whole.__dict__.items()})
            for name in ("world", "intents", "states"):
                if name not in whole.__dict__:
                    story.__dict__.pop(name, None)
            whole_private = object.__getattribute__(whole, "__pydantic_private__")
            for name in ("_definition", "_lazy", "_intents_only", "_intent_list"):
                private[name] = whole_private.get(name)
            private["_realize"] = None


def _as_written(session: LoadSession, app: str) -> Any:
    try:
        document = session.cache.read(app, _limits(), overlay=session.overlay)
    except Exception:  # noqa: BLE001 - the load already reported it
        return None
    from core.kitsoki.build import plain

    imports = document.get("imports") if isinstance(document, LMap) else None
    return plain(imports) if imports else None


def _limits():
    from core.kitsoki.model import STORY_LIMITS

    return STORY_LIMITS


def workspace_sources(workspace: Path, config: KitsokiConfig | None, env: dict[str, str] | None = None,
                      home: Path | None = None) -> Sources:
    """Where this workspace's `@kitsoki/<name>` imports resolve: `miner.flow_gate.kitsoki_repo` (the
    checkout the kitsoki gate passes as `--kitsoki-repo`), else KITSOKI_REPO, else ~/.kitsoki/repo
    (core.kitsoki.imports.Sources.from_env). The loader and the kitsoki gate both use this."""
    miner = (config.extra.get("miner") if config is not None else None) or {}
    gate = miner.get("flow_gate") if isinstance(miner, dict) else None
    setting = gate.get("kitsoki_repo") if isinstance(gate, dict) else None
    repo = None
    if isinstance(setting, str) and setting.strip():
        repo = Path(setting) if os.path.isabs(setting) else Path(workspace) / setting
    return Sources.from_env(env, home, repo)


def dev_story_source(workspace: Path, sources: Sources) -> DevStorySource:
    """Where `@kitsoki/dev-story` resolves for this workspace, as kitsoki would resolve it."""
    try:
        resolved = resolve_source(f"{KITSOKI_PREFIX}{DEV_STORY}", Path(os.path.abspath(workspace)), sources)
    except SourceError as exc:
        return DevStorySource(kind="missing", message=str(exc))
    commit = describe_library(DEV_STORY).get("kitsoki_commit", "") if resolved.origin == "library" else ""
    why = {"kitsoki-repo": f"from {sources.repo_from}", "checkout": "the kitsoki checkout around the workspace",
           "library": "the summary of dev-story kitsoki-miner carries (kitsoki uses its embedded library)"}
    return DevStorySource(kind=resolved.origin, path=str(resolved.path), kitsoki_commit=commit,
                          message=why.get(resolved.origin, ""))


def synthesize_root(workspace: Path, config: KitsokiConfig) -> LMap:
    """The app kitsoki synthesizes for the implicit project root (BuildRootImporter)."""
    abs_root = Path(os.path.abspath(workspace))
    file = str(abs_root / SYNTHESIZED_ROOT / APP_FILE)

    def m(data: dict) -> LMap:
        return LMap(data, file=file, line=1, column=1)

    spec = m({"source": f"{KITSOKI_PREFIX}{DEV_STORY}", "entry": ROOT_ENTRY, "hosts": "declared"})
    definition = m({
        "app": m({"id": abs_root.name, "version": "0.0.0", "title": f"{abs_root.name} — implicit root (dev-story)"}),
        "hosts": LSeq(ROOT_HOSTS, file=file, line=1, column=1),
        "imports": m({ROOT_ALIAS: spec}),
        "root": ROOT_ALIAS,
    })
    overrides = config.root.overrides if config.root is not None else None
    if overrides is not None:
        if overrides.bindings:
            spec["host_bindings"] = m(dict(overrides.bindings))
        if overrides.world:
            world, world_in = m({}), m({})
            for key in sorted(overrides.world):
                value = overrides.world[key]
                world[key] = m({"type": _infer_type(value), "default": value})
                world_in[key] = f"{{{{ world.{key} }}}}"
            definition["world"] = world
            spec["world_in"] = world_in
        if overrides.synonyms:
            intents = m({})
            for name in sorted(overrides.synonyms):
                intents[name] = m({"synonyms": LSeq(overrides.synonyms[name], file=file, line=1, column=1)})
            definition["intents"] = intents
    return definition


def _infer_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "list"
    return "string"


def load_root_instance(workspace: Path, config: KitsokiConfig, session: LoadSession,
                       seen: dict[str, bool]) -> _StoryEntry:
    definition = synthesize_root(workspace, config)
    path = Path(definition.file)
    fingerprint = repr(config.root.model_dump() if config.root else None)
    key = (str(path), session.sources, fingerprint)
    with _LOCK:
        cached = _ROOTS.get(key)
    if cached is not None and _valid(cached, session.overlay, seen):
        return cached
    # In the load memo (core.kitsoki.loadcache) under its file and what `root:` says: what it reads
    # (dev-story's files or our summary of it) is checked there like any story's.
    memo_name = f"{path}#root:{hashlib.sha256(fingerprint.encode()).hexdigest()}"
    if session.loads is not None:
        entry = _remembered_root(session, workspace, config, memo_name)
        if entry is not None:
            with _LOCK:
                _ROOTS[key] = entry
            return entry
    entry, asked = _load_root(workspace, config, session)
    with _LOCK:
        _ROOTS[key] = entry
    if (session.loads is not None and entry.story is not None and entry.probes is not None
            and not any(file in session.overlay for file in entry.signatures)):
        session.loads.put(memo_name, False, session.sources, entry.story, [], entry.signatures, asked, entry.probes)
    return entry


def _load_root(workspace: Path, config: KitsokiConfig, session: LoadSession) -> tuple[_StoryEntry, list]:
    """The root instance loaded for real, and what its load asked (for the load memo)."""
    definition = synthesize_root(workspace, config)
    with probed.recording() as looked:
        loaded = session.load(Path(definition.file), definition, base_dir=Path(os.path.abspath(workspace)))
    if loaded.issues or loaded.definition is None:
        return _StoryEntry(None, loaded.issues, dict(loaded.signatures), looked.frozen()), loaded.asked
    story = build_story(loaded, slug="root-instance", materialized=False, own_files=[])
    return _StoryEntry(story, [], dict(loaded.signatures), looked.frozen()), loaded.asked


def _remembered_root(session: LoadSession, workspace: Path, config: KitsokiConfig, memo_name: str
                     ) -> _StoryEntry | None:
    """The root instance from the load memo, known by its outline (it loads for real on the first
    read of its definition or tables), when nothing its load looked at changed."""
    found = session.loads.get(memo_name, False, session.sources, session.overlay)
    if found is None:
        return None
    data, issues, signatures, probes = found
    if data is None or issues:
        return None
    try:
        story = story_of(data)
    except (KeyError, TypeError, ValueError):
        return None
    story._realize = _RootRealizer(workspace, config, session.sources, session.story_root, session.checked)
    probed.replay(probes)
    return _StoryEntry(story, [], signatures, probes)


class _RootRealizer(_Realizer):
    """Loads a root instance known by its outline for real, once, and makes it whole in place."""

    def __init__(self, workspace: Path, config: KitsokiConfig, sources: Sources, story_root: Path | None,
                 checked: Any):
        super().__init__(Path(synthesize_root(workspace, config).file), False, sources, story_root, checked)
        self.workspace, self.config = workspace, config

    def _load(self, session: LoadSession) -> _StoryEntry:
        return _load_root(self.workspace, self.config, session)[0]


_GC_LOCK = threading.Lock()
_GC_HOLDS = 0


@contextmanager
def gc_paused():
    """Python's cycle collector off while a load allocates its (acyclic) trees: a load makes a few
    hundred thousand objects, and each full collection would walk all of them and the caches
    again (it took more than half the time of a cold load)."""
    global _GC_HOLDS
    with _GC_LOCK:
        if _GC_HOLDS == 0:
            was_enabled = gc.isenabled()
            gc.disable()
        else:
            was_enabled = None
        _GC_HOLDS += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_HOLDS -= 1
            if _GC_HOLDS == 0 and (was_enabled or was_enabled is None):
                gc.enable()


def load_workspace(path: Path, *, overlay: dict[str, bytes] | None = None, env: dict[str, str] | None = None,
                   home: Path | None = None) -> Workspace:
    """Load `.kitsoki.yaml`, every story and the root instance. A story that does not load is
    refused alone (`Workspace.refused`, and a warning), as kitsoki's discovery skips it; a config or
    root-instance problem raises WorkspaceError listing every problem. `overlay` (absolute path ->
    bytes) stands in for files on disk (a staged draft)."""
    with gc_paused(), probed.recording() as looked:
        model = _load_workspace(Path(path), overlay, env, home)
    model._probes = looked
    return model


def _load_workspace(workspace: Path, overlay: dict[str, bytes] | None, env: dict[str, str] | None,
                    home: Path | None) -> Workspace:
    try:
        config = load_config(workspace, overlay=overlay, env=env)
    except ConfigError as exc:
        raise WorkspaceError(exc.issues) from None
    sources = workspace_sources(workspace, config, env, home)
    session = LoadSession(sources=sources, overlay=overlay, story_root=workspace)
    session.checked = checked_memo(workspace) if env is None and home is None else None
    session.loads = load_memo(workspace) if env is None and home is None else None
    if session.loads is not None:
        session.loads.begin(sources)
    seen: dict[str, bool] = {}
    issues: list[ConfigIssue] = []
    warnings: list[ConfigIssue] = list(config.warnings)
    stories = []
    refused: list[RefusedStory] = []
    read: dict[str, Signature | None] = {}
    for app, materialized in story_app_files(workspace, config, session.overlay):
        entry = load_story_at(session, app, materialized, seen)
        read.update(entry.signatures)
        if entry.story is not None:
            stories.append(entry.story)
        elif entry.issues:  # kitsoki's discovery skips a story that does not load; so do we, saying why
            refused.append(RefusedStory(app=app, issues=entry.issues, files=[Path(f) for f in entry.signatures]))
            first = entry.issues[0]
            warnings.append(ConfigIssue(file=str(app), line=1, column=1, key="",
                                        message=f"this story does not load, so it is left out (kitsoki skips it "
                                                f"too): {first.message} ({Path(first.file).name}:{first.line})"))
    source = dev_story_source(workspace, sources)
    root = None
    if source.kind != "missing":
        entry = load_root_instance(workspace, config, session, seen)
        read.update(entry.signatures)
        root = entry.story
        issues.extend(entry.issues)
    if issues:
        raise WorkspaceError(issues)
    # Every part is already one of ours, built and checked above: not validated again (validating would
    # build Workspace's schema, Story's inside it, a tenth of an accept's own work).
    model = Workspace.model_construct(path=Path(workspace), config=config, stories=stories, warnings=warnings,
                                      refused=refused)
    model.root_instance = root
    model.dev_story = source
    model._read = read
    if session.checked is not None:
        session.checked.flush()
    if session.loads is not None:
        session.loads.flush()
    return model


def clear_caches() -> None:
    """Forget every parsed file and loaded story in this process (a cold start, for benchmarks)."""
    from core.kitsoki import checked, inventory, loadcache, loader
    from core.kitsoki.parse import PARSE_CACHE

    PARSE_CACHE.clear()
    checked.forget()
    loadcache.forget()
    with _LOCK:
        _STORIES.clear()
        _ROOTS.clear()
    with loader._CHILDREN_LOCK:
        loader._CHILDREN.clear()
    inventory._CACHE.clear()
    inventory._ROWS.clear()
    from core.kitsoki import statememo

    statememo.forget()
