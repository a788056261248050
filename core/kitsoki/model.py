"""The story model: what a loaded kitsoki story is made of (states, intents, transitions, world).

Plain data with the file:line:col of each declaration; built by the loader (core.kitsoki.story
and the modules beside it) and read by the inventory, the mapper, the drafters and the flow runner.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from core.kitsoki.config import KitsokiConfig
from core.kitsoki.yamlread import ConfigError, ConfigIssue, Where, YamlLimits

STORY_LIMITS = YamlLimits(max_bytes=4 << 20, max_values=400_000, max_depth=64, max_tokens=2_000_000,
                          what="story files")
"""Real stories run to thousands of lines (dev-story's app.yaml is ~6k); still bounded."""
APP_FILE = "app.yaml"
MATERIALIZED_DIR = ".kitsoki/stories"
EXIT_PREFIX = "@exit:"
SYNTH_EXIT_PREFIX = "__exit__"
AGENT_HANDLER_PREFIX = "host.agent."


class WorkspaceError(ConfigError):
    """The workspace does not load; `issues` lists every problem, each with file:line:col."""


class Slot(BaseModel, defer_build=True):
    name: str
    type: str = "string"
    values: list[str] = Field(default_factory=list)
    value_synonyms: dict[str, list[str]] = Field(default_factory=dict)
    required: bool = False
    default: Any = None
    """Filled in at run time when the slot is missing (kitsoki machine.go)."""
    at: Where


class Intent(BaseModel, defer_build=True):
    name: str
    title: str = ""
    description: str = ""
    examples: list[str] = Field(default_factory=list)
    synonyms: list[str] = Field(default_factory=list)
    slots: dict[str, Slot] = Field(default_factory=dict)
    hidden: bool = False
    at: Where
    """Where the intent's key is."""
    examples_at: Where | None = None
    synonyms_at: Where | None = None
    state: str | None = None
    """Set for a state-local intent declaration."""
    priority: int = 0
    origin: str | None = None
    """The import alias chain it was folded from (`bf`, `core.bf`), or None for the story's own."""
    lifted: bool = False
    """Lifted under its bare name through an import's `intents.import`."""


class Effect(BaseModel, defer_build=True):
    op: str
    """say, set, increment, or a kitsoki effect we do not model."""
    args: Any = None
    at: Where


class Transition(BaseModel, defer_build=True):
    intent: str
    target: str | None = None
    """As kitsoki resolves it: an absolute dotted path, `..`-relative, `.`, a template, or none."""
    when: str | None = None
    default: bool = False
    effects: list[Effect] = Field(default_factory=list)
    """One Effect per key of each kitsoki effect mapping, in order (`{invoke, with, bind}` is three)."""
    guard_hint: str | None = None
    emit: list[str] = Field(default_factory=list)
    fallback: bool = False
    """Injected by kitsoki's free-form fallback (the `work` arm of the landing room)."""
    at: Where


class Step(BaseModel, defer_build=True):
    """One `on_enter` entry: an `invoke:` of a host handler or an `emit_intent:`."""

    invoke: str | None = None
    emit_intent: str | None = None
    with_: Any = None
    raw: dict[str, Any] = Field(default_factory=dict)
    """The whole effect as plain data (when, bind, on_error, slots, on_complete ...)."""
    at: Where


class State(BaseModel, defer_build=True):
    name: str
    """Dotted path for nested states (`parent.child`)."""
    description: str = ""
    decider: str | None = None
    """None when the key is absent; "" follows the run mode."""
    on: dict[str, list[Transition]] = Field(default_factory=dict)
    on_enter: list[Step] = Field(default_factory=list)
    intents: dict[str, Intent] = Field(default_factory=dict)
    terminal: bool = False
    type: str = ""
    """"compound", "parallel", or "" (a leaf, or children without a type)."""
    initial: str | None = None
    """A compound's initial child (may be a template); a target naming the compound descends to it."""
    children: list[str] = Field(default_factory=list)
    """Child state names, in declaration order (their paths are `<name>.<child>`)."""
    parent: str | None = None
    default_intent: str | None = None
    relevant_world: list[str] = Field(default_factory=list)
    timeout_after: str | None = None
    timeout_target: str | None = None
    intent_aliases: dict[str, str] = Field(default_factory=dict)
    """Authored intent name -> its renamed on: key, for states folded from an import."""
    import_alias: str | None = None
    """Set on the compound state an import folded in (its alias)."""
    from_library: bool = False
    """Folded from the summarised library: its transitions are not known here."""
    view: Any = None
    at: Where


class ImportInfo(BaseModel, defer_build=True):
    """One entry of a story's `imports:`, as folded."""

    alias: str
    source: Path
    """The child's app.yaml (or the library entry it came from)."""
    origin: str
    """path, kitsoki-repo, checkout or library."""
    entry: str


class WorldVar(BaseModel, defer_build=True):
    name: str
    type: str = ""
    default: Any = None
    at: Where


class Story(BaseModel, defer_build=True):
    slug: str
    """The story's folder name."""
    path: Path
    """Its app.yaml."""
    app_id: str = ""
    title: str = ""
    root: str | None = None
    world: dict[str, WorldVar] = Field(default_factory=dict)
    intents: dict[str, Intent] = Field(default_factory=dict)
    states: dict[str, State] = Field(default_factory=dict)
    exits: dict[str, Where] = Field(default_factory=dict)
    imports: Any = None
    """The `imports:` block as written (a mapping of alias -> import in current kitsoki)."""
    folded: dict[str, ImportInfo] = Field(default_factory=dict)
    """Each direct import, folded: alias -> where it came from."""
    imported: list[Path] = Field(default_factory=list)
    """Every app.yaml this story imports, directly or transitively (canonical paths)."""
    import_files: list[Path] = Field(default_factory=list)
    """Every file read for its imports (their app.yaml files and includes, transitively)."""
    hosts: list[str] = Field(default_factory=list)
    """The hosts allow-list after folding and interface resolution (empty: no allow-list)."""
    materialized: bool = False
    files: list[Path] = Field(default_factory=list)
    """The story's own files: app.yaml first, then its included room files in include order."""
    open_world: bool = False
    """Some import was folded from the summarised library: states under it are not known here."""
    _definition: Any = PrivateAttr(default=None)
    _lazy: Any = PrivateAttr(default=None)
    _intents_only: Any = PrivateAttr(default=None)
    _intent_list: Any = PrivateAttr(default=None)
    _realize: Any = PrivateAttr(default=None)
    """Set on a story known from the load memo (core.kitsoki.loadcache) by its outline alone: loads
    it for real on the first read of its definition, world, intents or states."""

    def _realized(self) -> dict:
        private = object.__getattribute__(self, "__pydantic_private__") or {}
        realize = private.get("_realize")
        if realize is not None:
            realize(self)  # clears _realize once the story is whole (under its own lock)
        return private

    def __getattr__(self, name: str) -> Any:
        # world, intents and states of a loaded story are built on first read (core.kitsoki.build).
        if name in ("world", "intents", "states"):
            private = self._realized()
            if name in self.__dict__:
                return self.__dict__[name]
            lazy = private.get("_lazy")
            if lazy is not None:
                value = self.__dict__[name] = lazy(name)
                if all(field in self.__dict__ for field in ("world", "intents", "states")):
                    private["_lazy"] = None
                return value
        return super().__getattr__(name)

    def local_intents(self, path: str) -> dict[str, Intent] | None:
        """The intents state `path` declares itself (None: no such state), without building the states'
        arms and effects when they are not built yet."""
        private = self._realized()
        if "states" not in self.__dict__:
            lazy = private.get("_lazy")
            if lazy is not None and hasattr(lazy, "local_intents"):
                return lazy.local_intents().get(path)
        state = self.states.get(path)
        return None if state is None else state.intents

    @property
    def definition(self) -> Any:
        """kitsoki's AppDef after the whole pipeline, as located plain data (read only)."""
        self._realized()
        return self._definition

    @property
    def dir(self) -> Path:
        return self.path.parent

    def all_intents(self) -> Iterator[Intent]:
        """Every intent declaration: the story's, then each state's local ones."""
        private = self._realized()
        if private.get("_lazy") is not None and "states" not in self.__dict__ and private.get("_intents_only") is not None:
            # states not built yet: the intents alone (an inventory of a story a draft reloaded reads
            # nothing else; building every state's arms and effects cost more than the load)
            if private.get("_intent_list") is None:
                private["_intent_list"] = private["_intents_only"]()
            yield from private["_intent_list"]
            return
        yield from self.intents.values()
        for state in self.states.values():
            yield from state.intents.values()


class RefusedStory(BaseModel, defer_build=True):
    """A story kitsoki's discovery skips because it does not load (webconfig.DiscoverStories logs it
    and goes on): the rest of the workspace loads without it."""

    app: Path
    """Its app.yaml."""
    issues: list[ConfigIssue]
    """Why, each with file:line:col (kitsoki's reasons)."""
    files: list[Path] = Field(default_factory=list)
    """The files its load read."""

    def reason(self, limit: int = 3) -> str:
        shown = "; ".join(f"{Path(i.file).name}:{i.line}:{i.column}: {i.message}" for i in self.issues[:limit])
        more = f" (and {len(self.issues) - limit} more)" if len(self.issues) > limit else ""
        return shown + more


class Workspace(BaseModel, defer_build=True):
    path: Path
    config: KitsokiConfig
    stories: list[Story] = Field(default_factory=list)
    warnings: list[ConfigIssue] = Field(default_factory=list)
    refused: list[RefusedStory] = Field(default_factory=list)
    """Stories that do not load, refused alone as kitsoki's discovery skips them (with the reason)."""
    root_instance: Story | None = None
    """The app kitsoki synthesizes for the project root (dev-story imported as `root`), or None
    when dev-story cannot be resolved."""
    dev_story: Any = None
    """Where the root instance's dev-story came from (core.kitsoki.workspace.DevStorySource)."""
    _read: dict = PrivateAttr(default_factory=dict)
    """Every file the stories' and the root instance's loads read -> its Signature (None: it was
    missing), as the load cache checks them: what a memo of this model depends on."""
    _probes: Any = PrivateAttr(default=None)
    """The environment variables and paths the load looked at (a core.kitsoki.probed.Recording)."""

    def story(self, slug: str) -> Story | None:
        return next((story for story in self.stories if story.slug == slug), None)

    def files(self) -> list[Path]:
        """Every file the model was read from (each story's own files and its imports' files)."""
        out = list(self.config.source_files)
        seen = set(out)
        for story in self.stories:
            for file in (*story.files, *story.import_files):
                if file not in seen:
                    seen.add(file)
                    out.append(file)
        return out

    def stories_of(self, file: Path) -> list[Story]:
        """The stories a file belongs to: as one of its own files, or through an import."""
        file = Path(file)
        return [story for story in self.stories if file in story.files or file in story.import_files]

    def refusal(self, app: Path | str) -> RefusedStory | None:
        import os

        key = os.path.realpath(app)
        return next((r for r in self.refused if os.path.realpath(r.app) == key), None)

    def newly_refused(self, before: Workspace | None, changed: list[Path] | None = None) -> list[RefusedStory]:
        """The refused stories that loaded in `before` (or are new; with no `before`, none of
        those), plus those that read a file in `changed`: what an edit broke, as opposed to what
        was already refused."""
        import os

        was = {os.path.realpath(r.app) for r in (before.refused if before is not None else [])}
        touched = {os.path.realpath(f) for f in changed or []}
        out = []
        for refusal in self.refused:
            files = {os.path.realpath(f) for f in [refusal.app, *refusal.files, *(i.file for i in refusal.issues)]}
            if (before is not None and os.path.realpath(refusal.app) not in was) or files & touched:
                out.append(refusal)
        return out

    def importers_of(self, story: Story) -> list[Story]:
        """The stories that import `story` (directly or transitively)."""
        import os

        key = Path(os.path.realpath(story.path))
        return [other for other in self.stories if key in other.imported]
